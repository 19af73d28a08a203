package plan_test

import (
	"math"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	"convtgen/gen/plan"
	"convtgen/gen/ref"
)

// winogradForward computes a Winograd tile's output in float64 the way
// its kernels do, from the plan alone: the transformed inputs re-laid by
// WGMMA's border, extents, pairs and PairIn0, each phase's rows as pairs
// of outputs along W, each (d, h) tap's kernel_w W taps' weights from its
// entries (the lowest W offset last), TapOffsets, the plan's F(2, r)
// products and their sums. Outputs no phase writes stay NaN; tap-less
// phases are the bias.
func winogradForward(p *plan.Plan, x, w, b []float32) []float64 {
	c, wg := p.Conv, p.WGMMA
	in, out := c.In, p.Out
	f := wg.Winograd
	n1 := f.Products()
	xr := make([]float64, wg.XLen)
	for n := range c.Batch {
		for ci := range c.InChannels {
			grp, ch := ci/p.CinG, ci%p.CinG
			for d := range in[0] {
				for h := range in[1] {
					input := func(iw int) float64 {
						if iw < 0 || iw >= in[2] {
							return 0
						}
						return float64(x[(((n*c.InChannels+ci)*in[0]+d)*in[1]+h)*in[2]+iw])
					}
					row := (((n*c.Groups+grp)*wg.X[0]+d+wg.Lo[0])*wg.X[1] + h + wg.Lo[1]) * wg.X[2]
					for pr := range wg.Pairs {
						for prod := range n1 {
							v := 0.0
							for j := range n1 {
								v += f.In[prod][j] * input(2*pr+wg.PairIn0+j)
							}
							xr[(row+n1*pr+prod)*wg.CinP+ch] = v
						}
					}
				}
			}
		}
	}
	y := make([]float64, c.OutputLen())
	for i := range y {
		y[i] = math.NaN()
	}
	outAt := func(n, co, d, h, ow int) int {
		return (((n*c.OutChannels+co)*out[0]+d)*out[1]+h)*out[2] + ow
	}
	bias := func(co int) float64 {
		if !c.Bias {
			return 0
		}
		return float64(b[co])
	}
	for i, ph := range p.Phases {
		if wg.GemmTaps[i] == 0 {
			for n := range c.Batch {
				for co := range c.OutChannels {
					for qd := range ph.Q[0] {
						for qh := range ph.Q[1] {
							for qw := range ph.Q[2] {
								y[outAt(n, co, ph.R[0]+c.Stride[0]*qd, ph.R[1]+c.Stride[1]*qh, ph.R[2]+c.Stride[2]*qw)] = bias(co)
							}
						}
					}
				}
			}
			continue
		}
		q_hw := ph.Q[1] * wg.Line[i]
		for m := range wg.Rows[i] {
			n, s := m/(ph.Q[0]*q_hw), m%(ph.Q[0]*q_hw)
			qd, qh, pw := s/q_hw, s%q_hw/wg.Line[i], s%wg.Line[i]
			for co := range c.OutChannels {
				grp, cog := co/p.CoutG, co%p.CoutG
				base := ((((n*c.Groups+grp)*wg.X[0]+qd+wg.Lo[0])*wg.X[1]+qh+wg.Lo[1])*wg.X[2] + n1*pw) * wg.CinP
				var y0, y1 float64
				for tap := range wg.GemmTaps[i] {
					e := ph.TapStart + f.R*tap
					for ch := range p.CinG {
						weight := func(kw int) float64 {
							return float64(w[((grp*p.CinG+ch)*p.CoutG+cog)*c.Taps()+p.Taps[e+kw].Flat])
						}
						for prod := range n1 {
							g := 0.0
							for k := range f.R {
								g += f.Weight[prod][k] * weight(f.R-1-k)
							}
							m := xr[base+wg.TapOffsets[e+f.R-1]+prod*wg.CinP+ch] * g
							y0 += f.Out[0][prod] * m
							y1 += f.Out[1][prod] * m
						}
					}
				}
				for o, v := range []float64{y0 + bias(co), y1 + bias(co)} {
					if qw := 2*pw + o; qw < ph.Q[2] {
						y[outAt(n, co, ph.R[0]+c.Stride[0]*qd, ph.R[1]+c.Stride[1]*qh, ph.R[2]+c.Stride[2]*qw)] = v
					}
				}
			}
		}
	}
	return y
}

