package ref

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"convtgen/gen/geom"
)

// conv fills in the defaults (stride 1, dilation 1, groups 1, batch 1) so the
// hand cases only spell out what they vary.
func conv(c geom.Conv) geom.Conv {
	if c.Batch == 0 {
		c.Batch = 1
	}
	if c.Groups == 0 {
		c.Groups = 1
	}
	for i := range 3 {
		if c.Stride[i] == 0 {
			c.Stride[i] = 1
		}
		if c.Dilation[i] == 0 {
			c.Dilation[i] = 1
		}
	}
	return c
}

func wantExact(t *testing.T, c geom.Conv, x, w, b []float32, want []float64) {
	t.Helper()
	if got := c.Out(); c.OutputLen() != len(want) {
		t.Fatalf("output %v has %d elements, test expects %d", got, c.OutputLen(), len(want))
	}
	got := Forward(c, x, w, b)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("Forward[%d] = %v, want %v (all: %v)", i, got[i], want[i], got)
		}
		if a := At(c, x, w, b, i); a != want[i] {
			t.Errorf("At(%d) = %v, want %v", i, a, want[i])
		}
	}
}

func TestLine(t *testing.T) {
	// W only: x=[1,2,3], w=[10,1], stride 1, Wo = 3+2-1 = 4.
	// ow = iw + kw:
	//   y0 = 1*10           = 10
	//   y1 = 1*1  + 2*10    = 21
	//   y2 = 2*1  + 3*10    = 32
	//   y3 = 3*1            = 3
	c := conv(geom.Conv{InChannels: 1, OutChannels: 1, In: [3]int{1, 1, 3}, Kernel: [3]int{1, 1, 2}})
	wantExact(t, c, []float32{1, 2, 3}, []float32{10, 1}, nil, []float64{10, 21, 32, 3})
}

func TestStridePaddingOutputPadding(t *testing.T) {
	// H only: Hi=3, k=3, s=2, p=1, op=1: Ho = 2*2 - 2 + 2 + 1 + 1 = 6.
	// x=[1,2,3], w=[1,10,100], oh = 2*ih - 1 + kh:
	//   ih0 (1): kh0 -> -1 dropped, kh1 -> 0 += 10,  kh2 -> 1 += 100
	//   ih1 (2): kh0 -> 1 += 2,     kh1 -> 2 += 20,  kh2 -> 3 += 200
	//   ih2 (3): kh0 -> 3 += 3,     kh1 -> 4 += 30,  kh2 -> 5 += 300
	// y = [10, 102, 20, 203, 30, 300]. Padding crops one row at each end;
	// op=1 gives the last one back (without it Ho=5 and 300 is dropped).
	c := conv(geom.Conv{InChannels: 1, OutChannels: 1, In: [3]int{1, 3, 1}, Kernel: [3]int{1, 3, 1},
		Stride: [3]int{1, 2, 1}, Padding: [3]int{0, 1, 0}, OutputPadding: [3]int{0, 1, 0}})
	wantExact(t, c, []float32{1, 2, 3}, []float32{1, 10, 100}, nil, []float64{10, 102, 20, 203, 30, 300})
}

func TestDilation(t *testing.T) {
	// D only: Di=2, k=2, dil=2: Do = 1 + 2*1 + 1 = 4. od = id + 2*kd.
	// x=[1,2], w=[3,5]:
	//   id0 (1): kd0 -> 0 += 3, kd1 -> 2 += 5
	//   id1 (2): kd0 -> 1 += 6, kd1 -> 3 += 10
	// y = [3, 6, 5, 10].
	c := conv(geom.Conv{InChannels: 1, OutChannels: 1, In: [3]int{2, 1, 1}, Kernel: [3]int{2, 1, 1},
		Dilation: [3]int{2, 1, 1}})
	wantExact(t, c, []float32{1, 2}, []float32{3, 5}, nil, []float64{3, 6, 5, 10})
}

func TestGroupsBias(t *testing.T) {
	// Cin=2, Cout=4, groups=2 (one input channel, two outputs per group),
	// W only: Wi=2, k=2, Wo=3. x ch0=[1,2], ch1=[3,4].
	// weight (ci, co_local, kw): [0,0]=[1,2] [0,1]=[3,4] [1,0]=[5,6] [1,1]=[7,8].
	// bias = [0.5, -1, 2, 10]. Each row is [x0*w0, x0*w1+x1*w0, x1*w1] + bias:
	//   co0 = ch0*[1,2]: [1, 2+2, 4]      + 0.5 = [1.5, 4.5, 4.5]
	//   co1 = ch0*[3,4]: [3, 4+6, 8]      - 1   = [2, 9, 7]
	//   co2 = ch1*[5,6]: [15, 18+20, 24]  + 2   = [17, 40, 26]
	//   co3 = ch1*[7,8]: [21, 24+28, 32]  + 10  = [31, 62, 42]
	c := conv(geom.Conv{InChannels: 2, OutChannels: 4, Groups: 2, Bias: true,
		In: [3]int{1, 1, 2}, Kernel: [3]int{1, 1, 2}})
	x := []float32{1, 2, 3, 4}
	w := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	b := []float32{0.5, -1, 2, 10}
	wantExact(t, c, x, w, b, []float64{1.5, 4.5, 4.5, 2, 9, 7, 17, 40, 26, 31, 62, 42})
}

