package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// bindEnv sets every flag of cmd that was not given on the command line from the
// environment variable CLEARHOUSE_<NAME> (upper case, dashes as underscores), so that
// one configuration can come from flags, the environment, or both.
func bindEnv(cmd *cobra.Command, lookup func(string) (string, bool)) error {
	var firstErr error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if firstErr != nil || f.Changed || f.Name == "help" || f.Name == "version" {
			return
		}
		name := "CLEARHOUSE_" + strings.ToUpper(strings.ReplaceAll(f.Name, "-", "_"))
		if v, ok := lookup(name); ok {
			if err := cmd.Flags().Set(f.Name, v); err != nil {
				firstErr = fmt.Errorf("%s=%q: %w", name, v, err)
			}
		}
	})
	return firstErr
}
