package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"
)

// The agent speaks the JSON contract of web/api_agent.go. Its wire types are its own,
// as any other agent's would be: the end-to-end tests against the real server catch a
// drift.

// Allocation is the body of GET /api/v1/clusters/{cluster}/allocation.
type Allocation struct {
	Cluster  string    `json:"cluster"`
	Now      time.Time `json:"now"`
	SlotEnds time.Time `json:"slot_ends"`
	Running  []Job     `json:"running"`
	Waiting  []Job     `json:"waiting"`
	// Best-effort tasks to run and to stop now.
	BestEffort []Task `json:"best_effort"`
	Preempt    []Task `json:"preempt"`
	// Quotas is each team's holdings of each pool: what owner_usage reports against.
	Quotas []Quota `json:"quotas"`
	// Pools is each pool of the cluster with its idle-sharing settings.
	Pools []PoolSharing `json:"pools"`
	// Limits is the one rule's answer for each team and pool of the cluster (see
	// Limit): what the backend enforces. A server that sends none (nil: an older
	// server) leaves the loop to compute limits from Quotas and Running as before.
	Limits []Limit `json:"limits,omitempty"`
	// Upcoming lists the booked jobs whose planned start is still ahead (within the
	// plan's horizon), so that a backend whose manager reserves ahead (Slurm) makes
	// their reservations at booking, not when their slot starts.
	Upcoming []Job `json:"upcoming,omitempty"`
	// OverLimit is the operator's policy for work running beyond a team's limit.
	OverLimit OverLimitPolicy `json:"over_limit"`
	// Reclaim lists, per team and pool, the units of the team's own work to take back
	// now: the server lists a team's excess once it has lasted the policy's grace
	// period and the policy is "evict". A backend that is a Reclaimer acts on it.
	Reclaim []Reclaim `json:"reclaim,omitempty"`
}

// Limit is a team's limit in one pool, by the one rule the server applies for every
// backend and page: Units = Held (its holdings, including what it offers for sale
// until the sale settles) + Reserved (its reservations running now, only the units
// beyond its own unreserved quota: a reservation inside own quota does not raise the
// limit). BestEffort is what the server granted the team's best-effort tasks now
// (their configurations summed): a backend enforces it apart from Units (a quota
// scoped to the best-effort class; an association only the agent holds), so that a
// team's own work can never use it and its own limit never grows because of work it
// started itself. Offered is the part of Held on offer for sale now: still the
// team's to use until the sale settles, so it never lowers Units (for display).
type Limit struct {
	Team       string `json:"team"`
	Pool       string `json:"pool"`
	Units      int64  `json:"units"`
	Held       int64  `json:"held"`
	Offered    int64  `json:"offered"`
	Reserved   int64  `json:"reserved"`
	BestEffort int64  `json:"best_effort"`
}

// OverLimitPolicy is what happens when a team's own usage exceeds its limit: the agent
// reports it each poll; after GraceSeconds, with Action "evict", the server lists the
// excess in Allocation.Reclaim and the backend takes it back (newest pods evicted,
// newest jobs requeued); with Action "report" nothing is taken back.
type OverLimitPolicy struct {
	Action       string `json:"action"`
	GraceSeconds int64  `json:"grace_seconds"`
}

// The over-limit policy's actions.
const (
	OverLimitReport = "report"
	OverLimitEvict  = "evict"
)

// Reclaim is the excess Units of Team's own work in Pool to take back now, over since
// Since.
type Reclaim struct {
	Team  string    `json:"team"`
	Pool  string    `json:"pool"`
	Units int64     `json:"units"`
	Since time.Time `json:"since"`
}

// OverLimit is a team whose own usage of a pool exceeds its limit now, as the agent
// measured it: reported each poll while it lasts.
type OverLimit struct {
	Team  string `json:"team"`
	Pool  string `json:"pool"`
	Used  int64  `json:"used"`
	Limit int64  `json:"limit"`
}

// Reclaimed is one object a backend stopped to take back a team's excess: a pod
// evicted, a job requeued.
type Reclaimed struct {
	Team   string `json:"team"`
	Pool   string `json:"pool"`
	Object string `json:"object"`
	Units  int64  `json:"units"`
}

// JobUnplaceable is a booked job the cluster refused to reserve (Slurm: "Requested
// nodes are busy"): the server tells the team, refunds it, and never shows it running.
type JobUnplaceable struct {
	Reservation int64  `json:"reservation"`
	Request     int    `json:"request"`
	Reason      string `json:"reason"`
}

// PoolSharing is how a pool shares its idle capacity, as operators set it.
type PoolSharing struct {
	Pool              string  `json:"pool"`
	Policy            string  `json:"policy"`
	Alpha             float64 `json:"alpha"`
	MinRuntimeSeconds int64   `json:"min_runtime_seconds"`
	Exposure          float64 `json:"exposure"` // the share of the pool kept free of best-effort work
}

