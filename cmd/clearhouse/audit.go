package main

import (
	"os"
	"os/user"

	"github.com/clearhouse/clearhouse/audit"
)

// cliActor is who the audit trail records for a change made from the command line:
// the operating-system user running it (USER when the user database has no name).
func cliActor() audit.Actor {
	name := os.Getenv("USER")
	if u, err := user.Current(); err == nil && u.Username != "" {
		name = u.Username
	}
	return audit.Actor{Kind: audit.KindCLI, Name: name}
}
