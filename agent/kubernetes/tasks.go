package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/clearhouse/clearhouse/agent"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// PodName is the pod of best-effort task id: one name per task, so that creating it
// twice (a retry, a restarted agent) finds the first.
func PodName(task int64) string { return "clearhouse-task-" + strconv.FormatInt(task, 10) }

// SyncTasks runs each task in run as a pod named PodName(task) in its team's first
// namespace, of the backend's PriorityClass (created if missing: low value, never
// preempting), requesting the task's configuration mapped through the config (and 0 of
// each cpu or memory pool it does not name, as the best-effort quota requires), with
// the image, command, args and env of its workload's kubernetes member; a task
// without one, or whose team or pools the config does not map, is reported failed
// and runs nothing. It deletes the pod of each task in stop (and of any task the
// server lists in neither) and reports it stopped. Events come from the pods
// themselves: started (Running, at its start time), done (Succeeded) or failed
// (Failed), at the time its container finished; stopped when the pod of a task seen
// running is gone while the task should run (deleted by someone else, preempted by
// the scheduler): the server puts it back in the queue. Each is returned once per process; a
// restarted agent returns them again and the server ignores what it has. Only pods in
// the namespaces the config maps are read or deleted: a labelled pod elsewhere is not
// the backend's to touch.
//
// SyncTasks is the tasks reconciler's poll: it sets which tasks should run or stop and
// reconciles them all; between polls the pod informer's events delete the pod of a task
// to stop as soon as it shows, and forget the tasks the server lists no more and whose
// pods are gone (see reconcileTask), so the reconciler's state stays bounded by the
// tasks the server lists and the pods that exist.
func (b *Backend) SyncTasks(ctx context.Context, run, stop []agent.Task) ([]agent.TaskEvent, error) {
	r := b.tasks
	r.mu.Lock()
	defer r.mu.Unlock()
	r.synced = true
	clear(r.toRun)
	clear(r.toStop)
	for _, t := range run {
		r.toRun[t.ID] = true
	}
	for _, t := range stop {
		r.toStop[t.ID] = true
	}
	var errs []error
	if err := b.ensurePriorityClass(ctx); err != nil {
		errs = append(errs, err)
	}
	pods, err := b.pods.List(labels.SelectorFromSet(labels.Set{ManagedBy: FieldManager}))
	if err != nil {
		return nil, err
	}
	mapped, err := b.teamOfNamespace()
	if err != nil {
		return nil, err
	}
	byTask := map[int64]*corev1.Pod{}
	for _, pod := range pods {
		if _, ok := mapped[pod.Namespace]; !ok {
			continue // outside the mapping: another agent's, or a copy; never touched
		}
		if id, err := strconv.ParseInt(pod.Labels[LabelTask], 10, 64); err == nil {
			byTask[id] = pod
		}
	}
	now := b.now().UTC()
	var events []agent.TaskEvent
	emit := func(task int64, event string, at time.Time, ran bool) {
		last := r.reported[task]
		if last == event || last != "" && event == agent.TaskStarted {
			return
		}
		if ran && (event == agent.TaskDone || event == agent.TaskFailed) && last == "" {
			events = append(events, agent.TaskEvent{Task: task, Event: agent.TaskStarted, At: at.UTC()})
		}
		r.reported[task] = event
		events = append(events, agent.TaskEvent{Task: task, Event: event, At: at.UTC()})
	}
	listed := map[int64]bool{}
	for _, t := range run {
		listed[t.ID] = true
		pod := byTask[t.ID]
		if pod == nil {
			if r.reported[t.ID] == agent.TaskStarted {
				// It ran and its pod is gone (deleted by someone, preempted by the
				// scheduler, its node lost): stopped, not started again.
				emit(t.ID, agent.TaskStopped, now, false)
				continue
			}
			if !r.classOK {
				continue // no task pod without its PriorityClass: the team's own quota would take it
			}
			if err := b.startTask(ctx, t); err != nil {
				if errors.Is(err, errCannotRun) {
					emit(t.ID, agent.TaskFailed, now, false)
				}
				errs = append(errs, fmt.Errorf("task %d: %w", t.ID, err))
			}
			continue
		}
		switch pod.Status.Phase {
		case corev1.PodRunning:
			emit(t.ID, agent.TaskStarted, startedAt(pod, now), true)
		case corev1.PodSucceeded:
			emit(t.ID, agent.TaskDone, finishedAt(pod, now), true)
		case corev1.PodFailed:
			emit(t.ID, agent.TaskFailed, finishedAt(pod, now), true)
		}
	}
	for _, t := range stop {
		listed[t.ID] = true
		if pod := byTask[t.ID]; pod != nil {
			if err := b.deletePod(ctx, pod); err != nil {
				errs = append(errs, fmt.Errorf("task %d: %w", t.ID, err))
				continue
			}
		}
		emit(t.ID, agent.TaskStopped, now, false)
	}
	for _, id := range slices.Sorted(maps.Keys(byTask)) {
		if !listed[id] {
			// The server runs this task no more (done and accepted, or forgotten): its pod goes.
			if err := b.deletePod(ctx, byTask[id]); err != nil {
				errs = append(errs, fmt.Errorf("task %d: %w", id, err))
			}
		}
	}
	for id := range r.reported {
		if !listed[id] && byTask[id] == nil {
			delete(r.reported, id) // listed no more, its pod gone: forgotten
		}
	}
	return events, errors.Join(errs...)
}

