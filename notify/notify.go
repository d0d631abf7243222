// Package notify is what Clearhouse tells its users: notifications kept for the
// app's bell and page, one per user, kind and reference, and the e-mail outbox that
// carries them to users who have not turned email off (package mailer sends what
// the outbox holds). A sender claims an email for a lease, so two senders never
// take the same one at once.
//
// What a notification says is the market's: package exchange works out who hears
// of an auction's settlement or an order's approval and writes their messages with
// Send, inside the transaction of the change they tell of, so a message exists
// exactly when its change does. Users are identity's; notify reads their email
// address and whether they turned email off.
package notify

import (
	"context"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// Notification is one message to one user, shown in the app and, when email is on,
// queued in the outbox. A user gets at most one per kind and reference.
type Notification struct {
	ID        int64
	UserID    int64
	Kind      string
	Ref       string
	Subject   string
	Body      string
	Link      string // a path in the app
	CreatedAt time.Time
	ReadAt    *time.Time
}

// Email is a message in the outbox, waiting to be sent (or sent).
type Email struct {
	ID             int64
	NotificationID int64
	ToAddr         string
	Subject        string
	Body           string
	CreatedAt      time.Time
	NextAttemptAt  time.Time
	Attempts       int
	LastError      string
	SentAt         *time.Time
	DroppedAt      *time.Time // not sent: its user turned email off first
}

// TableName is the outbox's table.
func (Email) TableName() string { return "email_outbox" }

// MaxPage is the most notifications one call lists.
const MaxPage = 500

// Service keeps notifications and the outbox.
type Service struct {
	db    *store.DB
	now   func() time.Time
	email bool // queue an email for every notification
}

// New returns the notification service on db with the clock now.
func New(db *store.DB, now func() time.Time) *Service {
	return &Service{db: db, now: now}
}

// UseEmail turns queueing email for every notification on or off (off by default:
// a server without a mail server keeps notifications in the app only).
func (s *Service) UseEmail(on bool) { s.email = on }

// EmailOn says whether notifications are queued for email at all.
func (s *Service) EmailOn() bool { return s.email }

// Message is what one user is told: its kind and reference (a user gets at most
// one per pair), subject, body and a path in the app.
type Message struct {
	Kind, Ref, Subject, Body, Link string
}

// Send stores msg for each user in tx and queues its email when email is on and
// the user has not turned it off. Disabled users get nothing.
func (s *Service) Send(tx *gorm.DB, users []identity.User, msg func(u identity.User) Message) error {
	now := s.now()
	var rows [][]any
	var sent []identity.User
	var msgs []Message
	for _, u := range users {
		if u.DisabledAt != nil {
			continue
		}
		ms := msg(u)
		rows = append(rows, []any{u.ID, ms.Kind, ms.Ref, ms.Subject, ms.Body, ms.Link, now})
		sent, msgs = append(sent, u), append(msgs, ms)
	}
	ids, err := store.Insert(tx, "notifications", []string{"user_id", "kind", "ref", "subject", "body", "link", "created_at"}, rows, "id")
	if err != nil || !s.email {
		return err
	}
	var mails [][]any
	for i, id := range ids {
		if sent[i].EmailOffAt == nil {
			mails = append(mails, []any{id, sent[i].Email, msgs[i].Subject, msgs[i].Body, now, now})
		}
	}
	if len(mails) == 0 {
		return nil
	}
	_, err = store.Insert(tx, "email_outbox", []string{"notification_id", "to_addr", "subject", "body", "created_at", "next_attempt_at"}, mails, "")
	return err
}

// Notifications lists a user's newest notifications, at most limit (1 to MaxPage).
func (s *Service) Notifications(ctx context.Context, userID int64, limit int) ([]Notification, error) {
	if limit < 1 || limit > MaxPage {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "limit: between 1 and %d", MaxPage)
	}
	var ns []Notification
	return ns, s.db.Read.WithContext(ctx).Where("user_id = ?", userID).Order("id DESC").Limit(limit).Find(&ns).Error
}

// UnreadCount is how many of a user's notifications are unread.
func (s *Service) UnreadCount(ctx context.Context, userID int64) (int64, error) {
	var n int64
	return n, s.db.Read.WithContext(ctx).Model(&Notification{}).Where("user_id = ? AND read_at IS NULL", userID).Count(&n).Error
}

