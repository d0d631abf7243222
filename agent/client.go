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
