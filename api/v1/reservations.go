package apiv1

import (
	"encoding/json"
	"time"
)

// The reservation API follows the YARN ReservationSystem's REST conventions: ask
// for an id, submit a definition under it (idempotently), update, delete, list,
// and quote without committing.

// NewReservationID is the answer to POST /reservations/new.
type NewReservationID struct {
	ID int64 `json:"id"`
}

// Definition is a reservation definition as the API takes it: its value (dollars,
// as a string or a number) and its requests joined by Language: ALL (default), ANY,
// ORDER or ORDER_NO_GAP.
type Definition struct {
	ID       int64           `json:"id,omitempty"`
	Team     string          `json:"team,omitempty"`
	Value    json.RawMessage `json:"value,omitempty"`
	Language string          `json:"language,omitempty"`
	Requests []RequestInput  `json:"requests"`
}

// RequestInput is one request of a definition: Count tasks of Configuration (pool ->
// units each) for Duration ("5h"), inside [Arrival, Deadline] (RFC 3339).
type RequestInput struct {
	Configuration map[string]int64 `json:"configuration"`
	Count         int64            `json:"count"`
	Duration      string           `json:"duration"`
	Arrival       string           `json:"arrival"`
	Deadline      string           `json:"deadline"`
	Overhead      map[string]int64 `json:"overhead,omitempty"`
}

// Reservation is a reservation as the API returns it.
type Reservation struct {
	ID        int64           `json:"id"`
	Team      string          `json:"team"`
	Status    string          `json:"status"`
	Phase     string          `json:"phase"`
	Cluster   string          `json:"cluster,omitempty"`
	Value     string          `json:"value,omitempty"`
	Price     string          `json:"price"`
	Charged   string          `json:"charged"`
	Released  string          `json:"released"`
	Note      string          `json:"note,omitempty"`
	Language  string          `json:"language"`
	Requests  []RequestOutput `json:"requests"`
	CreatedAt time.Time       `json:"created_at"`
}

// RequestOutput is one request of a reservation, with its planned slot once booked
// and what it used.
type RequestOutput struct {
	Configuration map[string]int64 `json:"configuration"`
	Count         int64            `json:"count"`
	Duration      string           `json:"duration"`
	Arrival       time.Time        `json:"arrival"`
	Deadline      time.Time        `json:"deadline"`
	Overhead      map[string]int64 `json:"overhead,omitempty"`
	Start         *time.Time       `json:"start,omitempty"`
	End           *time.Time       `json:"end,omitempty"`
	Ended         *time.Time       `json:"ended,omitempty"`
	Charge        string           `json:"charge"`
	Usage         map[string]int64 `json:"usage,omitempty"`
	WaitingTasks  *int64           `json:"waiting_tasks,omitempty"`
}

// ReservationList is the body of GET /reservations, newest first; Next is the next
// page's URL.
type ReservationList struct {
	Reservations []Reservation `json:"reservations"`
	Next         string        `json:"next,omitempty"`
}

// Quote is the answer to POST /reservations/quote: whether the definition fits,
// its price, and where each request would run.
type Quote struct {
	Feasible bool         `json:"feasible"`
	Price    string       `json:"price,omitempty"`
	Chosen   *int         `json:"chosen,omitempty"` // ANY: the request the scheduler would choose
	Requests []QuotedSlot `json:"requests"`
}

// QuotedSlot is where a quoted request would run.
type QuotedSlot struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
}
