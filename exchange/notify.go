package exchange

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/store"
	"gorm.io/gorm"
)

// Notification kinds.
const (
	NoticeAuctionSettled = "auction_settled" // ref "auction:N": the team's outcome
	NoticeAuctionFailed  = "auction_failed"  // ref "auction:N": nothing moved
	NoticeApprovalNeeded = "approval_needed" // ref "order:N": an owner's decision is needed
	NoticeOrderApproved  = "order_approved"  // ref "order:N": to whoever placed it
	NoticeOrderRejected  = "order_rejected"  // ref "order:N": to whoever placed it
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

// UseEmail turns queueing email for every notification on or off (off by default:
// a server without a mail server keeps notifications in the app only).
func (m *Market) UseEmail(on bool) { m.email = on }

// EmailOn says whether notifications are queued for email at all.
func (m *Market) EmailOn() bool { return m.email }

// message is a notification to the users of some teams, worked out before it is
// written.
type message struct {
	kind, ref, subject, body, link string
}

// notifyUsers stores msg for each user in tx and queues its email when email is on
// and the user has not turned it off. Disabled users get nothing.
func (m *Market) notifyUsers(tx *gorm.DB, users []identity.User, msg func(u identity.User) message) error {
	now := m.now()
	var rows [][]any
	var sent []identity.User
	var msgs []message
	for _, u := range users {
		if u.DisabledAt != nil {
			continue
		}
		ms := msg(u)
		rows = append(rows, []any{u.ID, ms.kind, ms.ref, ms.subject, ms.body, ms.link, now})
		sent, msgs = append(sent, u), append(msgs, ms)
	}
	ids, err := store.Insert(tx, "notifications", []string{"user_id", "kind", "ref", "subject", "body", "link", "created_at"}, rows, "id")
	if err != nil || !m.email {
		return err
	}
	var mails [][]any
	for i, id := range ids {
		if sent[i].EmailOffAt == nil {
			mails = append(mails, []any{id, sent[i].Email, msgs[i].subject, msgs[i].body, now, now})
		}
	}
	if len(mails) == 0 {
		return nil
	}
	_, err = store.Insert(tx, "email_outbox", []string{"notification_id", "to_addr", "subject", "body", "created_at", "next_attempt_at"}, mails, "")
	return err
}

// teamUsers returns the members and owners of teams, by team.
func teamUsers(tx *gorm.DB, teams []string, roles ...identity.Role) (map[string][]identity.User, error) {
	out := map[string][]identity.User{}
	for part := range slices.Chunk(teams, chunkSize) {
		var us []identity.User
		q := tx.Where("team_id IN ?", part)
		if len(roles) > 0 {
			q = q.Where("role IN ?", roles)
		}
		if err := q.Order("id").Find(&us).Error; err != nil {
			return nil, err
		}
		for _, u := range us {
			out[u.TeamID] = append(out[u.TeamID], u)
		}
	}
	return out, nil
}

// maxOrderLines bounds the orders one settlement message lists; the rest are
// counted.
const maxOrderLines = 20

// notifySettled tells every member and owner of each team with an order in the
// run what its orders got: won, lost or rejected, paid and received. It runs in
// the settlement's transaction, so the messages exist exactly when the settlement
// does, once.
func (m *Market) notifySettled(tx *gorm.DB, a Auction, converged bool, views []OrderView, lines []SettlementLine, rejected []int64) error {
	type outcome struct {
		won, lost, rejected int
		paid, received      int64
		orders              []string // the first maxOrderLines orders' lines
		more                int      // orders beyond those
	}
	byTeam := map[string]*outcome{}
	get := func(team string) *outcome {
		if byTeam[team] == nil {
			byTeam[team] = &outcome{}
		}
		return byTeam[team]
	}
	specs := make(map[int64]OrderSpec, len(views))
	for _, v := range views {
		specs[v.ID] = v.Spec
	}
	say := func(o *outcome, format string, args ...any) {
		if len(o.orders) >= maxOrderLines {
			o.more++
			return
		}
		o.orders = append(o.orders, fmt.Sprintf(format, args...))
	}
	for _, l := range lines {
		o := get(l.TeamID)
		switch {
		case l.BundleIndex < 0:
			o.lost++
			say(o, "Order #%d got nothing; its holds were released.", l.OrderID)
		case l.Payment >= 0:
			o.won++
			o.paid += l.Payment
			say(o, "Order #%d won %s and paid %s.", l.OrderID, specs[l.OrderID].Bundles[l.BundleIndex], moneyfmt.Cents(l.Payment))
		default:
			o.won++
			o.received -= l.Payment
			say(o, "Order #%d sold %s and received %s.", l.OrderID, specs[l.OrderID].Bundles[l.BundleIndex], moneyfmt.Cents(-l.Payment))
		}
	}
	if len(rejected) > 0 {
		var os []Order
		if err := tx.Where("id IN ?", rejected).Find(&os).Error; err != nil {
			return err
		}
		for _, o := range os {
			get(o.TeamID).rejected++
			say(get(o.TeamID), "Order #%d was still waiting for approval and was rejected; its holds were released.", o.ID)
		}
	}
	teams := make([]string, 0, len(byTeam))
	for t := range byTeam {
		teams = append(teams, t)
	}
	sort.Strings(teams)
	users, err := teamUsers(tx, teams)
	if err != nil {
		return err
	}
	var all []identity.User
	for _, t := range teams {
		all = append(all, users[t]...)
	}
	ref := fmt.Sprintf("auction:%d", a.ID)
	return m.notifyUsers(tx, all, func(u identity.User) message {
		o := byTeam[u.TeamID]
		var b strings.Builder
		if !converged {
			fmt.Fprintf(&b, "Auction #%d did not clear, so nothing was bought or sold; every hold of your team's orders was released.\n\n", a.ID)
			return message{NoticeAuctionFailed, ref, fmt.Sprintf("Auction #%d did not clear", a.ID), b.String() + orderList(o.orders, o.more), fmt.Sprintf("/auctions/%d", a.ID)}
		}
		fmt.Fprintf(&b, "Auction #%d has settled. Team %s: %d of %d orders won", a.ID, u.TeamID, o.won, o.won+o.lost+o.rejected)
		if o.paid > 0 {
			fmt.Fprintf(&b, "; paid %s", moneyfmt.Cents(o.paid))
		}
		if o.received > 0 {
			fmt.Fprintf(&b, "; received %s", moneyfmt.Cents(o.received))
		}
		b.WriteString(".\n\n")
		subject := fmt.Sprintf("Auction #%d settled: %d of %d orders won", a.ID, o.won, o.won+o.lost+o.rejected)
		return message{NoticeAuctionSettled, ref, subject, b.String() + orderList(o.orders, o.more), "/orders"}
	})
}

func orderList(lines []string, more int) string {
	if more > 0 {
		lines = append(lines[:len(lines):len(lines)], fmt.Sprintf("… and %d more; see your orders.", more))
	}
	return strings.Join(lines, "\n")
}

// notifyApproval tells the team's owners that order o waits for one of them.
func (m *Market) notifyApproval(tx *gorm.DB, o Order, by identity.User, spec OrderSpec) error {
	owners, err := teamUsers(tx, []string{o.TeamID}, identity.RoleOwner)
	if err != nil {
		return err
	}
	who := by.Name
	if who == "" {
		who = by.Email
	}
	return m.notifyUsers(tx, owners[o.TeamID], func(identity.User) message {
		body := fmt.Sprintf("%s placed order #%d for team %s. It could pay up to %s, above the team's approval threshold, so it takes part in the auction only once an owner approves it. Orders still waiting when the auction closes are rejected.\n\n%s",
			who, o.ID, o.TeamID, moneyfmt.Cents(int64(spec.MaxPayment())), bundlesText(spec))
		return message{NoticeApprovalNeeded, fmt.Sprintf("order:%d", o.ID), fmt.Sprintf("Order #%d waits for your approval", o.ID), body, "/approvals"}
	})
}

func bundlesText(spec OrderSpec) string {
	parts := make([]string, len(spec.Bundles))
	for i, b := range spec.Bundles {
		parts[i] = fmt.Sprintf("Bundle %d: %s", i+1, b)
	}
	return strings.Join(parts, "\n")
}

// Notifications lists a user's newest notifications, at most limit (1 to MaxPage).
func (m *Market) Notifications(ctx context.Context, userID int64, limit int) ([]Notification, error) {
	if limit < 1 || limit > MaxPage {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "limit: between 1 and %d", MaxPage)
	}
	var ns []Notification
	return ns, m.db.Read.WithContext(ctx).Where("user_id = ?", userID).Order("id DESC").Limit(limit).Find(&ns).Error
}

