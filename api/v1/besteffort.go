package apiv1

import (
	"encoding/json"
	"time"
)

// NewBestEffortJob is the body of POST /best-effort: Tasks tasks of Configuration
// (pool -> units each) on idle capacity. Budget is dollars (a string or a number);
// Workload is what the tasks run (Workload), checked by the server.
type NewBestEffortJob struct {
	Team            string             `json:"team,omitempty"`
	Configuration   map[string]int64   `json:"configuration"`
	Tasks           int64              `json:"tasks"`
	MaxTaskDuration string             `json:"max_task_duration,omitempty"`
	Budget          json.RawMessage    `json:"budget,omitempty"`
	Utility         string             `json:"utility,omitempty"`
	Weights         map[string]float64 `json:"weights,omitempty"`
	MinUtility      *float64           `json:"min_utility,omitempty"`
	Workload        json.RawMessage    `json:"workload,omitempty"`
}

// BestEffortJob is a best-effort job as the API shows it.
type BestEffortJob struct {
	ID              int64              `json:"id"`
	Team            string             `json:"team"`
	Cluster         string             `json:"cluster"`
	Status          string             `json:"status"`
	Configuration   map[string]int64   `json:"configuration"`
	Tasks           int64              `json:"tasks"`
	MaxTaskDuration string             `json:"max_task_duration,omitempty"`
	Queued          int64              `json:"queued"`
	Running         int64              `json:"running"`
	Done            int64              `json:"done"`
	Failed          int64              `json:"failed"`
	Cancelled       int64              `json:"cancelled"`
	Preempted       int64              `json:"preempted"`
	Position        *int64             `json:"position"`
	EstimatedStart  *time.Time         `json:"estimated_start"`
	Policy          string             `json:"policy"`
	PoolPolicies    map[string]string  `json:"pool_policies"`
	Budget          string             `json:"budget,omitempty"`
	Charged         string             `json:"charged,omitempty"`
	Released        string             `json:"released,omitempty"`
	Utility         string             `json:"utility,omitempty"`
	Weights         map[string]float64 `json:"weights,omitempty"`
	Shares          map[string]float64 `json:"shares,omitempty"`
	MeanShares      map[string]float64 `json:"mean_shares,omitempty"`
	Auctions        int64              `json:"auctions,omitempty"`
	MinUtility      *float64           `json:"min_utility,omitempty"`
	SLO             string             `json:"slo,omitempty"`
	WeightsFrom     string             `json:"weights_from,omitempty"`
	MeasuredUtility *float64           `json:"measured_utility,omitempty"`
	Workload        *Workload          `json:"workload,omitempty"`
	Enqueued        time.Time          `json:"enqueued"`
	Ended           *time.Time         `json:"ended,omitempty"`
}

// BestEffortJobList is the body of GET /best-effort, newest first.
type BestEffortJobList struct {
	Jobs []BestEffortJob `json:"jobs"`
}

// Workload is what a best-effort job's tasks run, one member per backend kind; a
// backend whose member is missing runs nothing and reports the task failed.
type Workload struct {
	Kubernetes *KubernetesWorkload `json:"kubernetes,omitempty"`
	Slurm      *SlurmWorkload      `json:"slurm,omitempty"`
}

// KubernetesWorkload is a pod's container: its image, command, arguments and
// environment. Resources come from the task's configuration, never from here.
type KubernetesWorkload struct {
	Image   string            `json:"image"`
	Command []string          `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// SlurmWorkload is a batch job: exactly one of Script (starting "#!") or Command
// (sbatch --wrap).
type SlurmWorkload struct {
	Script  string `json:"script,omitempty"`
	Command string `json:"command,omitempty"`
}
