package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/mailer"
	"github.com/clearhouse/clearhouse/notify"
	"github.com/clearhouse/clearhouse/store"
	"github.com/spf13/cobra"
)

// emailLease is how long a claimed email is kept from other senders.
const emailLease = 5 * time.Minute

// SendEmails sends the notification emails that are due, at most 100 a run. A
// failure is recorded on the email and retried later, backing off to once an hour;
// it never touches the market. It returns how many went out.
func (a *App) SendEmails(ctx context.Context) int {
	sent, err := a.sendEmails(ctx)
	if err != nil {
		a.log.Error("email outbox", "err", err)
	}
	return sent
}

// sendEmails is SendEmails returning the outbox's failure (a failure to send one
// email is not one: it is retried later).
func (a *App) sendEmails(ctx context.Context) (int, error) {
	es, err := a.Notices.ClaimEmails(ctx, 100, emailLease)
	if err != nil {
		return 0, err
	}
	sent := 0
	for _, e := range es {
		body := e.Body + "\n\n" + emailFooter(a.cfg.PublicURL)
		if err := a.cfg.Mail.Send(ctx, e.ToAddr, e.Subject, body); err != nil {
			backoff := min(time.Duration(1<<min(e.Attempts, 6))*time.Minute, time.Hour)
			a.log.Warn("email not sent; will retry", "email", e.ID, "attempt", e.Attempts, "retry_in", backoff, "err", err)
			if err := a.Notices.EmailFailed(ctx, e.ID, err.Error(), a.now().Add(backoff)); err != nil {
				a.log.Error("email outbox", "err", err)
			}
			continue
		}
		if err := a.Notices.EmailSent(ctx, e.ID); err != nil {
			a.log.Error("email outbox", "err", err)
			continue
		}
		sent++
	}
	if sent > 0 {
		a.log.Info("emails sent", "count", sent)
	}
	return sent, nil
}

// emailFooter ends every notification email: where to read notifications, and
// the setting that stops the emails (a full link when the public URL is known).
func emailFooter(publicURL string) string {
	base := strings.TrimRight(publicURL, "/")
	if base == "" {
		return "To stop these emails, press \"Stop emails\" under Emails on the Notifications page of Clearhouse (/notifications#email-settings)."
	}
	return "See your notifications: " + base + "/notifications\nTo stop these emails: " + base + "/notifications#email-settings"
}

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
				a := &App{cfg: Config{Mail: mc, PublicURL: publicURL}, log: log, now: time.Now, Notices: notify.New(db, time.Now)}
				fmt.Fprintf(cmd.OutOrStdout(), "%d emails sent\n", a.SendEmails(cmd.Context()))
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