// taskReconciler keeps best-effort tasks' pods as the last poll wants them and
// remembers what it reported of each task, for the tasks the server lists and the
// pods that exist only.
type taskReconciler struct {
	*reconciler
	b        *Backend
	synced   bool           // a poll has said which tasks run
	toRun    map[int64]bool // the tasks to run, as of the last poll
	toStop   map[int64]bool // the tasks to stop, as of the last poll
	reported map[int64]string
	classOK  bool // the PriorityClass exists
}

func newTaskReconciler(b *Backend) *taskReconciler {
	r := &taskReconciler{b: b, toRun: map[int64]bool{}, toStop: map[int64]bool{}, reported: map[int64]string{}}
	r.reconciler = newReconciler("tasks", b.out, r.reconcileTask)
	return r
}

// taskKey is "ns/name" of a task's pod (managed-by and task labels), or "".
func taskKey(obj any) string {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Labels[ManagedBy] != FieldManager || pod.Labels[LabelTask] == "" {
		return ""
	}
	return objectKey(pod)
}

// reconcileTask reconciles one task pod ("ns/name") with the last poll: the pod of a
// task the server said to stop, in a namespace the config maps, is deleted as soon as
// it shows, and an Event (TaskPodRemoved) says why; a task whose pod is gone and that
// the server lists no more is forgotten. A pod of a task the server lists in neither
// list is left to the poll (SyncTasks deletes it, as before): between polls the
// reconciler cannot tell a task the server dropped from one it listed since. A task pod
// that goes while its task should run is reported stopped at the next poll.
func (r *taskReconciler) reconcileTask(ctx context.Context, key string) (bool, error) {
	if !r.synced {
		return false, nil
	}
	ns, name, _ := strings.Cut(key, "/")
	pod, err := r.b.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		if id, ok := taskOfPodName(name); ok && !r.toRun[id] && !r.toStop[id] {
			delete(r.reported, id)
		}
		return false, nil
	}
	if err != nil {
		return false, err
	}
	id, err := strconv.ParseInt(pod.Labels[LabelTask], 10, 64)
	if err != nil || !r.toStop[id] || pod.DeletionTimestamp != nil {
		return false, nil
	}
	mapped, err := r.b.teamOfNamespace()
	if err != nil {
		return false, err
	}
	if _, ok := mapped[ns]; !ok {
		return false, nil // outside the mapping: never touched
	}
	if err := r.b.deletePod(ctx, pod); err != nil {
		return false, err
	}
	r.b.recorder.Eventf(ref("v1", "Pod", ns, name, pod.UID, pod.ResourceVersion), corev1.EventTypeNormal, ReasonTaskPodRemoved,
		"Clearhouse deleted the pod of best-effort task %d: the market stopped the task", id)
	return true, nil
}

// taskOfPodName is the task of a pod named PodName(task).
func taskOfPodName(name string) (int64, bool) {
	id, err := strconv.ParseInt(strings.TrimPrefix(name, "clearhouse-task-"), 10, 64)
	return id, err == nil && strings.HasPrefix(name, "clearhouse-task-")
}

var errCannotRun = errors.New("cannot run here")

