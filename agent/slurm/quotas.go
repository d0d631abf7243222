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

// ApplyQuotas implements agent.Backend: each configured team's account association in
// the cluster gets GrpTRES = want (holdings plus running reservations, converted from
// pool units to TRES) plus what the account's best-effort jobs run now. Best-effort
// jobs count toward their account's association usage in Slurm although their QOS
// lifts the limit for them (ensureQOS), so without the addition a team's borrowed work
// would eat its own quota. A (team, pool) missing from want is 0. Only the TRES of
// configured pools are written; the association's other TRES stay as found. Each
// value changed is returned with what it was.
func (b *Backend) ApplyQuotas(ctx context.Context, want []agent.Quota) ([]agent.Correction, error) {
	var rows []association
	var borrowed map[string]tres
	if err := together( // two reads that wait for slurmctld apart: one wait, not two
		func() (err error) { rows, err = b.associations(ctx, false); return err },
		func() (err error) { borrowed, err = b.borrowedTRES(ctx); return err },
	); err != nil {
		return nil, err
	}
	if err := b.ensureQOS(ctx, rows); err != nil {
		return nil, err
	}
	limits := accountLimits(rows)
	desired := b.desiredTRES(want, borrowed)
	bySet, sets, errs := b.quotaChanges(desired, limits)
	fixes, setErrs := b.setQuotas(ctx, bySet, sets)
	errs = append(errs, setErrs...)
	slices.SortStableFunc(fixes, func(x, y agent.Correction) int {
		return cmp.Or(cmp.Compare(x.Team, y.Team), cmp.Compare(x.Pool, y.Pool))
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

// borrowedTRES returns, by team, the TRES of its best-effort jobs running now.
func (b *Backend) borrowedTRES(ctx context.Context) (map[string]tres, error) {
	running, err := b.queue(ctx, "RUNNING", "--qos="+b.qos)
	if err != nil {
		return nil, err
	}
	borrowed := map[string]tres{} // team -> TRES of its best-effort jobs
	for _, j := range running {
		if team := b.team(j.Account); team != "" && j.QOS == b.qos {
			if borrowed[team] == nil {
				borrowed[team] = tres{}
			}
			borrowed[team].add(j.TRES)
		}
	}
	return borrowed, nil
}

// desiredTRES returns every configured team's GrpTRES for the configured pools:
// what it borrows plus its units in want converted to TRES (want's unknown teams
// and pools left out).
func (b *Backend) desiredTRES(want []agent.Quota, borrowed map[string]tres) map[string]tres {
	desired := map[string]tres{} // team -> TRES
	for team := range b.accounts {
		desired[team] = tres{}
		for _, p := range b.pools {
			desired[team][p.tres] = borrowed[team][p.tres]
		}
	}
	for _, q := range want {
		p, ok := b.pools[q.Pool]
		if _, known := b.accounts[q.Team]; !ok || !known {
			continue
		}
		desired[q.Team][p.tres] += q.Units * p.unit
	}
	return desired
}

// quotaChange is one team's account to set to a GrpTRES, with the corrections
// that makes.
type quotaChange struct {
	team, acct string
	fixes      []agent.Correction
}

// quotaChanges compares desired with the accounts' limits, team by team in name
// order, and groups the teams whose accounts need a change by the GrpTRES to set
// (sets: in the order of their first team). A team whose account has no
// association is an error.
func (b *Backend) quotaChanges(desired, limits map[string]tres) (map[string][]quotaChange, []string, []error) {
	// Accounts that get the same GrpTRES are set in one command: sacctmgr's cost is
	// mostly per call, and a config's first poll may set hundreds of accounts alike.
	bySet := map[string][]quotaChange{}
	var sets []string // in the order of their first team
	var errs []error
	for _, team := range slices.Sorted(maps.Keys(desired)) {
		acct := b.accounts[team]
		have, ok := limits[strings.ToLower(acct)]
		if !ok {
			errs = append(errs, fmt.Errorf("slurm: team %s: account %s has no association in cluster %s (create it: sacctmgr add account %s cluster=%s)", team, acct, b.cluster, acct, b.cluster))
			continue
		}
		set, changed := b.teamQuotaChange(team, acct, have, desired[team])
		if len(set) > 0 {
			if bySet[set.String()] == nil {
				sets = append(sets, set.String())
			}
			bySet[set.String()] = append(bySet[set.String()], quotaChange{team, acct, changed})
		}
	}
	return bySet, sets, errs
}

// teamQuotaChange returns the TRES of team's account acct to set, those of the
// configured pools where want differs from have or have has none, and a correction
// for each, by pool name.
func (b *Backend) teamQuotaChange(team, acct string, have, want tres) (tres, []agent.Correction) {
	set := tres{}
	var changed []agent.Correction
	for _, name := range slices.Sorted(maps.Keys(b.pools)) {
		p := b.pools[name]
		now := want[p.tres]
		was, had := have[p.tres]
		if had && was == now {
			continue
		}
		set[p.tres] = now
		c := agent.Correction{Team: team, Pool: name, Object: "assoc " + acct + " GrpTRES", Now: p.tres + "=" + strconv.FormatInt(now, 10)}
		if had {
			c.Was = p.tres + "=" + strconv.FormatInt(was, 10)
		}
		changed = append(changed, c)
	}
	return set, changed
}

// setQuotas sets each GrpTRES of sets on its accounts in bySet, accountsPerCall
// accounts a sacctmgr call, and returns the corrections of the calls that
// succeeded and an error naming the teams of each that failed.
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
				errs = append(errs, fmt.Errorf("slurm: team %s: %w", strings.Join(teams, ", "), err))
				continue
			}
			for _, c := range chunk {
				fixes = append(fixes, c.fixes...)
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

// associations lists the configured accounts' associations in the cluster: the
// accounts' own, and with users those of their users too. Users' associations are
// what makes sacctmgr slow: with 1,000 accounts of one user each, 4 to 9 seconds with
// them against about 0.4 without (user= asks for the accounts' own).
func (b *Backend) associations(ctx context.Context, users bool) ([]association, error) {
	accts := slices.Sorted(maps.Values(b.accounts))
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
