// Package audit is the audit trail: one append-only row for every action that
// changes money, quota or the market's rules, written by the service that makes the
// change inside its own transaction (Record), so the change and its row commit
// together or not at all. A row says who (Actor: a person, a token, the command
// line), when (UTC), from which address, what (an action name and the object it
// touched) and the values before and after, as JSON.
//
// Rows are numbered without gaps and chained: each row's hash is SHA-256 over its
// content and the previous row's hash, and audit_head keeps the last number and hash.
// Every append takes audit_head's row first (FOR UPDATE on PostgreSQL; SQLite has one
// writer), so concurrent writers queue and never fork the chain; Verify recomputes it
// and finds a row edited, deleted or inserted out of turn. Call Record last in a
// transaction: the head's row lock is then the last lock taken, and a writer waiting
// for it holds no lock the holder still needs (exchange's lock order, level 9).
//
// The actor travels in the context: web's identity middleware and the command line
// set it (WithActor) and every service reads it (From), so a service method needs no
// new parameter. A change made with no actor in its context is recorded as "system".
//
// The package knows nothing of the market or of identity: actions and objects are
// strings the services choose (see Actions for the list the trail page offers).
package audit

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/clearhouse/clearhouse"
)

// Actor is who made a change. Kind is "user" (a signed-in person), "token" (an API
// token, with the person it belongs to if any), "cli" (the command line, Name the
// operating-system user), "provider" (a sign-in through the company's OpenID
// Provider, applying the group mapping) or "system" (a scheduled job, or a change
// made with no actor in its context).
type Actor struct {
	Kind    string
	UserID  int64
	Email   string
	TokenID int64
	Name    string
	// Address is the client's address as the web layer determined it (the peer, or
	// the client behind a trusted proxy); empty for the command line and jobs.
	Address string
}

// Actor kinds.
const (
	KindUser     = "user"
	KindToken    = "token"
	KindCLI      = "cli"
	KindProvider = "provider"
	KindSystem   = "system"
)

// String is the actor as the trail shows it: "user 3 ana@example.com", "token 7 of
// user 3 ana@example.com", "cli root", "system".
func (a Actor) String() string {
	person := ""
	if a.UserID != 0 || a.Email != "" {
		person = strings.TrimSpace("user " + idText(a.UserID) + " " + a.Email)
	}
	switch a.Kind {
	case KindUser:
		return person
	case KindToken:
		if person != "" {
			return "token " + idText(a.TokenID) + " of " + person
		}
		return strings.TrimSpace("token " + idText(a.TokenID) + " " + a.Name)
	case KindCLI:
		return strings.TrimSpace("cli " + a.Name)
	case KindProvider:
		return strings.TrimSpace("provider sign-in " + a.Email)
	case "":
		return KindSystem
	}
	return strings.TrimSpace(a.Kind + " " + a.Name)
}

func idText(id int64) string {
	if id == 0 {
		return ""
	}
	return strconv.FormatInt(id, 10)
}

type actorKey struct{}

// WithActor returns ctx carrying a as the actor of every change made with it.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// From is the actor ctx carries; Kind "system" when it carries none.
func From(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok && a.Kind != "" {
		return a
	}
	return Actor{Kind: KindSystem}
}

// Event is one change to record: the action's name (a dotted word such as
// "budget.grant", see Actions), the object it touched ("team:ml", "pool:c1/gpu"),
// and the values before and after, each marshalled to JSON (nil records none: a
// creation has no before, a removal no after). At is when the change happened; zero
// means the time of the call.
type Event struct {
	Action string
	Object string
	Before any
	After  any
	At     time.Time
}

// Row is one stored row of the trail.
type Row struct {
	Seq          int64 `gorm:"primaryKey;autoIncrement:false"`
	At           time.Time
	Actor        string
	ActorUserID  *int64
	ActorTokenID *int64
	Address      string
	Action       string
	Object       string
	BeforeJSON   string `gorm:"column:before_json"`
	AfterJSON    string `gorm:"column:after_json"`
	PrevHash     string
	Hash         string
}

// TableName is the trail's table.
func (Row) TableName() string { return "audit" }

type head struct {
	ID   int64 `gorm:"primaryKey"`
	Seq  int64
	Hash string
}

func (head) TableName() string { return "audit_head" }

// Record appends e to the trail inside tx, the transaction of the change it
// describes, with the actor ctx carries. It takes the trail's head row (FOR UPDATE on
// PostgreSQL) until tx ends, so call it last in the transaction. Returns EINVALID for
// an event without an action or with a value that does not marshal to JSON, or the
// database's error; either way the caller's transaction must roll back, so a change
// is never kept without its row.
func Record(ctx context.Context, tx *gorm.DB, e Event) error {
	if e.Action == "" {
		return clearhouse.Errorf(clearhouse.EINVALID, "An audit event needs an action.")
	}
	before, err := marshal(e.Before)
	if err != nil {
		return err
	}
	after, err := marshal(e.After)
	if err != nil {
		return err
	}
	at := e.At
	if at.IsZero() {
		at = time.Now()
	}
	a := From(ctx)
	r := Row{At: at.UTC().Truncate(time.Microsecond), Actor: a.String(), Address: a.Address,
		Action: e.Action, Object: e.Object, BeforeJSON: before, AfterJSON: after}
	if a.UserID != 0 {
		r.ActorUserID = &a.UserID
	}
	if a.TokenID != 0 {
		r.ActorTokenID = &a.TokenID
	}
	q := tx.WithContext(ctx)
	if tx.Dialector.Name() == "postgres" {
		q = q.Clauses(clause.Locking{Strength: "UPDATE"})
	}
	var h head
	if err := q.Take(&h, "id = 1").Error; err != nil {
		return fmt.Errorf("audit: reading the trail's head: %w", err)
	}
	r.Seq, r.PrevHash = h.Seq+1, h.Hash
	r.Hash = r.digest()
	if err := tx.WithContext(ctx).Create(&r).Error; err != nil {
		return fmt.Errorf("audit: appending to the trail: %w", err)
	}
	res := tx.WithContext(ctx).Model(&head{}).Where("id = 1 AND seq = ?", h.Seq).
		Updates(map[string]any{"seq": r.Seq, "hash": r.Hash})
	if res.Error != nil {
		return fmt.Errorf("audit: moving the trail's head: %w", res.Error)
	}
	if res.RowsAffected != 1 {
		return clearhouse.Errorf(clearhouse.ECONFLICT, "The audit trail moved while recording; try again.")
	}
	return nil
}

func marshal(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // the trail keeps text as typed; pages escape it
	if err := enc.Encode(v); err != nil {
		return "", clearhouse.Errorf(clearhouse.EINVALID, "An audit value does not marshal to JSON: %v", err)
	}
	out := strings.TrimSuffix(b.String(), "\n")
	if out == "null" {
		return "", nil
	}
	return out, nil
}

// digest is the row's hash: SHA-256, in hex, over its content and the previous row's
// hash, as one JSON array (a fixed order of fields, so the same row always gives the
// same bytes). The time is UTC to the microsecond, what both databases keep.
func (r Row) digest() string {
	var uid, tid int64
	if r.ActorUserID != nil {
		uid = *r.ActorUserID
	}
	if r.ActorTokenID != nil {
		tid = *r.ActorTokenID
	}
	b, _ := json.Marshal([]any{r.Seq, r.At.UTC().Truncate(time.Microsecond).Format(time.RFC3339Nano),
		r.Actor, uid, tid, r.Address, r.Action, r.Object, r.BeforeJSON, r.AfterJSON, r.PrevHash})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
