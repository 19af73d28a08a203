package mutate_test

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"convtgen/gen"
	"convtgen/gen/geom"
	"convtgen/gen/mutate"
	"convtgen/gen/plan"
	"convtgen/gen/ref"
	"convtgen/gen/spec"
)

// config is one small nn.ConvTranspose3d configuration.
type config struct {
	batch, cin, cout, groups int
	k, in, s, p, op, d       [3]int
	bias                     bool
	precision                string // "" means fp32
	tile                     string // version 1's flat tile mapping, "" for none
}

func (c config) yaml() string {
	prec := c.precision
	if prec == "" {
		prec = "fp32"
	}
	conv := geom.Conv{Batch: c.batch, InChannels: c.cin, OutChannels: c.cout, In: c.in, Kernel: c.k,
		Stride: c.s, Padding: c.p, OutputPadding: c.op, Dilation: c.d, Groups: c.groups, Bias: c.bias}
	y := spec.Generic("mutate_test", "mutation test", conv, "rand", spec.Kernel{Backends: []string{"cuda"}})
	// Written as version 1 wrote them: precision and a flat tile.
	cuda, err := spec.V1CUDA(prec, c.tile)
	if err != nil {
		panic(err)
	}
	if cuda != "" {
		y += "  cuda: " + cuda + "\n"
	}
	return y
}

// plan plans c, or returns nil when c is not a valid spec (an empty
// output, an infeasible tile).
func (c config) plan() *plan.Plan {
	s, err := spec.Parse("mutate_test.yaml", []byte(c.yaml()))
	if err != nil {
		return nil
	}
	p, err := plan.New(s, plan.SM90)
	if err != nil {
		return nil
	}
	return p
}

// fixed are hand-picked configurations: each mutation's edge cases.
var fixed = []config{
	// stride 1, one tile: no phase to swap, no tile to drop.
	{batch: 1, cin: 3, cout: 4, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{3, 4, 5}, s: [3]int{1, 1, 1}, d: [3]int{1, 1, 1}},
	// stride 2, even output (padding 1, output_padding 1): residues 0 and 1 have the same Q.
	{batch: 2, cin: 4, cout: 8, groups: 2, k: [3]int{3, 3, 3}, in: [3]int{3, 4, 5}, s: [3]int{2, 2, 2}, p: [3]int{1, 1, 1}, op: [3]int{1, 1, 1}, d: [3]int{1, 1, 1}, bias: true},
	// l1_77 in small: stride 2, dilation 2, odd output: only one residue per dimension has taps.
	{batch: 1, cin: 3, cout: 5, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{3, 4, 4}, s: [3]int{2, 2, 2}, p: [3]int{1, 1, 1}, d: [3]int{2, 2, 2}, bias: true},
	// stride 3, several M tiles of a small explicit tile.
	{batch: 2, cin: 5, cout: 6, groups: 1, k: [3]int{4, 2, 5}, in: [3]int{4, 3, 6}, s: [3]int{3, 1, 3}, p: [3]int{2, 0, 1}, op: [3]int{1, 0, 2}, d: [3]int{1, 1, 1}, tile: "{bm: 64, bn: 16, bk: 4, tm: 8, tn: 4}"},
	// 3xtf32 with several tiles and bias.
	{batch: 3, cin: 6, cout: 16, groups: 1, k: [3]int{2, 3, 3}, in: [3]int{5, 5, 5}, s: [3]int{2, 1, 2}, d: [3]int{1, 2, 1}, bias: true, precision: "3xtf32", tile: "{bm: 64, bn: 16, bk: 8, wm: 16, wn: 8}"},
	// l1_72 in small, W-window direct kernel: float4 window loads and stores, bias.
	{batch: 2, cin: 4, cout: 8, groups: 2, k: [3]int{3, 3, 5}, in: [3]int{3, 4, 8}, s: [3]int{2, 2, 2}, p: [3]int{1, 1, 2}, op: [3]int{1, 1, 1}, d: [3]int{1, 1, 1}, bias: true, tile: "{bm: 32, bn: 4, tw: 8, direct: true}"},
	// 1x1x1 kernel: no neighbouring tap.
	{batch: 1, cin: 4, cout: 4, groups: 1, k: [3]int{1, 1, 1}, in: [3]int{3, 3, 3}, s: [3]int{2, 2, 2}, op: [3]int{1, 1, 1}, d: [3]int{1, 1, 1}},
	// split_k 3 over 2 taps x 3 channel chunks, with bias and a stride-2 tap-less phase.
	{batch: 1, cin: 5, cout: 6, groups: 1, k: [3]int{2, 1, 1}, in: [3]int{3, 2, 3}, s: [3]int{2, 1, 2}, op: [3]int{0, 0, 1}, d: [3]int{1, 1, 1}, bias: true, tile: "{bm: 64, bn: 16, bk: 2, tm: 8, tn: 4, split_k: 3}"},
}

