package slurm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/agent"
)

// bestEffortParent is the Slurm account under which the agent creates each team's
// best-effort account; it holds no user.
const bestEffortParent = "clearhouse-be"

// BestEffortAccount is the Slurm account a team's best-effort tasks run under: a
// child of clearhouse-be (not of the team's account, so its jobs never count toward
// the team's own GrpTRES), created by the agent, holding only the agent's user, and
// the only account allowed the best-effort QOS. Its GrpTRES is what the market granted
// the team's best-effort tasks now.
func BestEffortAccount(acct string) string { return bestEffortParent + "-" + strings.ToLower(acct) }

// qosCheckEvery is how often the QOS settings and the users' associations are read
// again (ensureQOS) when nothing the accounts' associations show has changed.
const qosCheckEvery = 10 * time.Minute

// ensureQOS makes the best-effort QOS and accounts what Clearhouse needs, creating
// what is missing and changing nothing else of the cluster:
//   - the QOS exists, with PreemptMode=cancel (a preempted task ends as PREEMPTED and
//     the server decides whether it runs again) and no GrpTRES of its own on the
//     configured TRES: a QOS limit would take precedence over the associations'
//     (Slurm's limit hierarchy) and lift the best-effort accounts' grant;
//   - each team's best-effort account exists under clearhouse-be, may use the QOS
//     (QOS and DefaultQOS), and its only user is the agent's;
//   - no team's own account, nor any of its users, may use the QOS (QOS-=): a team's
//     user cannot run best-effort work outside the grant;
//   - every other QOS the teams' associations (the accounts' and their users') use
//     may preempt it (Preempt+=), so an owner's job that finds the nodes full makes
//     Slurm cancel best-effort jobs at once.
//
// rows are the accounts' own associations as just read (nil: read them); they are
// checked at every call. After the backend's first call (Open), a QOS list it puts
// back on an account is returned as a correction: someone else changed it. The QOS list and the users' associations are read at the
// first call, then every qosCheckEvery or sooner when the QOS the accounts use
// change: with 1,000 accounts, sacctmgr takes seconds to list their users'
// associations and a fraction of one for the accounts' own.
func (b *Backend) ensureQOS(ctx context.Context, rows []association) ([]agent.Correction, error) {
	var err error
	if rows == nil {
		if rows, err = b.associations(ctx, false); err != nil {
			return nil, err
		}
	}
	owners := b.ownersQOS(rows)
	used := strings.Join(slices.Sorted(maps.Keys(owners)), ",")
	full := b.qosChecked.IsZero() || b.now().Sub(b.qosChecked) >= qosCheckEvery || used != b.qosUsed
	var all map[string]qos
	if full {
		if all, err = b.fixQOS(ctx); err != nil {
			return nil, err
		}
	}
	fixes, err := b.fixAccounts(ctx, rows)
	if err != nil {
		b.qosChecked = time.Time{} // the QOS itself may be gone: check it at the next call
		return fixes, err
	}
	if !b.opened {
		fixes = nil // what the agent finds at its start is no one's change it can tell
	}
	if !full {
		return fixes, nil
	}
	withUsers, err := b.associations(ctx, true)
	if err != nil {
		return fixes, err
	}
	if err := b.fixUsers(ctx, withUsers); err != nil {
		return fixes, err
	}
	owners = b.ownersQOS(withUsers)
	for _, q := range slices.Sorted(maps.Keys(owners)) {
		if other, ok := all[q]; ok && !slices.Contains(other.preempt, b.qos) {
			if _, err := b.sacctmgr(ctx, "modify", "qos", "where", "name="+q, "set", "Preempt+="+b.qos); err != nil {
				return fixes, err
			}
		}
	}
	b.qosChecked, b.qosUsed = b.now(), used
	return fixes, nil
}

