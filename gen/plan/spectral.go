package plan

import (
	"fmt"
	"slices"

	"convtgen/gen/spec"
)

// The spectral plan (spec.Spectral) of a forward that reads the
// convolution's output y only through a training-mode BatchNorm followed
// by a mean over the spatial axes: out[n,c] = gamma_c * a_c * (m_nc -
// mu_c) / sqrt(a_c^2 * var_c + eps) + beta_c, where z = a_c*y + b_c are
// the affine ops before the norm, m_nc is sample n's spatial mean of y,
// mu_c and var_c the batch's mean and biased variance of channel c.
//
// Without padding a transposed convolution crops nothing: every product
// of an input and a tap lands in the output, so the sums of y follow from
// the input's per-(sample, channel) sums and the weight's per-(in, out)
// sums (in double, since the output is a small difference of means). And
// y is then the full linear convolution of the stride-stuffed input with
// the dilated kernel, which fits the output's extent: on that grid it
// equals the circular convolution, whose discrete Fourier transform is a
// product per frequency, Y(f) = sum over ci of X(f, ci) W(f, ci, co).
// Parseval gives each (n, c)'s sum of (y - m_nc)^2 as the energy of
// Y(f) over f != 0, divided by the output's size. The transforms run
// along one axis at a time (W first, as a real transform keeping
// M_w/2+1 bins), the GEMM per frequency on FFMA in fp32.

// Spectral is the layout of a spectral plan.
type Spectral struct {
	// M is the transform's size per axis (the output's extent); Bins the
	// frequencies kept per axis (M along D and H, M/2+1 along W: the
	// others are the conjugates of these); Freqs their product.
	M, Bins [3]int
	Freqs   int
	// Affine are the ops before the norm, each z -> z op value; Norm the
	// BatchNorm (its epsilon and extras) and Update its running
	// statistics' update (Slot unused: the spectral finish computes them).
	Affine []PointOp
	Norm   PointOp
	Update BNUpdate
	// Energy kernel: a block is EnergyFreqs consecutive frequencies (a
	// lane each) by EnergyWarps x EnergyWarpChans output channels of one
	// group; a thread holds the products of Samples samples at once and
	// stages ChanChunk input channels' transforms a step. EnergyTiles is
	// the blocks along the frequencies.
	EnergyTiles, Samples, ChanChunk int
	// Workspace lengths in complex values: the input's transform (and
	// its first step, W alone), its middle step (W and H), the weight's
	// transform and middle step.
	XLen, XMid, WLen, WMid int
	// Twiddles: the largest M (the DFT kernels' table of e^{-2 pi i r/M}).
	Twiddles int
}

// Energy kernel's block, see Spectral.
const (
	EnergyFreqs = 32
	EnergyWarps = 8
	// EnergyWarpChans: output channels a warp of the energy kernel
	// computes, each staged input value serving all of them (shared
	// memory reads, not FFMA, bound it with one).
	EnergyWarpChans = 2
	EnergySamples   = 16
	EnergyChans     = 8
	// DFTThreads is the block of the transform kernels, SumThreads of the
	// input's sums and of the finish (a block a channel).
	DFTThreads = 256
	// FreqRun is the frequencies a thread of a middle-axis transform
	// computes from the inputs it loads once.
	FreqRun = 8
	// DFTMaxBlocks caps a transform's grid (its threads stride over the
	// outputs), so that each block's table serves many of them.
	DFTMaxBlocks = 2048
	SumThreads   = 256
	// MaxSpectralAxis bounds M per axis (the twiddle table in shared
	// memory); MaxSpectralBytes the workspace.
	MaxSpectralAxis  = 4096
	MaxSpectralBytes = 4 << 30
	// MaxSpectralChannels bounds the input channels a group (the finish
	// keeps the weight's sums of a channel in shared memory).
	MaxSpectralChannels = 4096
)

