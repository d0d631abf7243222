package reports

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse/sharing"
	"github.com/clearhouse/clearhouse/templates"
)

// Share is what the report of `clearhouse share simulate` shows.
type Share struct {
	Title, Scenario string
	Seed            uint64
	Exact           bool   // Shapley values computed exactly, not sampled
	Simulations     int    // simulations run
	Ties            string // what a tie scores, in words
	Orgs            []sharing.Org
	Policies        []SharePolicy
	Samples         []ShareSample
	Unfairness      [][]float64 // [sample][policy]
	Pairwise        [][]float64 // [row policy][column policy]: the row's points
}

// SharePolicy is a policy's line of the report's first table.
type SharePolicy struct {
	Name           string
	Score          float64
	MeanUnfairness float64 // task-hours
}

// ShareSample is one sample's Shapley values and waits (task-hours) by
// organization name, the waits also by policy name.
type ShareSample struct {
	Shapley map[string]float64
	Wait    map[string]map[string]float64
}

type shareView struct {
	Share
	How, Procs string
	Names      []string
	Pairwise   [][]string
	Charts     []templates.BarChart
}

// RenderShare is the self-contained HTML report of `share simulate`: no scripts,
// no external files, every chart an inline SVG drawn by the pages' chart components.
func RenderShare(s Share) ([]byte, error) {
	v := shareView{Share: s, How: "exact"}
	if !s.Exact {
		v.How = "sampled"
	}
	var procs []string
	for _, org := range s.Orgs {
		procs = append(procs, strconv.FormatInt(org.Processors, 10))
	}
	v.Procs = strings.Join(procs, "/")
	for _, p := range s.Policies {
		v.Names = append(v.Names, p.Name)
	}
	for a := range v.Names {
		row := make([]string, len(v.Names))
		for b := range v.Names {
			row[b] = "-"
			if a != b {
				row[b] = fmt.Sprintf("%g of %d", s.Pairwise[a][b], len(s.Samples))
			}
		}
		v.Pairwise = append(v.Pairwise, row)
	}
	v.Charts = []templates.BarChart{unfairnessChart(s, v.Names), fairWaitChart(s, v.Names)}
	var buf bytes.Buffer
	if err := shareReport(v).Render(context.Background(), &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// lead is the sentence under the title: the workload, the scenario and how the
// Shapley values were found.
func (v shareView) lead() string {
	return fmt.Sprintf("%s. Scenario %s: %d organizations (%s processors); %d samples of 24 hours, seed %d; Shapley values %s, %d simulations.",
		v.Title, v.Scenario, len(v.Orgs), v.Procs, len(v.Samples), v.Seed, v.How, v.Simulations)
}

// unfairnessChart: each sample's unfairness under each policy.
func unfairnessChart(s Share, names []string) templates.BarChart {
	c := templates.BarChart{ID: "share-unfairness", Title: "Unfairness per sample and policy", YLabel: "task-hours"}
	for k := range s.Unfairness {
		c.Groups = append(c.Groups, strconv.Itoa(k+1))
	}
	for p, name := range names {
		bs := templates.BarSeries{Name: name, Color: templates.SeriesColor(p)}
		for k, u := range s.Unfairness {
			addBar(&bs, u[p], fmt.Sprintf("sample %d, %s: %.1f task-hours", k+1, name, u[p]))
		}
		c.Series = append(c.Series, bs)
	}
	return c
}

// fairWaitChart: per organization, the mean Shapley value and each policy's mean wait.
func fairWaitChart(s Share, names []string) templates.BarChart {
	c := templates.BarChart{ID: "share-fair-wait", Title: "Wait per organization against its Shapley value (mean over samples)", YLabel: "task-hours"}
	n := float64(len(s.Samples))
	shapley := templates.BarSeries{Name: "Shapley value", Color: templates.NeutralColor}
	waits := make([]templates.BarSeries, len(names))
	for p, name := range names {
		waits[p] = templates.BarSeries{Name: name, Color: templates.SeriesColor(p)}
	}
	for _, org := range s.Orgs {
		c.Groups = append(c.Groups, org.Name)
		mean := 0.0
		for _, sample := range s.Samples {
			mean += sample.Shapley[org.Name] / n
		}
		addBar(&shapley, mean, fmt.Sprintf("%s, %s: %.1f task-hours", org.Name, shapley.Name, mean))
		for p, name := range names {
			mean := 0.0
			for _, sample := range s.Samples {
				mean += sample.Wait[name][org.Name] / n
			}
			addBar(&waits[p], mean, fmt.Sprintf("%s, %s: %.1f task-hours", org.Name, name, mean))
		}
	}
	c.Series = append([]templates.BarSeries{shapley}, waits...)
	return c
}

// addBar adds a bar, with its hover text, to a series.
func addBar(s *templates.BarSeries, value float64, title string) {
	s.Values = append(s.Values, value)
	s.Titles = append(s.Titles, title)
}
