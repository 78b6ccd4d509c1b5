package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	osexec "os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"beamconnect/coupling"
)

// benchConfig writes a rig config for a coupling bound at listen and
// replying to beamngAddr, at BeamNG's fastest rate, for {config}; with
// model, that model's beamng keys (an FMU's, for {fmu-config}) and
// period (an FMU takes the period it was exported for: the driver sends
// as fast as the replies come whatever the period says).
func benchConfig(listen, beamngAddr netip.AddrPort, model string, periodMs float64) (string, error) {
	f, err := os.CreateTemp("", "beamconnect-bench-*.json")
	if err != nil {
		return "", err
	}
	fmt.Fprintf(f, `{"version": 2, "remoteIP": %q, "remotePort": %d,
  "outputs": [{"updatePeriodMs": %v, "ports": [[{"propertyName": "groundspeed"}]]}],
  "inputs": [{"updatePeriodMs": %v, "ports": [[{"propertyName": "throttle"}, {"propertyName": "brake"}]]}],
  "beamng": {"localIP": %q, "localPort": %d%s}}`, beamngAddr.Addr(), beamngAddr.Port(), periodMs, periodMs, listen.Addr(), listen.Port(), model)
	return f.Name(), f.Close()
}

// fmuBenchPeriodMs is the period of the FMU responders' rig: the cruise
// FMU's step size.
const fmuBenchPeriodMs = 5

// fmuModel is the beamng keys of a rig stepping the FMU at path.
func fmuModel(path string, inProcess bool) string {
	b, _ := json.Marshal(path)
	return fmt.Sprintf(`, "model": "fmu", "modelParams": {"path": %s, "inProcess": %v}`, b, inProcess)
}

// waitBound waits until the responder has bound addr. Binding the port
// ourselves to test it could make the responder's own bind fail, so on
// Linux the kernel's socket table is read instead; elsewhere a second
// is allowed for the start.
func waitBound(addr netip.AddrPort, limit time.Duration) error {
	if _, err := os.Stat("/proc/net/udp"); err != nil {
		time.Sleep(time.Second)
		return nil
	}
	// /proc/net/udp writes 127.0.0.1:64890 as 0100007F:FD7A.
	a := addr.Addr().As4()
	want := fmt.Sprintf("%02X%02X%02X%02X:%04X", a[3], a[2], a[1], a[0], addr.Port())
	deadline := time.Now().Add(limit)
	for {
		b, _ := os.ReadFile("/proc/net/udp")
		for _, line := range strings.Split(string(b), "\n") {
			// The second column is the local address; the third, the
			// remote one, also names this port for BeamNG's send socket.
			if f := strings.Fields(line); len(f) > 2 && f[1] == want {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the responder did not bind %v within %v", addr, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// freeUDPPort finds a loopback port for an external responder to bind.
// (It binds itself, so the port is only known free a moment before.)
func freeUDPPort() netip.AddrPort {
	c, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:0")))
	if err != nil {
		return netip.AddrPort{}
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).AddrPort()
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// measureCDriver measures one responder against the external driver: a
// separate process that binds BeamNG's address, sends and waits in
// lockstep, and reports what it saw as JSON.
func measureCDriver(o Options, in Result, cp *coupling.Session, clientAddr netip.AddrPort, command string, d time.Duration) (res Result) {
	res, drv := in, o.Driver
	beamngAddr := freeUDPPort()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel() // before the wait: Run ends when ctx does
	if cp != nil {
		cp.Link(0).SetRemote(beamngAddr)
		wg.Go(func() { cp.Run(ctx) })
	} else {
		stop, err := startResponder(o.Stderr, command, clientAddr, beamngAddr, drv.FMU)
		if err != nil {
			res.Error = err.Error()
			return res
		}
		defer func() { res.PeakRSSKiB = stop() }()
	}
	args := []string{beamngAddr.String(), clientAddr.String(), fmt.Sprint(d.Seconds())}
	if drv.Spin {
		args = append(args, "spin")
	}
	out, err := osexec.Command(drv.Program, args...).Output()
	if err != nil {
		res.Error = "driver: " + err.Error()
		return res
	}
	var r struct {
		RoundTrips int64   `json:"round_trips"`
		PerSecond  float64 `json:"round_trips_per_s"`
		P50        float64 `json:"turnaround_p50_us"`
		P99        float64 `json:"turnaround_p99_us"`
		P999       float64 `json:"turnaround_p999_us"`
		Stalls     int64   `json:"stalls"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		res.Error = fmt.Sprintf("driver said %q: %v", out, err)
		return res
	}
	res.RoundTrips, res.PerSecond, res.P50us, res.P99us, res.P999us, res.Stalls = r.RoundTrips, r.PerSecond, r.P50, r.P99, r.P999, r.Stalls
	return res
}

// startResponder starts another responder's COMMAND with its addresses and
// a rig config filled in, and waits until it has bound its port: BeamNG's
// side must not send before, or the first message would be lost and cost a
// 2 s stall (Python alone takes ~0.4 s to start here). stop ends it and
// says its peak RSS (KiB).
func startResponder(stderr io.Writer, command string, listen, beamng netip.AddrPort, fmuPath string) (stop func() int64, err error) {
	model, period := "", 0.5
	switch {
	case strings.Contains(command, "{fmu-config-in-process}"):
		model, period = fmuModel(fmuPath, true), fmuBenchPeriodMs
	case strings.Contains(command, "{fmu-config}"):
		model, period = fmuModel(fmuPath, false), fmuBenchPeriodMs
	}
	command = strings.NewReplacer("{fmu-config-in-process}", "{config}", "{fmu-config}", "{config}").Replace(command)
	cfgPath, err := benchConfig(listen, beamng, model, period)
	if err != nil {
		return nil, err
	}
	argv := strings.Fields(strings.NewReplacer("{listen}", listen.String(), "{beamng}", beamng.String(),
		"{listen-port}", strconv.Itoa(int(listen.Port())), "{beamng-port}", strconv.Itoa(int(beamng.Port())),
		"{config}", cfgPath).Replace(command))
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		os.Remove(cfgPath)
		return nil, fmt.Errorf("cannot start: %w", err)
	}
	stop = func() int64 {
		defer os.Remove(cfgPath)
		rss := livePeakRSS(cmd.Process.Pid)
		if cmd.Process.Signal(syscall.SIGTERM) != nil {
			cmd.Process.Kill() // Windows: no signal to send another process
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(2 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if rss == 0 {
			rss = childPeakRSS(cmd.ProcessState)
		}
		return rss
	}
	if err := waitBound(listen, 10*time.Second); err != nil {
		stop()
		return nil, err
	}
	return stop, nil
}