// randomConfig draws a small configuration (small enough for the
// interpreter below); it may be invalid.
func randomConfig(r *rand.Rand) config {
	pick := func(xs ...int) int { return xs[r.Intn(len(xs))] }
	c := config{batch: 1 + r.Intn(2), groups: pick(1, 1, 2, 3), bias: r.Intn(2) == 0}
	c.cin = c.groups * (1 + r.Intn(4))
	c.cout = c.groups * (1 + r.Intn(5))
	for i := range 3 {
		c.k[i] = 1 + r.Intn(4)
		c.in[i] = pick(1, 2, 3, 4, 5, 7)
		c.s[i] = 1 + r.Intn(3)
		c.d[i] = 1 + r.Intn(2)
		c.op[i] = r.Intn(max(c.s[i], c.d[i]))
		c.p[i] = r.Intn(c.d[i]*(c.k[i]-1) + 2)
	}
	split := "" // a third of the tiles that can split do
	if k := pick(1, 1, 2, 3); k > 1 {
		split = fmt.Sprintf(", split_k: %d", k)
	}
	switch r.Intn(5) {
	case 3:
		c.tile = fmt.Sprintf("{bm: 32, bn: 4, tw: %d, direct: true}", c.s[2]*pick(1, 2, 4))
	case 0:
		c.precision = "3xtf32"
		c.tile = fmt.Sprintf("{bm: 64, bn: %d, bk: 8, wm: 16, wn: 8%s}", pick(8, 16), split)
	case 1:
		c.tile = fmt.Sprintf("{bm: %d, bn: 16, bk: %d, tm: 8, tn: 4%s}", pick(64, 128), pick(1, 3, 4), split)
	case 2:
		c.precision = "3xtf32"
	}
	return c
}

// plans are the fixed configurations and valid random ones.
func plans(t *testing.T) []*plan.Plan {
	t.Helper()
	var out []*plan.Plan
	for i, c := range fixed {
		p := c.plan()
		if p == nil {
			t.Fatalf("fixed config %d does not plan:\n%s", i, c.yaml())
		}
		out = append(out, p)
	}
	r := rand.New(rand.NewSource(7))
	n := 150
	if testing.Short() {
		n = 40
	}
	for len(out) < len(fixed)+n {
		if p := randomConfig(r).plan(); p != nil {
			out = append(out, p)
		}
	}
	return out
}

// snapshot is a deep copy of everything a mutation may touch.
func snapshot(p *plan.Plan) plan.Plan {
	c := *p
	c.Phases = slices.Clone(p.Phases)
	c.Taps = slices.Clone(p.Taps)
	return c
}

func TestAll(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range mutate.All() {
		if seen[m.Name] || m.Name == "" || m.Description == "" || m.Applies == nil || m.Apply == nil || strings.ContainsAny(m.Name, " ~/") {
			t.Errorf("mutation %q: duplicate, incomplete or a bad name", m.Name)
		}
		seen[m.Name] = true
		if got, ok := mutate.Lookup(m.Name); !ok || got.Name != m.Name {
			t.Errorf("Lookup(%q) = %q, %v", m.Name, got.Name, ok)
		}
	}
	for _, want := range []string{"padding-off-by-one", "drop-last-tile", "wrong-phase", "wrong-tap-weight", "skip-bias"} {
		if !seen[want] {
			t.Errorf("no %s mutation", want)
		}
	}
	if _, ok := mutate.Lookup("no-such-mutation"); ok {
		t.Error("Lookup found an unknown name")
	}
}

