package demo

import (
	"context"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/agent/simulate"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/exchange"
	"github.com/clearhouse/clearhouse/fleet"
	"github.com/clearhouse/clearhouse/identity"
	"github.com/clearhouse/clearhouse/ledger"
)

// seedBestEffort replays the last day of idle capacity: every history interval
// from a day ago it reports owners' simulated usage and the tasks that ended, runs
// one decision per cluster (as an agent's poll would) and records the history
// point, having queued the demo's best-effort jobs half an hour in. It then queues
// the same jobs now, runs one decision per cluster, and the fairness job.
func seedBestEffort(ctx context.Context, s Services, users map[string]identity.User) error {
	end := s.Now()
	clock := &replayClock{t: end.Add(-24 * time.Hour).Truncate(besteffort.HistoryInterval)}
	be := besteffort.New(s.DB, s.Ledger, clock.now, besteffort.DefaultConfig)
	for _, p := range []string{"ap-south/cpu", "ap-south/ram"} {
		if err := be.SetSettings(ctx, besteffort.IdleSettings{Pool: p, Policy: besteffort.PolicyAbacus, Alpha: besteffort.DefaultAlpha,
			MinRuntime: besteffort.DefaultMinRuntime, Exposure: 0.3}); err != nil {
			return err
		}
	}
	if err := seedMeasuredJobs(ctx, be, users["search/member"], clock.now); err != nil {
		return err
	}
	submit := func(be *besteffort.Service) error {
		for _, j := range bestEffortJobs {
			if _, err := be.Submit(ctx, users[j.who], j.spec); err != nil {
				return err
			}
		}
		return nil
	}
	holdings, err := s.Market.Holdings(ctx, "")
	if err != nil {
		return err
	}
	// The jobs are queued half an hour in, so that they fall in the fairness report's
	// last day, after owners' usage has a history.
	queueAt := clock.t.Add(30 * time.Minute)
	for ; !clock.t.After(end); clock.t = clock.t.Add(besteffort.HistoryInterval) {
		if clock.t.Equal(queueAt) {
			if err := submit(be); err != nil {
				return err
			}
		}
		for _, cluster := range []string{"us-east", "eu-west", "ap-south"} {
			if err := idleStep(ctx, be, cluster, holdings, clock.t); err != nil {
				return err
			}
		}
		if _, err := be.RecordHistory(ctx); err != nil {
			return err
		}
	}
	// The same jobs again, queued now, so the pages show work waiting and running.
	if err := submit(s.BestEffort); err != nil {
		return err
	}
	for _, cluster := range []string{"us-east", "eu-west", "ap-south"} {
		if _, err := s.BestEffort.Step(ctx, cluster); err != nil {
			return err
		}
	}
	_, err = s.BestEffort.ComputeFairness(ctx)
	return err
}

// bestEffortJobs are the demo's best-effort jobs: DirectContr in us-east and
// eu-west, the abacus auction in ap-south.
var bestEffortJobs = []struct {
	who  string
	spec besteffort.JobSpec
}{
	{"search/member", besteffort.JobSpec{Configuration: map[string]int64{"us-east/cpu": 4, "us-east/ram": 16}, Tasks: 120, MaxTaskDuration: 2 * time.Hour}},
	{"ads/member", besteffort.JobSpec{Configuration: map[string]int64{"eu-west/cpu": 8}, Tasks: 90}},
	{"search/member", besteffort.JobSpec{Configuration: map[string]int64{"ap-south/cpu": 2}, Tasks: 200, Budget: 50 * ledger.Dollar, Utility: "linear"}},
	{"ads/member", besteffort.JobSpec{Configuration: map[string]int64{"ap-south/cpu": 2, "ap-south/ram": 8}, Tasks: 200, Budget: 20 * ledger.Dollar, Utility: "log"}},
	{"ads/member", besteffort.JobSpec{Configuration: map[string]int64{"ap-south/cpu": 1}, Tasks: 40, Budget: 30 * ledger.Dollar, Utility: "linear", MinUtility: &sloUtility}},
}

// idleStep is what an agent of cluster does at now in the demo: report owners'
// usage and the tasks that ran their course (an hour and a half each), then poll.
func idleStep(ctx context.Context, be *besteffort.Service, cluster string, holdings []exchange.Holding, now time.Time) error {
	var rep besteffort.Report
	for _, h := range holdings {
		if strings.HasPrefix(h.PoolID, cluster+"/") {
			rep.Usage = append(rep.Usage, besteffort.OwnerUsage{Team: h.TeamID, Pool: h.PoolID, Units: simulate.OwnerUsage(1, h.TeamID, h.PoolID, h.Quantity, now)})
		}
	}
	alloc, err := be.Allocation(ctx, cluster)
	if err != nil {
		return err
	}
	for _, t := range alloc.Run {
		if now.Sub(t.Started) >= 90*time.Minute {
			rep.Tasks = append(rep.Tasks, besteffort.TaskEvent{Task: t.Task, Event: "done", At: now})
		}
	}
	for _, t := range alloc.Stop {
		rep.Tasks = append(rep.Tasks, besteffort.TaskEvent{Task: t.Task, Event: "stopped", At: now})
	}
	if len(rep.Tasks) > fleet.MaxReportRows {
		rep.Tasks = rep.Tasks[:fleet.MaxReportRows]
	}
	if err := be.Report(ctx, cluster, rep); err != nil {
		return err
	}
	_, err = be.Step(ctx, cluster)
	return err
}

// sloUtility is the minimum utility of the demo's SLO job: 40% of ap-south's freed cores.
var sloUtility = 0.4

// seedMeasuredJobs runs four small abacus jobs of search's to the end in
// ap-south, each measured as an agent would report it (its utility the inverse of
// its run time, its average shares), so that search's budgets are charged and its
// weights for cpu-and-ram jobs are fitted.
func seedMeasuredJobs(ctx context.Context, be *besteffort.Service, member identity.User, now func() time.Time) error {
	mixes := [][2]float64{{0.9, 0.3}, {0.4, 0.8}, {0.6, 0.5}, {0.2, 0.7}}
	for _, mix := range mixes {
		j, err := be.Submit(ctx, member, besteffort.JobSpec{Configuration: map[string]int64{"ap-south/cpu": 1, "ap-south/ram": 4}, Tasks: 1, Budget: 2 * ledger.Dollar})
		if err != nil {
			return err
		}
		if _, err := be.Step(ctx, "ap-south"); err != nil {
			return err
		}
		alloc, err := be.Allocation(ctx, "ap-south")
		if err != nil {
			return err
		}
		rep := besteffort.Report{Measured: []besteffort.JobMeasurement{{Job: j.ID, Utility: 1.5*mix[0] + 0.5*mix[1],
			Shares: map[string]float64{"ap-south/cpu": mix[0], "ap-south/ram": mix[1]}}}}
		for _, t := range alloc.Run {
			if t.Job == j.ID {
				rep.Tasks = append(rep.Tasks, besteffort.TaskEvent{Task: t.Task, Event: "done", At: now()})
			}
		}
		if err := be.Report(ctx, "ap-south", rep); err != nil {
			return err
		}
	}
	return nil
}
