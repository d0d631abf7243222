package main

import "syscall"

// becomeSubreaper makes this process the reaper of its orphaned descendants
// (prctl PR_SET_CHILD_SUBREAPER), so that their CPU is counted in its
// RUSAGE_CHILDREN once it has waited for them. Best effort.
func becomeSubreaper() {
	const prSetChildSubreaper = 36
	_, _, _ = syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0)
}

// childAttr kills the test binary if the wrapper dies (go test kills the wrapper
// when a binary outlives its timeout).
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