// Which mutations apply to the edge cases, and that For agrees with Applies.
func TestApplies(t *testing.T) {
	want := [][]string{
		{"padding-off-by-one", "wrong-tap-weight"},
		{"padding-off-by-one", "drop-last-tile", "wrong-phase", "wrong-phase-taps", "wrong-tap-weight", "skip-bias"},
		{"padding-off-by-one", "drop-last-tile", "wrong-phase-taps", "wrong-tap-weight", "skip-bias"},
		{"padding-off-by-one", "drop-last-tile", "wrong-phase", "wrong-phase-taps", "wrong-tap-weight"},
		{"padding-off-by-one", "drop-last-tile", "wrong-phase", "wrong-phase-taps", "wrong-tap-weight", "skip-bias"},
		{"padding-off-by-one", "drop-last-tile", "wrong-phase", "wrong-phase-taps", "wrong-tap-weight", "skip-bias"},
		{"padding-off-by-one", "drop-last-tile", "wrong-phase", "wrong-phase-taps"},
		{"padding-off-by-one", "drop-last-tile", "drop-last-split", "wrong-phase", "wrong-phase-taps", "wrong-tap-weight", "skip-bias"},
	}
	for i, c := range fixed {
		p := c.plan()
		var got []string
		for _, m := range mutate.For(p) {
			got = append(got, m.Name)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Errorf("fixed config %d (%s): mutations %v, want %v", i, p, got, want[i])
		}
	}
}

