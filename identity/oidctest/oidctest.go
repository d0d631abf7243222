// Package oidctest runs a real OpenID Provider for tests: the example provider of
// github.com/zitadel/oidc/v3 built from tools/oidc (scripts/oidc-build.sh caches the
// binary), on a loopback port, with users whose groups a test can change. It is not a
// mock: tokens are signed by the provider's keys and checked by its own code.
package oidctest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// ClientID and ClientSecret are the provider's client for Clearhouse; OtherClientID is
// a second client with the same secret and redirect URL, whose tokens name another
// audience.
const (
	ClientID      = "clearhouse"
	OtherClientID = "other"
	ClientSecret  = "oidctest-client-secret"
	Password      = "verysecure1"
)

// User is one person the provider knows; their username is their Subject.
type User struct {
	Subject, Email, Name string
	Groups               []string
}

// Provider is a running OpenID Provider.
type Provider struct {
	Issuer string // http://127.0.0.1:PORT/

	t      testing.TB
	dir    string
	mu     sync.Mutex
	groups map[string][]string
}

// FreeAddr returns a loopback address no listener holds right now, for a server whose
// URL must be known before it starts (the provider's issuer; the redirect URL it
// registers).
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// Start builds (once, cached) and runs the provider with the users, allowing
// redirectURL for both clients; it stops when the test ends.
func Start(t testing.TB, redirectURL string, users ...User) *Provider {
	t.Helper()
	bin := build(t)
	p := &Provider{t: t, dir: t.TempDir(), groups: map[string][]string{}}
	type exampleUser struct {
		ID, Username, Password, FirstName, LastName, Email string
		EmailVerified                                      bool
		PreferredLanguage                                  string
	}
	file := map[string]exampleUser{}
	for _, u := range users {
		first, last, _ := strings.Cut(u.Name, " ")
		file[u.Subject] = exampleUser{ID: u.Subject, Username: u.Subject, Password: Password, FirstName: first, LastName: last,
			Email: u.Email, EmailVerified: true, PreferredLanguage: "en"}
		p.groups[u.Subject] = u.Groups
	}
	writeJSON(t, filepath.Join(p.dir, "users.json"), file)
	p.writeGroups()
	addr := FreeAddr(t)
	p.Issuer = "http://" + addr + "/"
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "ADDR="+addr, "ISSUER="+p.Issuer, "REDIRECT_URI="+redirectURL, "CLIENT_SECRET="+ClientSecret,
		"USERS_FILE="+filepath.Join(p.dir, "users.json"), "GROUPS_FILE="+filepath.Join(p.dir, "groups.json"))
	logf, err := os.Create(filepath.Join(p.dir, "provider.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("provider log:\n%s", b)
		}
	})
	// Wait until it answers its discovery document (at most 20 s).
	deadline := time.Now().Add(20 * time.Second)
	for {
		res, err := http.Get(p.Issuer + ".well-known/openid-configuration")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return p
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the OpenID Provider did not start on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// SetGroups changes a person's groups; the provider puts them in the next token it makes.
func (p *Provider) SetGroups(subject string, groups ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.groups[subject] = groups
	p.writeGroups()
}

func (p *Provider) writeGroups() {
	// Written beside and renamed, so the provider never reads half a file.
	tmp := filepath.Join(p.dir, "groups.json.tmp")
	writeJSON(p.t, tmp, p.groups)
	if err := os.Rename(tmp, filepath.Join(p.dir, "groups.json")); err != nil {
		p.t.Fatal(err)
	}
}

func writeJSON(t testing.TB, path string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Authorize follows a sign-in from startURL (Clearhouse's /login/oidc) through the
// provider's login form as subject, and returns the URL the provider sends the browser
// back to (the redirect URL with code and state) without visiting it. client must
// have a cookie jar.
func Authorize(t testing.TB, client *http.Client, startURL, redirectURL, subject string) string {
	t.Helper()
	next := startURL
	for range 10 {
		if strings.HasPrefix(next, redirectURL) {
			return next
		}
		res, err := noFollow(client).Get(next)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		switch {
		case res.StatusCode >= 300 && res.StatusCode < 400:
			loc, err := res.Request.URL.Parse(res.Header.Get("Location"))
			if err != nil {
				t.Fatal(err)
			}
			next = loc.String()
		case res.StatusCode == http.StatusOK && strings.Contains(res.Request.URL.Path, "/login/username"):
			id := res.Request.URL.Query().Get("authRequestID")
			form := url.Values{"username": {subject}, "password": {Password}, "id": {id}}
			res, err := noFollow(client).PostForm(res.Request.URL.String(), form)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != http.StatusFound {
				t.Fatalf("provider login as %s: %d %s", subject, res.StatusCode, b)
			}
			loc, _ := res.Request.URL.Parse(res.Header.Get("Location"))
			next = loc.String()
		default:
			t.Fatalf("GET %s: %d %s", next, res.StatusCode, body)
		}
	}
	t.Fatalf("sign-in from %s did not come back to %s", startURL, redirectURL)
	return ""
}

// noFollow is client without following redirects.
func noFollow(c *http.Client) *http.Client {
	cc := *c
	cc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &cc
}

var buildOnce struct {
	sync.Once
	bin string
	err error
}

// build runs scripts/oidc-build.sh (a no-op when the binary is cached) and returns the
// binary's path.
func build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.Getwd()
		if err != nil {
			buildOnce.err = err
			return
		}
		for !fileExists(filepath.Join(dir, "scripts", "oidc-build.sh")) {
			parent := filepath.Dir(dir)
			if parent == dir {
				buildOnce.err = fmt.Errorf("no scripts/oidc-build.sh above the test's directory")
				return
			}
			dir = parent
		}
		out, err := exec.Command(filepath.Join(dir, "scripts", "oidc-build.sh")).Output()
		if err != nil {
			var stderr string
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = string(ee.Stderr)
			}
			buildOnce.err = fmt.Errorf("scripts/oidc-build.sh: %v\n%s", err, stderr)
			return
		}
		buildOnce.bin = strings.TrimSpace(string(out))
	})
	if buildOnce.err != nil {
		t.Fatal(buildOnce.err)
	}
	return buildOnce.bin
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
