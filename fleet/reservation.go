package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/ledger"
)

// ReservationStatus is where a reservation is. A reservation in the plan is
// "accepted"; whether it is scheduled or running follows from the time (Phase).
type ReservationStatus string

// Reservation statuses.
const (
	ReservationNew       ReservationStatus = "new"       // an id handed out; no definition yet
	ReservationRejected  ReservationStatus = "rejected"  // no room in its windows, or its value did not cover the price
	ReservationAccepted  ReservationStatus = "accepted"  // in the plan
	ReservationDone      ReservationStatus = "done"      // every request ran (or ended early); charges settled
	ReservationCancelled ReservationStatus = "cancelled" // cancelled by its team
	ReservationFailed    ReservationStatus = "failed"    // could not be honoured after capacity fell
)

// Reservation is a team's short-term reservation: a row of reservations. Money is
// in micro-dollars: Price is the charge set when it was accepted, of which
// Captured has been charged and Released handed back so far.
type Reservation struct {
	ID        int64
	TeamID    string
	CreatedBy *int64
	Status    ReservationStatus
	ClusterID *string
	Value     *ledger.Money
	Price     ledger.Money
	HoldID    *int64
	Captured  ledger.Money
	Released  ledger.Money
	Digest    string
	Note      string // why it was rejected or could not be honoured
	CreatedAt time.Time
	UpdatedAt time.Time
	DecidedAt *time.Time // when the scheduler accepted or refused it
	Language  string     `gorm:"default:ALL"` // how its requests combine: ALL, ANY, ORDER or ORDER_NO_GAP
}

// ReservationRequest is one request of a reservation: Count units of
// Configuration for Duration, some time in [Arrival, Deadline). StartAt is where
// the plan puts it; EndedAt, when the cluster reported an early end (or the
// reservation was cancelled or failed), is when it stopped using its capacity.
// Charge is its share of the reservation's price.
type ReservationRequest struct {
	ReservationID int64 `gorm:"primaryKey;autoIncrement:false"`
	Idx           int   `gorm:"primaryKey;autoIncrement:false"`
	Configuration string
	Count         int64
	Duration      int64 // seconds
	Arrival       time.Time
	Deadline      time.Time
	StartAt       *time.Time
	EndedAt       *time.Time
	Charge        ledger.Money
	Usage         *string // JSON: units used per pool, as last reported
	WaitingTasks  *int64
	ReportedAt    *time.Time
	Overhead      *string // JSON: units per pool reserved above Count*Configuration
	Unused        int64   // unit-slots its cluster reported it did not use in slots it ran
}

// OverheadByPool decodes the request's overhead (nil when none).
func (r ReservationRequest) OverheadByPool() map[string]int64 {
	if r.Overhead == nil {
		return nil
	}
	var o map[string]int64
	_ = json.Unmarshal([]byte(*r.Overhead), &o)
	return o
}

// Config decodes the request's configuration: units per pool.
func (r ReservationRequest) Config() map[string]int64 {
	var c map[string]int64
	_ = json.Unmarshal([]byte(r.Configuration), &c)
	return c
}

// UsageByPool decodes the usage the cluster last reported, per pool (nil when none).
func (r ReservationRequest) UsageByPool() map[string]int64 {
	if r.Usage == nil {
		return nil
	}
	var u map[string]int64
	_ = json.Unmarshal([]byte(*r.Usage), &u)
	return u
}

// End is when the request stops using its capacity: its early end, else its
// planned start plus its duration (zero when it has no start).
func (r ReservationRequest) End() time.Time {
	if r.StartAt == nil {
		return time.Time{}
	}
	end := r.StartAt.Add(time.Duration(r.Duration) * time.Second)
	if r.EndedAt != nil && r.EndedAt.Before(end) {
		return *r.EndedAt
	}
	return end
}

