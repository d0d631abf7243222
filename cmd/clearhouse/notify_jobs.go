package main

import (
	"context"
	"strings"
	"time"
)

// emailLease is how long a claimed email is kept from other senders.
const emailLease = 5 * time.Minute

// SendEmails sends the notification emails that are due, at most 100 a run. A
// failure is recorded on the email and retried later, backing off to once an hour;
// it never touches the market. It returns how many went out.
func (a *App) SendEmails(ctx context.Context) int {
	es, err := a.Market.ClaimEmails(ctx, 100, emailLease)
	if err != nil {
		a.log.Error("email outbox", "err", err)
		return 0
	}
	sent := 0
	for _, e := range es {
		body := e.Body
		if a.cfg.PublicURL != "" {
			body += "\n\nSee your notifications: " + strings.TrimRight(a.cfg.PublicURL, "/") + "/notifications"
		}
		if err := a.cfg.Mail.Send(ctx, e.ToAddr, e.Subject, body); err != nil {
			backoff := min(time.Duration(1<<min(e.Attempts, 6))*time.Minute, time.Hour)
			a.log.Warn("email not sent; will retry", "email", e.ID, "attempt", e.Attempts, "retry_in", backoff, "err", err)
			if err := a.Market.EmailFailed(ctx, e.ID, err.Error(), a.now().Add(backoff)); err != nil {
				a.log.Error("email outbox", "err", err)
			}
			continue
		}
		if err := a.Market.EmailSent(ctx, e.ID); err != nil {
			a.log.Error("email outbox", "err", err)
			continue
		}
		sent++
	}
	if sent > 0 {
		a.log.Info("emails sent", "count", sent)
	}
	return sent
}
