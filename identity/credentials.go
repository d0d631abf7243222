package identity

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/clearhouse/clearhouse"
	"golang.org/x/crypto/bcrypt"
	"gorm.io/gorm"
)

// What operators do with credentials: issue tokens that expire, list and revoke
// tokens, reset passwords, disable users and end their sessions. Every change that
// takes access away ends the user's sessions in the same transaction.

// DefaultTokenLifetime is how long a user's API token lasts unless its issuer says
// otherwise (the command line's --expires); "never" must be asked for.
const DefaultTokenLifetime = 90 * 24 * time.Hour

// maxTokenName bounds a token's label.
const maxTokenName = 100

// validTokenName checks a token's label: short, UTF-8, no NUL.
func validTokenName(name string) error {
	if len(name) > maxTokenName || !utf8.ValidString(name) || strings.IndexByte(name, 0) >= 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "name: must be text of at most %d bytes", maxTokenName)
	}
	return nil
}

// IssueTokenUntil makes a new API token for a user that stops working at expires
// (nil: never) and returns it (shown once; only its hash is stored). Returns EINVALID
// for a bad name or an expiry not in the future, ENOTFOUND for an unknown user and
// EFORBIDDEN for a disabled one.
func (s *Identity) IssueTokenUntil(ctx context.Context, userID int64, name string, expires *time.Time) (string, APIToken, error) {
	if err := validTokenName(name); err != nil {
		return "", APIToken{}, err
	}
	now := s.now()
	if expires != nil && !expires.After(now) {
		return "", APIToken{}, clearhouse.Errorf(clearhouse.EINVALID, "expires: must be in the future")
	}
	token, hash := newSecret("chu_")
	t := APIToken{TokenHash: hash, UserID: &userID, Name: name, Scope: ScopeAPI, CreatedAt: now, ExpiresAt: expires}
	err := s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		u, err := userIn(tx, userID)
		if err != nil {
			return err
		}
		if u.DisabledAt != nil {
			return clearhouse.Errorf(clearhouse.EFORBIDDEN, "user: %s is disabled", u.Email)
		}
		if err := tx.Omit("ID").Create(&t).Error; err != nil {
			return err
		}
		return s.record(ctx, tx, "token.issue", fmt.Sprintf("token:%d", t.ID), nil, tokenOf(t))
	})
	if err != nil {
		return "", APIToken{}, err
	}
	return token, t, nil
}

// userIn reads a user inside tx, or ENOTFOUND.
func userIn(tx *gorm.DB, id int64) (User, error) {
	var u User
	err := tx.Take(&u, id).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return User{}, clearhouse.Errorf(clearhouse.ENOTFOUND, "user: no user %d", id)
	}
	return u, err
}

// TokenView is a token as operators see it: never its secret or hash.
type TokenView struct {
	ID         int64
	Name       string
	Scope      string
	Owner      string // the user's email, or "" for an agent token
	ClusterID  string // an agent token's cluster
	CreatedAt  time.Time
	LastUsedAt *time.Time
	ExpiresAt  *time.Time
	RevokedAt  *time.Time
}

// Live reports whether the token works at now.
func (t TokenView) Live(now time.Time) bool {
	return t.RevokedAt == nil && (t.ExpiresAt == nil || now.Before(*t.ExpiresAt))
}

// TokenFilter chooses tokens to list: those of one user (UserID, 0 for all), with
// ids below Before (0: from the newest), at most Limit (1 to 500; 0 is 100).
type TokenFilter struct {
	UserID int64
	Before int64
	Limit  int
}

// Tokens lists tokens, newest first. Returns EINVALID for a limit out of range.
func (s *Identity) Tokens(ctx context.Context, f TokenFilter) ([]TokenView, error) {
	if f.Limit == 0 {
		f.Limit = 100
	}
	if f.Limit < 1 || f.Limit > 500 {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "limit: must be between 1 and 500")
	}
	q := s.db.Read.WithContext(ctx).Table("api_tokens t").Select(`t.id, t.name, t.scope, COALESCE(u.email, '') AS owner,
		COALESCE(t.cluster_id, '') AS cluster_id, t.created_at, t.last_used_at, t.expires_at, t.revoked_at`).
		Joins("LEFT JOIN users u ON u.id = t.user_id")
	if f.UserID != 0 {
		q = q.Where("t.user_id = ?", f.UserID)
	}
	if f.Before > 0 {
		q = q.Where("t.id < ?", f.Before)
	}
	var out []TokenView
	err := q.Order("t.id DESC").Limit(f.Limit).Scan(&out).Error
	return out, err
}

// RevokeToken stops a token from working, at once and for good, and returns it.
// Revoking a revoked token changes nothing. Returns ENOTFOUND for an unknown id.
func (s *Identity) RevokeToken(ctx context.Context, id int64) (APIToken, error) {
	var t APIToken
	err := s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Take(&t, id).Error; errors.Is(err, gorm.ErrRecordNotFound) {
			return clearhouse.Errorf(clearhouse.ENOTFOUND, "token: no token %d", id)
		} else if err != nil {
			return err
		}
		if t.RevokedAt != nil {
			return nil
		}
		before := tokenOf(t)
		now := s.now()
		t.RevokedAt = &now
		if err := tx.Model(&APIToken{}).Where("id = ? AND revoked_at IS NULL", id).Update("revoked_at", now).Error; err != nil {
			return err
		}
		return s.record(ctx, tx, "token.revoke", fmt.Sprintf("token:%d", id), before, tokenOf(t))
	})
	return t, err
}

