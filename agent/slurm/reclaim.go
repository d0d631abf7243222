package slurm

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/clearhouse/clearhouse/agent"
)

// Reclaim implements agent.Reclaimer: for each excess it takes back the team's newest
// own running jobs (latest start first, then highest job id) until at least the
// excess's units of the pool are freed. Only jobs of the team's own account are
// taken: never its best-effort tasks (their own accounts and QOS) nor jobs running in
// one of Clearhouse's reservations (the team bought those). A job is requeued
// (scontrol requeue): it goes back to the queue, where the team's GrpTRES, now below
// what it ran, holds it until the team has room again. A job Slurm will not requeue
// (submitted with --no-requeue, or interactive: salloc, srun) is cancelled (scancel):
// it must stop for the limit to hold. A job taken for one excess counts toward the
// team's other pools' excesses in the same call.
func (b *Backend) Reclaim(ctx context.Context, excess []agent.Reclaim) ([]agent.Reclaimed, error) {
	if len(excess) == 0 {
		return nil, nil
	}
	running, err := b.queue(ctx, "RUNNING")
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(running, func(x, y job) int { return cmp.Or(y.Start.Compare(x.Start), cmp.Compare(y.ID, x.ID)) })
	taken := map[int64]bool{}
	var out []agent.Reclaimed
	var errs []error
	for _, r := range excess {
		p, ok := b.pools[r.Pool]
		acct, known := b.accounts[r.Team]
		if !ok || !known {
			errs = append(errs, fmt.Errorf("slurm: reclaim: team %s, pool %s: not in the config", r.Team, r.Pool))
			continue
		}
		var freed int64
		for _, j := range running {
			if taken[j.ID] && strings.EqualFold(j.Account, acct) {
				freed += p.units(j.TRES[p.tres])
			}
		}
		for _, j := range running {
			if freed >= r.Units {
				break
			}
			if taken[j.ID] || !strings.EqualFold(j.Account, acct) || j.QOS == b.qos ||
				strings.HasPrefix(j.Reservation, reservationPrefix) || j.TRES[p.tres] == 0 {
				continue
			}
			how, err := b.takeBack(ctx, j.ID)
			if err != nil {
				errs = append(errs, fmt.Errorf("slurm: reclaim: team %s: %w", r.Team, err))
				continue
			}
			taken[j.ID] = true
			units := p.units(j.TRES[p.tres])
			freed += units
			out = append(out, agent.Reclaimed{Team: r.Team, Pool: r.Pool, Object: fmt.Sprintf("job %d %s", j.ID, how), Units: units})
			fmt.Fprintf(b.out, "slurm: job %d of account %s %s: team %s over its limit of %s\n", j.ID, acct, how, r.Team, r.Pool)
		}
		if freed < r.Units {
			errs = append(errs, fmt.Errorf("slurm: reclaim: team %s, pool %s: freed %d of %d units; the rest runs in its reservations or in jobs that could not be stopped", r.Team, r.Pool, freed, r.Units))
		}
	}
	return out, errors.Join(errs...)
}

// takeBack requeues a running job, or cancels it when Slurm will not requeue it, and
// says which.
func (b *Backend) takeBack(ctx context.Context, id int64) (string, error) {
	_, err := b.run.Run(ctx, "", "scontrol", "requeue", fmt.Sprint(id))
	if err == nil {
		return "requeued", nil
	}
	if cerr := b.cancel(ctx, id); cerr != nil {
		return "", fmt.Errorf("job %d: requeue: %v; cancel: %w", id, err, cerr)
	}
	return "cancelled (Slurm would not requeue it)", nil
}

var _ agent.Reclaimer = (*Backend)(nil)
