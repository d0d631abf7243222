package lab

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/clearhouse/clearhouse/moneyfmt"
	"github.com/clearhouse/clearhouse/scheduler"
)

// workloadClasses lists the classes (or teams) of the jobs: the generator's in its
// order, else the ten largest teams by value.
func workloadClasses(jobs []scheduler.Job) []string {
	if jobs[0].Class != "" {
		return scheduler.MapReduceClasses()
	}
	value := map[string]float64{}
	for _, j := range jobs {
		value[j.Team] += j.Value
	}
	teams := make([]string, 0, len(value))
	for t := range value {
		teams = append(teams, t)
	}
	slices.SortFunc(teams, func(a, b string) int {
		if value[a] != value[b] {
			if value[a] > value[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return teams[:min(len(teams), 10)]
}

// WriteSimTable prints the result as `simulate` does: the algorithms against the
// upper bound, the simulated cloud's losses when it is set, acceptance by class.
func WriteSimTable(w io.Writer, res SimResult) {
	fmt.Fprintf(w, "%s\n%d jobs over %d slots, requested value %s, upper bound %s (%.1f%% of requested)\n\n",
		res.title, res.Workload.Jobs, res.Workload.Slots, moneyfmt.Dollars(res.Workload.RequestedValue), moneyfmt.Dollars(res.UpperBoundValue),
		100*res.UpperBoundValue/max(res.Workload.RequestedValue, 1e-9))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "algorithm\taccepted jobs\taccepted value\tof requested\tof upper bound\trevenue\tutilization\tprice/unit-slot\t")
	for _, a := range res.Algorithms {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f%%\t%.1f%%\t%s\t%.1f%%\t$%.2f\t\n", a.Name, a.AcceptedJobs, moneyfmt.Dollars(a.AcceptedValue),
			100*a.ValueShare, 100*a.UpperBoundShare, moneyfmt.Dollars(a.Revenue), 100*a.Utilization, a.MeanPrice)
	}
	tw.Flush()
	if res.Cloud != nil {
		fmt.Fprintln(w, "\nthe simulated cloud:")
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "algorithm\tlate jobs\tlate\tat risk\tfailed\tre-run (on time)\tearly starts\tlost: no room\tpriced out\tnot honoured\t")
		for _, a := range res.Algorithms {
			fmt.Fprintf(tw, "%s\t%d\t%.1f%%\t%d\t%d\t%d (%d)\t%d\t%s\t%s\t%s\t\n", a.Name, a.LateJobs, 100*a.LateShare, a.AtRisk, a.Failed, a.Reruns, a.RerunsOnTime, a.EarlyStarts,
				moneyfmt.Dollars(a.LostValue[scheduler.LostNoRoom]), moneyfmt.Dollars(a.LostValue[scheduler.LostPricedOut]), moneyfmt.Dollars(a.LostValue[scheduler.LostNotHonoured]))
		}
		tw.Flush()
	}
	fmt.Fprintln(w, "\naccepted jobs by class:")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "class\tjobs\t")
	for _, a := range res.Algorithms {
		fmt.Fprintf(tw, "%s\t", a.Name)
	}
	fmt.Fprintln(tw)
	for _, c := range res.classes {
		n := res.Algorithms[0].Classes[c][1]
		fmt.Fprintf(tw, "%s\t%d\t", c, n)
		for _, a := range res.Algorithms {
			fmt.Fprintf(tw, "%d\t", a.Classes[c][0])
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
}
