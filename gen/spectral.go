package gen

import (
	"fmt"
	"strings"

	"convtgen/gen/plan"
)

// The CUDA text of a spectral plan (plan.Spectral): the launches of the
// transforms, the affine ops as statements on (a, b), the finish's
// tensors; templates/cuda_spectral.py.tmpl prints them.

// SpectralView is what the spectral template prints beside View.
type SpectralView struct {
	S *plan.Spectral
	// Transforms are the six transform launches in order (the input's
	// three, then the weight's).
	Transforms []DFTLaunch
	// Affine: statements folding the ops before the norm into z = a*y + b
	// (doubles a, b; channel c); Ops names them for the docstring.
	Affine []string
	Ops    string
	// Gamma and Beta: the norm's weight and bias at channel c ("1.0",
	// "0.0" without them).
	Gamma, Beta string
	// Params: the finish's float extras as kernel parameters, Args the
	// host's arguments for them (each with a leading comma).
	Params, Args       string
	Mean, Var, Batches int // extras of the running statistics
	Momentum, Eps      string
	SumBlocks          int
	PartLen, MeansLen  int
	Positions          int // the output's positions a channel of a sample
	BatchPositions     int // the count the running variance's correction uses
	FLOPs, Workspace   string
	ConvFLOPs          string // the convolution's GFLOP, for comparison
	// The plan's blocks: energy (frequencies, warps), sums and transforms.
	FreqTile, Warps, WarpChans, SumThreads, DFTThreads, FreqRun int
}

// DFTLaunch is one transform launch: Real reads floats along the last
// axis (rows x len, bins kept), else complex (outer x len x inner, m
// bins); From and To are the host's buffers.
type DFTLaunch struct {
	Real               bool
	What               string
	From, To           string
	Blocks             int
	Rows, Outer, Inner int
	Len, Step, M, Bins int
}

func newSpectralView(p *plan.Plan) *SpectralView {
	s, c := p.Spectral, p.Conv
	sv := &SpectralView{S: s, SumBlocks: c.Batch * c.InChannels,
		PartLen: s.EnergyTiles * c.Batch * c.OutChannels, MeansLen: c.Batch * c.OutChannels,
		Positions: p.Out[0] * p.Out[1] * p.Out[2],
		Mean:      s.Update.Mean, Var: s.Update.Var, Batches: s.Update.Batches,
		Momentum: cDouble(s.Update.Momentum), Eps: cDouble(s.Norm.Eps),
		FLOPs: fmt.Sprintf("%.1f", p.SpectralFLOPs()/1e9), Workspace: fmt.Sprintf("%.0f", float64(s.WorkspaceBytes())/1e6)}
	sv.BatchPositions = c.Batch * sv.Positions
	sv.ConvFLOPs = fmt.Sprintf("%.1f", c.FLOPs()/1e9)
	sv.FreqTile, sv.Warps, sv.SumThreads, sv.DFTThreads = plan.EnergyFreqs, plan.EnergyWarps, plan.SumThreads, plan.DFTThreads
	sv.FreqRun, sv.WarpChans = plan.FreqRun, plan.EnergyWarpChans
	b, m := s.Bins, s.M
	in, k := c.In, c.Kernel
	nci, wci := c.Batch*c.InChannels, c.InChannels*c.OutPerGroup()
	blocks := func(n int) int { return min(plan.DFTMaxBlocks, (n+plan.DFTThreads-1)/plan.DFTThreads) }
	runs := func(m int) int { return (m + plan.FreqRun - 1) / plan.FreqRun }
	for _, t := range []struct {
		what      string
		n         int
		ext, st   [3]int
		src, a, m string
	}{{"input", nci, in, c.Stride, "x.data_ptr()", "xf", "xm"}, {"weight", wci, k, c.Dilation, "weight.data_ptr()", "wf", "wm"}} {
		rows := t.n * t.ext[0] * t.ext[1]
		sv.Transforms = append(sv.Transforms,
			DFTLaunch{Real: true, What: t.what + " along W", From: t.src, To: t.a, Blocks: blocks(rows * b[2]), Rows: rows, Len: t.ext[2], Step: t.st[2], M: m[2], Bins: b[2]},
			DFTLaunch{What: t.what + " along H", From: t.a, To: t.m, Blocks: blocks(t.n * t.ext[0] * runs(m[1]) * b[2]), Outer: t.n * t.ext[0], Inner: b[2], Len: t.ext[1], Step: t.st[1], M: m[1]},
			DFTLaunch{What: t.what + " along D", From: t.m, To: t.a, Blocks: blocks(t.n * runs(m[0]) * m[1] * b[2]), Outer: t.n, Inner: m[1] * b[2], Len: t.ext[0], Step: t.st[0], M: m[0]})
	}
	// The finish reads each float extra it names once, as a parameter.
	seen := map[int]bool{}
	read := func(arg int) {
		if !seen[arg] {
			seen[arg] = true
			sv.Params += ", " + extraParam(arg)
			sv.Args += ", " + extraArg(arg)
		}
	}
	value := func(op plan.PointOp) string {
		if op.Arg < 0 {
			return cDouble(op.Num)
		}
		read(op.Arg)
		if op.PerChannel {
			return fmt.Sprintf("(double)e%d[c]", op.Arg)
		}
		return fmt.Sprintf("(double)e%d[0]", op.Arg)
	}
	var ops []string
	for _, op := range s.Affine {
		x := value(op)
		switch op.Kind {
		case "mul":
			sv.Affine = append(sv.Affine, fmt.Sprintf("a *= %s; b *= %s;", x, x))
		case "div":
			sv.Affine = append(sv.Affine, fmt.Sprintf("a /= %s; b /= %s;", x, x))
		case "add":
			sv.Affine = append(sv.Affine, fmt.Sprintf("b += %s;", x))
		case "sub":
			sv.Affine = append(sv.Affine, fmt.Sprintf("b -= %s;", x))
		}
		ops = append(ops, op.Kind)
	}
	sv.Ops = strings.Join(ops, ", ")
	sv.Gamma, sv.Beta = "1.0", "0.0"
	for _, t := range []struct {
		arg int
		to  *string
	}{{s.Norm.Weight, &sv.Gamma}, {s.Norm.Bias, &sv.Beta}} {
		if t.arg >= 0 {
			read(t.arg)
			*t.to = fmt.Sprintf("(double)e%d[c]", t.arg)
		}
	}
	return sv
}