func TestAsymmetricKernel(t *testing.T) {
	// In (1,2,2) x=[[1,2],[3,4]], kernel (1,2,1) w=[1,10] along H, stride
	// (1,1,2): Ho = 1+1+1 = 3, Wo = 1*2 + 1 = 3. oh = ih + kh, ow = 2*iw.
	//   ow0 (column [1,3]): oh0 = 1, oh1 = 1*10 + 3*1 = 13, oh2 = 3*10 = 30
	//   ow1: nothing lands (stride gap) = 0
	//   ow2 (column [2,4]): oh0 = 2, oh1 = 2*10 + 4*1 = 24, oh2 = 4*10 = 40
	c := conv(geom.Conv{InChannels: 1, OutChannels: 1, In: [3]int{1, 2, 2}, Kernel: [3]int{1, 2, 1},
		Stride: [3]int{1, 1, 2}})
	wantExact(t, c, []float32{1, 2, 3, 4}, []float32{1, 10}, nil,
		[]float64{1, 0, 2, 13, 0, 24, 30, 0, 40})
}

func random(r *rand.Rand, c geom.Conv) (x, w, b []float32) {
	fill := func(n int) []float32 {
		s := make([]float32, n)
		for i := range s {
			s[i] = float32(r.Float64()*2 - 1)
		}
		return s
	}
	x, w = fill(c.InputLen()), fill(c.WeightLen())
	if c.Bias {
		b = fill(c.OutChannels)
	}
	return x, w, b
}

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= 1e-12*math.Max(math.Abs(a), math.Abs(b))
}

func TestAtMatchesForward(t *testing.T) {
	cases := []geom.Conv{
		{Batch: 2, InChannels: 3, OutChannels: 2, In: [3]int{2, 3, 4}, Kernel: [3]int{3, 2, 3},
			Stride: [3]int{3, 1, 2}, Padding: [3]int{1, 0, 1}, OutputPadding: [3]int{2, 0, 1},
			Dilation: [3]int{1, 1, 1}, Groups: 1, Bias: true},
		{Batch: 1, InChannels: 4, OutChannels: 6, In: [3]int{3, 2, 3}, Kernel: [3]int{2, 3, 2},
			Stride: [3]int{1, 2, 3}, Padding: [3]int{2, 1, 0}, OutputPadding: [3]int{0, 1, 2},
			Dilation: [3]int{3, 2, 1}, Groups: 2, Bias: false},
		{Batch: 2, InChannels: 6, OutChannels: 3, In: [3]int{2, 2, 5}, Kernel: [3]int{1, 2, 3},
			Stride: [3]int{2, 3, 1}, Padding: [3]int{0, 1, 3}, OutputPadding: [3]int{1, 2, 0},
			Dilation: [3]int{1, 3, 3}, Groups: 3, Bias: true},
		{Batch: 1, InChannels: 2, OutChannels: 2, In: [3]int{1, 1, 1}, Kernel: [3]int{3, 3, 3},
			Stride: [3]int{3, 3, 3}, Padding: [3]int{1, 1, 1}, OutputPadding: [3]int{2, 2, 2},
			Dilation: [3]int{2, 2, 2}, Groups: 2, Bias: true},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for ci, c := range cases {
		x, w, b := random(r, c)
		y := Forward(c, x, w, b)
		if len(y) != c.OutputLen() {
			t.Fatalf("case %d: len %d, want %d", ci, len(y), c.OutputLen())
		}
		nonzero := 0
		for i := range y {
			a := At(c, x, w, b, i)
			if !near(a, y[i]) {
				t.Errorf("case %d: At(%d) = %v, Forward = %v", ci, i, a, y[i])
			}
			if y[i] != 0 {
				nonzero++
			}
		}
		// Guard against a vacuous pass where both return all zeros.
		if nonzero == 0 {
			t.Errorf("case %d: every output is zero", ci)
		}
	}
}

// fullCorrelation is an independent naive definition: with stride 1,
// padding 0 and dilation 1, a transposed convolution is the "full"
// cross-correlation of x (zero-padded by k-1 on each side) with the
// spatially flipped kernel.
func fullCorrelation(c geom.Conv, x, w, b []float32) []float64 {
	o, in, k := c.Out(), c.In, c.Kernel
	cinG, coutG := c.InPerGroup(), c.OutPerGroup()
	y := make([]float64, c.OutputLen())
	i := 0
	for n := 0; n < c.Batch; n++ {
		for co := 0; co < c.OutChannels; co++ {
			g, col := co/coutG, co%coutG
			for od := 0; od < o[0]; od++ {
				for oh := 0; oh < o[1]; oh++ {
					for ow := 0; ow < o[2]; ow++ {
						var s float64
						if c.Bias {
							s = float64(b[co])
						}
						for cil := 0; cil < cinG; cil++ {
							ci := g*cinG + cil
							for jd := 0; jd < k[0]; jd++ {
								for jh := 0; jh < k[1]; jh++ {
									for jw := 0; jw < k[2]; jw++ {
										// Position in the padded input, shifted back to x.
										d, h, ww := od+jd-(k[0]-1), oh+jh-(k[1]-1), ow+jw-(k[2]-1)
										if d < 0 || d >= in[0] || h < 0 || h >= in[1] || ww < 0 || ww >= in[2] {
											continue
										}
										xv := x[(((n*c.InChannels+ci)*in[0]+d)*in[1]+h)*in[2]+ww]
										fd, fh, fw := k[0]-1-jd, k[1]-1-jh, k[2]-1-jw
										wv := w[(((ci*coutG+col)*k[0]+fd)*k[1]+fh)*k[2]+fw]
										s += float64(xv) * float64(wv)
									}
								}
							}
						}
						y[i] = s
						i++
					}
				}
			}
		}
	}
	return y
}

func TestFullCorrelationProperty(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 20 {
		groups := 1 + r.IntN(3)
		c := conv(geom.Conv{
			Batch:       1 + r.IntN(2),
			InChannels:  groups * (1 + r.IntN(3)),
			OutChannels: groups * (1 + r.IntN(3)),
			Groups:      groups,
			Bias:        r.IntN(2) == 0,
			In:          [3]int{1 + r.IntN(4), 1 + r.IntN(4), 1 + r.IntN(5)},
			Kernel:      [3]int{1 + r.IntN(3), 1 + r.IntN(3), 1 + r.IntN(4)},
		})
		x, w, b := random(r, c)
		got := Forward(c, x, w, b)
		want := fullCorrelation(c, x, w, b)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12*math.Max(1, math.Abs(want[i])) {
				t.Fatalf("trial %d (%+v): [%d] = %v, full correlation %v", trial, c, i, got[i], want[i])
			}
		}
	}
}

