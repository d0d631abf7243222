-- Abacus's SLO variant and utility learning in the product (issue 14, paper sections 6
-- and 5). Per job: its minimum utility (NULL: no SLO), how many auctions it bid in and
-- the sum of its shares over them (JSON pool -> sum; their mean is the share the SLO
-- is judged on), whether its SLO was met (decided when the job is done), where its
-- weights came from (given by the team, equal, or fitted from the team's finished jobs
-- of its kind), and what its cluster's agent measured once it was done (its utility
-- and average shares). Per team, kind (the pools of a configuration) and utility
-- shape: the last least-squares fit of the weights.
-- +goose Up
ALTER TABLE best_effort_jobs ADD COLUMN min_utility DOUBLE PRECISION;
ALTER TABLE best_effort_jobs ADD COLUMN auctions INTEGER NOT NULL DEFAULT 0 CHECK (auctions >= 0);
ALTER TABLE best_effort_jobs ADD COLUMN share_sums TEXT NOT NULL DEFAULT '';
ALTER TABLE best_effort_jobs ADD COLUMN slo TEXT NOT NULL DEFAULT '' CHECK (slo IN ('', 'met', 'missed'));
ALTER TABLE best_effort_jobs ADD COLUMN weights_from TEXT NOT NULL DEFAULT '' CHECK (weights_from IN ('', 'given', 'equal', 'fitted'));
ALTER TABLE best_effort_jobs ADD COLUMN measured_utility DOUBLE PRECISION;
ALTER TABLE best_effort_jobs ADD COLUMN measured_shares TEXT NOT NULL DEFAULT '';
CREATE INDEX best_effort_jobs_measured ON best_effort_jobs (team_id, cluster_id, id) WHERE measured_utility IS NOT NULL;

CREATE TABLE best_effort_fits (
    team_id    TEXT NOT NULL REFERENCES teams (id),
    kind       TEXT NOT NULL,
    utility    TEXT NOT NULL CHECK (utility IN ('linear', 'log')),
    outcome    TEXT NOT NULL CHECK (outcome IN ('ok', 'too-few-samples', 'ill-conditioned', 'non-positive')),
    weights    TEXT NOT NULL DEFAULT '',
    samples    INTEGER NOT NULL CHECK (samples >= 0),
    rmse       DOUBLE PRECISION NOT NULL DEFAULT 0,
    condition  DOUBLE PRECISION NOT NULL DEFAULT 0,
    fitted_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (team_id, kind, utility)
);

-- +goose Down
DROP TABLE best_effort_fits;
DROP INDEX best_effort_jobs_measured;
ALTER TABLE best_effort_jobs DROP COLUMN measured_shares;
ALTER TABLE best_effort_jobs DROP COLUMN measured_utility;
ALTER TABLE best_effort_jobs DROP COLUMN weights_from;
ALTER TABLE best_effort_jobs DROP COLUMN slo;
ALTER TABLE best_effort_jobs DROP COLUMN share_sums;
ALTER TABLE best_effort_jobs DROP COLUMN auctions;
ALTER TABLE best_effort_jobs DROP COLUMN min_utility;
