package storetest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/clearhouse/clearhouse/migrations"
	"github.com/clearhouse/clearhouse/store"
)

// The migrated SQLite template is the same file for every test binary built from the
// same migrations, so the first binary to migrate it leaves a copy in
// os.TempDir()/clearhouse-storetest, named by a hash of what made it, and the others
// read it instead of migrating again: under the race detector a migration of an
// empty file costs about half a second of CPU (goose's SQL parser), once in each of
// the race pass's test binaries. The name covers the SQLite migrations' files, the
// store package's sources (Open's settings, Migrate's provider), the module's go.mod
// and go.sum (goose's and the SQLite driver's versions) and Go's version; when one of
// them cannot be read (a binary run outside the module's tree) nothing is cached. A
// copy is written to a temporary name and renamed, so a reader never sees half a file, and
// two binaries migrating at once both write the same bytes. Opening a copy still
// runs Migrate, which would apply anything pending.

// templateCacheDir is where the migrated templates are kept between test binaries.
func templateCacheDir() string { return filepath.Join(os.TempDir(), "clearhouse-storetest") }

// cachedTemplate returns the template a test binary with the same key wrote, if any.
func cachedTemplate(key string) ([]byte, bool) {
	if key == "" {
		return nil, false
	}
	b, err := os.ReadFile(filepath.Join(templateCacheDir(), key+".db"))
	if err != nil || len(b) == 0 {
		return nil, false
	}
	return b, true
}

// keepTemplate leaves file for the next test binaries under key, best effort: a
// failure only means the next binary migrates again.
func keepTemplate(key string, file []byte) {
	if key == "" {
		return
	}
	dir := templateCacheDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return
	}
	f, err := os.CreateTemp(dir, key+".*.tmp")
	if err != nil {
		return
	}
	_, werr := f.Write(file)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(f.Name(), filepath.Join(dir, key+".db")) != nil {
		os.Remove(f.Name())
	}
}

// templateKey names the migrated SQLite template by everything it is made of, or is
// "" when some of it cannot be read.
func templateKey() string {
	root := moduleRoot()
	if root == "" {
		return ""
	}
	storeDir := filepath.Join(root, "store")
	h := sha256.New()
	fmt.Fprintln(h, "clearhouse storetest sqlite template 1", runtime.Version())
	for _, name := range []string{"go.mod", "go.sum"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			return ""
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
	}
	fsys, err := migrations.FS(store.SQLite)
	if err != nil || hashFiles(h, fsys, ".sql") != nil || hashFiles(h, os.DirFS(storeDir), ".go") != nil {
		return ""
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// moduleRoot is the directory of the module's go.mod, found from the working
// directory up (go test runs a test binary in its package's directory), or "" when
// there is none. Not from runtime.Caller: under -trimpath (make test, CI) a file's
// name there is its module path, not a path on disk.
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil {
			first, _, _ := strings.Cut(string(b), "\n")
			if strings.TrimSpace(first) == "module github.com/clearhouse/clearhouse" {
				return dir
			}
			return "" // another module's (tools/kube's, a test's temporary one)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// hashFiles writes the names and contents of fsys's top-level files ending in ext
// (not tests) into h, in name order, and fails when there are none.
func hashFiles(h interface{ Write([]byte) (int, error) }, fsys fs.FS, ext string) error {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return err
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ext) || strings.HasSuffix(name, "_test.go") {
			continue
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s %d\n", name, len(b))
		h.Write(b)
		n++
	}
	if n == 0 {
		return fmt.Errorf("no %s files", ext)
	}
	return nil
}
