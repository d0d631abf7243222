//go:build !unix

package store

import "os"

// flock is a no-op where advisory file locks are not available: restore cannot
// tell a running server there (docs/operating.md).
func flock(*os.File, bool) (bool, error) { return false, nil }
