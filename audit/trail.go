package audit

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/store"
)

// Actions are the action names the services record, in the order the trail page
// offers them as a filter.
var Actions = []string{
	"budget.grant", "budget.take_back",
	"curve.save",
	"cluster.add", "cluster.remove",
	"pool.add", "pool.update", "pool.remove", "pool.capacity_override", "pool.capacity_clear", "pool.holding_charge", "pool.reference_price",
	"pool.utilization_policy", "pool.utilization_override", "pool.utilization_clear",
	"auction.schedule", "auction.cancel", "auction.close", "auction.retry",
	"order.approve", "order.reject",
	"team.add", "team.approval_threshold", "quota.grant", "market.limits",
	"user.add", "user.password", "user.disable", "user.enable", "user.provider_access",
	"token.issue", "token.revoke",
	"best_effort.settings", "over_limit.policy", "pool.pricing_policy",
	"database.restore",
}

// Trail reads the audit trail.
type Trail struct {
	db *store.DB
}

// NewTrail returns the trail of db.
func NewTrail(db *store.DB) *Trail { return &Trail{db: db} }

// Filter selects rows of the trail. Actor and Object match a part of the text,
// ignoring case; Action matches a name exactly or, ending in ".", every name it
// begins (for instance "auction."); From and To bound the time (From included, To
// excluded); Before pages backwards (rows with a smaller seq); Limit caps the rows
// (100 when zero).
type Filter struct {
	Actor, Action, Object string
	From, To              time.Time
	Before                int64
	Limit                 int
}

func likeWords(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return "%" + r.Replace(strings.ToLower(s)) + "%"
}

func (f Filter) apply(q *gorm.DB) *gorm.DB {
	if f.Actor != "" {
		q = q.Where(`LOWER(actor) LIKE ? ESCAPE '\'`, likeWords(f.Actor))
	}
	if f.Object != "" {
		q = q.Where(`LOWER(object) LIKE ? ESCAPE '\'`, likeWords(f.Object))
	}
	if p, ok := strings.CutSuffix(f.Action, "."); ok && p != "" {
		q = q.Where(`action LIKE ? ESCAPE '\'`, strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(p)+".%")
	} else if f.Action != "" {
		q = q.Where("action = ?", f.Action)
	}
	if !f.From.IsZero() {
		q = q.Where("at >= ?", f.From.UTC())
	}
	if !f.To.IsZero() {
		q = q.Where("at < ?", f.To.UTC())
	}
	return q
}

// List returns the rows f selects, newest first.
func (t *Trail) List(ctx context.Context, f Filter) ([]Row, error) {
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := f.apply(t.db.Read.WithContext(ctx).Model(&Row{}))
	if f.Before > 0 {
		q = q.Where("seq < ?", f.Before)
	}
	var rows []Row
	if err := q.Order("seq DESC").Limit(f.Limit).Find(&rows).Error; err != nil {
		return nil, err
	}
	for i := range rows {
		rows[i].At = rows[i].At.UTC()
	}
	return rows, nil
}

// each calls fn for every row f selects, oldest first, reading a batch at a time so
// an export of a long trail holds a batch in memory, not the trail.
func (t *Trail) each(ctx context.Context, f Filter, fn func(Row) error) error {
	after := int64(0)
	for {
		var rows []Row
		q := f.apply(t.db.Read.WithContext(ctx).Model(&Row{})).Where("seq > ?", after)
		if err := q.Order("seq").Limit(500).Find(&rows).Error; err != nil {
			return err
		}
		for _, r := range rows {
			r.At = r.At.UTC()
			if err := fn(r); err != nil {
				return err
			}
			after = r.Seq
		}
		if len(rows) < 500 {
			return nil
		}
	}
}

// CSVHeader is the header row of the trail's CSV export.
var CSVHeader = []string{"seq", "at", "actor", "actor_user_id", "actor_token_id", "address", "action", "object", "before", "after", "hash"}

// WriteCSV writes the rows f selects (every row, oldest first; f.Limit and f.Before
// are ignored) as CSV: times as the repository's exports write them, every text cell
// made safe to open in a spreadsheet (clearhouse.CSVText).
func (t *Trail) WriteCSV(ctx context.Context, w io.Writer, f Filter) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(CSVHeader); err != nil {
		return err
	}
	err := t.each(ctx, f, func(r Row) error {
		return cw.Write([]string{strconv.FormatInt(r.Seq, 10), clearhouse.CSVTime(r.At), clearhouse.CSVText(r.Actor),
			idCell(r.ActorUserID), idCell(r.ActorTokenID), clearhouse.CSVText(r.Address), clearhouse.CSVText(r.Action),
			clearhouse.CSVText(r.Object), clearhouse.CSVText(r.BeforeJSON), clearhouse.CSVText(r.AfterJSON), r.Hash})
	})
	if err != nil {
		return err
	}
	cw.Flush()
	return cw.Error()
}

