package store

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/clearhouse/clearhouse"
)

// LockPath is the lock file beside the SQLite database at path: every server and
// command that opens the database to use it (HoldInUse) holds it shared for as
// long as it runs, and restore holds it exclusive while it replaces the database,
// so neither starts while the other runs.
// Query parameters of a file: DSN are not part of the file's name.
func LockPath(path string) string {
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	return path + ".lock"
}

// HoldInUse takes the shared lock of the SQLite database at path (LockPath) until
// db is closed. Returns ECONFLICT when a restore of the database is under way.
func (db *DB) HoldInUse(path string) error {
	if strings.Contains(path, ":memory:") || strings.Contains(path, "mode=memory") {
		return nil // no file another process could replace
	}
	f, err := lockFile(path, false, "a restore of %s is under way; start again once it has finished")
	if err != nil {
		return err
	}
	db.lock = f
	return nil
}

// LockForRestore takes the exclusive lock of the SQLite database at path
// (LockPath) and returns what releases it. Returns ECONFLICT, saying how to stop
// it, when a server or a command holds the database.
func LockForRestore(path string) (release func() error, err error) {
	f, err := lockFile(path, true, "%s is in use: a Clearhouse server (or another command) has it open. Stop the server first "+
		"(systemctl stop clearhouse, docker stop CONTAINER, or Ctrl-C in its terminal; it finishes its jobs and exits), then run restore again")
	if err != nil {
		return nil, err
	}
	return f.Close, nil
}

func lockFile(path string, exclusive bool, busyMsg string) (*os.File, error) {
	f, err := os.OpenFile(LockPath(path), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", LockPath(path), err)
	}
	busy, err := flock(f, exclusive)
	if err == nil && busy {
		err = clearhouse.Errorf(clearhouse.ECONFLICT, busyMsg, path)
	}
	if err != nil {
		return nil, errors.Join(err, f.Close())
	}
	return f, nil
}
