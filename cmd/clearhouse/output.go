package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
)

// writeOut writes data where an output flag (--out, --report) points: standard
// output for "-"; a regular file (or a new one) atomically, through a temporary file
// beside it renamed into place, keeping an existing file's permissions; anything else
// that exists (a device such as /dev/null, a named pipe, a terminal) in place, opened
// for writing as it is, never replaced. A directory is refused. A symbolic link is
// followed: its target is written, the link kept.
func writeOut(cmd *cobra.Command, path string, data []byte) error {
	if path == "-" {
		_, err := cmd.OutOrStdout().Write(data)
		return err
	}
	target, err := filepath.EvalSymlinks(path)
	if errors.Is(err, fs.ErrNotExist) {
		target, err = path, nil // a new file (or a dangling link, whose directory decides)
	}
	if err != nil {
		return err
	}
	fi, err := os.Stat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return writeAtomic(target, data, 0o644)
	case err != nil:
		return err
	case fi.IsDir():
		return fmt.Errorf("%s is a directory: name a file in it", path)
	case fi.Mode().IsRegular():
		return writeAtomic(target, data, fi.Mode().Perm())
	}
	return writeInPlace(target, data)
}

// writeInPlace writes data to an existing file that is not a regular one (a device,
// a named pipe), as a shell's > would, without creating or truncating anything.
func writeInPlace(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeAtomic writes data to a temporary file in path's directory and renames it over
// path, so that a reader never sees half a file; perm is the file's permissions.
func writeAtomic(path string, data []byte, perm fs.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".clearhouse-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
