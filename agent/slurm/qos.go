package slurm

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// unlimited is the GrpTRES the best-effort QOS sets on each configured TRES. A limit
// set in a job's QOS takes precedence over the same limit in its association (Slurm's
// limit hierarchy), so best-effort jobs run beyond their account's GrpTRES (the quota
// the team holds): they borrow idle quota, not their own. The value is a count no
// cluster reaches; Slurm's node capacity is what bounds them.
const unlimited = 1_000_000_000

// ensureQOS makes the best-effort QOS what Clearhouse needs, creating what is missing
// and changing nothing else:
//   - it exists, with PreemptMode=cancel (a preempted task ends as PREEMPTED and the
//     server decides whether it runs again) and GrpTRES=unlimited on each configured TRES;
//   - every configured account's association may use it (QOS+=);
//   - every other QOS those associations use may preempt it (Preempt+=), so an owner's
//     job that finds the nodes full makes Slurm cancel best-effort jobs at once.
//
// rows are the configured accounts' associations as just read (nil: read them).
func (b *Backend) ensureQOS(ctx context.Context, rows []association) error {
	all, err := b.listQOS(ctx)
	if err != nil {
		return err
	}
	mine, ok := all[b.qos]
	if !ok {
		if _, err := b.sacctmgr(ctx, "add", "qos", b.qos); err != nil {
			return err
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
			return err
		}
	}
	if rows == nil {
		if rows, err = b.associations(ctx); err != nil {
			return err
		}
	}
	owners, allowed := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		for _, q := range r.qos {
			if q == b.qos {
				if r.user == "" {
					allowed[strings.ToLower(r.account)] = true
				}
			} else {
				owners[q] = true
			}
		}
	}
	for _, acct := range slices.Sorted(maps.Values(b.accounts)) {
		if !allowed[strings.ToLower(acct)] && hasAccount(rows, acct) {
			if _, err := b.sacctmgr(ctx, "modify", "account", "where", "name="+acct, "cluster="+b.cluster, "set", "QOS+="+b.qos); err != nil {
				return err
			}
		}
	}
	for _, q := range slices.Sorted(maps.Keys(owners)) {
		if other, ok := all[q]; ok && !slices.Contains(other.preempt, b.qos) {
			if _, err := b.sacctmgr(ctx, "modify", "qos", "where", "name="+q, "set", "Preempt+="+b.qos); err != nil {
				return err
			}
		}
	}
	return nil
}

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
