package ssp

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"beamconnect/internal/xsd"
)

// xmllint is libxml2's command-line tool (Debian's libxml2-utils): a
// schema validator no one here wrote. The tests that need it skip without
// it, or fail when BEAMCONNECT_REQUIRE_XMLLINT=1 (as .ci/run sets).
func xmllint(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("xmllint")
	if err != nil {
		if os.Getenv("BEAMCONNECT_REQUIRE_XMLLINT") == "1" {
			t.Fatal("BEAMCONNECT_REQUIRE_XMLLINT=1, but there is no xmllint (apt-get install libxml2-utils)")
		}
		t.Skip("no xmllint (apt-get install libxml2-utils) to check the schema checks against")
	}
	return p
}

// kindOf is the kind of document a fixture is, by its extension.
func kindOf(file string) docKind {
	switch filepath.Ext(file) {
	case ".ssv":
		return docSSV
	case ".ssm":
		return docSSM
	}
	return docSSD
}

var xmllintLine = regexp.MustCompile(`^[^:]+:(\d+): (element|validity)`)

// xmllintVerdict runs xmllint on file against its kind's schema: whether
// it is valid, and the lines of what it says is wrong (those of a
// document that is not well-formed are left out: libxml2 reads on, past
// where a parser that stops at the first such error stops).
func xmllintVerdict(t testing.TB, lint, file string) (bool, []int) {
	t.Helper()
	schema, err := filepath.Abs(filepath.Join("schema", docSchemas[kindOf(file)]))
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(lint, "--noout", "--schema", schema, file).CombinedOutput()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	var lines []int
	if strings.Contains(string(out), "parser error") || strings.Contains(string(out), "namespace error") {
		return false, nil
	}
	for _, l := range strings.Split(string(out), "\n") {
		if m := xmllintLine.FindStringSubmatch(l); m != nil {
			n, _ := strconv.Atoi(m[1])
			if !slices.Contains(lines, n) {
				lines = append(lines, n)
			}
		}
	}
	slices.Sort(lines)
	return err == nil, lines
}

// ourVerdict is the schema check's verdict on file, as xmllint would
// give it: the document against its schema alone (a parameter set
// written inline in an .ssd is checked against its own schema too by
// ParseSSD, which xmllint, with the SSD schema only, takes as any XML).
func ourVerdict(t testing.TB, file string) (bool, []int, string) {
	t.Helper()
	root, err := xsd.Parse(read(t, file))
	if err != nil {
		var xe *xsd.Error
		if !errors.As(err, &xe) {
			t.Fatal(err)
		}
		return false, nil, err.Error() // as xmllintVerdict has it

	}
	errs := schemaOf(kindOf(file)).Validate(root)
	var lines []int
	var said []string
	for _, e := range errs {
		if !slices.Contains(lines, e.TagLine) {
			lines = append(lines, e.TagLine)
		}
		said = append(said, e.Error())
	}
	slices.Sort(lines)
	return len(errs) == 0, lines, strings.Join(said, "\n")
}

// The schema checks agree with xmllint on every fixture, valid and
// invalid, and on the example system's files: the same verdict, and
// errors on the same lines (libxml2 places an element's errors on the line
// its start tag ends).
func TestSchemaChecksAgreeWithXmllint(t *testing.T) {
	lint := xmllint(t)
	files, _ := filepath.Glob("testdata/*.ss?")
	more, _ := filepath.Glob("testdata/invalid/*.ss?")
	files = append(files, more...)
	examples, _ := filepath.Glob("../examples/system-cruise/*.ss?")
	files = append(files, examples...)
	if len(files) < 25 {
		t.Fatalf("only %d files to compare", len(files))
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			valid, lines := xmllintVerdict(t, lint, file)
			ok, ours, said := ourVerdict(t, file)
			if valid != ok || fmt.Sprint(lines) != fmt.Sprint(ours) {
				t.Errorf("xmllint: valid %v at lines %v; ours: valid %v at lines %v:\n%s", valid, lines, ok, ours, said)
			}
		})
	}
}

