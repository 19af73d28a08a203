//go:build unix

package safeio

import "syscall"

// Flags that keep an open from following a symbolic link at the last
// component or waiting on a FIFO's writer.
const (
	oNoFollow = syscall.O_NOFOLLOW
	oNonBlock = syscall.O_NONBLOCK
)
