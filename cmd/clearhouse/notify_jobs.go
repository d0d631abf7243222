package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/clearhouse/clearhouse/mailer"
	"github.com/clearhouse/clearhouse/server"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

// newNotifyCmd is "clearhouse notify": the notification jobs from the command line.
func newNotifyCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "notify", Short: "Notification jobs: send the emails waiting in the outbox"}
	cmd.AddCommand(newNotifySendCmd())
	return cmd
}

func newNotifySendCmd() *cobra.Command {
	var publicURL string
	var mc mailer.Config
	cmd := &cobra.Command{
		Use:   "send",
		Short: "Send the notification emails that are due, once (what serve's job does every --tick)",
		Long: `Send the notification emails that are due through the SMTP server, once, and print
how many went out. Emails that fail stay in the outbox and are retried later. The SMTP
password, if the server needs one, is read from CLEARHOUSE_SMTP_PASSWORD.`,
		Example: `  clearhouse notify send --smtp-addr mail.example.com:587 --smtp-from market@example.com`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			mc.Password = os.Getenv("CLEARHOUSE_SMTP_PASSWORD")
			if !mc.Enabled() {
				return &exitError{2, errors.New("--smtp-addr: give the SMTP server to send through")}
			}
			if err := mc.Validate(); err != nil {
				return &exitError{2, err}
			}
			return withDB(cmd, func(db *store.DB) error {
				log := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
				sent := server.SendOutbox(cmd.Context(), db, server.Config{Mail: mc, PublicURL: publicURL}, log)
				fmt.Fprintf(cmd.OutOrStdout(), "%d emails sent\n", sent)
				return nil
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&mc.Addr, "smtp-addr", "", "host:port of the SMTP server")
	f.StringVar(&mc.From, "smtp-from", "", "the address emails come from")
	f.StringVar(&mc.Username, "smtp-user", "", "user name for the SMTP server (its password in CLEARHOUSE_SMTP_PASSWORD)")
	f.DurationVar(&mc.Timeout, "smtp-timeout", 30*time.Second, "the longest one email may take to send")
	f.StringVar(&publicURL, "public-url", "", "the URL users reach Clearhouse at, for the link in each email")
	return cmd
}