// Mutants of the valid fixtures (a line removed, doubled or swapped with
// the next, an attribute's value or name changed, an attribute of the xml
// or the XML Schema instance namespace added to an element), made the same
// every run, get the same verdict from xmllint and the schema checks, and
// the well-formed ones errors on the same lines.
func TestSchemaChecksAgreeWithXmllintOnMutants(t *testing.T) {
	lint := xmllint(t)
	dir := t.TempDir()
	values := []string{"", "x", "-1", "1e3", "true", "INF", "input", "0.5 1", "2.0", "300", "a b"}
	attr := regexp.MustCompile(`(\w+)="([^"]*)"`)
	// Namespaced attributes: the xml namespace's (declared nowhere in
	// SSP's schemas), the instance namespace's (the location hints any
	// element may carry, xsi:type of the right type, of none, of another,
	// with a prefix not bound, xsi:nil on elements none of which is
	// nillable, an xsi attribute XML Schema does not define).
	namespaced := []string{`xml:lang="en"`, `xml:space="preserve"`, `xml:bogus="1"`, `xsi:schemaLocation="urn:a a.xsd"`,
		`xsi:noNamespaceSchemaLocation="a.xsd"`, `xsi:type="foo"`, `xsi:type="ssd:TComponent"`, `xsi:type="ssc:TAnnotations"`,
		`xsi:type="ssv:TParameter"`, `xsi:type="nope:T"`, `xsi:type="xs:string"`, `xsi:nil="true"`, `xsi:nil="false"`, `xsi:foo="1"`}
	startTag := regexp.MustCompile(`<[A-Za-z][\w:]*`)
	seed := uint64(1)
	rnd := func(n int) int { // xorshift: the same mutants every run
		seed ^= seed << 13
		seed ^= seed >> 7
		seed ^= seed << 17
		return int(seed % uint64(n))
	}
	compared, invalid := 0, 0
	for _, src := range []string{"testdata/valid.ssd", "testdata/valid.ssv", "testdata/valid.ssm"} {
		// Every mutant declares the prefixes xsi and xs on its root.
		text := strings.Replace(string(read(t, src)), " xmlns:", ` xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:`, 1)
		lines := strings.Split(text, "\n")
		for i := range 150 {
			m := slices.Clone(lines)
			at := 1 + rnd(len(m)-2)
			switch rnd(6) {
			case 5:
				tags := startTag.FindAllStringIndex(m[at], -1)
				if len(tags) == 0 {
					continue
				}
				end := tags[rnd(len(tags))][1]
				m[at] = m[at][:end] + " " + namespaced[rnd(len(namespaced))] + m[at][end:]
			case 0:
				m = slices.Delete(m, at, at+1)
			case 1:
				m = slices.Insert(m, at, m[at])
			case 2:
				m[at], m[at+1] = m[at+1], m[at]
			case 3, 4:
				locs := attr.FindAllStringSubmatchIndex(m[at], -1)
				if len(locs) == 0 {
					continue
				}
				l := locs[rnd(len(locs))]
				if rnd(2) == 0 {
					m[at] = m[at][:l[4]] + values[rnd(len(values))] + m[at][l[5]:]
				} else {
					m[at] = m[at][:l[2]] + "x" + m[at][l[2]:]
				}
			}
			file := filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(src)))
			os.WriteFile(file, []byte(strings.Join(m, "\n")), 0o644)
			valid, theirs := xmllintVerdict(t, lint, file)
			ok, ours, said := ourVerdict(t, file)
			compared++
			if !valid {
				invalid++
			}
			if valid != ok || fmt.Sprint(theirs) != fmt.Sprint(ours) {
				out, _ := exec.Command(lint, "--noout", "--schema", filepath.Join("schema", docSchemas[kindOf(file)]), file).CombinedOutput()
				t.Errorf("%s (line %d changed): xmllint: valid %v at lines %v; ours: valid %v at lines %v:\n%s\nxmllint:\n%s", file, at+1, valid, theirs, ok, ours, said, out)
			}
		}
	}
	if compared < 100 || invalid < 30 {
		t.Errorf("%d mutants compared, %d of them invalid: too few to say much", compared, invalid)
	}
}
