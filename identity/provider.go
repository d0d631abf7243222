package identity

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"os"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"gorm.io/gorm"

	"github.com/clearhouse/clearhouse"
)

// Where a user's role and team came from (users.access_source).
const (
	SourceLocal    = "local"    // granted in Clearhouse (clearhouse user add, the demo)
	SourceProvider = "provider" // the group mapping, at the last sign-in through the provider
	SourceRevoked  = "revoked"  // the last sign-in found no mapped group: disabled by the provider
)

// GroupRule gives the people in one provider group a role, and a team for members and
// owners.
type GroupRule struct {
	Group string `yaml:"group"`
	Role  Role   `yaml:"role"`
	Team  string `yaml:"team,omitempty"`
}

// GroupMapping turns the groups of a provider's token into a role and a team. Claim
// names the token's claim that lists the groups ("groups" when empty). Rules are tried
// in order and the first whose group the person is in wins, so list the more powerful
// grants first (a team's owners before its members). Groups no rule names are ignored.
type GroupMapping struct {
	Claim string      `yaml:"claim"`
	Rules []GroupRule `yaml:"rules"`
}

// ReadGroupMapping reads a mapping from a YAML file (docs/access.md shows one) and
// validates it.
func ReadGroupMapping(path string) (GroupMapping, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return GroupMapping{}, err
	}
	var m GroupMapping
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return GroupMapping{}, fmt.Errorf("%s: %v", path, err)
	}
	if err := m.Validate(); err != nil {
		return GroupMapping{}, fmt.Errorf("%s: %v", path, err)
	}
	return m, nil
}

// Validate checks every rule: a group, a known role, a team for members and owners and
// none for finance and operators, no group named twice. It fills Claim's default.
func (m *GroupMapping) Validate() error {
	if m.Claim == "" {
		m.Claim = "groups"
	}
	if len(m.Rules) == 0 {
		return clearhouse.Errorf(clearhouse.EINVALID, "rules: the mapping gives nobody access; add at least one rule")
	}
	seen := map[string]bool{}
	for i, r := range m.Rules {
		switch {
		case r.Group == "":
			return clearhouse.Errorf(clearhouse.EINVALID, "rules[%d].group: must not be empty", i)
		case seen[r.Group]:
			return clearhouse.Errorf(clearhouse.EINVALID, "rules[%d].group: %q is mapped twice", i, r.Group)
		case !r.Role.Valid():
			return clearhouse.Errorf(clearhouse.EINVALID, "rules[%d].role: must be one of member, owner, finance, operator, got %q", i, r.Role)
		case r.Role.OnTeam() && r.Team == "":
			return clearhouse.Errorf(clearhouse.EINVALID, "rules[%d].team: a %s must belong to a team", i, r.Role)
		case !r.Role.OnTeam() && r.Team != "":
			return clearhouse.Errorf(clearhouse.EINVALID, "rules[%d].team: a %s acts for every team and belongs to none", i, r.Role)
		}
		seen[r.Group] = true
	}
	return nil
}

// Match returns the first rule whose group is among groups, or false.
func (m GroupMapping) Match(groups []string) (GroupRule, bool) {
	in := map[string]bool{}
	for _, g := range groups {
		in[g] = true
	}
	for _, r := range m.Rules {
		if in[r.Group] {
			return r, true
		}
	}
	return GroupRule{}, false
}

// ProviderPerson is who a verified ID token says signed in.
type ProviderPerson struct {
	Issuer, Subject string
	Email           string
	EmailVerified   bool
	Name            string
	Groups          []string
}

// ErrNoMappedGroup is the EFORBIDDEN that SignInFromProvider returns for a person none
// of whose groups the mapping names (and who holds no local grant).
var ErrNoMappedGroup = clearhouse.Errorf(clearhouse.EFORBIDDEN, "None of your groups gives access to Clearhouse.")

