package gen

import (
	"fmt"
	"hash/fnv"
	"math/rand"
	"os"
	"path/filepath"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/safeio"
	"convtgen/gen/spec"
)

// RandomBackends are the backends a random configuration is rendered for.
var RandomBackends = []string{"cuda", "triton"}

// RandomSpec writes the YAML of one random valid small configuration:
// stride, dilation and kernel sizes of 1 to 3 (kernel up to 5) per
// dimension, widened by wideSpace (strides to 5, shared factors of stride
// and dilation, kernel 1, depthwise), odd and prime extents, groups, bias,
// output_padding, either
// precision, and half of the time an explicit random tile and Triton
// choices, so the sweep exercises the kernels' loaders and fragment
// mappings as well as their geometry; half of the configurations have
// input channels per group in whole 16- or 32-wide chunks, and half of the
// fp32 ones use the direct kernel (half of those with W unsplit, tile.tw),
// a quarter of the 3xtf32 ones the wgmma tile (half of those with
// kw_in_n; half with explicit stages, parked sums or long spans; half
// with two warpgroups a block; a third with Winograd's F(2, r) along W);
// a sixth have one input position along their leading axes; a quarter of
// the FFMA and mma.sync tiles split their reduction among blocks.
// The choices drawn from sources of their own are seeded by key (the name,
// or the name and the attempt when a draw of that name was refused).
// The caller validates it.
func RandomSpec(r *rand.Rand, name, key string) string {
	pick := func(xs ...int) int { return xs[r.Intn(len(xs))] }
	var c geom.Conv
	for i := range 3 {
		c.Kernel[i] = 1 + r.Intn(5)
		c.In[i] = pick(1, 2, 3, 5, 7, 8, 11, 13)
		c.Stride[i] = 1 + r.Intn(3)
		c.Dilation[i] = 1 + r.Intn(3)
		c.OutputPadding[i] = r.Intn(max(c.Stride[i], c.Dilation[i]))
		// output = (in-1)*stride + span + 1 - 2*padding must stay positive
		span := c.Dilation[i]*(c.Kernel[i]-1) + c.OutputPadding[i]
		c.Padding[i] = r.Intn((c.In[i]-1)*c.Stride[i]+span+1) / 2
		if r.Intn(3) == 0 {
			c.Padding[i] = 0
		}
	}
	if nameRand(key, "one_position").Intn(6) == 0 {
		// One input position along the leading axes (a GAN's first
		// layer): a tap fold where nothing crops the output, else the
		// raised strides (plan.TapFold, plan.Restrided).
		for a := range 1 + nameRand(key, "one_position_axes").Intn(3) {
			c.In[a], c.Padding[a], c.OutputPadding[a] = 1, 0, 0
		}
	}
	c.Groups = pick(1, 1, 2, 3, 4)
	c.InChannels = c.Groups * (1 + r.Intn(pick(3, 9, 17)))
	if nameCoin(key, "whole_chunks") {
		// Channels per group in whole 16- or 32-wide chunks, the case
		// where the Triton kernel's padded input is read unmasked.
		c.InChannels = c.Groups * 16 * (1 + nameRand(key, "chunks").Intn(2))
	}
	c.OutChannels = c.Groups * (1 + r.Intn(pick(3, 9, 17)))
	wideSpace(&c, key)
	c.Bias = r.Intn(2) == 0
	// One precision for both backends (the Triton draw may set its own);
	// the draws are made in the order they always were, so that a seed
	// keeps its configurations.
	precision := []string{"fp32", "3xtf32"}[r.Intn(2)]
	var ffma spec.FFMA
	var mma spec.MMA
	switch {
	case r.Intn(2) == 0:
	case precision == "fp32":
		ffma = spec.FFMA{BM: pick(64, 128, 256, 512), BN: pick(8, 16, 32, 64), BK: pick(1, 3, 4, 8, 16), TM: pick(4, 8), TN: pick(4, 8)}
	default:
		mma = spec.MMA{BM: pick(64, 128, 256), BN: pick(8, 16, 32, 64), BK: pick(8, 16, 24), WM: pick(16, 32, 64), WN: pick(8, 16, 32), Presplit: r.Intn(2) == 0}
	}
	c.Batch = 1 + r.Intn(3)
	dist := []string{"rand", "randn"}[r.Intn(2)]
	k := spec.Kernel{Backends: RandomBackends, Triton: randomTriton(key)}
	if k.Triton.Precision == "" {
		k.Triton.Precision = precision
	}
	k.Triton.SplitWeight = k.PrecisionFor("triton") == "3xtf32" && nameCoin(key, "split_weight")
	cpAsync := nameCoin(key, "cp_async")
	ffma.CpAsync, mma.CpAsync = cpAsync, !mma.Presplit && cpAsync
	if sk := nameRand(key, "split_k"); sk.Intn(4) == 0 {
		// A quarter share each phase's reduction among 2 to 4 blocks (a
		// split past the longest phase's steps is refused and redrawn).
		ffma.SplitK = 2 + sk.Intn(3)
		mma.SplitK = ffma.SplitK
	}
	k.CUDA.Family = ffma
	if precision == "3xtf32" {
		k.CUDA.Family = mma
	}
	if w := nameRand(key, "wgmma"); precision == "3xtf32" && w.Intn(4) == 0 {
		// A quarter of the 3xtf32 draws: the wgmma tile, with its
		// defaults or random slabs and span.
		var t spec.WGMMA
		if w.Intn(2) == 0 {
			t.Slabs, t.Span = 1+w.Intn(2), 1+w.Intn(8)
		}
		// Half of those with the kernel's W taps as columns.
		t.KWInN = nameCoin(key, "kw_in_n")
		// Half with the input staged by cp.async.
		t.CpAsync = nameCoin(key, "wgmma_cp_async")
		// Half with two warpgroups a block (four leave the sm_80 code too
		// few registers for most tiles: a draw of the same name would be
		// refused again and again).
		if nameCoin(key, "warpgroups") {
			t.Warpgroups = 2
		}
		// Half with the weight stages filled by bulk copies on sm_90a.
		t.BulkWeights = nameCoin(key, "bulk_weights")
		// A third with Winograd's F(2, r) along W: W redrawn as a
		// kernel_w it has a form for at stride_w = dilation_w, one slab
		// (two, below, only with parked sums), no W taps as columns and
		// no staged input.
		if wr := nameRand(key, "winograd"); wr.Intn(3) == 0 {
			taps := plan.WinogradTaps()
			c.Kernel[2], c.Dilation[2] = taps[wr.Intn(len(taps))], c.Stride[2]
			c.OutputPadding[2] = wr.Intn(c.Stride[2])
			c.Padding[2] = wr.Intn((c.In[2]-1)*c.Stride[2]+(c.Kernel[2]-1)*c.Dilation[2]+c.OutputPadding[2]+1) / 2
			t.Winograd, t.Slabs, t.KWInN, t.CpAsync = true, 1, false, false
		}
		// Half with 2 to 4 stages, half of those with the running sums
		// parked in shared memory, and a third of those with sums of 9
		// to 16 steps (one a phase where the phases are that short).
		if d := nameRand(key, "wgmma_depth"); d.Intn(2) == 0 {
			t.Stages, t.ParkSums = 2+d.Intn(3), d.Intn(2) == 0
			if d.Intn(3) == 0 {
				t.Span = 9 + d.Intn(8)
			}
		}
		// Half of the Winograd tiles with two slabs: their running sums
		// fit only parked, in one warpgroup at one block an SM.
		if t.Winograd && nameCoin(key, "winograd_slabs") {
			t.Slabs, t.ParkSums, t.Warpgroups, t.MinBlocks = 2, true, 0, 1
		}
		// A third with the phases shared among up to 8 blocks as given
		// (the rest as the plan shares them; a split past the phases with
		// taps is refused and redrawn).
		if ps := nameRand(key, "phase_split"); ps.Intn(3) == 0 {
			t.PhaseSplit = 1 + ps.Intn(min(8, c.Stride[0]*c.Stride[1]*c.Stride[2]))
		}
		// Sums as long as the form's error allows.
		if most, ok := plan.WinogradMaxSpan[c.Kernel[2]]; t.Winograd && ok {
			t.Span = min(t.Span, most)
		}
		k.CUDA.Family = t
	}
	if precision == "fp32" && nameCoin(key, "direct") {
		// The direct kernel, with its defaults or with a random tile.
		d := nameRand(key, "direct_tile")
		var t spec.Direct
		if d.Intn(2) == 0 {
			t = spec.Direct{BM: []int{64, 128, 256, 512}[d.Intn(4)], BN: []int{1, 2, 4, 8, 16}[d.Intn(5)],
				BK: 1 + d.Intn(8), TM: []int{1, 2, 4}[d.Intn(3)]}
		}
		if nameCoin(key, "window") {
			// Half of them with W unsplit: tw a multiple of stride_w, at
			// most 16 and 64 sums per thread.
			w := nameRand(key, "window_tile")
			t.TM, t.BN = 0, []int{1, 2, 4, 8}[w.Intn(4)]
			t.TW = c.Stride[2] * (1 + w.Intn(min(16, 64/t.BN)/c.Stride[2]))
		}
		k.CUDA.Family = t
	}
	return spec.Generic(name, "random configuration", c, dist, k)
}