// SetPassword replaces a user's password and ends every session of theirs. Returns
// EINVALID for a password shorter than 10 or longer than 72 bytes and ENOTFOUND for
// an unknown user.
func (s *Identity) SetPassword(ctx context.Context, userID int64, password string) error {
	if len(password) < 10 || len(password) > 72 {
		return clearhouse.Errorf(clearhouse.EINVALID, "password: must be between 10 and 72 bytes")
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), s.hashCost)
	if err != nil {
		return err
	}
	return s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		u, err := userIn(tx, userID)
		if err != nil {
			return err
		}
		if err := tx.Model(&User{}).Where("id = ?", userID).Update("password_hash", string(h)).Error; err != nil {
			return err
		}
		if err := tx.Where("user_id = ?", userID).Delete(&Session{}).Error; err != nil {
			return err
		}
		return s.record(ctx, tx, "user.password", userObject(u), nil, nil) // never the hash
	})
}

// DisableUser stops a user from signing in and ends their sessions; their tokens stop
// working (TokenUser refuses a disabled user's tokens) until EnableUser. Disabling a
// disabled user changes nothing. Returns ENOTFOUND for an unknown user.
func (s *Identity) DisableUser(ctx context.Context, userID int64) error {
	return s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		u, err := userIn(tx, userID)
		if err != nil {
			return err
		}
		res := tx.Model(&User{}).Where("id = ? AND disabled_at IS NULL", userID).Update("disabled_at", s.now())
		if res.Error != nil {
			return res.Error
		}
		if err := tx.Where("user_id = ?", userID).Delete(&Session{}).Error; err != nil {
			return err
		}
		if res.RowsAffected == 0 {
			return nil // already disabled: nothing changed
		}
		after := u
		now := s.now()
		after.DisabledAt = &now
		return s.record(ctx, tx, "user.disable", userObject(u), accessOf(u), accessOf(after))
	})
}

// EnableUser lets a disabled user sign in again; their unexpired, unrevoked tokens
// work again. Returns ENOTFOUND for an unknown user.
func (s *Identity) EnableUser(ctx context.Context, userID int64) error {
	return s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		u, err := userIn(tx, userID)
		if err != nil {
			return err
		}
		if u.DisabledAt == nil {
			return nil // not disabled: nothing changes
		}
		if err := tx.Model(&User{}).Where("id = ?", userID).Update("disabled_at", nil).Error; err != nil {
			return err
		}
		after := u
		after.DisabledAt = nil
		return s.record(ctx, tx, "user.enable", userObject(u), accessOf(u), accessOf(after))
	})
}

// EndSessions signs a user out of every browser and says how many sessions ended.
func (s *Identity) EndSessions(ctx context.Context, userID int64) (int64, error) {
	res := s.db.Write.WithContext(ctx).Where("user_id = ?", userID).Delete(&Session{})
	return res.RowsAffected, res.Error
}

// Account is a user as the operators' access page shows them: their live sessions
// (unexpired, not idle too long) and when one was last seen.
type Account struct {
	User
	Sessions     int
	LastSeenAt   *time.Time
	ActiveTokens int
}

// Accounts lists users by email after the email after (for the next page), at most
// limit (1 to 500), with their live sessions and working API tokens.
func (s *Identity) Accounts(ctx context.Context, after string, limit int) ([]Account, error) {
	if limit < 1 || limit > 500 {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "limit: must be between 1 and 500")
	}
	var users []User
	if err := s.db.Read.WithContext(ctx).Where("email > ?", after).Order("email").Limit(limit).Find(&users).Error; err != nil {
		return nil, err
	}
	out := make([]Account, len(users))
	ids := make([]int64, len(users))
	index := map[int64]int{}
	for i, u := range users {
		out[i].User, ids[i], index[u.ID] = u, u.ID, i
	}
	if len(ids) == 0 {
		return out, nil
	}
	// Times are compared here, not in SQL: SQLite compares them as text, which is
	// wrong across time zones.
	now := s.now()
	var sessions []Session
	if err := s.db.Read.WithContext(ctx).Where("user_id IN ?", ids).Find(&sessions).Error; err != nil {
		return nil, err
	}
	for _, sess := range sessions {
		if !now.Before(sess.ExpiresAt) || now.Sub(sess.LastSeenAt) > SessionIdle {
			continue
		}
		a := &out[index[sess.UserID]]
		a.Sessions++
		if a.LastSeenAt == nil || sess.LastSeenAt.After(*a.LastSeenAt) {
			seen := sess.LastSeenAt
			a.LastSeenAt = &seen
		}
	}
	var tokens []APIToken
	if err := s.db.Read.WithContext(ctx).Where("user_id IN ? AND revoked_at IS NULL", ids).Find(&tokens).Error; err != nil {
		return nil, err
	}
	for _, t := range tokens {
		if t.ExpiresAt == nil || now.Before(*t.ExpiresAt) {
			out[index[*t.UserID]].ActiveTokens++
		}
	}
	return out, nil
}

// UserByID returns one user, or ENOTFOUND.
func (s *Identity) UserByID(ctx context.Context, id int64) (User, error) {
	return userIn(s.db.Read.WithContext(ctx), id)
}
