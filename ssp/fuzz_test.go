package ssp

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// The readers take any bytes without panicking, and whatever they accept
// they read the same way again.
func FuzzParseSSD(f *testing.F) {
	seed(f, "testdata/valid.ssd", "testdata/invalid/*.ssd", "../examples/system-cruise/*.ssd")
	f.Fuzz(func(t *testing.T, data []byte) {
		d, ds := ParseSSD("f.ssd", data)
		if d == nil && ds.Errors() == 0 {
			t.Fatal("refused without saying why")
		}
		if d != nil {
			if again, _ := ParseSSD("f.ssd", data); len(again.System.Components) != len(d.System.Components) || len(again.System.Connections) != len(d.System.Connections) {
				t.Fatal("read differently the second time")
			}
		}
	})
}

func FuzzParseSSV(f *testing.F) {
	seed(f, "testdata/valid.ssv", "testdata/invalid/*.ssv", "../examples/system-cruise/*.ssv")
	f.Fuzz(func(t *testing.T, data []byte) {
		if s, ds := ParseSSV("f.ssv", data); s == nil && ds.Errors() == 0 {
			t.Fatal("refused without saying why")
		}
	})
}

func FuzzParseSSM(f *testing.F) {
	seed(f, "testdata/valid.ssm", "testdata/invalid/*.ssm")
	f.Fuzz(func(t *testing.T, data []byte) {
		if m, ds := ParseSSM("f.ssm", data); m == nil && ds.Errors() == 0 {
			t.Fatal("refused without saying why")
		}
	})
}

// An .ssp archive of any bytes is opened or refused with a reason, and
// nothing is unpacked outside its folder.
func FuzzOpenArchive(f *testing.F) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create(DefaultSSD)
	w.Write(read(f, "testdata/valid.ssd"))
	w, _ = zw.Create("resources/params.ssv")
	w.Write(read(f, "testdata/valid.ssv"))
	zw.Close()
	f.Add(buf.Bytes())
	f.Add([]byte("PK\x03\x04 not a zip"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		file := filepath.Join(dir, "f.ssp")
		os.WriteFile(file, data, 0o644)
		pk, ds, err := Open(file)
		switch {
		case err != nil:
		case pk == nil && ds.Errors() == 0:
			t.Fatal("refused without saying why")
		case pk != nil:
			unpacked := pk.Dir
			pk.Close()
			if _, err := os.Stat(unpacked); !os.IsNotExist(err) {
				t.Fatalf("the unpacked archive is still there after Close: %v", err)
			}
		}
		entries, _ := os.ReadDir(dir)
		if len(entries) != 1 {
			t.Fatalf("the archive's folder holds %d files: something was unpacked beside it", len(entries))
		}
	})
}

// seed adds the files that match each pattern.
func seed(f *testing.F, patterns ...string) {
	for _, p := range patterns {
		files, _ := filepath.Glob(p)
		for _, file := range files {
			f.Add(read(f, file))
		}
	}
}
