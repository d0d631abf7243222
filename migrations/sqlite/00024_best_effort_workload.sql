-- A best-effort job's workload (issue 21): what its tasks run, one member per backend
-- kind, as JSON ({"kubernetes": {"image": ...}, "slurm": {"script": ...}}), validated by
-- fleet.Workload on submit; '' for a job without one (the agent then only counts it).
-- +goose Up
ALTER TABLE best_effort_jobs ADD COLUMN workload TEXT NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE best_effort_jobs DROP COLUMN workload;
