package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/clearhouse/clearhouse/identity"
)

// OIDCConfig is sign-in through the company's OpenID Provider (docs/access.md). It is
// on when Issuer is set.
type OIDCConfig struct {
	Issuer       string   // the provider's issuer URL, exactly as its discovery document says it
	ClientID     string   // Clearhouse's client id at the provider; ID tokens must name it as their audience
	ClientSecret string   // never logged
	Scopes       []string // besides openid; default profile, email, groups
	RedirectURL  string   // where the provider sends the browser back: <public URL>/login/oidc/callback
	Mapping      identity.GroupMapping
	// HTTPClient, when set, is what Clearhouse talks to the provider with (tests, proxies).
	HTTPClient *http.Client
}

// Enabled reports whether sign-in through a provider is configured.
func (c OIDCConfig) Enabled() bool { return c.Issuer != "" }

// oidcClient holds the provider's endpoints and keys, discovered at the first sign-in
// (so that the server starts while the provider is down) and kept once found.
type oidcClient struct {
	cfg OIDCConfig
	now func() time.Time

	mu       sync.Mutex
	provider *oidc.Provider
}

// ctx gives the oauth2 and oidc libraries the configured HTTP client.
func (o *oidcClient) ctx(ctx context.Context) context.Context {
	if o.cfg.HTTPClient != nil {
		return oidc.ClientContext(ctx, o.cfg.HTTPClient)
	}
	return ctx
}

// discover returns the provider, fetching its discovery document the first time.
func (o *oidcClient) discover(ctx context.Context) (*oidc.Provider, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.provider != nil {
		return o.provider, nil
	}
	// The key set fetches keys with the context given here, so it must outlive this request.
	p, err := oidc.NewProvider(o.ctx(context.WithoutCancel(ctx)), o.cfg.Issuer)
	if err != nil {
		return nil, fmt.Errorf("discovering the OpenID Provider %s: %w", o.cfg.Issuer, err)
	}
	o.provider = p
	return p, nil
}

// oauth2Config is the authorization code flow's client configuration.
func (o *oidcClient) oauth2Config(p *oidc.Provider) *oauth2.Config {
	scopes := append([]string{oidc.ScopeOpenID}, o.cfg.Scopes...)
	return &oauth2.Config{ClientID: o.cfg.ClientID, ClientSecret: o.cfg.ClientSecret, Endpoint: p.Endpoint(), RedirectURL: o.cfg.RedirectURL, Scopes: scopes}
}

// errToken is any refused ID token; the reason goes to the log, not the browser.
var errToken = errors.New("the provider's answer could not be verified")

// exchange trades the code for tokens with the PKCE verifier and verifies the ID token:
// its signature by the provider's keys, issuer, audience (our client id), expiry by the
// server's clock, and nonce. It returns who signed in, with email, name and groups from
// the token or, where the token lacks them, the userinfo endpoint.
func (o *oidcClient) exchange(ctx context.Context, code, verifier, nonce string) (identity.ProviderPerson, error) {
	p, err := o.discover(ctx)
	if err != nil {
		return identity.ProviderPerson{}, err
	}
	conf := o.oauth2Config(p)
	tok, err := conf.Exchange(o.ctx(ctx), code, oauth2.VerifierOption(verifier))
	if err != nil {
		return identity.ProviderPerson{}, fmt.Errorf("%w: exchanging the code: %v", errToken, err)
	}
	raw, ok := tok.Extra("id_token").(string)
	if !ok || raw == "" {
		return identity.ProviderPerson{}, fmt.Errorf("%w: the token response has no id_token", errToken)
	}
	idt, err := p.Verifier(&oidc.Config{ClientID: o.cfg.ClientID, Now: o.now}).Verify(o.ctx(ctx), raw)
	if err != nil {
		return identity.ProviderPerson{}, fmt.Errorf("%w: %v", errToken, err)
	}
	if idt.Nonce != nonce {
		return identity.ProviderPerson{}, fmt.Errorf("%w: the ID token's nonce is not this sign-in's", errToken)
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return identity.ProviderPerson{}, fmt.Errorf("%w: %v", errToken, err)
	}
	if _, ok := claims["email"]; !ok {
		info, err := p.UserInfo(o.ctx(ctx), oauth2.StaticTokenSource(tok))
		if err != nil {
			return identity.ProviderPerson{}, fmt.Errorf("reading the provider's userinfo: %w", err)
		}
		if info.Subject != idt.Subject {
			return identity.ProviderPerson{}, fmt.Errorf("%w: userinfo is about another subject", errToken)
		}
		more := map[string]any{}
		if err := info.Claims(&more); err != nil {
			return identity.ProviderPerson{}, fmt.Errorf("reading the provider's userinfo: %w", err)
		}
		for k, v := range more {
			if _, ok := claims[k]; !ok {
				claims[k] = v
			}
		}
	}
	person := identity.ProviderPerson{Issuer: idt.Issuer, Subject: idt.Subject}
	person.Email, _ = claims["email"].(string)
	person.EmailVerified, _ = claims["email_verified"].(bool)
	person.Name, _ = claims["name"].(string)
	person.Groups = stringsClaim(claims[o.cfg.Mapping.Claim])
	return person, nil
}

// stringsClaim reads a claim that lists names (an array of strings, or one string).
func stringsClaim(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// String describes the configuration without its client secret, so that printing or
// logging it never shows the secret.
func (c OIDCConfig) String() string {
	return fmt.Sprintf("OIDC{issuer: %s, client: %s, redirect: %s, scopes: %v, secret: hidden}", c.Issuer, c.ClientID, c.RedirectURL, c.Scopes)
}