// TestWinogradComputesTheConvolution checks that a Winograd tile's plan
// (its border, extents, pairs, tap order and offsets) with its F(2, r)
// products gives nn.ConvTranspose3d's output, every element, on #77's
// geometry and random ones with kernel_w 3 or 5 and stride_w =
// dilation_w.
func TestWinogradComputesTheConvolution(t *testing.T) {
	r := rand.New(rand.NewSource(77))
	confs := []config{{batch: 2, cin: 5, cout: 6, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{3, 4, 5}, s: [3]int{2, 2, 2}, p: [3]int{1, 1, 1}, d: [3]int{2, 2, 2}, bias: true}}
	for len(confs) < 40 {
		c := randomConfig(r, 7, 3, 3, 3)
		c.k[2], c.d[2] = 3+2*r.Intn(2), c.s[2]
		c.op[2] = r.Intn(c.s[2])
		c.p[2] = r.Intn((c.k[2]-1)*c.d[2] + 3)
		if _, empty := c.out(); !empty {
			confs = append(confs, c)
		}
	}
	for _, c := range confs {
		c.precision, c.tile = "3xtf32", "{wgmma: true, winograd: true, span: 4}"
		p, err := plan.New(c.parse(t), plan.SM90)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		x := make([]float32, p.Conv.InputLen())
		w := make([]float32, p.Conv.WeightLen())
		var b []float32
		if p.Conv.Bias {
			b = make([]float32, p.Conv.OutChannels)
		}
		for _, v := range [][]float32{x, w, b} {
			for i := range v {
				v[i] = float32(r.NormFloat64())
			}
		}
		got, want := winogradForward(p, x, w, b), ref.Forward(p.Conv, x, w, b)
		var num, den float64
		for i := range want {
			if math.IsNaN(got[i]) {
				t.Fatalf("%+v: output %d not written", c, i)
			}
			num += (got[i] - want[i]) * (got[i] - want[i])
			den += want[i] * want[i]
		}
		if err := math.Sqrt(num / max(den, 1e-300)); err > 1e-12 {
			t.Errorf("%+v: relative L2 error %.3g against the reference", c, err)
		}
	}
}

// TestWinogradNeedsConsecutiveTaps: F(2, r) reads r consecutive inputs
// per W phase, for the r it has a form for; other W geometries are refused
// at the tile, and F(2,5)'s sums past 4 steps at the span.
func TestWinogradNeedsConsecutiveTaps(t *testing.T) {
	base := config{batch: 1, cin: 8, cout: 8, groups: 1, k: [3]int{3, 3, 3}, in: [3]int{4, 4, 4}, s: [3]int{1, 1, 2}, d: [3]int{1, 1, 2},
		precision: "3xtf32", tile: "{wgmma: true, winograd: true}"}
	if _, err := plan.New(base.parse(t), plan.SM90); err != nil {
		t.Fatalf("stride_w = dilation_w = 2, kernel_w 3: %v", err)
	}
	for _, c := range []config{
		with(base, func(c *config) { c.k[2] = 4 }),
		with(base, func(c *config) { c.d[2] = 1 }),
		with(base, func(c *config) { c.s[2] = 1 }),
	} {
		_, err := plan.New(c.parse(t), plan.SM90)
		if err == nil || !strings.Contains(err.Error(), "plan_test.yaml:41:") || !strings.Contains(err.Error(), "kernel.cuda.wgmma.winograd: computes F(2, kernel_w) along W, which needs kernel_w 3 or 5 and stride_w = dilation_w") {
			t.Errorf("kernel %v, stride %v, dilation %v: got %v", c.k, c.s, c.d, err)
		}
	}
	five := with(base, func(c *config) { c.k[2] = 5 })
	if _, err := plan.New(five.parse(t), plan.SM90); err != nil {
		t.Fatalf("kernel_w 5: %v", err)
	}
	five.tile = "{wgmma: true, winograd: true, span: 8}"
	if _, err := plan.New(five.parse(t), plan.SM90); err == nil || !strings.Contains(err.Error(), "kernel.cuda.wgmma.span: with Winograd's F(2,5) keeps a tensor-core sum within 4 steps (128 terms)") {
		t.Errorf("kernel_w 5, span 8: got %v", err)
	}
}

// TestWinogradTransformsAreExact: each F(2, r) the kernels use computes
// the pair's correlation exactly (in float64, on small integers), its
// input rows are integers, and F(2,3)'s are the kernels' documented ones.
func TestWinogradTransformsAreExact(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	for _, k := range plan.WinogradTaps() {
		f, ok := plan.NewWinograd(k)
		if !ok || f.R != k || len(f.In) != k+1 || len(f.Weight) != k+1 {
			t.Fatalf("F(2,%d): %+v", k, f)
		}
		for _, row := range f.In {
			for _, v := range row {
				if v != math.Trunc(v) {
					t.Errorf("F(2,%d): input row %v not integral", k, row)
				}
			}
		}
		for range 100 {
			d, g := make([]float64, k+1), make([]float64, k)
			for j := range d {
				d[j] = float64(r.Intn(33) - 16)
			}
			for j := range g {
				g[j] = float64(r.Intn(33) - 16)
			}
			var y [2]float64
			for p := range k + 1 {
				var a, b float64
				for j := range d {
					a += f.In[p][j] * d[j]
				}
				for j := range g {
					b += f.Weight[p][j] * g[j]
				}
				for o := range y {
					y[o] += f.Out[o][p] * a * b
				}
			}
			for o := range y {
				want := 0.0
				for j := range g {
					want += g[j] * d[o+j]
				}
				if math.Abs(y[o]-want) > 1e-9*(1+math.Abs(want)) {
					t.Fatalf("F(2,%d): output %d = %v, want %v (d %v, g %v)", k, o, y[o], want, d, g)
				}
			}
		}
	}
	f, _ := plan.NewWinograd(3)
	want := plan.Winograd{R: 3,
		In:     [][]float64{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, -1, 0, 1}},
		Weight: [][]float64{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}},
		Out:    [2][]float64{{1, 1, 1, 0}, {0, 1, -1, 1}}}
	if !reflect.DeepEqual(f, want) {
		t.Errorf("F(2,3) = %+v, want %+v", f, want)
	}
}