// wideSpace redraws parts of a configuration from sources of its own (so
// that a seed's other draws stay as they were), towards the corners of the
// valid space the first draw reaches rarely: a fifth of the configurations
// get a stride of 4 or 5 on one axis, a sixth a stride that shares a factor
// with the dilation on one axis (residues no tap reaches), a tenth a kernel
// of 1 everywhere, and an eighth are depthwise (groups = in = out channels).
func wideSpace(c *geom.Conv, name string) {
	// axis redraws output_padding and padding of axis i for its kernel,
	// stride and dilation, as the first draw does.
	axis := func(r *rand.Rand, i int) {
		c.OutputPadding[i] = r.Intn(max(c.Stride[i], c.Dilation[i]))
		span := c.Dilation[i]*(c.Kernel[i]-1) + c.OutputPadding[i]
		c.Padding[i] = r.Intn((c.In[i]-1)*c.Stride[i]+span+1) / 2
	}
	if r := nameRand(name, "stride_wide"); r.Intn(5) == 0 {
		i := r.Intn(3)
		c.Stride[i] = 4 + r.Intn(2)
		axis(r, i)
	}
	if r := nameRand(name, "shared_factor"); r.Intn(6) == 0 {
		i, f := r.Intn(3), 2+r.Intn(2)
		c.Stride[i], c.Dilation[i] = f*(1+r.Intn(2)), f
		axis(r, i)
	}
	if r := nameRand(name, "kernel_one"); r.Intn(10) == 0 {
		for i := range 3 {
			c.Kernel[i] = 1
			axis(r, i)
		}
	}
	if r := nameRand(name, "depthwise"); r.Intn(8) == 0 {
		c.Groups = 1 + r.Intn(12)
		c.InChannels, c.OutChannels = c.Groups, c.Groups
	}
}

