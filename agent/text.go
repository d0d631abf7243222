package agent

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// ConfigText is a configuration as JSON with its pools in order.
func ConfigText(c map[string]int64) string {
	b, _ := json.Marshal(c)
	return string(b)
}

// Clock is a time of day in UTC, the plan's zone: how the agent stamps its lines.
func Clock(t time.Time) string { return t.UTC().Format(time.TimeOnly) }

// HHMM is t in UTC as hours and minutes, with the date when it is not now's day.
func HHMM(t, now time.Time) string {
	t, now = t.UTC(), now.UTC()
	if t.YearDay() != now.YearDay() || t.Year() != now.Year() {
		return t.Format("Jan 2 15:04")
	}
	return t.Format("15:04")
}

func answerText(a Answer) string {
	var parts []string
	for _, p := range []struct {
		name string
		ids  []int64
	}{{"moved", a.Moved}, {"at risk", a.AtRisk}, {"ended", a.Ended}, {"early start refused for", refusedIDs(a.RefusedStarts)}} {
		if len(p.ids) == 0 {
			continue
		}
		ids := make([]string, len(p.ids))
		for i, id := range p.ids {
			ids[i] = fmt.Sprint(id)
		}
		parts = append(parts, fmt.Sprintf("%s reservation %s", p.name, strings.Join(ids, ", ")))
	}
	for _, n := range a.RefusedEnds {
		parts = append(parts, "end refused: "+n.Reason)
	}
	return strings.Join(parts, "; ")
}

func refusedIDs(ks []JobKey) []int64 {
	var out []int64
	for _, k := range ks {
		out = append(out, k.Reservation)
	}
	return out
}
