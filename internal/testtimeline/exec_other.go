//go:build !linux

package main

import "syscall"

// becomeSubreaper does nothing here: only Linux has subreapers, so orphaned
// descendants' CPU is not counted.
func becomeSubreaper() {}

func childAttr() *syscall.SysProcAttr { return nil }
