package slurm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// unlimited is the GrpTRES the best-effort QOS sets on each configured TRES. A limit
// set in a job's QOS takes precedence over the same limit in its association (Slurm's
// limit hierarchy), so best-effort jobs run beyond their account's GrpTRES (the quota
// the team holds): they borrow idle quota, not their own. The value is a count no
// cluster reaches; Slurm's node capacity is what bounds them.
const unlimited = 1_000_000_000

// qosCheckEvery is how often the QOS settings and the users' associations are read
// again (ensureQOS) when nothing the accounts' associations show has changed.
const qosCheckEvery = 10 * time.Minute

// ensureQOS makes the best-effort QOS what Clearhouse needs, creating what is missing
// and changing nothing else:
//   - it exists, with PreemptMode=cancel (a preempted task ends as PREEMPTED and the
//     server decides whether it runs again) and GrpTRES=unlimited on each configured TRES;
//   - every configured account's association may use it (QOS+=);
//   - every other QOS those associations (the accounts' and their users') use may
//     preempt it (Preempt+=), so an owner's job that finds the nodes full makes Slurm
//     cancel best-effort jobs at once.
//
// accounts are the configured accounts' own associations as just read (nil: read
// them); they are checked at every call. The QOS list and the users' associations are
// read at the first call, then every qosCheckEvery or sooner when the QOS the accounts
// use change: with 1,000 accounts, sacctmgr takes seconds to list their users'
// associations and a fraction of one for the accounts' own, so reading them at every
// poll was most of a poll's time.
func (b *Backend) ensureQOS(ctx context.Context, accounts []association) error {
	var err error
	if accounts == nil {
		if accounts, err = b.associations(ctx, false); err != nil {
			return err
		}
	}
	allowed, owners := usedQOS(b.qos, accounts)
	used := strings.Join(slices.Sorted(maps.Keys(owners)), ",")
	full := b.qosChecked.IsZero() || b.now().Sub(b.qosChecked) >= qosCheckEvery || used != b.qosUsed
	var all map[string]qos
	if full {
		if all, err = b.fixQOS(ctx); err != nil {
			return err
		}
	}
	var missing []string
	for _, acct := range slices.Sorted(maps.Values(b.accounts)) {
		if !allowed[strings.ToLower(acct)] && hasAccount(accounts, acct) {
			missing = append(missing, acct)
		}
	}
	for chunk := range slices.Chunk(missing, accountsPerCall) { // one call for many accounts: each call costs about a second with many
		if _, err := b.sacctmgr(ctx, "modify", "account", "where", "name="+strings.Join(chunk, ","), "cluster="+b.cluster, "set", "QOS+="+b.qos); err != nil {
			b.qosChecked = time.Time{} // the QOS itself may be gone: check it at the next call
			return err
		}
	}
	if !full {
		return nil
	}
	withUsers, err := b.associations(ctx, true)
	if err != nil {
		return err
	}
	_, owners = usedQOS(b.qos, withUsers)
	for _, q := range slices.Sorted(maps.Keys(owners)) {
		if other, ok := all[q]; ok && !slices.Contains(other.preempt, b.qos) {
			if _, err := b.sacctmgr(ctx, "modify", "qos", "where", "name="+q, "set", "Preempt+="+b.qos); err != nil {
				return err
			}
		}
	}
	b.qosChecked, b.qosUsed = b.now(), used
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
	limit := tres{}
	for _, p := range b.pools {
		if mine.grpTRES[p.tres] != unlimited {
			limit[p.tres] = unlimited
		}
	}
	if set := qosSettings(mine, limit); len(set) > 0 {
		if _, err := b.sacctmgr(ctx, append([]string{"modify", "qos", "where", "name=" + b.qos, "set"}, set...)...); err != nil {
			return nil, err
		}
	}
	return all, nil
}

// usedQOS reads associations: the accounts whose own association may use the
// best-effort QOS be (lower case), and every other QOS any of them may use.
func usedQOS(be string, rows []association) (allowed, owners map[string]bool) {
	allowed, owners = map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		for _, q := range r.qos {
			if q == be {
				if r.user == "" {
					allowed[strings.ToLower(r.account)] = true
				}
			} else {
				owners[q] = true
			}
		}
	}
	return allowed, owners
}

// accountsPerCall bounds the accounts one sacctmgr command line names.
const accountsPerCall = 500

func qosSettings(q qos, limit tres) []string {
	var set []string
	if q.preemptMode != "cancel" {
		set = append(set, "PreemptMode=cancel")
	}
	if len(limit) > 0 {
		set = append(set, "GrpTRES="+limit.String())
	}
	return set
}

func hasAccount(rows []association, acct string) bool {
	return slices.ContainsFunc(rows, func(r association) bool { return strings.EqualFold(r.account, acct) })
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
