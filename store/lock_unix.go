//go:build unix

package store

import (
	"errors"
	"os"
	"syscall"
)

// flock takes an advisory lock on f without waiting: shared or exclusive. It
// reports busy when another open file holds a lock that conflicts (in this process
// too: flock locks belong to open files). The kernel drops the lock when the file
// is closed or its process dies, however it dies.
func flock(f *os.File, exclusive bool) (busy bool, err error) {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	err = syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return true, nil
	}
	return false, err
}