// Each applicable mutation changes the plan and its rendered kernel and
// leaves the original plan as it was.
func TestMutationsChangeOnlyTheCopy(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	render := func(p *plan.Plan) []byte {
		data, err := mutate.RenderCUDA(r, p, "mutate_test.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	ps := plans(t)
	if testing.Short() {
		ps = ps[:len(fixed)+5]
	}
	for _, p := range ps {
		before := snapshot(p)
		orig := render(p)
		for _, m := range mutate.For(p) {
			mp := m.On(p)
			if !reflect.DeepEqual(*p, before) {
				t.Fatalf("%s changed the original plan %s", m.Name, p)
			}
			if reflect.DeepEqual(*mp, before) {
				t.Errorf("%s left %s unchanged", m.Name, p)
			}
			if bytes.Equal(render(mp), orig) {
				t.Errorf("%s: %s renders the same cuda.py", m.Name, p)
			}
		}
	}
}

// errOOB is an access outside a buffer or table in the simulated kernel.
var errOOB = errors.New("out of bounds")

// simulate runs the kernel's index math for plan p (as
// templates/cuda.py.tmpl computes it) on the problem c's inputs, in
// float64: every block of p.Grid, every row m < P.m of its M tile, every
// tap of the phase (input q+Off read only when inside the input), every
// channel co < CoutG of its N tile, and the write at R + stride*q. With
// Tile.TW (the W-window kernel), a row is TW outputs along W and a tap a
// kw row, read through the window (Plan.Window) as the template does. Any
// access outside a buffer or constant table is an error. It returns the
// output and how many outputs were never written; writing one twice is an
// error too (the kernel writes each output once, without atomics). With
// split_k, blocks along z are (group, split) pairs: split s of a phase's
// Splits sums its consecutive share of the phase's steps (tap, BK-channel
// chunk) into its own copy of the output, without the bias (the splits
// past them do nothing), and the sum adds the copies of the output's
// phase and the bias; an output one of whose copies was never written
// counts as unwritten (the verifier poisons the workspace).
func simulate(p *plan.Plan, c geom.Conv, x, w, b []float32) ([]float64, int, error) {
	k := p.Conv // what the kernel was rendered with
	t := p.Tile
	taps, cinG, coutG := k.Taps(), p.CinG, p.CoutG
	in, out := k.In, p.Out
	outSp := out[0] * out[1] * out[2]
	splits := t.SplitK()
	y := make([]float64, splits*c.OutputLen())
	writes := make([]int, len(y))
	nP := len(p.Phases)
	if nP == 0 {
		return nil, 0, fmt.Errorf("no phases")
	}
	oob := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{errOOB}, args...)...)
	}
	for bx := 0; bx < p.Grid[0]; bx++ {
		ph := p.Phases[bx%nP]
		m0 := bx / nP * t.BM()
		if m0 >= ph.M {
			continue
		}
		qhw := ph.Q[1] * ph.Q[2]
		qdhw := ph.Q[0] * qhw
		for by := 0; by < p.Grid[1]; by++ {
			for z := 0; z < p.Grid[2]; z++ {
				g, split := z/splits, z%splits
				if g >= k.Groups {
					return nil, 0, oob("group %d of %d", g, k.Groups)
				}
				if split >= ph.Splits {
					continue // the phase's steps are shared among fewer blocks
				}
				for m := m0; m < m0+t.BM() && m < ph.M; m++ {
					n, s := m/qdhw, m%qdhw
					q := [3]int{s / qhw, s % qhw / ph.Q[2], s % ph.Q[2]}
					if n >= k.Batch {
						return nil, 0, oob("row %d: batch %d of %d", m, n, k.Batch)
					}
					for jw := range max(1, t.TW()) {
						var o [3]int
						for d := range 3 {
							o[d] = ph.R[d] + k.Stride[d]*q[d]
						}
						if t.TW() > 0 {
							if o[2] = q[2]*t.TW() + jw; o[2] >= out[2] {
								continue // past the row: the kernel computes it but does not store it
							}
						}
						for d := range 3 {
							if o[d] < 0 || o[d] >= out[d] {
								return nil, 0, oob("output index %v outside %v", o, out)
							}
						}
						// This split's steps (all of them without split_k):
						// step j*chunks + h is tap j, channels h*BK on.
						chunks := p.CIChunks()
						all := ph.TapCount * chunks
						first, last := split*all/ph.Splits, (split+1)*all/ph.Splits
						for co := by * t.BN(); co < (by+1)*t.BN() && co < coutG; co++ {
							var acc float64
							for step := first; step < last; step++ {
								j, h := step/chunks, step%chunks
								ci0, ci1 := h*t.BK(), min(cinG, (h+1)*t.BK())
								ti := ph.TapStart + j
								if ti < 0 || ti >= len(p.Taps) {
									return nil, 0, oob("tap %d of a table of %d", ti, len(p.Taps))
								}
								tap := p.Taps[ti]
								reads, err := tapReads(p, tap, q, jw)
								if err != nil {
									return nil, 0, err
								}
								for _, rd := range reads {
									if rd.flat < 0 || rd.flat >= taps {
										return nil, 0, oob("weight tap %d of %d", rd.flat, taps)
									}
									i := rd.in
									inside := true
									for d := range 3 {
										inside = inside && uint(i[d]) < uint(in[d])
									}
									if !inside {
										continue
									}
									for ci := ci0; ci < ci1; ci++ {
										xv := x[((n*k.InChannels+g*cinG+ci)*in[0]+i[0])*in[1]*in[2]+i[1]*in[2]+i[2]]
										wv := w[((g*cinG+ci)*coutG+co)*taps+rd.flat]
										acc += float64(xv) * float64(wv)
									}
								}
							}
							ch := g*coutG + co
							if p.MainBias() { // the plan's epilogue, as the templates print it
								if b == nil {
									return nil, 0, oob("bias read without a bias")
								}
								acc += float64(b[ch])
							}
							at := split*c.OutputLen() + (n*k.OutChannels+ch)*outSp + (o[0]*out[1]+o[1])*out[2] + o[2]
							writes[at]++
							if writes[at] > 1 {
								return nil, 0, fmt.Errorf("output %d written twice", at)
							}
							y[at] = acc
						}
					}
				}
			}
		}
	}
	if splits > 1 { // the sum of the splits, in split order, then the bias
		n := c.OutputLen()
		sum := make([]float64, n)
		copies := map[[3]int]int{} // a phase's splits, by its residues
		for _, ph := range p.Phases {
			copies[ph.R] = ph.Splits
		}
		for i := range sum {
			o := i % outSp
			r := [3]int{o / (out[1] * out[2]) % k.Stride[0], o / out[2] % out[1] % k.Stride[1], o % out[2] % k.Stride[2]}
			for s := range copies[r] {
				sum[i] += y[s*n+i]
				writes[i] = min(writes[i], writes[s*n+i])
			}
			if p.Epilogue.Bias {
				if b == nil {
					return nil, 0, oob("bias read without a bias")
				}
				sum[i] += float64(b[i/outSp%k.OutChannels])
			}
		}
		y, writes = sum, writes[:n]
	}
	unwritten := 0
	for _, n := range writes {
		if n == 0 {
			unwritten++
		}
	}
	return y, unwritten, nil
}