// SignInFromProvider applies the mapping to a person the provider vouched for, in one
// transaction, and returns the user to start a session for. The user is the one linked
// to the provider identity, else the one with the same verified email (which it then
// links), else a new one. A matching rule sets their role and team (source
// "provider"), enabling an account the provider had revoked. Without one, a user whose
// access came from the provider is disabled (source "revoked") and their sessions end,
// and ErrNoMappedGroup is returned; a local grant stays and signs them in. An account an
// operator disabled stays disabled (EFORBIDDEN). A rule naming a team that does not
// exist is ENOTFOUND; an email that is not an address EINVALID.
func (s *Identity) SignInFromProvider(ctx context.Context, p ProviderPerson, m GroupMapping) (User, error) {
	link := p.Issuer + " " + p.Subject
	email := strings.ToLower(strings.TrimSpace(p.Email))
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > MaxEmail {
		return User{}, clearhouse.Errorf(clearhouse.EINVALID, "email: the provider sent no usable email address for you (%q); it must send the email claim", email)
	}
	rule, mapped := m.Match(p.Groups)
	var out User
	var refused error
	ctx = providerActor(ctx, email)
	err := s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		u, found, err := s.providerUser(tx, link, email, p.EmailVerified)
		if err != nil {
			return err
		}
		if mapped && rule.Team != "" {
			var n int64
			if err := tx.Table("teams").Where("id = ?", rule.Team).Count(&n).Error; err != nil {
				return err
			} else if n == 0 {
				return clearhouse.Errorf(clearhouse.ENOTFOUND, "team: the group %q maps to team %q, which does not exist; ask an operator to create it or fix the mapping", rule.Group, rule.Team)
			}
		}
		switch {
		case !found && !mapped:
			refused = ErrNoMappedGroup
			return nil
		case !found:
			u = User{Email: email, Name: p.Name, Role: rule.Role, TeamID: rule.Team, CreatedAt: s.now(),
				OIDCSubject: &link, AccessSource: SourceProvider, AccessGroup: rule.Group}
			if err := tx.Omit("ID").Create(&u).Error; errors.Is(err, gorm.ErrDuplicatedKey) {
				return clearhouse.Errorf(clearhouse.ECONFLICT, "email: %s already has an account linked to another sign-in", email)
			} else if err != nil {
				return err
			}
			out = u
			return s.record(ctx, tx, "user.provider_access", userObject(u), nil, accessOf(u))
		case u.DisabledAt != nil && u.AccessSource != SourceRevoked:
			refused = clearhouse.Errorf(clearhouse.EFORBIDDEN, "Your Clearhouse account is disabled; ask an operator.")
			return nil
		case !mapped && u.AccessSource == SourceLocal:
			// A local grant stands; the sign-in only links the identity.
			if err := tx.Model(&User{}).Where("id = ?", u.ID).Update("oidc_subject", link).Error; err != nil {
				return err
			}
			u.OIDCSubject = &link
			out = u
			return nil
		case !mapped:
			refused = ErrNoMappedGroup
			if u.AccessSource == SourceRevoked {
				return nil
			}
			if err := tx.Model(&User{}).Where("id = ?", u.ID).Updates(map[string]any{
				"disabled_at": s.now(), "access_source": SourceRevoked, "oidc_subject": link}).Error; err != nil {
				return err
			}
			if err := tx.Where("user_id = ?", u.ID).Delete(&Session{}).Error; err != nil {
				return err
			}
			after := u
			now := s.now()
			after.DisabledAt, after.AccessSource = &now, SourceRevoked
			return s.record(ctx, tx, "user.provider_access", userObject(u), accessOf(u), accessOf(after))
		}
		team := any(nil)
		if rule.Team != "" {
			team = rule.Team
		}
		if err := tx.Model(&User{}).Where("id = ?", u.ID).Updates(map[string]any{
			"role": rule.Role, "team_id": team, "access_source": SourceProvider, "access_group": rule.Group,
			"oidc_subject": link, "disabled_at": nil}).Error; err != nil {
			return err
		}
		if u.Role != rule.Role || u.TeamID != rule.Team {
			// Sessions opened with the old access end with it.
			if err := tx.Where("user_id = ?", u.ID).Delete(&Session{}).Error; err != nil {
				return err
			}
		}
		if err := tx.Take(&out, u.ID).Error; err != nil {
			return err
		}
		if accessOf(u) == accessOf(out) {
			return nil // the groups gave what the user had
		}
		return s.record(ctx, tx, "user.provider_access", userObject(out), accessOf(u), accessOf(out))
	})
	if err != nil {
		return User{}, err
	}
	if refused != nil {
		return User{}, refused
	}
	return out, nil
}

