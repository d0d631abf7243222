package kubernetes

// PauseQueues holds the queue reconciler (its worker and the polls) until resume is
// called, so a test's edit in two steps (delete and create, as `kubectl replace
// --force` does) lands before the backend, which corrects within milliseconds, sees
// the first step alone.
func (b *Backend) PauseQueues() (resume func()) {
	b.queues.mu.Lock()
	return b.queues.mu.Unlock
}

// Tracked is how many tasks and reservations' jobs the backend keeps state of.
func (b *Backend) Tracked() (tasks, jobs int) {
	b.tasks.mu.Lock()
	tasks = len(b.tasks.reported)
	b.tasks.mu.Unlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	return tasks, len(b.jobs)
}
