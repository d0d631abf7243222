// Package identity is who may use Clearhouse: people and scripts (users with a
// login, a password hash and a role), their browser sessions, their API tokens, and
// the agent tokens bound to one cluster. It hashes passwords with bcrypt, stores
// only hashes of session and API tokens, and ends a user's sessions in the same
// transaction that resets their password or disables them. Its services return
// domain errors (clearhouse.Error) that the web layer maps to statuses.
//
// Teams and clusters are the market's (package exchange): a team's budget, approval
// threshold and orders, and which of its members are told what. A user row records
// only the id of the team a member or owner acts for; identity checks that the team
// exists and that the role fits (members and owners on one team, finance and
// operators on none) and knows nothing else of it. Likewise an agent token names its
// cluster by id. So identity imports neither exchange nor anything above it, and the
// market reads a user (its id, role and team) to decide what it may do.
package identity

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"sync"
	"time"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/store"
	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"
)

// Role is what a user may do in the market.
type Role string

// The roles, from DESIGN.md.
const (
	RoleMember   Role = "member"   // enters bids and offers for its team
	RoleOwner    Role = "owner"    // a member who also approves the team's large orders
	RoleFinance  Role = "finance"  // reads every ledger, grants budget, downloads reports
	RoleOperator Role = "operator" // manages clusters, pools, curves and auctions
)

// Roles lists every role, in the order forms show them.
var Roles = []Role{RoleMember, RoleOwner, RoleFinance, RoleOperator}

// Valid reports whether r is one of the roles.
func (r Role) Valid() bool {
	for _, x := range Roles {
		if r == x {
			return true
		}
	}
	return false
}

// OnTeam reports whether the role acts for one team (member or owner).
func (r Role) OnTeam() bool { return r == RoleMember || r == RoleOwner }

// User is a person (or script, through a token) who uses the market.
type User struct {
	ID           int64
	Email        string
	Name         string
	Role         Role
	TeamID       string `gorm:"default:null"` // set for members and owners, empty (NULL) otherwise
	PasswordHash string `gorm:"column:password_hash"`
	CreatedAt    time.Time
	DisabledAt   *time.Time
	EmailOffAt   *time.Time // when the user turned notification emails off (nil: on)
	// OIDCSubject links the user to one provider identity ("issuer subject"); nil: none.
	OIDCSubject  *string `gorm:"column:oidc_subject"`
	AccessSource string  `gorm:"default:local"` // SourceLocal, SourceProvider or SourceRevoked
	AccessGroup  string  // the provider group whose rule gave the role and team (SourceProvider)
}