// startTask creates the task's pod; AlreadyExists is success.
func (b *Backend) startTask(ctx context.Context, t agent.Task) error {
	pod, err := b.taskPod(t)
	if err != nil {
		return err
	}
	_, err = b.cs.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// taskPod is the pod of a task, or errCannotRun (wrapped, saying why).
func (b *Backend) taskPod(t agent.Task) (*corev1.Pod, error) {
	if t.Workload == nil || t.Workload.Kubernetes == nil {
		return nil, fmt.Errorf("%w: its job has no kubernetes workload", errCannotRun)
	}
	tm, ok := b.m.team(t.Team)
	if !ok {
		return nil, fmt.Errorf("%w: team %s is not in the config", errCannotRun, t.Team)
	}
	nss, err := b.namespacesOf(tm)
	if err != nil {
		return nil, err
	}
	if len(nss) == 0 {
		return nil, fmt.Errorf("%w: none of team %s's namespaces exists", errCannotRun, t.Team)
	}
	req, lim := corev1.ResourceList{}, corev1.ResourceList{}
	for _, name := range slices.Sorted(maps.Keys(t.Configuration)) {
		p, ok := b.m.pool(name)
		if !ok {
			return nil, fmt.Errorf("%w: pool %s is not in the config", errCannotRun, name)
		}
		q := p.quantity(t.Configuration[name])
		req[p.resource] = q
		if p.extended() {
			lim[p.resource] = q
		}
	}
	for _, p := range b.m.pools {
		if _, named := req[p.resource]; !named && !p.extended() {
			// A quota on requests.cpu or requests.memory refuses a pod that does not
			// name the resource: 0 of it is named.
			req[p.resource] = p.quantity(0)
		}
	}
	w := t.Workload.Kubernetes
	var env []corev1.EnvVar
	for _, k := range slices.Sorted(maps.Keys(w.Env)) {
		env = append(env, corev1.EnvVar{Name: k, Value: w.Env[k]})
	}
	never := false
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(t.ID), Namespace: nss[0], Labels: map[string]string{
			ManagedBy: FieldManager, LabelTask: strconv.FormatInt(t.ID, 10), LabelJob: strconv.FormatInt(t.Job, 10), LabelTeam: labelSafe(t.Team)}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			PriorityClassName:             b.m.priorityClass,
			AutomountServiceAccountToken:  &never,
			TerminationGracePeriodSeconds: ptr(int64(30)),
			Containers: []corev1.Container{{Name: "task", Image: w.Image, Command: w.Command, Args: w.Args, Env: env,
				Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}},
		},
	}, nil
}

func ptr[T any](v T) *T { return &v }

func (b *Backend) deletePod(ctx context.Context, pod *corev1.Pod) error {
	if pod.DeletionTimestamp != nil {
		return nil
	}
	err := b.cs.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// ensurePriorityClass creates the best-effort PriorityClass when it is missing: a
// low value that never preempts. An existing one (someone's, or ours) is used as it is.
func (b *Backend) ensurePriorityClass(ctx context.Context) error {
	if b.tasks.classOK {
		return nil
	}
	never := corev1.PreemptNever
	pc := &schedulingv1.PriorityClass{
		ObjectMeta:       metav1.ObjectMeta{Name: b.m.priorityClass, Labels: map[string]string{ManagedBy: FieldManager}},
		Value:            bestEffortPriority,
		PreemptionPolicy: &never,
		Description:      "Clearhouse best-effort tasks: run on idle quota within what the market granted (ResourceQuota clearhouse-best-effort), deleted when owners need it.",
	}
	_, err := b.cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{FieldManager: FieldManager})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("PriorityClass %s: %w", b.m.priorityClass, err)
	}
	b.tasks.classOK = true
	return nil
}

// startedAt is when the pod's container started (its start time, or now).
func startedAt(pod *corev1.Pod, now time.Time) time.Time {
	for _, c := range pod.Status.ContainerStatuses {
		if r := c.State.Running; r != nil && !r.StartedAt.IsZero() {
			return r.StartedAt.Time
		}
	}
	if pod.Status.StartTime != nil {
		return pod.Status.StartTime.Time
	}
	return now
}

// finishedAt is when the pod's last container ended (or now).
func finishedAt(pod *corev1.Pod, now time.Time) time.Time {
	var at time.Time
	for _, c := range pod.Status.ContainerStatuses {
		if t := c.State.Terminated; t != nil && t.FinishedAt.After(at) {
			at = t.FinishedAt.Time
		}
	}
	if at.IsZero() {
		return now
	}
	return at
}
