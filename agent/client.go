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