// planSpectral plans a spectral tile: the forward after the convolution
// must be the form above, the padding zero.
func (p *Plan) planSpectral(f spec.Spectral) (*Plan, error) {
	p.Tile = Tile{Spectral: &f}
	c := p.Conv
	p.Names = names(p.Spec.Name, p.Target)
	p.Names.Kernel = p.Spec.Name + "_spectral"
	var refusals spec.Errors
	refuse := func(format string, args ...any) (*Plan, error) {
		refusals = append(refusals, p.Spec.Errorf(p.Spec.Kernel.CUDAField("spectral"), "", format, args...))
		return nil, refusals
	}
	ch, ops, _, err := planChain(p.Spec, p.Out, p.Names.Kernel, nil)
	if err != nil {
		return nil, spec.Errors{p.Spec.Errorf("reference.forward", "", "%v", err)}
	}
	if c.Padding != [3]int{} {
		// Said with the forward's reason below, if it has one too.
		refusals = append(refusals, p.Spec.Errorf(p.Spec.Kernel.CUDAField("spectral"), "",
			"needs padding 0, so that the convolution crops nothing and its output is the whole linear convolution (got padding %v)", c.Padding))
	}
	// The Triton file computes the forward as written (the convolution,
	// then the chain), where its backend can: Unfolded plans it.
	if why := ch.TritonRefusal(ops); why != "" && !p.leaveOutTriton(why) {
		return refuse("is a CUDA plan, and the Triton backend cannot express this forward yet: %s (name cuda alone, or leave the backends out)", why)
	}
	if slices.Contains(p.Spec.Kernel.Backends, "triton") {
		us := *p.Spec
		us.Kernel.Backends, us.Kernel.CUDA = []string{"triton"}, spec.CUDA{}
		var err error
		if p.Unfolded, err = New(&us, p.Target); err != nil {
			return nil, err
		}
	}
	s, why := spectralForm(ch, ops)
	if why != "" {
		return refuse("needs a forward of affine ops, a training-mode BatchNorm and a mean over the spatial axes, the output of shape (batch, channels, 1, 1, 1): %s", why)
	}
	if refusals != nil {
		return nil, refusals
	}
	if c.InPerGroup() > MaxSpectralChannels {
		return refuse("keeps a group's %d input channels' weight sums in shared memory: at most %d", c.InPerGroup(), MaxSpectralChannels)
	}
	for a := range 3 {
		s.M[a], s.Bins[a] = p.Out[a], p.Out[a]
		if p.Out[a] > MaxSpectralAxis {
			return refuse("transforms along each axis with a table of the output's extent in shared memory: at most %d (got %d along %s)", MaxSpectralAxis, p.Out[a], "DHW"[a:a+1])
		}
	}
	s.Bins[2] = s.M[2]/2 + 1
	s.Freqs = s.Bins[0] * s.Bins[1] * s.Bins[2]
	s.Twiddles = slices.Max(s.M[:])
	nci, wci := c.Batch*c.InChannels, c.InChannels*c.OutPerGroup()
	s.XLen, s.XMid = nci*s.Freqs, nci*c.In[0]*s.Bins[1]*s.Bins[2]
	s.WLen, s.WMid = wci*s.Freqs, wci*c.Kernel[0]*s.Bins[1]*s.Bins[2]
	if b := s.WorkspaceBytes(); b > MaxSpectralBytes {
		return refuse("would need %d bytes of transforms (input and weight): at most %d", b, MaxSpectralBytes)
	}
	s.EnergyTiles = ceilDiv(s.Freqs, EnergyFreqs)
	s.Samples, s.ChanChunk = min(c.Batch, EnergySamples), EnergyChans
	p.Spectral = s
	p.SmemBytes = s.Samples * s.ChanChunk * EnergyFreqs * 8
	p.Epilogue.Chain = ch
	p.Blocks = [3]int{s.EnergyTiles, ceilDiv(c.OutPerGroup(), EnergyWarps*EnergyWarpChans), c.Groups}
	p.Grid, p.Threads = p.Blocks, EnergyFreqs*EnergyWarps
	if p.Grid[1] > MaxGridYZ || p.Grid[2] > MaxGridYZ {
		return refuse("would launch %d x %d blocks along y and z: at most %d", p.Grid[1], p.Grid[2], MaxGridYZ)
	}
	p.Index = indexType(c.InputLen(), c.WeightLen(), 2*s.XLen, 2*s.WLen, s.EnergyTiles*c.Batch*c.OutChannels)
	return p, nil
}

// WorkspaceBytes are the forward's transform buffers (complex floats).
func (s *Spectral) WorkspaceBytes() int { return 8 * (s.XLen + s.XMid + s.WLen + s.WMid) }

// spectralForm reads the chain (and the ops fused into the store) as
// the spectral form, or says why it is not.
func spectralForm(ch *Chain, fused []PointOp) (*Spectral, string) {
	s := &Spectral{}
	passes := ch.Passes
	ops := fused
	if len(ops) == 0 && len(passes) > 0 && passes[0].Kind == "pointwise" {
		ops, passes = passes[0].Ops, passes[1:]
	}
	for _, op := range ops {
		switch {
		case !slices.Contains([]string{"add", "sub", "mul", "div"}, op.Kind):
			return nil, fmt.Sprintf("%s before the norm is not affine", op.Kind)
		case op.Conv || op.Elementwise:
			return nil, fmt.Sprintf("%s reads a tensor of the output's shape", op.Kind)
		}
	}
	s.Affine = ops
	if len(ch.Prologue) > 0 {
		return nil, "the forward has ops before the convolution"
	}
	kinds := make([]string, len(passes))
	for i, ps := range passes {
		kinds[i] = ps.Kind
	}
	if !slices.Equal(kinds, []string{"stats", "normalise", "reduce"}) || len(ch.Updates) != 1 {
		return nil, fmt.Sprintf("its steps are %v", kinds)
	}
	st, nm, rd := passes[0], passes[1], passes[2]
	x := st.In
	if g := st.Seg; st.Stat != "moments" || g.Count != x[1] || g.Runs != x[0] || g.Inner != x[1] {
		return nil, "the statistics are not a BatchNorm's (per channel over the batch)"
	}
	if len(nm.Ops) > 0 || len(rd.Ops) > 0 {
		return nil, "ops follow the norm"
	}
	if rd.Reduce != "mean" || rd.Axes != [5]bool{2: true, 3: true, 4: true} {
		return nil, "the norm's output is not averaged over the spatial axes"
	}
	s.Norm, s.Update = nm.Norm, ch.Updates[0]
	return s, ""
}

// SpectralFLOPs are a spectral forward's floating-point operations: the
// transforms (a complex product is 8, a real-by-complex 4) and the GEMM
// per frequency.
func (p *Plan) SpectralFLOPs() float64 {
	s, c := p.Spectral, p.Conv
	b := s.Bins
	n, ci, co := float64(c.Batch), float64(c.InChannels), float64(c.OutPerGroup())
	in, k := c.In, c.Kernel
	x := n * ci * (float64(in[0]*in[1]*b[2]*in[2])*4 + float64(in[0]*b[1]*b[2]*in[1])*8 + float64(b[0]*b[1]*b[2]*in[0])*8)
	w := ci * co * (float64(k[0]*k[1]*b[2]*k[2])*4 + float64(k[0]*b[1]*b[2]*k[1])*8 + float64(b[0]*b[1]*b[2]*k[0])*8)
	gemm := 8 * n * ci * co * float64(s.Freqs)
	return x + w + gemm
}