func TestRelL2(t *testing.T) {
	if e := RelL2([]float32{1, -2, 3}, []float64{1, -2, 3}); e != 0 {
		t.Errorf("identical: %v, want 0", e)
	}
	// ||(0, 5)|| / ||(3, 4)|| = 5 / 5.
	if e := RelL2([]float32{3, 9}, []float64{3, 4}); e != 1 {
		t.Errorf("known ratio: %v, want 1", e)
	}
	if e := RelL2([]float32{1, float32(math.NaN())}, []float64{1, 2}); !math.IsInf(e, 1) {
		t.Errorf("NaN: %v, want +Inf", e)
	}
	// want all zero: plain ||got|| = ||(3, 4)|| = 5.
	if e := RelL2([]float32{3, 4}, []float64{0, 0}); e != 5 {
		t.Errorf("zero want: %v, want 5", e)
	}
	if e := RelL2([]float32{0, 0}, []float64{0, 0}); e != 0 {
		t.Errorf("zero vs zero: %v, want 0", e)
	}
}

func mustPanic(t *testing.T, name, substr string, f func()) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Errorf("%s: no panic", name)
			return
		}
		if s, _ := r.(string); !strings.Contains(s, substr) {
			t.Errorf("%s: panic %q does not mention %q", name, r, substr)
		}
	}()
	f()
}

func TestValidation(t *testing.T) {
	c := conv(geom.Conv{InChannels: 2, OutChannels: 2, Bias: true, In: [3]int{1, 1, 2}, Kernel: [3]int{1, 1, 2}})
	x, w, b := make([]float32, 4), make([]float32, 8), make([]float32, 2)
	mustPanic(t, "input", "input length", func() { Forward(c, x[:3], w, b) })
	mustPanic(t, "weight", "weight length", func() { Forward(c, x, w[:7], b) })
	mustPanic(t, "bias", "bias length", func() { Forward(c, x, w, nil) })
	mustPanic(t, "index", "out of range", func() { At(c, x, w, b, c.OutputLen()) })
	mustPanic(t, "RelL2", "length mismatch", func() { RelL2(make([]float32, 2), make([]float64, 3)) })
	nb := c
	nb.Bias = false
	mustPanic(t, "stray bias", "Conv.Bias is false", func() { Forward(nb, x, w, b) })
	g := c
	g.Groups = 3
	mustPanic(t, "groups", "divisible", func() { Forward(g, x, w, b) })
}
