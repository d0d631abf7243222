package slurm

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// job is one Slurm job as squeue or sacct shows it.
type job struct {
	ID          int64
	Name        string
	Account     string
	QOS         string
	State       string // RUNNING, PENDING, COMPLETED, PREEMPTED, "CANCELLED by 0" is CANCELLED
	Reservation string
	// ReservationID is sacct's ReservationId (0 outside a reservation, and from
	// squeue): accounting can leave the name out where it has the id (nameReservations).
	ReservationID int64
	Reason        string // squeue only: why it waits
	TRES          tres   // allocated (running, ended) or requested (pending)
	Start, End    time.Time
}

// queueFormat is squeue's --Format: '|' after each field, the job name (the one field a
// user writes freely) last so a '|' in it cannot shift the others. squeue --json
// exists in Slurm 22.05 but ignores --states and prints every job in full (about 3 KB
// a job): with thousands of queued jobs this is megabytes per poll, so the backend
// reads the fields it needs.
const queueFormat = "JobID:|,Account:|,QOS:|,State:|,tres-alloc:|,StartTime:|,EndTime:|,Reservation:|,Reason:|,Name:"

// queue lists the jobs in the given states (squeue's --states, e.g. "RUNNING" or
// "PENDING,RUNNING"), with any further squeue filter args.
func (b *Backend) queue(ctx context.Context, states string, args ...string) ([]job, error) {
	out, err := b.run.Run(ctx, "", "squeue", append([]string{"--noheader", "--all", "--states=" + states, "--Format=" + queueFormat}, args...)...)
	if err != nil {
		return nil, err
	}
	return parseQueue(out)
}

// parseQueue reads squeue's output in queueFormat.
func parseQueue(out string) ([]job, error) {
	var jobs []job
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, "|", 10)
		if len(f) != 10 {
			return nil, fmt.Errorf("squeue: line %q: want 10 fields", line)
		}
		id, err := strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("squeue: line %q: job id: %w", line, err)
		}
		t, err := parseTRES(f[4])
		if err != nil {
			return nil, fmt.Errorf("squeue: job %d: %w", id, err)
		}
		jobs = append(jobs, job{ID: id, Account: f[1], QOS: f[2], State: f[3], TRES: t, Start: parseTime(f[5]),
			End: parseTime(f[6]), Reservation: nullable(f[7]), Reason: f[8], Name: f[9]})
	}
	return jobs, nil
}

// accountingFormat is sacct's --format, the job name last for the same reason.
const accountingFormat = "JobID,Account,QOS,State,Start,End,Reservation,ReservationId,AllocTRES,JobName"

// accounting lists the jobs Slurm's accounting knows since since (sacct --allocations,
// any state), with any further sacct filter args.
func (b *Backend) accounting(ctx context.Context, since time.Time, args ...string) ([]job, error) {
	out, err := b.run.Run(ctx, "", "sacct", append([]string{"--clusters=" + b.cluster, "--allusers", "--allocations",
		"--parsable2", "--noheader", "--starttime=" + since.Local().Format(slurmTime), "--format=" + accountingFormat}, args...)...)
	if err != nil {
		return nil, err
	}
	return parseAccounting(out)
}

// parseAccounting reads sacct's output in accountingFormat.
func parseAccounting(out string) ([]job, error) {
	var jobs []job
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.SplitN(line, "|", 10)
		if len(f) != 10 {
			return nil, fmt.Errorf("sacct: line %q: want 10 fields", line)
		}
		idText, _, _ := strings.Cut(f[0], "_") // an array task: its job's id
		id, err := strconv.ParseInt(idText, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("sacct: line %q: job id: %w", line, err)
		}
		var resv int64 // empty outside a reservation
		if f[7] != "" {
			if resv, err = strconv.ParseInt(f[7], 10, 64); err != nil {
				return nil, fmt.Errorf("sacct: job %d: reservation id: %w", id, err)
			}
		}
		t, err := parseTRES(f[8])
		if err != nil {
			return nil, fmt.Errorf("sacct: job %d: %w", id, err)
		}
		state, _, _ := strings.Cut(f[3], " ") // "CANCELLED by 0"
		jobs = append(jobs, job{ID: id, Account: f[1], QOS: f[2], State: state, Start: parseTime(f[4]), End: parseTime(f[5]),
			Reservation: f[6], ReservationID: resv, TRES: t, Name: f[9]})
	}
	return jobs, nil
}

// slurmTime is how Slurm's tools print and read times: the local zone of the machine
// they run on.
const slurmTime = "2006-01-02T15:04:05"

// parseTime reads a Slurm time; "Unknown", "None", "N/A" and anything else are zero.
func parseTime(s string) time.Time {
	t, err := time.ParseInLocation(slurmTime, strings.TrimSpace(s), time.Local)
	if err != nil {
		return time.Time{}
	}
	return t.UTC()
}

func nullable(s string) string {
	if s == "(null)" || s == "N/A" {
		return ""
	}
	return s
}