// RequestSpec is one request of a definition, as teams enter it. Overhead is
// what the job takes beyond Count times its configuration (ERA section 2.2: an
// application master, a machine's system share): units per pool, whatever the
// count, in every slot it runs. The plan reserves and prices it.
type RequestSpec struct {
	Configuration map[string]int64 // units per pool, all in one cluster
	Count         int64
	Duration      time.Duration
	Arrival       time.Time
	Deadline      time.Time
	Overhead      map[string]int64
}

// Languages a definition may combine its requests by, as YARN's reservation
// definition language does: ALL (every request, in any order; the default), ANY
// (exactly one, the one the scheduler prices lowest), ORDER (every request, each
// starting no earlier than the one before it ends: "map, then reduce") and
// ORDER_NO_GAP (ORDER with each starting exactly when the one before ends).
var Languages = []string{"ALL", "ANY", "ORDER", "ORDER_NO_GAP"}

// Definition is what a team submits: requests combined by Language (ALL when
// empty), and the most it will pay for them (Value, positive).
type Definition struct {
	Team     string
	Value    ledger.Money
	Language string
	Requests []RequestSpec
}

// language is the definition's language, ALL when it names none.
func (d Definition) language() string {
	if d.Language == "" {
		return "ALL"
	}
	return d.Language
}

// Cluster is the one cluster the definition's pools are in ("" when none).
func (d Definition) Cluster() string {
	for _, r := range d.Requests {
		for p := range r.Configuration {
			c, _, _ := strings.Cut(p, "/")
			return c
		}
	}
	return ""
}

// Validate checks a definition at time now against the plan's slot length and
// horizon. It returns EINVALID naming the field at fault; it does not look pools
// up (the plan does).
func (d Definition) Validate(now time.Time, slot, horizon time.Duration, needValue bool) error {
	bad := func(field, format string, args ...any) error {
		return clearhouse.Errorf(clearhouse.EINVALID, "%s: %s", field, fmt.Sprintf(format, args...))
	}
	if (needValue || d.Value < 0) && d.Value <= 0 { // a quote needs none, but never a negative one
		return bad("value", "must be a positive amount")
	}
	if len(d.Requests) == 0 {
		return bad("requests", "at least one request is required")
	}
	if len(d.Requests) > 100 {
		return bad("requests", "at most 100 requests")
	}
	if !slices.Contains(Languages, d.language()) {
		return bad("language", "%q is not ALL, ANY, ORDER or ORDER_NO_GAP", d.Language)
	}
	cluster := ""
	for i, r := range d.Requests {
		field := func(f string) string { return fmt.Sprintf("requests[%d].%s", i, f) }
		if len(r.Configuration) == 0 {
			return bad(field("configuration"), "name at least one pool with units")
		}
		for _, p := range slices.Sorted(maps.Keys(r.Configuration)) {
			c, res, ok := strings.Cut(p, "/")
			if !ok || c == "" || res == "" {
				return bad(field("configuration"), "%q is not a pool id (cluster/resource)", p)
			}
			if cluster != "" && c != cluster {
				return bad(field("configuration"), "spans clusters %s and %s: a reservation is in one cluster", cluster, c)
			}
			cluster = c
			if u := r.Configuration[p]; u <= 0 || u > 1<<31 {
				return bad(field("configuration"), "units of %s must be a positive whole number", p)
			}
		}
		for _, p := range slices.Sorted(maps.Keys(r.Overhead)) {
			c, res, ok := strings.Cut(p, "/")
			switch u := r.Overhead[p]; {
			case !ok || c == "" || res == "":
				return bad(field("overhead"), "%q is not a pool id (cluster/resource)", p)
			case c != cluster:
				return bad(field("overhead"), "%s is not in cluster %s, where the request runs", p, cluster)
			case u < 0 || u > 1<<31:
				return bad(field("overhead"), "units of %s must be a whole number, at least 0", p)
			}
		}
		switch {
		case r.Count <= 0 || r.Count > 1<<31:
			return bad(field("count"), "must be a positive whole number")
		case r.Duration <= 0:
			return bad(field("duration"), "must be positive, e.g. \"30m\" or \"5h\"")
		case r.Arrival.IsZero():
			return bad(field("arrival"), "required (RFC 3339)")
		case r.Deadline.IsZero():
			return bad(field("deadline"), "required (RFC 3339)")
		case !r.Deadline.After(r.Arrival):
			return bad(field("deadline"), "must be after the earliest start")
		case r.Deadline.After(now.Add(horizon)):
			return bad(field("deadline"), "the window must end within %s of now (by %s)", horizonText(horizon), now.Add(horizon).UTC().Format("2006-01-02 15:04 UTC"))
		}
		from := r.Arrival // as plan.requests: the current slot's start at the earliest, rounded up below
		if open := now.Truncate(slot); from.Before(open) {
			from = open
		}
		slots := ceilDiv(r.Duration, slot)
		if window := r.Deadline.Sub(ceilTime(from, slot)); time.Duration(slots)*slot > window {
			if !r.Deadline.After(now) {
				return bad(field("deadline"), "has passed")
			}
			return bad(field("duration"), "%s (%s in whole %s slots) does not fit between the earliest start, %s, and the deadline, %s",
				durationText(r.Duration), durationText(time.Duration(slots)*slot), durationText(slot),
				ceilTime(from, slot).UTC().Format("2006-01-02 15:04 UTC"), r.Deadline.UTC().Format("2006-01-02 15:04 UTC"))
		}
	}
	return nil
}

