package main

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

// The cluster agent speaks the JSON contract of web/api_agent.go. Its wire types are
// its own, as any other agent's would be: the end-to-end tests against the real
// server catch a drift.

// agentJob is one request of a reservation in a cluster's allocation.
type agentJob struct {
	Reservation   int64            `json:"reservation"`
	Request       int              `json:"request"`
	Team          string           `json:"team"`
	Configuration map[string]int64 `json:"configuration"`
	Count         int64            `json:"count"`
	Units         int64            `json:"units"`
	Start         time.Time        `json:"start"`
	End           time.Time        `json:"end"`
	Arrival       time.Time        `json:"arrival"`
	Deadline      time.Time        `json:"deadline"`
	MayStartNow   bool             `json:"may_start_now,omitempty"`
}

// agentAllocation is the body of GET /api/v1/clusters/{cluster}/allocation.
type agentAllocation struct {
	Cluster  string     `json:"cluster"`
	Now      time.Time  `json:"now"`
	SlotEnds time.Time  `json:"slot_ends"`
	Running  []agentJob `json:"running"`
	Waiting  []agentJob `json:"waiting"`
	// Best-effort tasks to run and to stop now.
	BestEffort []agentTask `json:"best_effort"`
	Preempt    []agentTask `json:"preempt"`
}

type agentEnd struct {
	Reservation int64     `json:"reservation"`
	Request     int       `json:"request"`
	At          time.Time `json:"at"`
	Failed      bool      `json:"failed,omitempty"`
}

type agentStart struct {
	Reservation int64     `json:"reservation"`
	Request     int       `json:"request"`
	At          time.Time `json:"at"`
}

type agentUsage struct {
	Reservation int64  `json:"reservation"`
	Request     int    `json:"request"`
	Pool        string `json:"pool"`
	Units       int64  `json:"units"`
}

type agentWaiting struct {
	Reservation int64 `json:"reservation"`
	Request     int   `json:"request"`
	Tasks       int64 `json:"tasks"`
}

// agentUpdates is the body of POST /api/v1/clusters/{cluster}/updates (without
// capacity changes, which the reference agent does not make).
type agentUpdates struct {
	Ends    []agentEnd     `json:"ends,omitempty"`
	Starts  []agentStart   `json:"starts,omitempty"`
	Usage   []agentUsage   `json:"usage,omitempty"`
	Waiting []agentWaiting `json:"waiting,omitempty"`
	// BestEffort reports best-effort tasks started, done, failed or stopped.
	BestEffort []agentTaskEvent `json:"best_effort,omitempty"`
	// Pools is what all the work the agent runs uses of each pool now: the series
	// the server measures utilization (and so reserve prices) from.
	Pools []agentPoolUsage `json:"pools,omitempty"`
	// BestEffortJobs is what the agent measured of finished abacus jobs.
	BestEffortJobs []agentMeasurement `json:"best_effort_jobs,omitempty"`
}

// agentMeasurement is a finished abacus job's measured utility (the inverse of its
// run time in hours, first start to last end) and average share of each pool.
type agentMeasurement struct {
	Job     int64              `json:"job"`
	Utility float64            `json:"utility"`
	Shares  map[string]float64 `json:"shares,omitempty"`
}

// agentPoolUsage is the units of one pool in use now.
type agentPoolUsage struct {
	Pool string `json:"pool"`
	Used int64  `json:"used"`
}

func (u agentUpdates) empty() bool {
	return len(u.Ends)+len(u.Starts)+len(u.Usage)+len(u.Waiting)+len(u.BestEffort)+len(u.Pools)+len(u.BestEffortJobs) == 0
}

// agentAnswer is what the server did with a report.
type agentAnswer struct {
	Moved  []int64 `json:"moved"`
	AtRisk []int64 `json:"at_risk"`
	Ended  []int64 `json:"ended"`
	// Started and RefusedStarts are the early starts the plan took and refused.
	Started       []jobKey `json:"started"`
	RefusedStarts []jobKey `json:"refused_starts"`
}

// agentAPIError is an error answer of the server: its status and JSON error.
type agentAPIError struct {
	Status  int
	Code    string
	Message string
}

func (e *agentAPIError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Status)
	}
	return fmt.Sprintf("server answered %d: %s", e.Status, msg)
}

// refused reports whether err is the server refusing the agent's token (401, 403):
// asking again will not help.
func refused(err error) bool {
	var ae *agentAPIError
	return errors.As(err, &ae) && (ae.Status == http.StatusUnauthorized || ae.Status == http.StatusForbidden)
}

// agentClient calls one cluster's agent API with a bearer token.
type agentClient struct {
	base    string // the server's URL, without a trailing slash
	cluster string
	token   string
	http    *http.Client
}

// newAgentClient returns a client of server for cluster. The server must be an
// http or https URL.
func newAgentClient(server, cluster, token string) (*agentClient, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q: must be an http or https URL such as http://127.0.0.1:8080", server)
	}
	return &agentClient{base: strings.TrimRight(server, "/"), cluster: cluster, token: token,
		http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// Allocation returns what the cluster's jobs should have now.
func (c *agentClient) Allocation(ctx context.Context) (agentAllocation, error) {
	var a agentAllocation
	err := c.do(ctx, http.MethodGet, "allocation", nil, &a)
	return a, err
}

// Report sends the cluster's updates and returns what they did to the plan.
func (c *agentClient) Report(ctx context.Context, u agentUpdates) (agentAnswer, error) {
	body, err := json.Marshal(u)
	if err != nil {
		return agentAnswer{}, err
	}
	var a agentAnswer
	err = c.do(ctx, http.MethodPost, "updates", body, &a)
	return a, err
}

func (c *agentClient) do(ctx context.Context, method, what string, body []byte, out any) error {
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
		return &agentAPIError{Status: resp.StatusCode, Code: clipText(e.Error.Code, 40), Message: clipText(e.Error.Message, 300)}
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
