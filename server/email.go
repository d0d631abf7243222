package server

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/notify"
	"github.com/clearhouse/clearhouse/store"
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

// SendOutbox is one run of the outbox on db outside a server (`clearhouse notify
// send`), as the server's e-mail job runs it: cfg gives the SMTP server and the
// public URL of the emails' links.
func SendOutbox(ctx context.Context, db *store.DB, cfg Config, log *slog.Logger) int {
	a := &App{cfg: cfg, log: log, now: time.Now, Notices: notify.New(db, time.Now)}
	return a.SendEmails(ctx)
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