// fixAccounts checks the accounts' own associations: the teams' accounts lose the
// best-effort QOS; the best-effort parent and accounts are created where missing
// (with the agent's user) and get the QOS back where they lost it. Accounts that need
// the same change are changed in one call (each costs about a second with many). It
// returns a correction for each QOS list it changed.
func (b *Backend) fixAccounts(ctx context.Context, rows []association) ([]agent.Correction, error) {
	have := map[string]association{}
	for _, r := range rows {
		if r.user == "" {
			have[strings.ToLower(r.account)] = r
		}
	}
	var revoke, create, grant []string
	var fixes []agent.Correction
	fix := func(team, acct string, was []string, now []string) {
		fixes = append(fixes, agent.Correction{Team: team, Object: "assoc " + acct + " QOS", Was: strings.Join(was, ","), Now: strings.Join(now, ",")})
	}
	for _, acct := range slices.Sorted(maps.Values(b.accounts)) {
		if r, ok := have[strings.ToLower(acct)]; ok && slices.Contains(r.qos, b.qos) {
			revoke = append(revoke, acct)
			fix(b.team(acct), acct, r.qos, slices.DeleteFunc(slices.Clone(r.qos), func(q string) bool { return q == b.qos }))
		}
		be := BestEffortAccount(acct)
		if r, ok := have[be]; !ok {
			create = append(create, be)
		} else if !slices.Contains(r.qos, b.qos) {
			grant = append(grant, be)
			fix(b.team(acct), be, r.qos, append(slices.Clone(r.qos), b.qos))
		}
	}
	for chunk := range slices.Chunk(revoke, accountsPerCall) {
		if _, err := b.sacctmgr(ctx, "modify", "account", "where", "name="+strings.Join(chunk, ","), "cluster="+b.cluster, "set", "QOS-="+b.qos); err != nil {
			return nil, err
		}
		fmt.Fprintf(b.out, "slurm: accounts %s may no longer use QOS %s (best-effort work runs under the agent's own accounts)\n", strings.Join(chunk, ","), b.qos)
	}
	if len(create) > 0 {
		if _, ok := have[bestEffortParent]; !ok {
			if _, err := b.sacctmgr(ctx, "add", "account", bestEffortParent, "cluster="+b.cluster, "Description=Clearhouse best-effort accounts"); err != nil {
				return nil, err
			}
		}
	}
	for chunk := range slices.Chunk(create, accountsPerCall) {
		names := strings.Join(chunk, ",")
		if _, err := b.sacctmgr(ctx, "add", "account", names, "parent="+bestEffortParent, "cluster="+b.cluster,
			"QOS="+b.qos, "DefaultQOS="+b.qos, "Description=Clearhouse best-effort tasks"); err != nil {
			return nil, err
		}
		if _, err := b.sacctmgr(ctx, "add", "user", b.agentUser, "account="+names, "cluster="+b.cluster); err != nil {
			return nil, err
		}
		fmt.Fprintf(b.out, "slurm: created best-effort accounts %s for user %s\n", names, b.agentUser)
	}
	for chunk := range slices.Chunk(grant, accountsPerCall) {
		if _, err := b.sacctmgr(ctx, "modify", "account", "where", "name="+strings.Join(chunk, ","), "cluster="+b.cluster, "set", "QOS+="+b.qos); err != nil {
			return nil, err
		}
	}
	return fixes, nil
}

// fixUsers checks the users' associations: in a best-effort account only the agent's
// user (added where missing, any other removed); in a team's account no user may use
// the best-effort QOS.
func (b *Backend) fixUsers(ctx context.Context, rows []association) error {
	agentIn := map[string]bool{}
	for _, r := range rows {
		acct := strings.ToLower(r.account)
		switch {
		case r.user == "":
		case b.beTeams[acct] != "" && r.user == b.agentUser:
			agentIn[acct] = true
		case b.beTeams[acct] != "":
			if _, err := b.sacctmgr(ctx, "delete", "user", "where", "name="+r.user, "account="+acct, "cluster="+b.cluster); err != nil {
				return err
			}
			fmt.Fprintf(b.out, "slurm: removed user %s from best-effort account %s (only the agent's user %s may run there)\n", r.user, acct, b.agentUser)
		case b.team(acct) != "" && slices.Contains(r.qos, b.qos):
			if _, err := b.sacctmgr(ctx, "modify", "user", "where", "name="+r.user, "account="+acct, "cluster="+b.cluster, "set", "QOS-="+b.qos); err != nil {
				return err
			}
			fmt.Fprintf(b.out, "slurm: user %s of account %s may no longer use QOS %s\n", r.user, acct, b.qos)
		}
	}
	var missing []string
	for acct := range b.beTeams {
		if !agentIn[acct] && slices.ContainsFunc(rows, func(r association) bool { return r.user == "" && strings.EqualFold(r.account, acct) }) {
			missing = append(missing, acct)
		}
	}
	slices.Sort(missing)
	for chunk := range slices.Chunk(missing, accountsPerCall) {
		if _, err := b.sacctmgr(ctx, "add", "user", b.agentUser, "account="+strings.Join(chunk, ","), "cluster="+b.cluster); err != nil {
			return err
		}
	}
	return nil
}

