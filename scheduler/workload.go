package scheduler

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/clearhouse/clearhouse"
)

// Job is one row of a workload (docs/formats/workload.md): it asks for Width units
// (and Overhead more) for Duration contiguous slots within [Arrival, Deadline), is
// requested at Submit, and is worth at most Value dollars. Rows with the same
// non-empty Group are the requests of one bid, combined by Language, in the
// order they were read; they share Team, Submit, Value and Language.
type Job struct {
	ID       string
	Team     string
	Class    string // the generator's job class, or "" for recorded workloads
	Submit   Slot
	Arrival  Slot
	Deadline Slot
	Duration Slot
	Width    int64
	Value    float64
	Group    string
	Language BidLanguage
	Overhead int64
}

func (j Job) validate() error {
	switch {
	case j.Duration <= 0:
		return errors.New("duration must be at least 1 slot")
	case j.Width <= 0:
		return errors.New("width must be at least 1")
	case j.Arrival < 0 || j.Deadline <= j.Arrival:
		return errors.New("deadline must be after arrival (and arrival not negative)")
	case j.Deadline-j.Arrival < j.Duration:
		return errors.New("duration does not fit in [arrival, deadline)")
	case j.Submit > j.Arrival || j.Submit < 0:
		return errors.New("submit must be between 0 and arrival")
	case math.IsNaN(j.Value) || math.IsInf(j.Value, 0) || j.Value <= 0:
		return errors.New("value must be a positive number")
	case j.Overhead < 0 || j.Overhead > math.MaxInt32:
		return errors.New("overhead must be a whole number of units, at least 0")
	case j.Language.Validate() != nil:
		return errors.New("language must be ALL, ANY, ORDER or ORDER_NO_GAP")
	case j.Language != "" && j.Group == "":
		return errors.New("a language needs a group")
	}
	return nil
}

// sameBid returns an error when j, in the group of first, disagrees with it on
// what a bid has once: team, submit, value and language.
func sameBid(first, j Job) error {
	if j.Team != first.Team || j.Submit != first.Submit || j.Value != first.Value || j.Language != first.Language {
		return fmt.Errorf("group %q: its rows must share team, submit, value and language (row %s)", j.Group, first.ID)
	}
	return nil
}

// ReadCSV reads the CSV workload format: a header naming at least id, team,
// arrival, deadline, duration, width and value (and optionally submit, group,
// language and overhead), then one job a row in any order (a group's rows in
// the order of its requests). A malformed row is EINVALID with its line number.
func ReadCSV(r io.Reader) ([]Job, error) {
	cr := csv.NewReader(r)
	cr.TrimLeadingSpace = true
	header, err := cr.Read()
	if err != nil {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "line 1: no header: %v", err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(strings.ToLower(h))] = i
	}
	for _, need := range []string{"id", "team", "arrival", "deadline", "duration", "width", "value"} {
		if _, ok := col[need]; !ok {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "line 1: the header has no %q column", need)
		}
	}
	var jobs []Job
	groups := map[string]Job{}
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return jobs, nil
		}
		if err != nil {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "line %d: %v", line, err)
		}
		j, err := readRow(rec, col)
		if err == nil {
			err = j.validate()
		}
		if first, ok := groups[j.Group]; err == nil && ok {
			err = sameBid(first, j)
		} else if err == nil && j.Group != "" {
			groups[j.Group] = j
		}
		if err != nil {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "line %d: %v", line, err)
		}
		jobs = append(jobs, j)
	}
}

// readRow reads one CSV row by the header's columns; optional columns that are
// absent or empty keep their zero value (submit: the arrival).
func readRow(rec []string, col map[string]int) (Job, error) {
	field := func(name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	num := func(name string) (int64, error) {
		v, err := strconv.ParseInt(field(name), 10, 64)
		if err != nil || v > math.MaxInt32 || v < math.MinInt32 {
			return 0, fmt.Errorf("%s: %q is not a whole number", name, field(name))
		}
		return v, nil
	}
	j := Job{ID: rec[col["id"]], Team: rec[col["team"]], Group: field("group"), Language: BidLanguage(strings.ToUpper(field("language")))}
	var vals [4]int64
	var err error
	for i, name := range []string{"arrival", "deadline", "duration", "width"} {
		if vals[i], err = num(name); err != nil {
			return Job{}, err
		}
	}
	j.Arrival, j.Deadline, j.Duration, j.Width = Slot(vals[0]), Slot(vals[1]), Slot(vals[2]), vals[3]
	j.Submit = j.Arrival
	if field("submit") != "" {
		s, err := num("submit")
		if err != nil {
			return Job{}, err
		}
		j.Submit = Slot(s)
	}
	if field("overhead") != "" {
		if j.Overhead, err = num("overhead"); err != nil {
			return Job{}, err
		}
	}
	if j.Value, err = strconv.ParseFloat(field("value"), 64); err != nil {
		return Job{}, fmt.Errorf("value: %q is not a number", field("value"))
	}
	return j, nil
}

// SWFModel supplies what SWF logs lack, seeded: a job's deadline is its arrival plus
// its duration times a slack drawn uniformly from [1, 1+Slack]; its value is its
// unit-slots times a price per unit-slot drawn from a log-normal distribution with
// median ValueMedian and log-spread ValueSpread.
type SWFModel struct {
	SlotSeconds int
	Seed        uint64
	Slack       float64
	ValueMedian float64
	ValueSpread float64
}

// DefaultSWFModel is the documented default: 5-minute slots, slack up to 3x,
// a median of $1 per unit-slot with log-spread 1.
var DefaultSWFModel = SWFModel{SlotSeconds: 300, Seed: 1, Slack: 2, ValueMedian: 1, ValueSpread: 1}

// ReadSWF reads a Standard Workload Format log: ';' comments and 18 fields a job.
// Submit time, run time, allocated processors and user become arrival, duration,
// width and team; jobs with no run time or processors are skipped (cancelled jobs),
// and processors are rounded up as run time is (0.5 is one unit, never none: found
// by lab's FuzzSWFWorkload).
func ReadSWF(r io.Reader, m SWFModel) ([]Job, error) {
	if m.SlotSeconds <= 0 {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "slot seconds: must be positive")
	}
	rng := rand.New(rand.NewPCG(m.Seed, m.Seed^0x51f))
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	var jobs []Job
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, ";") {
			continue
		}
		f := strings.Fields(text)
		if len(f) != 18 {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "line %d: %d fields, SWF has 18", line, len(f))
		}
		field := func(i int) (float64, error) {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > 1e12 {
				return 0, clearhouse.Errorf(clearhouse.EINVALID, "line %d: field %d %q is not a number", line, i+1, f[i])
			}
			return v, nil
		}
		submit, err := field(1)
		if err != nil {
			return nil, err
		}
		run, err := field(3)
		if err != nil {
			return nil, err
		}
		procs, err := field(4)
		if err != nil {
			return nil, err
		}
		if run <= 0 || procs <= 0 || submit < 0 {
			continue
		}
		arrival := Slot(submit / float64(m.SlotSeconds))
		duration := Slot(math.Ceil(run / float64(m.SlotSeconds)))
		slack := 1 + m.Slack*rng.Float64()
		price := m.ValueMedian * math.Exp(m.ValueSpread*rng.NormFloat64())
		jobs = append(jobs, Job{ID: f[0], Team: "user" + f[11], Submit: arrival, Arrival: arrival,
			Deadline: arrival + Slot(math.Ceil(float64(duration)*slack)), Duration: duration, Width: int64(math.Ceil(procs)),
			Value: price * float64(duration) * procs})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return jobs, nil
}