// Session is a signed-in browser. Its token is never stored: only its hash.
type Session struct {
	TokenHash  string `gorm:"primaryKey"`
	UserID     int64
	CSRFToken  string `gorm:"column:csrf_token"`
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// APIToken is a bearer token for scripts (scope "api") or cluster agents (scope
// "agent", bound to one cluster). Only its hash is stored.
type APIToken struct {
	ID         int64
	TokenHash  string
	UserID     *int64
	Name       string
	Scope      string
	ClusterID  *string
	CreatedAt  time.Time
	LastUsedAt *time.Time // recorded at most once a minute
	RevokedAt  *time.Time
	ExpiresAt  *time.Time // nil: never expires
}

// Token scopes.
const (
	ScopeAPI   = "api"
	ScopeAgent = "agent"
)

// Session lifetimes.
const (
	SessionIdle     = 12 * time.Hour
	SessionAbsolute = 7 * 24 * time.Hour
)

// Identity manages users, browser sessions and API tokens.
type Identity struct {
	db       *store.DB
	now      func() time.Time
	hashCost int

	dummyOnce sync.Once
	dummy     []byte
}

// NewIdentity returns an Identity on db. hashCost is bcrypt's cost; 0 means the
// production default.
func NewIdentity(db *store.DB, now func() time.Time, hashCost int) *Identity {
	if hashCost == 0 {
		hashCost = 12
	}
	return &Identity{db: db, now: now, hashCost: hashCost}
}

// HashCost is the bcrypt cost the service hashes new passwords at.
func (s *Identity) HashCost() int { return s.hashCost }

// MaxEmail is the longest email address an account may have (RFC 5321's limit on a
// path, less its angle brackets).
const MaxEmail = 254

// NewUser is what AddUser needs.
type NewUser struct {
	Email, Name, Password string
	Role                  Role
	TeamID                string
}

// Validate checks the new user's fields; it returns EINVALID naming the field at fault.
func (u *NewUser) Validate() error {
	u.Email = strings.ToLower(strings.TrimSpace(u.Email))
	u.Name = strings.TrimSpace(u.Name)
	if len(u.Email) > MaxEmail {
		return clearhouse.Errorf(clearhouse.EINVALID, "email: must be at most %d bytes", MaxEmail)
	}
	if a, err := mail.ParseAddress(u.Email); err != nil || a.Address != u.Email {
		return clearhouse.Errorf(clearhouse.EINVALID, "email: %q is not an email address", u.Email)
	}
	if !u.Role.Valid() {
		return clearhouse.Errorf(clearhouse.EINVALID, "role: must be one of member, owner, finance, operator, got %q", u.Role)
	}
	if u.Role.OnTeam() && u.TeamID == "" {
		return clearhouse.Errorf(clearhouse.EINVALID, "team: a %s must belong to a team", u.Role)
	}
	if !u.Role.OnTeam() && u.TeamID != "" {
		return clearhouse.Errorf(clearhouse.EINVALID, "team: a %s acts for every team and belongs to none", u.Role)
	}
	if u.Password != "" && len(u.Password) < 10 {
		return clearhouse.Errorf(clearhouse.EINVALID, "password: must be at least 10 characters")
	}
	if len(u.Password) > 72 {
		return clearhouse.Errorf(clearhouse.EINVALID, "password: must be at most 72 bytes")
	}
	return nil
}

// AddUser creates a user. An empty password makes an account that can only sign in
// through the authenticating proxy or use tokens. Returns EINVALID for bad fields,
// ENOTFOUND for an unknown team and ECONFLICT for a taken email.
func (s *Identity) AddUser(ctx context.Context, nu NewUser) (User, error) {
	if err := nu.Validate(); err != nil {
		return User{}, err
	}
	u := User{Email: nu.Email, Name: nu.Name, Role: nu.Role, TeamID: nu.TeamID, CreatedAt: s.now()}
	if nu.Password != "" {
		h, err := bcrypt.GenerateFromPassword([]byte(nu.Password), s.hashCost)
		if err != nil {
			return User{}, err
		}
		u.PasswordHash = string(h)
	}
	err := s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if nu.TeamID != "" {
			var n int64
			if err := tx.Table("teams").Where("id = ?", nu.TeamID).Count(&n).Error; err != nil {
				return err
			} else if n == 0 {
				return clearhouse.Errorf(clearhouse.ENOTFOUND, "team: no team %q", nu.TeamID)
			}
		}
		if err := tx.Omit("ID").Create(&u).Error; errors.Is(err, gorm.ErrDuplicatedKey) {
			return clearhouse.Errorf(clearhouse.ECONFLICT, "email: %s already has an account", nu.Email)
		} else if err != nil {
			return err
		}
		return s.record(ctx, tx, "user.add", userObject(u), nil, accessOf(u))
	})
	return u, err
}

// UserByEmail returns the user with that email, or ENOTFOUND.
func (s *Identity) UserByEmail(ctx context.Context, email string) (User, error) {
	var u User
	err := s.db.Read.WithContext(ctx).Where("email = ?", strings.ToLower(strings.TrimSpace(email))).Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return User{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "no user with email %q", email)
	}
	return u, err
}

// dummyHash returns a hash at the service's cost to compare against when the email
// is unknown, so that a wrong email takes as long as a wrong password.
func (s *Identity) dummyHash() []byte {
	s.dummyOnce.Do(func() {
		s.dummy, _ = bcrypt.GenerateFromPassword([]byte("clearhouse-dummy-password"), s.hashCost)
	})
	return s.dummy
}

// Authenticate checks an email and password. Any failure is EUNAUTHORIZED with the
// same message, so it does not tell which of the two was wrong.
func (s *Identity) Authenticate(ctx context.Context, email, password string) (User, error) {
	wrong := clearhouse.Errorf(clearhouse.EUNAUTHORIZED, "Wrong email or password.")
	u, err := s.UserByEmail(ctx, email)
	if clearhouse.ErrorCode(err) == clearhouse.ENOTFOUND || (err == nil && u.PasswordHash == "") {
		_ = bcrypt.CompareHashAndPassword(s.dummyHash(), []byte(password))
		return User{}, wrong
	} else if err != nil {
		return User{}, err
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil || u.DisabledAt != nil {
		return User{}, wrong
	}
	return u, nil
}

// newSecret returns a random token with a readable prefix and the hex SHA-256 of it.
func newSecret(prefix string) (token, hash string) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	token = prefix + base64.RawURLEncoding.EncodeToString(b[:])
	return token, hashSecret(token)
}

