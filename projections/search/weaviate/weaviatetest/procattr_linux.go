package weaviatetest

import "syscall"

// sysProcAttr kills the server when the test process dies, so a crashed
// test run leaves no server behind.
func sysProcAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} }