// providerUser finds the user linked to the provider identity, else the one with the
// email when the provider verified it and the account is linked to no other identity.
func (s *Identity) providerUser(tx *gorm.DB, link, email string, verified bool) (User, bool, error) {
	var u User
	err := tx.Where("oidc_subject = ?", link).Take(&u).Error
	if err == nil {
		return u, true, nil
	} else if !errors.Is(err, gorm.ErrRecordNotFound) {
		return User{}, false, err
	}
	err = tx.Where("email = ?", email).Take(&u).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return User{}, false, nil
	} else if err != nil {
		return User{}, false, err
	}
	if !verified {
		return User{}, false, clearhouse.Errorf(clearhouse.EFORBIDDEN, "%s already has a Clearhouse account and the provider has not verified that the address is yours.", email)
	}
	if u.OIDCSubject != nil {
		return User{}, false, clearhouse.Errorf(clearhouse.ECONFLICT, "%s already has an account linked to another sign-in.", email)
	}
	return u, true, nil
}

// LoginTTL is how long a sign-in through the provider may take, from leaving for the
// provider to coming back.
const LoginTTL = 10 * time.Minute

// ProviderLogin is one sign-in through the provider under way: its state, nonce and PKCE
// verifier, bound to one browser. Only hashes of the state and the browser's cookie are
// stored.
type ProviderLogin struct {
	StateHash   string `gorm:"primaryKey"`
	BrowserHash string
	Nonce       string
	Verifier    string
	Next        string
	ExpiresAt   time.Time
}

// TableName is oidc_logins.
func (ProviderLogin) TableName() string { return "oidc_logins" }

// BeginProviderLogin records a sign-in under way and returns its state (sent to the
// provider) and the browser's binding (kept in a cookie). Expired rows are removed.
func (s *Identity) BeginProviderLogin(ctx context.Context, nonce, verifier, next string) (state, browser string, err error) {
	state, stateHash := newSecret("")
	browser, browserHash := newSecret("")
	now := s.now().UTC() // UTC: SQLite compares the stored times as text
	err = s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("expires_at < ?", now).Delete(&ProviderLogin{}).Error; err != nil {
			return err
		}
		return tx.Create(&ProviderLogin{StateHash: stateHash, BrowserHash: browserHash, Nonce: nonce, Verifier: verifier, Next: next, ExpiresAt: now.Add(LoginTTL)}).Error
	})
	return state, browser, err
}

// TakeProviderLogin returns and deletes the sign-in under way with that state, once: a
// replayed state, one from another browser, or one older than LoginTTL is
// EUNAUTHORIZED. A state from another browser is not deleted, so the real browser can
// still finish.
func (s *Identity) TakeProviderLogin(ctx context.Context, state, browser string) (ProviderLogin, error) {
	bad := clearhouse.Errorf(clearhouse.EUNAUTHORIZED, "This sign-in link was already used, has expired or was started in another browser; sign in again.")
	if state == "" || browser == "" {
		return ProviderLogin{}, bad
	}
	var l ProviderLogin
	err := s.db.Write.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Where("state_hash = ? AND browser_hash = ?", hashSecret(state), hashSecret(browser)).Take(&l).Error; errors.Is(err, gorm.ErrRecordNotFound) {
			return bad
		} else if err != nil {
			return err
		}
		res := tx.Where("state_hash = ?", l.StateHash).Delete(&ProviderLogin{})
		if res.Error != nil {
			return res.Error
		} else if res.RowsAffected != 1 { // another request took it first
			return bad
		}
		if !s.now().Before(l.ExpiresAt) {
			return bad
		}
		return nil
	})
	return l, err
}