// Updates is the body of POST /api/v1/clusters/{cluster}/updates (without capacity
// changes, which the agent does not make).
type Updates struct {
	Ends    []JobEnd     `json:"ends,omitempty"`
	Starts  []JobStart   `json:"starts,omitempty"`
	Usage   []JobUsage   `json:"usage,omitempty"`
	Waiting []JobWaiting `json:"waiting,omitempty"`
	// BestEffort reports best-effort tasks started, done, failed or stopped.
	BestEffort []TaskEvent `json:"best_effort,omitempty"`
	// Pools is what all the work the cluster runs uses of each pool now: the series
	// the server measures utilization (and so reserve prices) from.
	Pools []PoolMeasure `json:"pools,omitempty"`
	// OwnerUsage is what teams' own work uses of each pool now.
	OwnerUsage []OwnerUsage `json:"owner_usage,omitempty"`
	// BestEffortJobs is what the agent measured of finished abacus jobs.
	BestEffortJobs []JobMeasurement `json:"best_effort_jobs,omitempty"`
	// OverLimit lists the teams whose own usage exceeds their limit now.
	OverLimit []OverLimit `json:"over_limit,omitempty"`
	// Reclaimed lists what the backend stopped to take back excess since the last report.
	Reclaimed []Reclaimed `json:"reclaimed,omitempty"`
	// Unplaceable lists booked jobs the cluster refused to reserve.
	Unplaceable []JobUnplaceable `json:"unplaceable,omitempty"`
	// Agent is the agent's own status, shown to operators on /operate.
	Agent *Status `json:"agent,omitempty"`
}

// Status is what an agent says of itself in each report: its backend and version,
// the drift it corrected and the errors it met since its last report.
type Status struct {
	Backend     string       `json:"backend"`
	Version     string       `json:"version,omitempty"`
	Corrections []Correction `json:"corrections,omitempty"`
	Errors      []string     `json:"errors,omitempty"`
}

// JobMeasurement is a finished abacus job's measured utility (the inverse of its run
// time in hours, first start to last end) and average share of each pool.
type JobMeasurement struct {
	Job     int64              `json:"job"`
	Utility float64            `json:"utility"`
	Shares  map[string]float64 `json:"shares,omitempty"`
}

// Answer is what the server did with a report.
type Answer struct {
	Moved  []int64 `json:"moved"`
	AtRisk []int64 `json:"at_risk"`
	Ended  []int64 `json:"ended"`
	// Started and RefusedStarts are the early starts the plan took and refused.
	Started       []JobKey `json:"started"`
	RefusedStarts []JobKey `json:"refused_starts"`
	// AlreadyEnded are reported ends of requests already over (a report sent again):
	// nothing changed. RefusedEnds contradict the server's record (an end earlier than
	// the one on record, or of a request that never ran): nothing changed; Reason says
	// why. The rest of the report applied.
	AlreadyEnded []EndNote `json:"already_ended,omitempty"`
	RefusedEnds  []EndNote `json:"refused_ends,omitempty"`
}

// EndNote is the server's answer about one reported end it did not apply.
type EndNote struct {
	Reservation int64     `json:"reservation"`
	Request     int       `json:"request"`
	At          time.Time `json:"at"`
	Reason      string    `json:"reason"`
}

// Rejected reports whether the server refused a report as it stands (a 4xx other
// than a timeout or rate limit): sending it again will not help.
func Rejected(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && ae.Status/100 == 4 && ae.Status != 408 && ae.Status != 429
}

// APIError is an error answer of the server: its status and JSON error.
type APIError struct {
	Status  int
	Code    string
	Message string
}

func (e *APIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("server answered %d: %s", e.Status, msg)
}

// Refused reports whether err is the server refusing the agent's token (401, 403):
// asking again will not help.
func Refused(err error) bool {
	var ae *APIError
	return errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden)
}

// Client calls one cluster's agent API with a bearer token.
type Client struct {
	base    string // the server's URL, without a trailing slash
	cluster string
	token   string
	http    *http.Client
}

// NewClient returns a client of server for cluster. The server must be an http or
// https URL.
func NewClient(server, cluster, token string) (*Client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: must be an http or https URL such as http://127.0.0.1:8080", server)
	}
	return &Client{base: strings.TrimRight(server, "/"), cluster: cluster, token: token,
		http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// Allocation returns what the cluster's jobs should have now.
func (c *Client) Allocation(ctx context.Context) (Allocation, error) {
	var a Allocation
	err := c.do(ctx, http.MethodGet, "allocation", nil, &a)
	return a, err
}

// Report sends the cluster's updates and returns what they did to the plan.
func (c *Client) Report(ctx context.Context, u Updates) (Answer, error) {
	body, err := json.Marshal(u)
	if err != nil {
		return Answer{}, err
	}
	var a Answer
	err = c.do(ctx, http.MethodPost, "updates", body, &a)
	return a, err
}

func (c *Client) do(ctx context.Context, method, what string, body []byte, out any) error {
	u := c.base + "/api/v1/clusters/" + url.PathEscape(c.cluster) + "/" + what
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%s %s: reading the answer: %w", method, u, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		_ = json.Unmarshal(data, &e)
		return &APIError{Status: resp.StatusCode, Code: clipText(e.Error.Code, 40), Message: clipText(e.Error.Message, 300)}
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: the answer is not the expected JSON: %w", method, u, err)
	}
	return nil
}

// clipText shortens what a server said to at most n bytes before it is printed, so
// that a misbehaving server cannot flood the agent's output.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
