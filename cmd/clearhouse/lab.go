package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/clearhouse/clearhouse/lab/labcmd"
)

// The research commands (simulate, share simulate and compare, abacus) live in
// lab/labcmd over package lab and the engines; the binary mounts them, with its own
// file handling (openIn, writeOut) and exit statuses.

func labOptions() labcmd.Options { return labcmd.Options{Open: openIn, WriteOut: writeOut} }

func newSimulateCmd() *cobra.Command { return labExits(labcmd.NewSimulate(labOptions())) }

func newAbacusCmd() *cobra.Command { return labExits(labcmd.NewAbacus(labOptions())) }

// newShareCmd groups CloudShare's experiment (lab/labcmd) with the idle-capacity jobs
// the server runs on its database (fairness reports and history).
func newShareCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "share",
		Short: "Idle capacity shared among teams: the fairness experiment of CloudShare",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	cmd.AddCommand(labExits(labcmd.NewShareSimulate(labOptions())), labExits(labcmd.NewShareCompare(labOptions())),
		newShareFairnessCmd(), newShareHistoryCmd())
	return cmd
}

// labExits makes a labcmd.ExitError, from cmd or any command under it, the binary's
// exit status.
func labExits(cmd *cobra.Command) *cobra.Command {
	if run := cmd.RunE; run != nil {
		cmd.RunE = func(c *cobra.Command, args []string) error {
			err := run(c, args)
			if ee, ok := errors.AsType[*labcmd.ExitError](err); ok {
				return &exitError{ee.Code, ee.Err}
			}
			return err
		}
	}
	for _, sub := range cmd.Commands() {
		labExits(sub)
	}
	return cmd
}
