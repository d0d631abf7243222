package slurm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse/agent"
)

// ApplyQuotas implements agent.Backend. Each configured team has two accounts, and
// each gets its GrpTRES for the configured pools (want's units converted to TRES):
//   - the team's own account: GrpTRES = Units (holdings, less what is sold, plus
//     reservations beyond own quota), exactly: nothing the team starts raises it;
//   - its best-effort account (BestEffortAccount, which only the agent's user holds
//     and the only place the best-effort QOS may be used): GrpTRES = BestEffort, the
//     grant of the team's best-effort tasks now.
//
// A (team, pool) missing from want is 0. The associations' other TRES stay as found.
// A value is returned as a correction only when someone else changed it: it differs
// from what this process last set there (see lastSet). A first write, or a change
// because want changed, is not one.
func (b *Backend) ApplyQuotas(ctx context.Context, want []agent.Quota) ([]agent.Correction, error) {
	rows, err := b.associations(ctx, false)
	if err != nil {
		return nil, err
	}
	qosFixes, err := b.ensureQOS(ctx, rows)
	if err != nil {
		return qosFixes, err
	}
	limits := accountLimits(rows)
	bySet, sets, errs := b.quotaChanges(b.desiredTRES(want), limits)
	fixes, setErrs := b.setQuotas(ctx, bySet, sets)
	fixes = append(fixes, qosFixes...)
	errs = append(errs, setErrs...)
	slices.SortStableFunc(fixes, func(x, y agent.Correction) int {
		return cmp.Or(cmp.Compare(x.Team, y.Team), cmp.Compare(x.Pool, y.Pool), cmp.Compare(x.Object, y.Object))
	})
	return fixes, errors.Join(errs...)
}

// accountLimits returns each account's own association's GrpTRES (users' rows left
// out), by lower-case account name.
func accountLimits(rows []association) map[string]tres {
	limits := map[string]tres{} // lower-case account -> its association's GrpTRES
	for _, r := range rows {
		if r.user == "" {
			limits[strings.ToLower(r.account)] = r.grpTRES
		}
	}
	return limits
}

// accountWant is the GrpTRES one account should have: a team's own account or its
// best-effort account.
type accountWant struct {
	team, acct string
	bestEffort bool
	tres       tres
}

// desiredTRES returns, for every configured team, its own account's GrpTRES (want's
// Units) and its best-effort account's (want's BestEffort), in TRES of the configured
// pools (want's unknown teams and pools left out), sorted by team, own account first.
func (b *Backend) desiredTRES(want []agent.Quota) []accountWant {
	own, be := map[string]tres{}, map[string]tres{}
	for team := range b.accounts {
		own[team], be[team] = tres{}, tres{}
		for _, p := range b.pools {
			own[team][p.tres], be[team][p.tres] = 0, 0
		}
	}
	for _, q := range want {
		p, ok := b.pools[q.Pool]
		if _, known := b.accounts[q.Team]; !ok || !known {
			continue
		}
		own[q.Team][p.tres] += q.Units * p.unit
		be[q.Team][p.tres] += q.BestEffort * p.unit
	}
	var out []accountWant
	for _, team := range slices.Sorted(maps.Keys(own)) {
		out = append(out, accountWant{team, b.accounts[team], false, own[team]},
			accountWant{team, BestEffortAccount(b.accounts[team]), true, be[team]})
	}
	return out
}

// quotaChange is one account to set to a GrpTRES, with the corrections that makes
// and the values to remember once it is set.
type quotaChange struct {
	team, acct string
	set        tres
	fixes      []agent.Correction
	notes      []string
}

// quotaChanges compares desired with the accounts' limits and groups the accounts
// that need a change by the GrpTRES to set (sets: in the order of their first
// account). A team whose own account has no association is an error; a best-effort
// account without one was just created (ensureQOS) and has no limit yet.
func (b *Backend) quotaChanges(desired []accountWant, limits map[string]tres) (map[string][]quotaChange, []string, []error) {
	// Accounts that get the same GrpTRES are set in one command: sacctmgr's cost is
	// mostly per call, and a config's first poll may set hundreds of accounts alike.
	bySet := map[string][]quotaChange{}
	var sets []string
	var errs []error
	for _, w := range desired {
		have, ok := limits[strings.ToLower(w.acct)]
		if !ok && !w.bestEffort {
			errs = append(errs, fmt.Errorf("slurm: team %s: account %s has no association in cluster %s (create it: sacctmgr add account %s cluster=%s)", w.team, w.acct, b.cluster, w.acct, b.cluster))
			continue
		}
		c := b.accountChange(w, have)
		if len(c.set) > 0 {
			key := c.set.String()
			if bySet[key] == nil {
				sets = append(sets, key)
			}
			bySet[key] = append(bySet[key], c)
		}
	}
	return bySet, sets, errs
}

