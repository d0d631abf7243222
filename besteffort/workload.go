package besteffort

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"regexp"
	"slices"
	"strings"

	"github.com/clearhouse/clearhouse"
)

// Workload is what a best-effort job's tasks run, one member per kind of cluster
// manager (issue 21): an agent runs a task with the member of its own kind and only
// counts a task whose job has none. Resources are not part of it: each task requests
// the job's configuration, mapped to the manager's resources by the agent's config.
type Workload struct {
	Kubernetes *KubernetesWorkload `json:"kubernetes,omitempty"`
	Slurm      *SlurmWorkload      `json:"slurm,omitempty"`
}

// KubernetesWorkload is a task's container: its image, and optionally the command
// and arguments (as in a pod's container: arrays of strings) and environment.
type KubernetesWorkload struct {
	Image   string            `json:"image"`
	Command []string          `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
}

// SlurmWorkload is a task's batch job: exactly one of a script (starting "#!") or a
// command line (sbatch --wrap).
type SlurmWorkload struct {
	Script  string `json:"script,omitempty"`
	Command string `json:"command,omitempty"`
}

// Workload limits.
const (
	MaxWorkloadBytes = 64 << 10 // the JSON of a whole workload
	maxWorkloadArgs  = 256      // command plus args
	maxWorkloadEnv   = 128
)

// imageReference is the grammar of a container image reference (the distribution
// project's: [domain[:port]/]path[:tag][@digest]), lower-case path components.
var imageReference = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*)*` +
	`(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,})?$`)

// envName is a container environment variable's name as Kubernetes accepts it.
var envName = regexp.MustCompile(`^[-._a-zA-Z][-._a-zA-Z0-9]*$`)

// ParseWorkload decodes a workload's JSON strictly: unknown members (of the
// workload or of a kind) and trailing data are EINVALID, and so is what Validate
// refuses. Empty input (or null) is no workload: nil.
func ParseWorkload(raw []byte) (*Workload, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if len(raw) > MaxWorkloadBytes {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "workload: at most %d bytes of JSON", MaxWorkloadBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var w Workload
	if err := dec.Decode(&w); err != nil {
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "workload: unknown member %s (known: kubernetes {image, command, args, env}, slurm {script, command})", f)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, clearhouse.Errorf(clearhouse.EINVALID, "workload: %s must be %s", "workload."+te.Field, jsonKind(te.Type.String()))
		}
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "workload: not a JSON object such as {\"kubernetes\": {\"image\": \"busybox:1.36\"}}")
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, clearhouse.Errorf(clearhouse.EINVALID, "workload: one JSON object, nothing after it")
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &w, nil
}

func jsonKind(goType string) string {
	switch {
	case strings.HasPrefix(goType, "[]"):
		return "an array of strings"
	case strings.HasPrefix(goType, "map["):
		return "an object of strings"
	case goType == "string":
		return "a string"
	}
	return "an object"
}

// Validate checks the workload: at least one member; a kubernetes member has a
// valid image reference, at most 256 command and argument strings together, no
// empty command string, and environment names Kubernetes accepts; a slurm member
// has exactly one of a script starting "#!" or a command. EINVALID names the field.
func (w Workload) Validate() error {
	bad := func(format string, args ...any) error { return clearhouse.Errorf(clearhouse.EINVALID, format, args...) }
	if w.Kubernetes == nil && w.Slurm == nil {
		return bad("workload: give a kubernetes or slurm member, or no workload")
	}
	if k := w.Kubernetes; k != nil {
		switch {
		case k.Image == "":
			return bad("workload.kubernetes.image: required, e.g. \"busybox:1.36\"")
		case len(k.Image) > 512 || !imageReference.MatchString(k.Image):
			return bad("workload.kubernetes.image: %q is not an image reference such as \"registry.example.com/team/app:1.2\"", k.Image)
		case len(k.Command)+len(k.Args) > maxWorkloadArgs:
			return bad("workload.kubernetes: at most %d command and args strings together", maxWorkloadArgs)
		case len(k.Env) > maxWorkloadEnv:
			return bad("workload.kubernetes.env: at most %d variables", maxWorkloadEnv)
		}
		if slices.Contains(k.Command, "") {
			return bad("workload.kubernetes.command: no empty strings")
		}
		for name := range k.Env {
			if !envName.MatchString(name) {
				return bad("workload.kubernetes.env: %q is not a variable name (letters, digits, '-', '.', '_', not starting with a digit)", name)
			}
		}
	}
	if s := w.Slurm; s != nil {
		switch {
		case s.Script == "" && s.Command == "":
			return bad("workload.slurm: give a script or a command")
		case s.Script != "" && s.Command != "":
			return bad("workload.slurm: give a script or a command, not both")
		case s.Script != "" && !strings.HasPrefix(s.Script, "#!"):
			return bad("workload.slurm.script: must start with \"#!\" (an interpreter line such as #!/bin/sh)")
		case strings.TrimSpace(s.Command) == "" && s.Script == "":
			return bad("workload.slurm.command: must not be blank")
		}
	}
	return nil
}

// workloadJSON is the column's text: "" for none.
func workloadJSON(w *Workload) string {
	if w == nil {
		return ""
	}
	b, _ := json.Marshal(w)
	return string(b)
}

// WorkloadSpec decodes the job's workload (nil: none).
func (j Job) WorkloadSpec() *Workload {
	if j.Workload == "" {
		return nil
	}
	var w Workload
	if json.Unmarshal([]byte(j.Workload), &w) != nil {
		return nil
	}
	return &w
}
