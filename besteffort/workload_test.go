package besteffort_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/clearhouse/clearhouse"
	"github.com/clearhouse/clearhouse/besteffort"
	"github.com/clearhouse/clearhouse/store"
	"github.com/clearhouse/clearhouse/store/storetest"
)

func TestParseWorkloadRefusesWhatNoBackendCanRun(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ raw, says string }{
		{`{}`, "give a kubernetes or slurm member"},
		{`{"docker": {"image": "x"}}`, `unknown member "docker"`},
		{`{"kubernetes": {"image": "busybox", "ports": [80]}}`, `unknown member "ports"`},
		{`{"kubernetes": {}}`, "workload.kubernetes.image: required"},
		{`{"kubernetes": {"image": "Busybox:1.36"}}`, "not an image reference"},
		{`{"kubernetes": {"image": "busybox 1.36"}}`, "not an image reference"},
		{`{"kubernetes": {"image": "busybox", "command": "sleep 1"}}`, "workload.kubernetes.command must be an array of strings"},
		{`{"kubernetes": {"image": "busybox", "command": [1]}}`, "must be"},
		{`{"kubernetes": {"image": "busybox", "command": [""]}}`, "no empty strings"},
		{`{"kubernetes": {"image": "busybox", "env": {"1X": "v"}}}`, "not a variable name"},
		{`{"slurm": {}}`, "give a script or a command"},
		{`{"slurm": {"script": "#!/bin/sh\n", "command": "true"}}`, "not both"},
		{`{"slurm": {"script": "sleep 600"}}`, `must start with "#!"`},
		{`{"slurm": {"command": "   "}}`, "must not be blank"},
		{`{"kubernetes": {"image": "busybox"}} {}`, "nothing after it"},
		{`[1]`, "not a JSON object"},
	} {
		w, err := besteffort.ParseWorkload([]byte(c.raw))
		if clearhouse.ErrorCode(err) != clearhouse.EINVALID || !contains(clearhouse.ErrorMessage(err), c.says) {
			t.Errorf("%s: got %v, %v; want EINVALID saying %q", c.raw, w, err, c.says)
		}
	}
	for _, raw := range []string{
		``, `null`,
		`{"kubernetes": {"image": "busybox:1.36", "command": ["sh", "-c", "sleep 600"], "env": {"K": "V"}}}`,
		`{"kubernetes": {"image": "registry.example.com:5000/team/app_x@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}`,
		`{"slurm": {"script": "#!/bin/sh\nsleep 600\n"}}`,
		`{"slurm": {"command": "sleep 600"}, "kubernetes": {"image": "busybox"}}`,
	} {
		if _, err := besteffort.ParseWorkload([]byte(raw)); err != nil {
			t.Errorf("%s: refused: %v", raw, err)
		}
	}
}

func TestAJobsWorkloadIsKeptAndReachesItsAgent(t *testing.T) {
	t.Parallel()
	storetest.Each(t, func(t *testing.T, db *store.DB) {
		x := newIdle(t, db)
		ctx := context.Background()
		w := &besteffort.Workload{Kubernetes: &besteffort.KubernetesWorkload{Image: "busybox:1.36", Command: []string{"sh", "-c", "sleep 600"}, Env: map[string]string{"K": "V"}},
			Slurm: &besteffort.SlurmWorkload{Command: "sleep 600"}}
		bad := &besteffort.Workload{Kubernetes: &besteffort.KubernetesWorkload{Image: "no spaces allowed"}}
		if _, err := x.be.Submit(ctx, x.Users["member@search"], besteffort.JobSpec{Configuration: cpu(10), Tasks: 2, Workload: bad}); clearhouse.ErrorCode(err) != clearhouse.EINVALID {
			t.Fatalf("a bad workload: %v", err)
		}
		var n int64
		if err := db.Read.Model(&besteffort.Job{}).Count(&n).Error; err != nil || n != 0 {
			t.Fatalf("a refused workload left %d jobs (%v)", n, err)
		}
		spec := besteffort.JobSpec{Configuration: cpu(10), Tasks: 2, Workload: w, Key: "w1"}
		j := x.submit("member@search", spec)
		if got := x.job(j.ID).WorkloadSpec(); !reflect.DeepEqual(got, w) {
			t.Fatalf("stored workload %+v, want %+v", got, w)
		}
		// The workload is part of what a key stands for.
		other := spec
		other.Workload = &besteffort.Workload{Kubernetes: &besteffort.KubernetesWorkload{Image: "busybox:1.37"}}
		if _, err := x.be.Submit(ctx, x.Users["member@search"], other); clearhouse.ErrorCode(err) != clearhouse.ECONFLICT {
			t.Fatalf("another workload under the key: %v", err)
		}
		x.step("us-east")
		a, err := x.be.Allocation(ctx, "us-east")
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Run) == 0 {
			t.Fatal("no task runs")
		}
		for _, task := range a.Run {
			if !reflect.DeepEqual(task.Workload, w) {
				t.Fatalf("task %d carries %+v, want %+v", task.Task, task.Workload, w)
			}
		}
	})
}
