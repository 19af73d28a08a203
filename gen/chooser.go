package gen

import (
	"convtgen/gen/choose"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// Chooser is the kernel chooser as the generator runs it: open choices of
// every spec are filled before it is planned (planTargets).
var Chooser = choose.Options{Triton: tritonLayout}

// tritonLayout is a Triton choice's resolved form and what its kernels
// do, from the view the template prints: the GEMM's programs, the
// products their tiles compute (a program's BlockM rows by BlockN columns
// over its steps, for every phase with rows; programs past a phase's rows
// compute nothing), and what the re-layout writes.
func tritonLayout(p *plan.Plan) (spec.Triton, choose.TritonShape) {
	v := newTritonLayout(p)
	c := p.Conv
	s := choose.TritonShape{Precision: p.Spec.Kernel.PrecisionFor("triton"), BlockN: v.BlockN, Programs: v.Programs, Warps: v.NumWarps}
	work := 0.0
	seen := map[[2]int]bool{}
	for _, tp := range v.Phases {
		if tp.M == 0 || tp.Taps == 0 {
			continue
		}
		rows, taps := tp.M, tp.Taps
		if v.FuseW {
			// One program row covers WStep outputs along W of every W
			// residue; its steps walk the W offsets.
			key := [2]int{tp.R[0], tp.R[1]}
			if seen[key] {
				continue
			}
			seen[key] = true
			rows = c.Batch * tp.Q[0] * tp.Q[1] * divUp(p.Out[2], v.WStep)
			taps = tp.Count[0] * tp.Count[1] * v.WShifts
		}
		steps := taps * v.CIChunks
		if v.FlatK {
			steps = divUp(taps*p.CinG, v.BlockK)
		}
		s.Steps = max(s.Steps, steps)
		work += float64(divUp(rows, v.BlockM)*v.BlockM) * float64(steps*v.BlockK)
	}
	s.K = s.Steps * v.BlockK
	s.Work = 2 * work * float64(v.BlockN*v.NTiles*c.Groups)
	weight := float64(c.WeightLen()) * 4
	if v.SplitWeight {
		weight *= 2
	}
	s.CopyBytes, s.SourceBytes = weight, 4*float64(c.WeightLen())
	if v.CopyInput {
		s.CopyBytes += 4 * float64(c.Batch*c.InChannels*v.XShape[0]*v.XShape[1]*v.XShape[2])
		s.SourceBytes += 4 * float64(c.InputLen())
	}
	return resolvedFrom(p, v), s
}