func hashSecret(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// StartSession signs a user in and returns the session's cookie token (shown once).
func (s *Identity) StartSession(ctx context.Context, userID int64) (string, Session, error) {
	token, hash := newSecret("chs_")
	csrf, _ := newSecret("")
	now := s.now()
	sess := Session{TokenHash: hash, UserID: userID, CSRFToken: csrf[:43], CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(SessionAbsolute)}
	if err := s.db.Write.WithContext(ctx).Create(&sess).Error; err != nil {
		return "", Session{}, err
	}
	return token, sess, nil
}

// SessionUser returns the live session for a cookie token and its user, or
// EUNAUTHORIZED when it is unknown, expired, idle too long or its user is disabled.
// It records the session as seen, at most once a minute.
func (s *Identity) SessionUser(ctx context.Context, token string) (Session, User, error) {
	gone := clearhouse.Errorf(clearhouse.EUNAUTHORIZED, "Your session has ended; please sign in again.")
	var sess Session
	err := s.db.Read.WithContext(ctx).Where("token_hash = ?", hashSecret(token)).Take(&sess).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return Session{}, User{}, gone
	} else if err != nil {
		return Session{}, User{}, err
	}
	now := s.now()
	if now.After(sess.ExpiresAt) || now.Sub(sess.LastSeenAt) > SessionIdle {
		return Session{}, User{}, gone
	}
	var u User
	if err := s.db.Read.WithContext(ctx).Take(&u, sess.UserID).Error; err != nil || u.DisabledAt != nil {
		return Session{}, User{}, gone
	}
	if now.Sub(sess.LastSeenAt) > time.Minute {
		sess.LastSeenAt = now
		if err := s.db.Write.WithContext(ctx).Model(&Session{}).Where("token_hash = ?", sess.TokenHash).Update("last_seen_at", now).Error; err != nil {
			return Session{}, User{}, err
		}
	}
	return sess, u, nil
}

// EndSession signs a session out. Ending an unknown session is not an error.
func (s *Identity) EndSession(ctx context.Context, token string) error {
	return s.db.Write.WithContext(ctx).Where("token_hash = ?", hashSecret(token)).Delete(&Session{}).Error
}

// IssueToken makes a new API token for a user that never expires and returns it
// (shown once). See IssueTokenUntil for one that expires.
func (s *Identity) IssueToken(ctx context.Context, userID int64, name string) (string, APIToken, error) {
	return s.IssueTokenUntil(ctx, userID, name, nil)
}

// IssueAgentToken makes a new token for a cluster agent, bound to one cluster.
// Returns ENOTFOUND for an unknown cluster.
func (s *Identity) IssueAgentToken(ctx context.Context, clusterID, name string) (string, APIToken, error) {
	token, hash := newSecret("cha_")
	t := APIToken{TokenHash: hash, Name: name, Scope: ScopeAgent, ClusterID: &clusterID, CreatedAt: s.now()}
	err := s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var n int64
		if err := tx.Table("clusters").Where("id = ?", clusterID).Count(&n).Error; err != nil {
			return err
		} else if n == 0 {
			return clearhouse.Errorf(clearhouse.ENOTFOUND, "cluster: no cluster %q", clusterID)
		}
		if err := tx.Omit("ID").Create(&t).Error; err != nil {
			return err
		}
		return s.record(ctx, tx, "token.issue", fmt.Sprintf("token:%d", t.ID), nil, tokenOf(t))
	})
	return token, t, err
}

// TokenUser resolves a bearer token. For a user token it returns the user; for an
// agent token the user is zero and the token names its cluster. Unknown, revoked and
// expired tokens, and tokens of disabled users, are EUNAUTHORIZED. It records the
// token as used, at most once a minute.
func (s *Identity) TokenUser(ctx context.Context, token string) (APIToken, User, error) {
	bad := clearhouse.Errorf(clearhouse.EUNAUTHORIZED, "The API token is not valid.")
	var t APIToken
	err := s.db.Read.WithContext(ctx).Where("token_hash = ?", hashSecret(token)).Take(&t).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return APIToken{}, User{}, bad
	} else if err != nil {
		return APIToken{}, User{}, err
	}
	now := s.now()
	switch {
	case t.RevokedAt != nil:
		return APIToken{}, User{}, clearhouse.Errorf(clearhouse.EUNAUTHORIZED, "The API token was revoked.")
	case t.ExpiresAt != nil && !now.Before(*t.ExpiresAt):
		return APIToken{}, User{}, clearhouse.Errorf(clearhouse.EUNAUTHORIZED, "The API token expired on %s.", t.ExpiresAt.UTC().Format(time.DateOnly))
	}
	var u User
	if t.UserID != nil {
		if err := s.db.Read.WithContext(ctx).Take(&u, *t.UserID).Error; err != nil || u.DisabledAt != nil {
			return APIToken{}, User{}, bad
		}
	}
	if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > time.Minute {
		t.LastUsedAt = &now
		if err := s.db.Write.WithContext(ctx).Model(&APIToken{}).Where("id = ?", t.ID).Update("last_used_at", now).Error; err != nil {
			return APIToken{}, User{}, err
		}
	}
	return t, u, nil
}