// tapRead is one weight tap and the input index a row reads with it.
type tapRead struct {
	flat int
	in   [3]int
}

// tapReads lists what row q (output jw of its TW along W, in a W-window
// kernel) reads through one tap: input q + Off at weight tap Flat; or,
// W-window, for each kw whose v = jw + pad_w - kw*dil_w stride_w divides,
// window column v/stride_w - Window.Lo (which must be inside the window) at
// weight tap Flat + kw. W offsets of the tap are not read there.
func tapReads(p *plan.Plan, tap plan.Tap, q [3]int, jw int) ([]tapRead, error) {
	if p.Tile.TW() == 0 {
		return []tapRead{{tap.Flat, [3]int{q[0] + tap.Off[0], q[1] + tap.Off[1], q[2] + tap.Off[2]}}}, nil
	}
	c, w := p.Conv, p.Window
	var reads []tapRead
	for kw := range c.Kernel[2] {
		v := jw + c.Padding[2] - kw*c.Dilation[2]
		if v%c.Stride[2] != 0 {
			continue
		}
		e := v/c.Stride[2] - w.Lo
		if e < 0 || e >= w.Len {
			return nil, fmt.Errorf("%w: window column %d of %d", errOOB, e, w.Len)
		}
		win0 := q[2]*(p.Tile.TW()/c.Stride[2]) + w.Lo
		reads = append(reads, tapRead{tap.Flat + kw, [3]int{q[0] + tap.Off[0], q[1] + tap.Off[1], win0 + e}})
	}
	return reads, nil
}

// relErr is the relative L2 error, +Inf when something was not written.
func relErr(got, want []float64, unwritten int) float64 {
	if unwritten > 0 {
		return math.Inf(1)
	}
	var num, den float64
	for i := range got {
		num += (got[i] - want[i]) * (got[i] - want[i])
		den += want[i] * want[i]
	}
	if den == 0 {
		if num == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return math.Sqrt(num / den)
}

// inputs draws x in [0, 1) and weight and bias as PyTorch initialises
// them, U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
func inputs(c geom.Conv, seed int64) (x, w, b []float32) {
	r := rand.New(rand.NewSource(seed))
	bound := 1 / math.Sqrt(float64(c.OutPerGroup()*c.Taps()))
	x = make([]float32, c.InputLen())
	for i := range x {
		x[i] = r.Float32()
	}
	u := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32((2*r.Float64() - 1) * bound)
		}
		return v
	}
	w = u(c.WeightLen())
	if c.Bias {
		b = u(c.OutChannels)
	}
	return x, w, b
}

// The interpreter of the plan agrees with the reference for unmutated
// plans; every mutated plan stays in bounds and gives wrong outputs.
func TestMutantsWrongButInBounds(t *testing.T) {
	applied := map[string]int{}
	for pi, p := range plans(t) {
		c := p.Conv
		x, w, b := inputs(c, int64(pi))
		want := ref.Forward(c, x, w, b)
		y, unwritten, err := simulate(p, c, x, w, b)
		if err != nil {
			t.Fatalf("unmutated %s: %v", p, err)
		}
		if e := relErr(y, want, unwritten); !(e < 1e-12) {
			t.Fatalf("unmutated %s: relative error %g (%d unwritten): the interpreter is wrong", p, e, unwritten)
		}
		for _, m := range mutate.For(p) {
			applied[m.Name]++
			y, unwritten, err := simulate(m.On(p), c, x, w, b)
			if err != nil {
				t.Errorf("%s on %s: %v", m.Name, p, err)
				continue
			}
			if e := relErr(y, want, unwritten); !(e > 1e-3) {
				t.Errorf("%s on %s: relative error %g: the bug is not visible", m.Name, p, e)
			}
			if (m.Name == "drop-last-tile" || m.Name == "drop-last-split") && unwritten == 0 {
				t.Errorf("%s on %s: every output written", m.Name, p)
			}
		}
	}
	t.Logf("applied: %v", applied)
	for _, m := range mutate.All() {
		if applied[m.Name] < 5 {
			t.Errorf("%s applied to only %d configurations", m.Name, applied[m.Name])
		}
	}
}