// MarkRead marks a user's notifications read: all of them, or those up to and
// including upTo when it is not zero. It returns how many it marked.
func (s *Service) MarkRead(ctx context.Context, userID, upTo int64) (int64, error) {
	q := s.db.Write.WithContext(ctx).Model(&Notification{}).Where("user_id = ? AND read_at IS NULL", userID)
	if upTo > 0 {
		q = q.Where("id <= ?", upTo)
	}
	res := q.Update("read_at", s.now())
	return res.RowsAffected, res.Error
}

// ClaimEmails takes up to limit emails that are due, leasing each for lease: a
// claimed email is not due again before the lease ends, so two senders never take
// the same one at once, and an email whose sender died is taken again later. Each
// claim counts an attempt. Emails of users who have turned email off since they
// were queued are dropped first, never sent.
func (s *Service) ClaimEmails(ctx context.Context, limit int, lease time.Duration) ([]Email, error) {
	now := s.now()
	if err := dropEmailsOff(s.db.Write.WithContext(ctx), now, 0); err != nil {
		return nil, err
	}
	var due []Email
	if err := s.db.Read.WithContext(ctx).Where("sent_at IS NULL AND dropped_at IS NULL AND next_attempt_at <= ?", now).Order("id").Limit(limit).Find(&due).Error; err != nil {
		return nil, err
	}
	var out []Email
	for _, e := range due {
		res := s.db.Write.WithContext(ctx).Model(&Email{}).
			Where("id = ? AND sent_at IS NULL AND dropped_at IS NULL AND next_attempt_at = ?", e.ID, e.NextAttemptAt).
			Updates(map[string]any{"next_attempt_at": now.Add(lease), "attempts": gorm.Expr("attempts + 1")})
		if res.Error != nil {
			return out, res.Error
		}
		if res.RowsAffected == 1 {
			e.Attempts++
			out = append(out, e)
		}
	}
	return out, nil
}

// EmailSent records that an email went out; marking it again changes nothing.
func (s *Service) EmailSent(ctx context.Context, id int64) error {
	return s.db.Write.WithContext(ctx).Model(&Email{}).Where("id = ? AND sent_at IS NULL", id).Update("sent_at", s.now()).Error
}

// EmailFailed records why an email could not be sent and when to try again.
func (s *Service) EmailFailed(ctx context.Context, id int64, why string, retryAt time.Time) error {
	if len(why) > 500 {
		why = why[:500]
	}
	return s.db.Write.WithContext(ctx).Model(&Email{}).Where("id = ? AND sent_at IS NULL", id).
		Updates(map[string]any{"last_error": why, "next_attempt_at": retryAt}).Error
}

// SetEmailNotifications turns a user's notification emails on or off. Off, the
// user still gets every notification in the app; no email is queued for them, and
// emails queued but not yet sent are dropped in the same transaction. Turning it
// on again sends only what comes after. Setting what is already set changes
// nothing.
func (s *Service) SetEmailNotifications(ctx context.Context, userID int64, on bool) error {
	now := s.now()
	return s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if on {
			return tx.Model(&identity.User{}).Where("id = ?", userID).Update("email_off_at", nil).Error
		}
		if err := tx.Model(&identity.User{}).Where("id = ? AND email_off_at IS NULL", userID).Update("email_off_at", now).Error; err != nil {
			return err
		}
		return dropEmailsOff(tx, now, userID)
	})
}

// dropEmailsOff marks unsent emails of users who have turned email off as
// dropped: of one user, or of everyone when userID is 0.
func dropEmailsOff(tx *gorm.DB, now time.Time, userID int64) error {
	off := tx.Table("notifications").Select("notifications.id").
		Joins("JOIN users ON users.id = notifications.user_id").Where("users.email_off_at IS NOT NULL")
	if userID != 0 {
		off = off.Where("users.id = ?", userID)
	}
	return tx.Model(&Email{}).Where("sent_at IS NULL AND dropped_at IS NULL AND notification_id IN (?)", off).
		Update("dropped_at", now).Error
}
