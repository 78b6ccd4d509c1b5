package proctree

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"testing"
	"time"

	"beamconnect/internal/eventually"
)

// The test binary plays every process of a tree, chosen by
// PROCTREE_TEST_ROLE:
//
//	sleeper  sleeps a minute (a helper an FMU starts)
//	spawner  starts a sleeper, the way an FMU would (not through Start),
//	         says "helper PID", then does PROCTREE_TEST_THEN: "exit",
//	         "wait" (blocks for ever), or "spin" (calls EndWithParent, as
//	         the FMU host does, then spins like a hung FMU)
//	parent   starts a spawner through StartOurs and says "spawner PID", then
//	         passes the spawner's lines on; on an interrupt it says
//	         whether the spawner is still alive, and exits
func TestMain(m *testing.M) {
	switch os.Getenv("PROCTREE_TEST_ROLE") {
	case "":
		os.Exit(m.Run())
	case "sleeper":
		time.Sleep(time.Minute) // its life: a helper that lives on until killed (a minute at most)
		os.Exit(0)
	case "spawner":
		then := os.Getenv("PROCTREE_TEST_THEN")
		if then == "spin" {
			EndWithParent()
		}
		helper := role("sleeper")
		helper.Stdout = os.Stdout // it holds the pipe, as a forked helper does
		if err := helper.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("helper", helper.Process.Pid)
		switch then {
		case "exit":
			os.Exit(0)
		case "spin":
			for {
			}
		}
		time.Sleep(time.Hour) // not select{}: with nothing else to run, that is a deadlock the runtime ends
	case "parent":
		interrupts := make(chan os.Signal, 1)
		signal.Notify(interrupts, os.Interrupt)
		spawner := role("spawner")
		out, _ := spawner.StdoutPipe()
		tree, err := StartOurs(spawner)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("spawner", tree.Pid())
		go io.Copy(os.Stdout, out)
		if os.Getenv("PROCTREE_TEST_THEN") == "wait" {
			// The console test's parent Ctrl-Cs its own console; any other
			// parent waits to be killed (on Windows a Ctrl-C to a shared
			// console could end it before its spawner has said a word).
			go interruptSelf()
		}
		<-interrupts
		fmt.Println("interrupted; spawner alive:", Alive(tree.Pid()))
		tree.Kill()
		os.Exit(0)
	}
	os.Exit(2)
}

// role is the test binary as a process of the tree.
func role(name string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROCTREE_TEST_ROLE="+name)
	return cmd
}

// said reads lines until one starts with what, and returns the number
// after it.
func said(t *testing.T, r *bufio.Reader, what string) int {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("no %q line: %v", what, err)
		}
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), what+" "); ok {
			n, err := strconv.Atoi(rest)
			if err != nil {
				t.Fatalf("%q: %v", line, err)
			}
			return n
		}
	}
}

// aliveAfterInterrupt reads the parent's lines up to what it says after
// the interrupt, and reports whether the spawner was alive then.
func aliveAfterInterrupt(t *testing.T, r *bufio.Reader) bool {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("the parent said nothing after the interrupt: %v", err)
		}
		if strings.HasPrefix(line, "interrupted") {
			return strings.Contains(line, "alive: true")
		}
	}
}

// ends waits for the process to end, up to a bound that only a process
// that was not ended at all reaches.
func ends(t *testing.T, pid int, what string) {
	t.Helper()
	// (Not this process's child, or not waited for by it: nothing tells
	// of its end.)
	if !eventually.True(10*time.Second, func() bool { return !Alive(pid) }) {
		t.Errorf("the %s (pid %d) is still running 10 s later", what, pid)
		killPid(pid)
	}
}

func killPid(pid int) {
	if p, err := os.FindProcess(pid); err == nil {
		p.Kill()
	}
}

// Kill ends the program and the helper it started.
func TestKillEndsTheTree(t *testing.T) {
	cmd := role("spawner")
	cmd.Env = append(cmd.Env, "PROCTREE_TEST_THEN=wait")
	out, _ := cmd.StdoutPipe()
	tree, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	helper := said(t, bufio.NewReader(out), "helper")
	tree.Kill()
	if err := tree.Wait(); err == nil {
		t.Error("the spawner exited normally: it was not killed")
	}
	ends(t, tree.Pid(), "spawner")
	ends(t, helper, "helper")
}

// When the program exits on its own, Wait ends the helper it left
// running, and with it the pipe the helper held: its reader sees the end.
func TestWaitEndsLeftovers(t *testing.T) {
	cmd := role("spawner")
	cmd.Env = append(cmd.Env, "PROCTREE_TEST_THEN=exit")
	out, _ := cmd.StdoutPipe()
	tree, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	helper := said(t, r, "helper")
	if err := tree.Wait(); err != nil {
		t.Errorf("the spawner: %v", err)
	}
	ends(t, helper, "helper")
	eof := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, r); eof <- err }()
	select {
	case <-eof:
	case <-time.After(10 * time.Second):
		t.Error("the pipe is still open 10 s after the program ended")
	}
	tree.Kill() // after Wait: nothing to do, and no harm
}

// When the parent dies without a word (killed), a program that watches
// its parent (EndWithParent, as the FMU host does) ends with it and with
// the helper it started, though it spins.
func TestParentDeathEndsTheTree(t *testing.T) {
	parent := role("parent")
	parent.Env = append(parent.Env, "PROCTREE_TEST_THEN=spin")
	out, _ := parent.StdoutPipe()
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(out)
	spawner := said(t, r, "spawner")
	helper := said(t, r, "helper")
	if !Alive(spawner) || !Alive(helper) {
		t.Fatal("the tree is not running")
	}
	parent.Process.Kill()
	parent.Wait()
	ends(t, spawner, "spawner")
	ends(t, helper, "helper")
}
