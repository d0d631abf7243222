package agent

import apiv1 "github.com/clearhouse/clearhouse/api/v1"

// The agent speaks the JSON API's contract, package api/v1 (the only package of the
// module it imports): the server encodes and decodes the same types. The names below
// are the agent's for them; backends use these names and never import api/v1.

// The allocation: GET /api/v1/clusters/{cluster}/allocation.
type (
	Allocation         = apiv1.Allocation
	Job                = apiv1.Job
	JobKey             = apiv1.JobKey
	Task               = apiv1.Task
	Workload           = apiv1.Workload
	KubernetesWorkload = apiv1.KubernetesWorkload
	SlurmWorkload      = apiv1.SlurmWorkload
	PoolSharing        = apiv1.PoolSharing
	Limit              = apiv1.Limit
	OverLimitPolicy    = apiv1.OverLimitPolicy
	Reclaim            = apiv1.Reclaim
	// HeldQuota is a team's holdings of a pool as the allocation lists them; Quota
	// is the limit a backend applies.
	HeldQuota = apiv1.Quota
)

// The report: POST /api/v1/clusters/{cluster}/updates, and its answer.
type (
	Updates        = apiv1.Updates
	JobStart       = apiv1.JobStart
	JobEnd         = apiv1.JobEnd
	JobUsage       = apiv1.JobUsage
	JobWaiting     = apiv1.JobWaiting
	JobUnplaceable = apiv1.JobUnplaceable
	PoolUsage      = apiv1.PoolUsage
	TaskEvent      = apiv1.TaskEvent
	OwnerUsage     = apiv1.OwnerUsage
	JobMeasurement = apiv1.JobMeasurement
	OverLimit      = apiv1.OverLimit
	Reclaimed      = apiv1.Reclaimed
	Status         = apiv1.AgentStatus
	Correction     = apiv1.Correction
	Answer         = apiv1.Answer
	EndNote        = apiv1.EndNote
)

// The over-limit policy's actions.
const (
	OverLimitReport = apiv1.OverLimitReport
	OverLimitEvict  = apiv1.OverLimitEvict
)

// The events of a best-effort task.
const (
	TaskStarted = apiv1.TaskStarted
	TaskDone    = apiv1.TaskDone
	TaskFailed  = apiv1.TaskFailed
	TaskStopped = apiv1.TaskStopped
)