// Every mutation applies to some registered spec, and the in-bounds checks
// hold there (the interpreter is too slow for their full size, so only the
// index ranges are checked: rows' output positions and tap tables).
func TestRegisteredSpecs(t *testing.T) {
	loaded, err := gen.LoadAll(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	applied := map[string]int{}
	for _, l := range loaded {
		for _, p := range l.Plans {
			for _, m := range mutate.For(p) {
				applied[m.Name]++
				checkRanges(t, m.Name, p, m.On(p))
			}
		}
	}
	t.Logf("applied to %d registered specs: %v", len(loaded), applied)
	for _, m := range mutate.All() {
		if m.Name != "skip-bias" && applied[m.Name] == 0 && len(loaded) > 0 {
			t.Errorf("%s applies to no registered spec", m.Name)
		}
	}
}

// checkRanges checks the in-bounds conditions of a mutated plan without
// running it: each phase's last output position is inside the output,
// tap slices inside the table, weight taps inside the weight, the grid no
// larger than the original's.
func checkRanges(t *testing.T, name string, orig, p *plan.Plan) {
	t.Helper()
	for d := range 3 {
		if p.Grid[d] < 1 || p.Grid[d] > orig.Grid[d] {
			t.Errorf("%s on %s: grid %v from %v", name, orig, p.Grid, orig.Grid)
		}
	}
	for _, ph := range p.Phases {
		for d := range 3 {
			if d == 2 && (p.Tile.TW() > 0 || p.Tile.KWInN()) {
				continue // a W-window row, or a kw_in_n row (an input position), stores only its outputs inside the row
			}
			if last := ph.R[d] + p.Conv.Stride[d]*(ph.Q[d]-1); ph.R[d] < 0 || last >= p.Out[d] {
				t.Errorf("%s on %s: phase %+v writes index %d of %d", name, orig, ph, last, p.Out[d])
			}
		}
		if ph.TapStart < 0 || ph.TapCount < 0 || ph.TapStart+ph.TapCount > len(p.Taps) {
			t.Errorf("%s on %s: phase %+v outside the tap table of %d", name, orig, ph, len(p.Taps))
		}
	}
	width := p.TapWidth()
	for _, tap := range p.Taps {
		if tap.Flat < 0 || tap.Flat+width > p.Conv.Taps() {
			t.Errorf("%s on %s: weight taps %d to %d of %d", name, orig, tap.Flat, tap.Flat+width-1, p.Conv.Taps())
		}
	}
}

// The interpreter catches what the mutations must avoid: a residue shift
// that writes past the output, a weight tap past the weight, a tap slice
// past the table; and a plan copy with nothing changed is not "wrong".
func TestSimulateCatchesOutOfBounds(t *testing.T) {
	p := fixed[1].plan()
	c := p.Conv
	x, w, b := inputs(c, 1)
	bad := map[string]func(q *plan.Plan){
		"residue+1": func(q *plan.Plan) {
			q.Phases = slices.Clone(q.Phases)
			for i := range q.Phases {
				q.Phases[i].R[2]++
			}
		},
		"flat+1": func(q *plan.Plan) {
			q.Taps = slices.Clone(q.Taps)
			for i := range q.Taps {
				q.Taps[i].Flat++
			}
		},
		"tap slice": func(q *plan.Plan) {
			q.Phases = slices.Clone(q.Phases)
			q.Phases[len(q.Phases)-1].TapCount++
		},
	}
	for name, f := range bad {
		q := *p
		f(&q)
		if _, _, err := simulate(&q, c, x, w, b); !errors.Is(err, errOOB) {
			t.Errorf("%s: %v, want an out-of-bounds error", name, err)
		}
	}
	q := *p
	y, unwritten, err := simulate(&q, c, x, w, b)
	if e := relErr(y, ref.Forward(c, x, w, b), unwritten); err != nil || !(e < 1e-12) {
		t.Errorf("unchanged copy: %v, relative error %g", err, e)
	}
}