// accountChange returns the TRES of w's account to set: those of the configured pools
// where w differs from have or have has none. A value that differs from what this
// process last set there is a correction (someone else changed it); one that still
// holds what it last set is not (want changed); one it never set is not either (a
// first write: after a restart the backend cannot tell who changed a value, and
// says so in its output instead). A value that already holds w is remembered as set.
func (b *Backend) accountChange(w accountWant, have tres) quotaChange {
	c := quotaChange{team: w.team, acct: w.acct, set: tres{}}
	for _, name := range slices.Sorted(maps.Keys(b.pools)) {
		p := b.pools[name]
		now := w.tres[p.tres]
		was, had := have[p.tres]
		key := lastSetKey(w.acct, p.tres)
		if had && was == now {
			b.lastSet[key] = now
			continue
		}
		if _, seen := c.set[p.tres]; seen {
			continue // two pools of one TRES: one value
		}
		c.set[p.tres] = now
		nowText := p.tres + "=" + strconv.FormatInt(now, 10)
		wasText := ""
		if had {
			wasText = p.tres + "=" + strconv.FormatInt(was, 10)
		}
		last, known := b.lastSet[key]
		switch {
		case known && (!had || was != last):
			c.fixes = append(c.fixes, agent.Correction{Team: w.team, Pool: name, Object: "assoc " + w.acct + " GrpTRES", Was: wasText, Now: nowText})
		case !known && had:
			c.notes = append(c.notes, fmt.Sprintf("slurm: assoc %s GrpTRES %s -> %s (team %s, pool %s): first write since the agent started, not counted as drift",
				w.acct, wasText, nowText, w.team, name))
		}
	}
	return c
}

// lastSetKey names one TRES of one account's GrpTRES in Backend.lastSet.
func lastSetKey(acct, tresName string) string { return strings.ToLower(acct) + " " + tresName }

// setQuotas sets each GrpTRES of sets on its accounts in bySet, accountsPerCall
// accounts a sacctmgr call, remembers what it set, and returns the corrections of the
// calls that succeeded and an error naming the teams of each that failed.
func (b *Backend) setQuotas(ctx context.Context, bySet map[string][]quotaChange, sets []string) ([]agent.Correction, []error) {
	var fixes []agent.Correction
	var errs []error
	for _, set := range sets {
		for chunk := range slices.Chunk(bySet[set], accountsPerCall) {
			names := make([]string, len(chunk))
			for i, c := range chunk {
				names[i] = c.acct
			}
			if _, err := b.sacctmgr(ctx, "modify", "account", "where", "name="+strings.Join(names, ","),
				"cluster="+b.cluster, "set", "GrpTRES="+set); err != nil {
				teams := make([]string, len(chunk))
				for i, c := range chunk {
					teams[i] = c.team
				}
				errs = append(errs, fmt.Errorf("slurm: team %s: %w", strings.Join(slices.Compact(teams), ", "), err))
				continue
			}
			for _, c := range chunk {
				for t, v := range c.set {
					b.lastSet[lastSetKey(c.acct, t)] = v
				}
				fixes = append(fixes, c.fixes...)
				for _, n := range c.notes {
					fmt.Fprintln(b.out, n)
				}
			}
		}
	}
	return fixes, errs
}

// association is one row of sacctmgr show associations.
type association struct {
	account, user string
	grpTRES       tres
	qos           []string
}

const assocFormat = "Account,User,GrpTRES,QOS"

// associations lists the associations in the cluster of the configured accounts,
// their best-effort accounts and the best-effort accounts' parent: the accounts' own,
// and with users those of their users too. Users' associations are what makes
// sacctmgr slow: with 1,000 accounts of one user each, 4 to 9 seconds with them
// against about 0.4 without (user= asks for the accounts' own).
func (b *Backend) associations(ctx context.Context, users bool) ([]association, error) {
	accts := []string{bestEffortParent}
	for _, a := range b.accounts {
		accts = append(accts, a, BestEffortAccount(a))
	}
	slices.Sort(accts)
	args := []string{"--noheader", "--parsable2", "show", "associations", "where", "cluster=" + b.cluster, "account=" + strings.Join(accts, ",")}
	if !users {
		args = append(args, "user=")
	}
	out, err := b.run.Run(ctx, "", "sacctmgr", append(args, "format="+assocFormat)...)
	if err != nil {
		return nil, err
	}
	return parseAssociations(out)
}

// parseAssociations reads sacctmgr's output in assocFormat.
func parseAssociations(out string) ([]association, error) {
	var rows []association
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 4 {
			return nil, fmt.Errorf("sacctmgr show associations: line %q: want 4 fields", line)
		}
		t, err := parseTRES(f[2])
		if err != nil {
			return nil, fmt.Errorf("sacctmgr show associations: account %s: %w", f[0], err)
		}
		rows = append(rows, association{account: f[0], user: f[1], grpTRES: t, qos: splitList(f[3])})
	}
	return rows, nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