// UnreadCount is how many of a user's notifications are unread.
func (m *Market) UnreadCount(ctx context.Context, userID int64) (int64, error) {
	var n int64
	return n, m.db.Read.WithContext(ctx).Model(&Notification{}).Where("user_id = ? AND read_at IS NULL", userID).Count(&n).Error
}

// MarkRead marks a user's notifications read: all of them, or those up to and
// including upTo when it is not zero. It returns how many it marked.
func (m *Market) MarkRead(ctx context.Context, userID, upTo int64) (int64, error) {
	q := m.db.Write.WithContext(ctx).Model(&Notification{}).Where("user_id = ? AND read_at IS NULL", userID)
	if upTo > 0 {
		q = q.Where("id <= ?", upTo)
	}
	res := q.Update("read_at", m.now())
	return res.RowsAffected, res.Error
}

// ClaimEmails takes up to limit emails that are due, leasing each for lease: a
// claimed email is not due again before the lease ends, so two senders never take
// the same one at once, and an email whose sender died is taken again later. Each
// claim counts an attempt. Emails of users who have turned email off since they
// were queued are dropped first, never sent.
func (m *Market) ClaimEmails(ctx context.Context, limit int, lease time.Duration) ([]Email, error) {
	now := m.now()
	if err := dropEmailsOff(m.db.Write.WithContext(ctx), now, 0); err != nil {
		return nil, err
	}
	var due []Email
	if err := m.db.Read.WithContext(ctx).Where("sent_at IS NULL AND dropped_at IS NULL AND next_attempt_at <= ?", now).Order("id").Limit(limit).Find(&due).Error; err != nil {
		return nil, err
	}
	var out []Email
	for _, e := range due {
		res := m.db.Write.WithContext(ctx).Model(&Email{}).
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
func (m *Market) EmailSent(ctx context.Context, id int64) error {
	return m.db.Write.WithContext(ctx).Model(&Email{}).Where("id = ? AND sent_at IS NULL", id).Update("sent_at", m.now()).Error
}

// EmailFailed records why an email could not be sent and when to try again.
func (m *Market) EmailFailed(ctx context.Context, id int64, why string, retryAt time.Time) error {
	if len(why) > 500 {
		why = why[:500]
	}
	return m.db.Write.WithContext(ctx).Model(&Email{}).Where("id = ? AND sent_at IS NULL", id).
		Updates(map[string]any{"last_error": why, "next_attempt_at": retryAt}).Error
}
