package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/clearhouse/clearhouse/server"
)

func TestSignInFlagsAreValidated(t *testing.T) {
	dir := t.TempDir()
	groups, secret := filepath.Join(dir, "groups.yaml"), filepath.Join(dir, "secret")
	if err := os.WriteFile(groups, []byte("rules:\n  - {group: ops, role: operator}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := server.SignInConfig{Issuer: "https://idp.example.com", ClientID: "clearhouse", ClientSecretFile: secret, GroupsFile: groups}
	for _, tc := range []struct {
		change    func(*server.SignInConfig)
		publicURL string
		want      string
	}{
		{func(c *server.SignInConfig) { *c = server.SignInConfig{NoPasswordSignIn: true} }, "", "--no-password-sign-in needs --oidc-issuer"},
		{func(c *server.SignInConfig) { c.Issuer = "idp.example.com" }, "https://ch.example.com", "--oidc-issuer"},
		{func(c *server.SignInConfig) { c.ClientID = "" }, "https://ch.example.com", "--oidc-client-id"},
		{func(c *server.SignInConfig) { c.ClientSecretFile = "" }, "https://ch.example.com", "CLEARHOUSE_OIDC_CLIENT_SECRET"},
		{func(c *server.SignInConfig) { c.ClientSecretFile = secret + ".missing" }, "https://ch.example.com", "--oidc-client-secret-file"},
		{func(c *server.SignInConfig) {}, "", "--oidc-redirect-url: required"},
		{func(c *server.SignInConfig) { c.GroupsFile = "" }, "https://ch.example.com", "--oidc-groups: required"},
		{func(c *server.SignInConfig) { c.GroupsFile = secret }, "https://ch.example.com", "--oidc-groups"},
	} {
		c := good
		tc.change(&c)
		if err := c.Validate(tc.publicURL); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: got %v, want an error naming %s", c, err, tc.want)
		}
	}
	w, err := good.OIDCConfig("https://ch.example.com/")
	if err != nil || w.ClientSecret != "s3cret" || w.RedirectURL != "https://ch.example.com/login/oidc/callback" || w.Mapping.Claim != "groups" {
		t.Fatalf("good: %v %v", w, err)
	}
	good.ClientSecret = "from-the-environment"
	for _, printed := range []string{fmt.Sprint(w), fmt.Sprintf("%+v", w), fmt.Sprint(good), fmt.Sprintf("%v", server.Config{SignIn: good})} {
		if strings.Contains(printed, "s3cret") || strings.Contains(printed, "from-the-environment") {
			t.Errorf("printed configuration shows the client secret: %s", printed)
		}
	}
}

// serve takes the client secret from CLEARHOUSE_OIDC_CLIENT_SECRET and never prints it.
func TestServeTakesTheClientSecretFromTheEnvironment(t *testing.T) {
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", t.TempDir() + "/c.db", "--public-url", "https://ch.example.com",
		"--oidc-issuer", "https://idp.example.com", "--oidc-client-id", "clearhouse"}
	code, _, errOut := runCLI(t, "", args...)
	if code == 0 || !strings.Contains(errOut, "CLEARHOUSE_OIDC_CLIENT_SECRET") {
		t.Fatalf("no secret: code %d, stderr %q", code, errOut)
	}
	t.Setenv("CLEARHOUSE_OIDC_CLIENT_SECRET", "sekrit-from-env")
	code, out, errOut := runCLI(t, "", args...)
	if code == 0 || !strings.Contains(errOut, "--oidc-groups: required") {
		t.Fatalf("secret from the environment, no mapping: code %d, stderr %q", code, errOut)
	}
	if strings.Contains(out+errOut, "sekrit-from-env") {
		t.Fatalf("serve printed the client secret: %q %q", out, errOut)
	}
}
