package demo

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/identity"
)

// Logins are the demo market's users (their passwords are made fresh).
func Logins() []identity.NewUser {
	return []identity.NewUser{
		{Email: "operator@example.com", Name: "Olu Operator", Role: identity.RoleOperator},
		{Email: "finance@example.com", Name: "Fay Finance", Role: identity.RoleFinance},
		{Email: "owner@search.example.com", Name: "Sam Search", Role: identity.RoleOwner, TeamID: "search"},
		{Email: "member@search.example.com", Name: "Mia Member", Role: identity.RoleMember, TeamID: "search"},
		{Email: "owner@ml.example.com", Name: "Max Learner", Role: identity.RoleOwner, TeamID: "ml"},
		{Email: "member@ads.example.com", Name: "Ada Ads", Role: identity.RoleMember, TeamID: "ads"},
		{Email: "owner@storage.example.com", Name: "Stu Storage", Role: identity.RoleOwner, TeamID: "storage"},
		{Email: "owner@analytics.example.com", Name: "Ana Lytics", Role: identity.RoleOwner, TeamID: "analytics"},
		{Email: "owner@video.example.com", Name: "Vid Ya", Role: identity.RoleOwner, TeamID: "video"},
	}
}

// signInHelp tells someone restarting `serve --demo` on an existing demo
// database how to get in: the passwords were printed only when the demo was made,
// so it names the demo logins this database has and the command that sets a new
// password.
func signInHelp(ctx context.Context, s Services, out io.Writer) error {
	var known []string
	for _, u := range Logins() {
		_, err := s.Identity.UserByEmail(ctx, u.Email)
		if err == nil {
			known = append(known, u.Email)
		} else if clearhouse.ErrorCode(err) != clearhouse.ENOTFOUND {
			return err
		}
	}
	if len(known) == 0 {
		return nil
	}
	db := s.DBName
	if strings.Contains(db, "://") {
		db = "<the same --db>" // a URL may hold a password: never print it
	}
	fmt.Fprintf(out, "Demo passwords are printed only when the demo is made. To sign in, give a demo login a new password (it is printed):\n")
	fmt.Fprintf(out, "  clearhouse user password --db %s --email %s\n", db, known[0])
	fmt.Fprintf(out, "Demo logins here: %s\n", strings.Join(known, ", "))
	if !strings.Contains(s.DBName, "://") {
		fmt.Fprintf(out, "Or start a fresh demo: stop the server, delete %s (and its -wal and -shm files) and run serve --demo again.\n", s.DBName)
	}
	return nil
}