func idCell(id *int64) string {
	if id == nil {
		return ""
	}
	return strconv.FormatInt(*id, 10)
}

// JSONRow is one line of the trail's JSON-lines export: the values before and after
// as JSON, not as text holding JSON.
type JSONRow struct {
	Seq          int64           `json:"seq"`
	At           time.Time       `json:"at"`
	Actor        string          `json:"actor"`
	ActorUserID  *int64          `json:"actor_user_id,omitempty"`
	ActorTokenID *int64          `json:"actor_token_id,omitempty"`
	Address      string          `json:"address,omitempty"`
	Action       string          `json:"action"`
	Object       string          `json:"object"`
	Before       json.RawMessage `json:"before,omitempty"`
	After        json.RawMessage `json:"after,omitempty"`
	PrevHash     string          `json:"prev_hash"`
	Hash         string          `json:"hash"`
}

// WriteJSONLines writes the rows f selects (every row, oldest first) as JSON lines,
// one JSONRow a line; with prev_hash and hash, an export can be checked on its own.
func (t *Trail) WriteJSONLines(ctx context.Context, w io.Writer, f Filter) error {
	enc := json.NewEncoder(w)
	return t.each(ctx, f, func(r Row) error {
		j := JSONRow{Seq: r.Seq, At: r.At, Actor: r.Actor, ActorUserID: r.ActorUserID, ActorTokenID: r.ActorTokenID,
			Address: r.Address, Action: r.Action, Object: r.Object, PrevHash: r.PrevHash, Hash: r.Hash}
		if r.BeforeJSON != "" {
			j.Before = json.RawMessage(r.BeforeJSON)
		}
		if r.AfterJSON != "" {
			j.After = json.RawMessage(r.AfterJSON)
		}
		return enc.Encode(j)
	})
}

// Problem is one break in the trail's chain Verify found.
type Problem struct {
	Check  string
	Detail string
}

// maxProblems bounds what Verify reports, so a badly broken trail still gives a
// short report.
const maxProblems = 10

// Verify walks the whole trail in order and reports every break of the chain: a
// number missing or out of turn (a row deleted or inserted), a row whose hash is not
// the hash of its content (a row edited), a row not chained to the one before it, and
// a head that does not name the last row (the newest rows deleted). An empty answer
// means the trail is whole.
func (t *Trail) Verify(ctx context.Context) ([]Problem, error) {
	var out []Problem
	add := func(check, format string, args ...any) {
		if len(out) < maxProblems {
			out = append(out, Problem{Check: check, Detail: fmt.Sprintf(format, args...)})
		}
	}
	var last Row
	err := t.each(ctx, Filter{}, func(r Row) error {
		if r.Seq != last.Seq+1 {
			add("audit trail numbering", "row %d follows row %d: rows %d to %d are missing", r.Seq, last.Seq, last.Seq+1, r.Seq-1)
		}
		if r.PrevHash != last.Hash {
			add("audit trail chain", "row %d is not chained to row %d (its previous hash %s, that row's hash %s)", r.Seq, last.Seq, short(r.PrevHash), short(last.Hash))
		}
		if d := r.digest(); d != r.Hash {
			add("audit trail content", "row %d (%s on %s) was changed after it was written: its content hashes to %s, not %s", r.Seq, r.Action, r.Object, short(d), short(r.Hash))
		}
		last = r
		return nil
	})
	if err != nil {
		return nil, err
	}
	var h head
	if err := t.db.Read.WithContext(ctx).Take(&h, "id = 1").Error; err != nil {
		return nil, fmt.Errorf("audit: reading the trail's head: %w", err)
	}
	if h.Seq != last.Seq || h.Hash != last.Hash {
		add("audit trail head", "the trail's head names row %d (%s), its last row is %d (%s): rows after %d are missing", h.Seq, short(h.Hash), last.Seq, short(last.Hash), last.Seq)
	}
	return out, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	if h == "" {
		return "none"
	}
	return h
}
