package spec

import (
	"fmt"
	"strconv"

	"convtgen/gen/geom"
)

// Limits of every numeric problem field (specs/README.md has the table).
// They are far above any real problem and small enough that the planner's
// loops and tables stay bounded (it plans any accepted spec in well under
// 100 ms) and that every size formula fits int with room to spare; the
// tensor sizes are then bounded by the target GPU's memory.
const (
	// MaxCount bounds batch, in_channels, out_channels and groups.
	MaxCount = 1 << 24
	// MaxExtent bounds each input and output extent, padding and
	// dilation: dilation*(kernel-1) then stays below 2^29, and the
	// kernels hold every extent in a 32-bit int.
	MaxExtent = 1 << 24
	// MaxKernel bounds each kernel extent: a phase enumerates its taps,
	// at most MaxKernel^3.
	MaxKernel = 32
	// MaxStride bounds each stride: the planner enumerates up to
	// MaxStride^3 stride phases, and the Triton kernel spreads its
	// programs over all of them.
	MaxStride = 16
)

// TargetMemoryBytes is the device memory of the smallest GPU the
// submissions target, the A100 80GB (80 GiB): no tensor of a forward (the
// input, the weight, the output) may need more, nor all three together.
const TargetMemoryBytes = 80 << 30

// bytesPerElement is an fp32 element's size, the only element type.
const bytesPerElement = 4

// limited checks one scalar count against [1, hi].
func (d *decoder) limited(field string, v, hi int) bool {
	switch {
	case d.isBad(field):
	case v <= 0:
		d.failAt(field, strconv.Itoa(v), "must be positive")
	case v > hi:
		d.failAt(field, strconv.Itoa(v), "must be at most %d", hi)
	default:
		return true
	}
	return false
}

// limited3 checks a per-dimension field against [lo, hi] in every
// dimension, reporting the first one out of range.
func (d *decoder) limited3(field string, v [3]int, lo, hi int) bool {
	if d.isBad(field) {
		return false
	}
	for i, x := range v {
		switch {
		case x < lo && lo == 0:
			d.failAt(field, triple(v), "%s must be zero or more", dimName[i])
		case x < lo:
			d.failAt(field, triple(v), "%s must be positive", dimName[i])
		case x > hi:
			d.failAt(field, triple(v), "%s must be at most %d", dimName[i], hi)
		default:
			continue
		}
		return false
	}
	return true
}

// gib renders a byte count in GiB for diagnostics.
func gib(b int) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// checkMemory refuses a problem whose tensors do not fit the target GPU:
// each alone, and the three together (a forward holds them all). Every
// size is computed overflow-checked; the fields are within their limits.
func (d *decoder) checkMemory(c geom.Conv) {
	in, w, out, ok := c.LensChecked()
	if !ok {
		d.failAt("problem", "", "tensor sizes overflow a 64-bit integer")
		return
	}
	tensors := []struct {
		what string
		n    int
	}{{"the input (batch x in_channels x input)", in}, {"the weight (in_channels x out_channels/groups x kernel)", w},
		{"the output (batch x out_channels x output)", out}}
	total := 0
	for _, t := range tensors {
		b, ok := geom.Mul(t.n, bytesPerElement)
		if !ok || b > TargetMemoryBytes {
			d.failAt("problem", strconv.Itoa(t.n)+" elements", "%s needs more memory than the A100's %s", t.what, gib(TargetMemoryBytes))
			return
		}
		total += b
	}
	if total > TargetMemoryBytes {
		d.failAt("problem", gib(total), "the input, weight and output together need more memory than the A100's %s", gib(TargetMemoryBytes))
	}
}
