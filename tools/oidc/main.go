// Command oidc-provider runs the example OpenID Provider of github.com/zitadel/oidc/v3
// (example/server/exampleop and example/server/storage, unchanged) on loopback for
// Clearhouse's sign-in tests, with three additions the example lacks:
//
//   - the issuer is ISSUER (the example hard-codes http://localhost:PORT/);
//   - the clients are "clearhouse" and "other", web clients with the secret
//     CLIENT_SECRET and the redirect URLs REDIRECT_URI (comma-separated); "other" lets a
//     test obtain a real token whose audience is not Clearhouse's;
//   - every ID token carries a "groups" claim read from GROUPS_FILE (a JSON object from
//     user id to group names) when the token is made, so a test changes a person's
//     groups by rewriting the file.
//
// The users are USERS_FILE (the example's JSON format) or the example's two built-in
// users. It listens on ADDR (default 127.0.0.1:9998).
package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// groupStorage is the example's in-memory storage with a groups claim in ID tokens.
type groupStorage struct {
	*storage.Storage
	groupsFile string
}

// SetUserinfoFromRequest adds the person's groups to what the example asserts in an ID token.
func (s groupStorage) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	return s.addGroups(info, req.GetSubject())
}

// SetUserinfoFromToken adds the person's groups to the userinfo endpoint's answer.
func (s groupStorage) SetUserinfoFromToken(ctx context.Context, info *oidc.UserInfo, tokenID, subject, origin string) error {
	if err := s.Storage.SetUserinfoFromToken(ctx, info, tokenID, subject, origin); err != nil {
		return err
	}
	return s.addGroups(info, subject)
}

func (s groupStorage) addGroups(info *oidc.UserInfo, subject string) error {
	if s.groupsFile == "" {
		return nil
	}
	b, err := os.ReadFile(s.groupsFile)
	if err != nil {
		return err
	}
	var groups map[string][]string
	if err := json.Unmarshal(b, &groups); err != nil {
		return err
	}
	g := groups[subject]
	if g == nil {
		g = []string{}
	}
	info.AppendClaims("groups", g)
	return nil
}

func main() {
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	addr := env("ADDR", "127.0.0.1:9998")
	issuer := env("ISSUER", "http://"+addr+"/")
	redirects := strings.Split(os.Getenv("REDIRECT_URI"), ",")
	secret := env("CLIENT_SECRET", "secret")
	storage.RegisterClients(
		storage.WebClient("clearhouse", secret, redirects...),
		storage.WebClient("other", secret, redirects...),
	)
	var users storage.UserStore = storage.NewUserStore(issuer)
	if f := os.Getenv("USERS_FILE"); f != "" {
		var err error
		if users, err = storage.StoreFromFile(f); err != nil {
			log.Error("reading users", "err", err)
			os.Exit(1)
		}
	}
	st := groupStorage{Storage: storage.NewStorage(users), groupsFile: os.Getenv("GROUPS_FILE")}
	router := exampleop.SetupServer(issuer, st, log, false)
	log.Info("OpenID Provider listening", "issuer", issuer, "addr", addr)
	if err := http.ListenAndServe(addr, router); err != nil {
		log.Error("serving", "err", err)
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