// fixQOS creates the best-effort QOS if missing and sets what of it differs from what
// Clearhouse needs; it returns every QOS as read.
func (b *Backend) fixQOS(ctx context.Context) (map[string]qos, error) {
	all, err := b.listQOS(ctx)
	if err != nil {
		return nil, err
	}
	mine, ok := all[b.qos]
	if !ok {
		if _, err := b.sacctmgr(ctx, "add", "qos", b.qos); err != nil {
			return nil, err
		}
		fmt.Fprintf(b.out, "slurm: created QOS %s\n", b.qos)
	}
	clear := tres{}
	for _, p := range b.pools {
		if _, set := mine.grpTRES[p.tres]; set {
			clear[p.tres] = -1 // sacctmgr's "no limit"
		}
	}
	if set := qosSettings(mine, clear); len(set) > 0 {
		if _, err := b.sacctmgr(ctx, append([]string{"modify", "qos", "where", "name=" + b.qos, "set"}, set...)...); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// ownersQOS reads the teams' own accounts' associations (and their users', when
// rows have them): every QOS other than the best-effort one they may use.
func (b *Backend) ownersQOS(rows []association) map[string]bool {
	owners := map[string]bool{}
	for _, r := range rows {
		if b.team(r.account) == "" {
			continue
		}
		for _, q := range r.qos {
			if q != b.qos {
				owners[q] = true
			}
		}
	}
	return owners
}

// accountsPerCall bounds the accounts one sacctmgr command line names.
const accountsPerCall = 500

func qosSettings(q qos, clear tres) []string {
	var set []string
	if q.preemptMode != "cancel" {
		set = append(set, "PreemptMode=cancel")
	}
	if len(clear) > 0 {
		set = append(set, "GrpTRES="+clear.String())
	}
	return set
}

// qos is one row of sacctmgr show qos.
type qos struct {
	name, preemptMode string
	preempt           []string
	grpTRES           tres
}

func (b *Backend) listQOS(ctx context.Context) (map[string]qos, error) {
	out, err := b.sacctmgr(ctx, "--noheader", "--parsable2", "show", "qos", "format=Name,Preempt,PreemptMode,GrpTRES")
	if err != nil {
		return nil, err
	}
	return parseQOS(out)
}

// parseQOS reads sacctmgr show qos format=Name,Preempt,PreemptMode,GrpTRES.
func parseQOS(out string) (map[string]qos, error) {
	all := map[string]qos{}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 4 {
			return nil, fmt.Errorf("sacctmgr show qos: line %q: want 4 fields", line)
		}
		t, err := parseTRES(f[3])
		if err != nil {
			return nil, fmt.Errorf("sacctmgr show qos %s: %w", f[0], err)
		}
		all[f[0]] = qos{name: f[0], preempt: splitList(f[1]), preemptMode: f[2], grpTRES: t}
	}
	return all, nil
}

// sacctmgr runs sacctmgr without its confirmation prompt.
func (b *Backend) sacctmgr(ctx context.Context, args ...string) (string, error) {
	return b.run.Run(ctx, "", "sacctmgr", append([]string{"--immediate"}, args...)...)
}
