package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// newHealthCmd is "clearhouse health": the check a container's HEALTHCHECK runs.
func newHealthCmd() *cobra.Command {
	var addr string
	var live bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Ask a running server whether it is ready (exit 0) or not (exit 1): for HEALTHCHECK and scripts",
		Long: `Ask the server at --addr whether it is ready to take traffic: GET /readyz answers 200
when the database is reachable, its schema is the one the server was built for, and the
scheduler runs. With --live, GET /livez instead: the process answers at all.
--addr is the server's own (CLEARHOUSE_ADDR); an unspecified host such as 0.0.0.0 is
asked on the loopback address. Exits 0 when the answer is 200, 1 otherwise.`,
		Example: `  clearhouse health
  clearhouse health --addr 127.0.0.1:8080 --live`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			url, err := probeURL(addr, live)
			if err != nil {
				return &exitError{2, err}
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return &exitError{2, err}
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				return &exitError{1, fmt.Errorf("%s: %w", url, err)}
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(res.Body, 4096))
			msg := strings.TrimSpace(string(body))
			if res.StatusCode != http.StatusOK {
				return &exitError{1, fmt.Errorf("%s: %d %s", url, res.StatusCode, msg)}
			}
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8080", "the server's listen address (as given to serve)")
	f.BoolVar(&live, "live", false, "check /livez (the process answers) rather than /readyz")
	f.DurationVar(&timeout, "timeout", 5*time.Second, "give up after this long")
	return cmd
}

// probeURL is the probe's URL on a server listening on addr.
func probeURL(addr string, live bool) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("--addr %q: must be host:port: %v", addr, err)
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	if port == "" || port == "0" {
		return "", errors.New("--addr: give the port the server listens on")
	}
	path := "/readyz"
	if live {
		path = "/livez"
	}
	return "http://" + net.JoinHostPort(host, port) + path, nil
}