// randomTriton draws, half of the time, explicit Triton choices (either
// precision, block sizes, warps, stages, layout), and W fusion, the
// padded input and the flat reduction each half of the time; half the
// fused draws fold 2 or 3 outputs per W residue. Choices
// added after the first sweeps draw from sources of their own, seeded by
// the name, so that adding one leaves a seed's other draws as they were.
func randomTriton(name string) spec.Triton {
	r := nameRand(name, "triton")
	pick := func(xs ...int) int { return xs[r.Intn(len(xs))] }
	var t spec.Triton
	if r.Intn(2) != 0 {
		t = spec.Triton{Precision: []string{"fp32", "3xtf32"}[r.Intn(2)], BlockM: pick(16, 32, 64, 128), BlockN: pick(16, 32, 64),
			BlockK: pick(16, 32), Warps: pick(2, 4, 8), Stages: pick(1, 2, 3), ChannelsLast: r.Intn(2) == 0}
	}
	t.FuseW, t.PadInput = nameCoin(name, "fuse_w"), nameCoin(name, "pad_input")
	t.FlatK = nameCoin(name, "flat_k")
	if t.FuseW && nameCoin(name, "fold_w") {
		t.FoldW = 2 + nameRand(name, "fold_w_by").Intn(2) // 2 or 3: whole and padded column groups
	}
	return t
}

// Random returns n random configurations that pass validation and
// planning, as planned specs, drawing again when a draw is invalid (an
// infeasible tile, say).
func Random(n int, seed int64) ([]Loaded, error) {
	r := rand.New(rand.NewSource(seed))
	var out []Loaded
	attempt := 0 // refused draws of the current name
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("random: only %d of %d draws were valid", len(out), n)
		}
		name := fmt.Sprintf("rand_%d_%03d", seed, len(out))
		key := name
		if attempt > 0 {
			key = fmt.Sprintf("%s~%d", name, attempt)
		}
		attempt++
		path := "random/" + name + ".yaml"
		// One target a draw, by a coin of its own: a sweep covers both
		// targets at the cost of one.
		target := plan.Targets[0]
		if nameCoin(key, "target") {
			target = plan.Targets[1]
		}
		s, err := spec.Parse(path, []byte(RandomSpec(r, name, key)))
		if err != nil {
			continue
		}
		if p, err := plan.New(s, target); err == nil {
			attempt = 0
			out = append(out, Loaded{Path: path, Plans: []*plan.Plan{p}})
		}
	}
	return out, nil
}

// WriteRandom renders n random configurations into dir (one folder each,
// with the spec beside the files) and returns how many it wrote.
func WriteRandom(dir string, n int, seed int64) (int, error) {
	specs, err := Random(n, seed)
	if err != nil {
		return 0, err
	}
	r, err := NewRenderer()
	if err != nil {
		return 0, err
	}
	for _, l := range specs {
		files, err := r.Render(l.Plans, l.Path)
		if err != nil {
			return 0, err
		}
		for _, f := range files {
			if err := safeio.WriteWhole(filepath.Join(dir, f.Path), f.Data); err != nil {
				return 0, err
			}
		}
	}
	return len(specs), os.WriteFile(filepath.Join(dir, "SEED"), []byte(fmt.Sprintf("%d %d\n", seed, n)), 0o644)
}

// nameRand is a random source seeded by a configuration's name and the
// choice it draws.
func nameRand(name, choice string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name + "/" + choice))
	return rand.New(rand.NewSource(int64(h.Sum64())))
}

// nameCoin is a fair coin per configuration name and choice.
func nameCoin(name, choice string) bool { return nameRand(name, choice).Intn(2) == 0 }
