package main

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The output flags (auction solve and gen --out, simulate and share simulate
// --report: every one goes through writeOut) write a named pipe in place: before
// issue 36 the output was renamed over whatever the path was, so --out /dev/null run
// as root replaced the device with a regular file. A reader of the pipe gets the
// whole output and the pipe is still a pipe.
func TestOutputToANamedPipeIsWrittenInPlace(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "out.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	inst := filepath.Join(dir, "inst.json")
	if code, _, errOut := runCLI(t, "", "auction", "gen", "--seed", "3", "--bidders", "20", "--out", inst); code != 0 {
		t.Fatalf("gen: %d %s", code, errOut)
	}
	type read struct {
		data []byte
		err  error
	}
	got := make(chan read, 1)
	go func() {
		f, err := os.Open(fifo) // blocks until the command opens the pipe for writing
		if err != nil {
			got <- read{err: err}
			return
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		got <- read{b, err}
	}()
	code, _, errOut := runCLI(t, "", "auction", "solve", "--in", inst, "--out", fifo, "--no-final-round")
	fi, err := os.Lstat(fifo)
	if err != nil || fi.Mode().Type() != fs.ModeNamedPipe {
		t.Fatalf("after solve --out %s (exit %d, %s): %v, %v; want a named pipe still", fifo, code, errOut, fi.Mode(), err)
	}
	if code != 0 {
		t.Fatalf("solve --out fifo: %d %s", code, errOut)
	}
	r := <-got
	if r.err != nil || !strings.Contains(string(r.data), `"prices"`) {
		t.Fatalf("the pipe's reader got %d bytes (%.80s), %v", len(r.data), r.data, r.err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".clearhouse-*")); len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// /dev/null itself (never replaced in a test: only written to, as the command does)
// is still the character device after --out /dev/null.
func TestOutputToDevNullLeavesTheDevice(t *testing.T) {
	before, err := os.Stat(os.DevNull)
	if err != nil || before.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice {
		t.Fatalf("%s is not a character device before the test (%v, %v)", os.DevNull, before.Mode(), err)
	}
	if code, out, errOut := runCLI(t, "", "auction", "gen", "--seed", "1", "--out", os.DevNull); code != 0 || out != "" {
		t.Fatalf("gen --out /dev/null: %d %q %s", code, out, errOut)
	}
	after, err := os.Lstat(os.DevNull)
	if err != nil || after.Mode() != before.Mode() || !os.SameFile(before, after) {
		t.Fatalf("%s after gen --out: %v (was %v), %v", os.DevNull, after.Mode(), before.Mode(), err)
	}
	if left, _ := filepath.Glob("/dev/.clearhouse-*"); len(left) > 0 {
		t.Errorf("temporary files left in /dev: %v", left)
	}
}

// A regular file is still replaced atomically and keeps its permissions, a symbolic
// link's target is written and the link kept, and a directory is refused with
// nothing written.
func TestOutputToFilesLinksAndDirectories(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "inst.json")
	if err := os.WriteFile(file, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "", "auction", "gen", "--seed", "1", "--out", file); code != 0 {
		t.Fatalf("gen --out file: %d %s", code, errOut)
	}
	fi, err := os.Stat(file)
	if b, _ := os.ReadFile(file); err != nil || !fi.Mode().IsRegular() || fi.Mode().Perm() != 0o640 || !strings.HasPrefix(string(b), "{") {
		t.Errorf("the file after gen --out: %v, %v, %.20q", fi.Mode(), err, b)
	}
	link := filepath.Join(dir, "latest.json")
	target := filepath.Join(dir, "target.json")
	if err := os.WriteFile(target, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target.json", link); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI(t, "", "auction", "gen", "--seed", "1", "--out", link); code != 0 {
		t.Fatalf("gen --out link: %d %s", code, errOut)
	}
	if lfi, err := os.Lstat(link); err != nil || lfi.Mode().Type() != fs.ModeSymlink {
		t.Errorf("the link after gen --out: %v, %v", lfi.Mode(), err)
	}
	if b, _ := os.ReadFile(target); !strings.HasPrefix(string(b), "{") {
		t.Errorf("the link's target holds %.20q", b)
	}
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "", "auction", "gen", "--seed", "1", "--out", sub)
	if dfi, err := os.Lstat(sub); code == 0 || !strings.Contains(errOut, "is a directory") || err != nil || !dfi.IsDir() {
		t.Errorf("gen --out a directory: %d %q; now %v, %v", code, errOut, dfi.Mode(), err)
	}
}
