package templates

import (
	"fmt"
	"time"
)

// Timeline is the view model of a server-rendered SVG timeline of one pool's
// reservations: per request its window (a light band) and its planned run (a bar
// coloured by phase), against a time axis with a "now" line.
type Timeline struct {
	ID       string // data-testid
	Title    string
	From, To time.Time
	Now      time.Time
	Rows     []TimelineRow
}

// TimelineRow is one request of a reservation.
type TimelineRow struct {
	Label             string
	Phase             string // scheduled, running, done, cancelled, could not be honoured
	Arrival, Deadline time.Time
	Start, End        time.Time // zero when it was never planned
	Title             string    // tooltip
}

const (
	tlLeft, tlWidth, tlRow, tlTop = 150.0, 720.0, 22.0, 24.0
)

type tlBar struct {
	X, W, Y             float64
	Class, Label, Title string
	WinX, WinW          float64
	HasBar              bool
}

type tlTick struct {
	X     float64
	Label string
}

type tlGeom struct {
	W, H  float64
	NowX  float64
	Bars  []tlBar
	Ticks []tlTick
	Empty bool
}

func (t Timeline) layout() tlGeom {
	g := tlGeom{W: tlWidth, H: tlTop + tlRow*float64(max(len(t.Rows), 1)) + 8, Empty: len(t.Rows) == 0}
	span := t.To.Sub(t.From)
	if span <= 0 {
		span = time.Hour
	}
	x := func(at time.Time) float64 {
		f := float64(at.Sub(t.From)) / float64(span)
		return tlLeft + min(max(f, 0), 1)*(tlWidth-tlLeft-8)
	}
	g.NowX = x(t.Now)
	step := tickStep(span)
	for at := t.From.Truncate(step).Add(step); at.Before(t.To); at = at.Add(step) {
		label := at.Format("15:04")
		if at.Hour() == 0 && at.Minute() == 0 || step >= 24*time.Hour {
			label = at.Format("Jan 2")
		}
		g.Ticks = append(g.Ticks, tlTick{X: x(at), Label: label})
	}
	for i, r := range t.Rows {
		b := tlBar{Y: tlTop + tlRow*float64(i), Label: r.Label, Title: r.Title, Class: "tl-" + phaseClass(r.Phase)}
		b.WinX, b.WinW = x(r.Arrival), max(x(r.Deadline)-x(r.Arrival), 1)
		if !r.Start.IsZero() && r.End.After(r.Start) {
			b.HasBar = true
			b.X, b.W = x(r.Start), max(x(r.End)-x(r.Start), 2)
		}
		g.Bars = append(g.Bars, b)
	}
	return g
}

func tickStep(span time.Duration) time.Duration {
	for _, s := range []time.Duration{15 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour} {
		if span/s <= 10 {
			return s
		}
	}
	return 48 * time.Hour
}

func phaseClass(phase string) string {
	switch phase {
	case "could not be honoured":
		return "failed"
	case "scheduled", "running", "done", "cancelled", "rejected":
		return phase
	}
	return "other"
}

// tlSpan says when a span starts and ends in UTC, naming the day of the end only
// when it differs from the start's.
func tlSpan(from, to time.Time) string {
	from, to = from.UTC(), to.UTC()
	end := to.Format("15:04")
	if from.YearDay() != to.YearDay() || from.Year() != to.Year() {
		end = to.Format("Jan 2 15:04")
	}
	return from.Format("Jan 2 15:04") + " – " + end + " UTC"
}

func fx(v float64) string { return fmt.Sprintf("%.1f", v) }
