package identity

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse/audit"
)

// record appends one change of people, roles, teams or tokens to the audit trail
// inside tx, at the service's clock, with the actor ctx carries; called last in the
// change's transaction.
func (s *Identity) record(ctx context.Context, tx *gorm.DB, action, object string, before, after any) error {
	return audit.Record(ctx, tx, audit.Event{Action: action, Object: object, Before: before, After: after, At: s.now()})
}

// userObject names a user in the trail: "user:3 ana@example.com".
func userObject(u User) string { return fmt.Sprintf("user:%d %s", u.ID, u.Email) }

// accessState is what a user may do, in the audit trail: their role and team, where
// they came from, and whether the account is disabled.
type accessState struct {
	Role     Role   `json:"role"`
	Team     string `json:"team,omitempty"`
	Source   string `json:"source"`
	Group    string `json:"group,omitempty"`
	Disabled bool   `json:"disabled"`
}

func accessOf(u User) accessState {
	src := u.AccessSource
	if src == "" {
		src = SourceLocal
	}
	return accessState{Role: u.Role, Team: u.TeamID, Source: src, Group: u.AccessGroup, Disabled: u.DisabledAt != nil}
}

// tokenState is a token in the audit trail (never its secret or hash).
type tokenState struct {
	Name    string     `json:"name"`
	Scope   string     `json:"scope"`
	User    *int64     `json:"user,omitempty"`
	Cluster *string    `json:"cluster,omitempty"`
	Expires *time.Time `json:"expires,omitempty"`
	Revoked *time.Time `json:"revoked,omitempty"`
}

func tokenOf(t APIToken) tokenState {
	return tokenState{Name: t.Name, Scope: t.Scope, User: t.UserID, Cluster: t.ClusterID, Expires: t.ExpiresAt, Revoked: t.RevokedAt}
}

// providerActor is the actor of a sign-in through the provider: the person signing
// in, from the address the request came from.
func providerActor(ctx context.Context, email string) context.Context {
	return audit.WithActor(ctx, audit.Actor{Kind: audit.KindProvider, Email: email, Address: audit.From(ctx).Address})
}
