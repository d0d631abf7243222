package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/clearhouse/clearhouse/agent/agentcmd"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
)

// agentOptions is the server binary's agent: the backends agent_backends.go imports,
// kubernetes left out (its client would be most of the server's binary) with a pointer
// to clearhouse-agent, which carries every backend.
func agentOptions() agentcmd.Options {
	return agentcmd.Options{Path: "clearhouse agent", Version: version, Backends: serverBackends,
		Elsewhere: map[string]string{"kubernetes": "run " + agentcmd.Binary + " --backend kubernetes, with the same flags (it carries every backend; see docs/kubernetes.md)"}}
}

// newAgentCmd returns the agent command (agent/agentcmd, which clearhouse-agent
// runs too), with the token subcommand, which reads the server's database.
func newAgentCmd() *cobra.Command {
	cmd := agentcmd.New(agentOptions())
	runAgent := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		err := runAgent(cmd, args)
		var ee *agentcmd.ExitError
		if errors.As(err, &ee) {
			return &exitError{ee.Code, ee.Err}
		}
		return err
	}
	cmd.AddCommand(newAgentTokenCmd())
	return cmd
}

func newAgentTokenCmd() *cobra.Command {
	var cluster, name string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Issue a cluster agent's API token; the token is printed on the last line",
		Long: `Issue a bearer token for one cluster's agent: it reads that cluster's allocation and
reports its updates, and nothing else. The token is shown once, on the last line of
the output; only its hash is stored.`,
		Example: `  TOKEN=$(clearhouse agent token --cluster us-east | tail -n 1)`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withDB(cmd, func(db *store.DB) error {
				id := identity.NewIdentity(db, time.Now, server.PasswordCost)
				if name == "" {
					name = "agent " + cluster + " " + time.Now().UTC().Format(time.DateOnly)
				}
				token, _, err := id.IssueAgentToken(cmd.Context(), cluster, name)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "agent token for cluster %s, shown once:\n%s\n", cluster, token)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cluster, "cluster", "", "the cluster the agent runs (required)")
	f.StringVar(&name, "name", "", "a label for the token")
	_ = cmd.MarkFlagRequired("cluster")
	return cmd
}
