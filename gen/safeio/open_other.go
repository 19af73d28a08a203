//go:build !unix

package safeio

// Elsewhere the Lstat checks before each open stand alone.
const (
	oNoFollow = 0
	oNonBlock = 0
)