// digest identifies a definition's content, for idempotent submission.
func (d Definition) digest() string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d", d.Team, d.Value)
	if d.language() != "ALL" { // definitions without a language keep the digests they had
		fmt.Fprintf(h, "\x00language=%s", d.language())
	}
	for _, r := range d.Requests {
		fmt.Fprintf(h, "\x00%d\x00%d\x00%s\x00%s", r.Count, r.Duration, r.Arrival.UTC().Format(time.RFC3339Nano), r.Deadline.UTC().Format(time.RFC3339Nano))
		for _, p := range slices.Sorted(maps.Keys(r.Configuration)) {
			fmt.Fprintf(h, "\x00%s=%d", p, r.Configuration[p])
		}
		for _, p := range slices.Sorted(maps.Keys(r.Overhead)) {
			if r.Overhead[p] != 0 {
				fmt.Fprintf(h, "\x00overhead:%s=%d", p, r.Overhead[p])
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))
}

func horizonText(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%d days", d/(24*time.Hour))
	}
	return d.String()
}

// durationText says a duration as people write it: "5h", "1h30m", "45m", "90s".
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ceilDiv is how many whole slots d takes.
func ceilDiv(d, slot time.Duration) int64 { return int64((d + slot - 1) / slot) }

// ceilTime rounds t up to a slot boundary.
func ceilTime(t time.Time, slot time.Duration) time.Time {
	f := t.Truncate(slot)
	if f.Before(t) {
		return f.Add(slot)
	}
	return f
}

// ReservationView is a reservation with its requests, as pages and the API show it.
type ReservationView struct {
	Reservation
	Requests []ReservationRequest
	Phase    string // scheduled, running, done, cancelled, could not be honoured, rejected, new
}

// Phase is what a reservation is doing at now, in the words teams use.
func phase(r Reservation, reqs []ReservationRequest, now time.Time) string {
	switch r.Status {
	case ReservationAccepted:
		for _, q := range reqs {
			if q.StartAt != nil && !now.Before(*q.StartAt) && now.Before(q.End()) {
				return "running"
			}
		}
		for _, q := range reqs {
			if q.StartAt != nil && now.Before(*q.StartAt) {
				return "scheduled"
			}
		}
		return "done"
	case ReservationFailed:
		return "could not be honoured"
	}
	return string(r.Status)
}
