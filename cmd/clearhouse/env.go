package main

import (
	"github.com/spf13/cobra"

	"github.com/clearhouse/clearhouse/agent/agentcmd"
)

// bindEnv sets every flag of cmd that was not given on the command line from the
// environment variable CLEARHOUSE_<NAME> (upper case, dashes as underscores), so that
// one configuration can come from flags, the environment, or both.
//
// The rule is agentcmd.BindEnv, shared with clearhouse-agent.
func bindEnv(cmd *cobra.Command, lookup func(string) (string, bool)) error {
	return agentcmd.BindEnv(cmd, lookup)
}
