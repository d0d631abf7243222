package server

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"

	"github.com/spf13/pflag"

	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/web"
)

// SignInConfig is sign-in through the company's OpenID Provider and whether passwords
// stay on (docs/access.md). The client secret comes from CLEARHOUSE_OIDC_CLIENT_SECRET
// or --oidc-client-secret-file, never a flag: command lines are visible to every user.
type SignInConfig struct {
	Issuer           string
	ClientID         string
	ClientSecret     string
	ClientSecretFile string
	Scopes           []string
	RedirectURL      string // default: --public-url + /login/oidc/callback
	GroupsFile       string // the group mapping (YAML)
	NoPasswordSignIn bool   // company sign-in only: no password form
}

// RegisterFlags adds the sign-in flags to serve's.
func (c *SignInConfig) RegisterFlags(f *pflag.FlagSet) {
	f.StringVar(&c.Issuer, "oidc-issuer", "", "issuer URL of the company's OpenID Provider (e.g. https://login.example.com/realms/acme); unset: no company sign-in")
	f.StringVar(&c.ClientID, "oidc-client-id", "", "Clearhouse's client id at the OpenID Provider (its secret in CLEARHOUSE_OIDC_CLIENT_SECRET or --oidc-client-secret-file)")
	f.StringVar(&c.ClientSecretFile, "oidc-client-secret-file", "", "a file holding the client secret (instead of CLEARHOUSE_OIDC_CLIENT_SECRET)")
	f.StringSliceVar(&c.Scopes, "oidc-scopes", []string{"profile", "email", "groups"}, "scopes asked for besides openid")
	f.StringVar(&c.RedirectURL, "oidc-redirect-url", "", "the redirect URL registered at the provider; default --public-url followed by /login/oidc/callback")
	f.StringVar(&c.GroupsFile, "oidc-groups", "", "YAML file mapping the token's groups to teams and roles (docs/access.md); required with --oidc-issuer")
	f.BoolVar(&c.NoPasswordSignIn, "no-password-sign-in", false, "turn signing in with a password off: company sign-in only (by default passwords stay on for a break-glass operator)")
}

// Validate checks the sign-in settings, reading the group mapping and the secret's file.
func (c SignInConfig) Validate(publicURL string) error {
	if c.Issuer == "" {
		if c.NoPasswordSignIn {
			return errors.New("--no-password-sign-in needs --oidc-issuer: otherwise nobody could sign in")
		}
		return nil
	}
	_, err := c.OIDCConfig(publicURL)
	return err
}

// OIDCConfig is the web server's OpenID configuration; an error names the setting at fault.
func (c SignInConfig) OIDCConfig(publicURL string) (web.OIDCConfig, error) {
	if c.Issuer == "" {
		return web.OIDCConfig{}, nil
	}
	if u, err := url.Parse(c.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return web.OIDCConfig{}, fmt.Errorf("--oidc-issuer %q: must be an https URL", c.Issuer)
	}
	if c.ClientID == "" {
		return web.OIDCConfig{}, errors.New("--oidc-client-id: required with --oidc-issuer")
	}
	secret := c.ClientSecret
	if c.ClientSecretFile != "" {
		b, err := os.ReadFile(c.ClientSecretFile)
		if err != nil {
			return web.OIDCConfig{}, fmt.Errorf("--oidc-client-secret-file: %v", err)
		}
		secret = strings.TrimSpace(string(b))
	}
	if secret == "" {
		return web.OIDCConfig{}, errors.New("CLEARHOUSE_OIDC_CLIENT_SECRET or --oidc-client-secret-file: the client secret is required with --oidc-issuer")
	}
	redirect := c.RedirectURL
	if redirect == "" {
		if publicURL == "" {
			return web.OIDCConfig{}, errors.New("--oidc-redirect-url: required with --oidc-issuer unless --public-url is set")
		}
		redirect = strings.TrimRight(publicURL, "/") + "/login/oidc/callback"
	}
	if u, err := url.Parse(redirect); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return web.OIDCConfig{}, fmt.Errorf("--oidc-redirect-url %q: must be an http or https URL", redirect)
	}
	if c.GroupsFile == "" {
		return web.OIDCConfig{}, errors.New("--oidc-groups: required with --oidc-issuer (docs/access.md shows the file)")
	}
	m, err := identity.ReadGroupMapping(c.GroupsFile)
	if err != nil {
		return web.OIDCConfig{}, fmt.Errorf("--oidc-groups: %v", err)
	}
	return web.OIDCConfig{Issuer: c.Issuer, ClientID: c.ClientID, ClientSecret: secret, Scopes: c.Scopes, RedirectURL: redirect, Mapping: m}, nil
}

// String describes the settings without the client secret: printing or logging them
// never shows it.
func (c SignInConfig) String() string {
	return fmt.Sprintf("SignIn{issuer: %s, client: %s, secret file: %s, redirect: %s, groups: %s, no passwords: %v, secret: hidden}",
		c.Issuer, c.ClientID, c.ClientSecretFile, c.RedirectURL, c.GroupsFile, c.NoPasswordSignIn)
}
