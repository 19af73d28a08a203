package geom_test

import (
	"math"
	"math/rand"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/ref"
)

// TestOnePositionStridesKeepOutput: on random convolutions whose input
// has one position along some axes (any kernel, stride, padding, output
// padding, dilation, groups), the raised strides give the same output
// size and, from the same input, weight and bias, the same float64
// output as the convolution asked for; every raised stride phase holds
// at most one tap; axes with more than one position keep their stride.
func TestOnePositionStridesKeepOutput(t *testing.T) {
	r := rand.New(rand.NewSource(5))
	raised := 0
	for n := 0; n < 600; n++ {
		g := 1 + r.Intn(3)
		c := geom.Conv{Batch: 1 + r.Intn(2), InChannels: g * (1 + r.Intn(3)), OutChannels: g * (1 + r.Intn(3)), Groups: g, Bias: r.Intn(2) == 0}
		for a := range 3 {
			c.In[a] = 1
			if r.Intn(3) == 0 {
				c.In[a] = 2 + r.Intn(3)
			}
			c.Kernel[a], c.Stride[a], c.Dilation[a] = 1+r.Intn(4), 1+r.Intn(3), 1+r.Intn(3)
			c.Padding[a] = r.Intn(c.Dilation[a]*(c.Kernel[a]-1) + 1)
			c.OutputPadding[a] = r.Intn(max(c.Stride[a], c.Dilation[a]))
		}
		if o := c.Out(); o[0] < 1 || o[1] < 1 || o[2] < 1 {
			continue
		}
		d, axes := c.OnePositionStrides()
		if d.Out() != c.Out() {
			t.Fatalf("%+v: output %v, raised %v", c, c.Out(), d.Out())
		}
		for a := range 3 {
			if axes[a] != (d.Stride[a] != c.Stride[a]) || c.In[a] > 1 && axes[a] {
				t.Fatalf("%+v: axes %v, strides %v", c, axes, d.Stride)
			}
			if !axes[a] {
				continue
			}
			raised++
			if d.OutputPadding[a] >= max(d.Stride[a], d.Dilation[a]) {
				t.Fatalf("%+v: output padding %d at stride %d", c, d.OutputPadding[a], d.Stride[a])
			}
			for res := 0; res < d.Stride[a]; res++ {
				taps := 0
				for k := 0; k < d.Kernel[a]; k++ {
					if (res+d.Padding[a]-k*d.Dilation[a])%d.Stride[a] == 0 {
						taps++
					}
				}
				if taps > 1 {
					t.Fatalf("%+v: phase %d along axis %d has %d taps", d, res, a, taps)
				}
			}
		}
		x, w := values(r, c.InputLen()), values(r, c.WeightLen())
		var b []float32
		if c.Bias {
			b = values(r, c.OutChannels)
		}
		want, got := ref.Forward(c, x, w, b), ref.Forward(d, x, w, b)
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
				t.Fatalf("%+v: output %d is %g, want %g", c, i, got[i], want[i])
			}
		}
	}
	if raised < 250 {
		t.Errorf("%d axes raised, want at least 250", raised)
	}
}

func values(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
	}
	return v
}

// TestFoldOnePositionTapsKeepsMemory: on random convolutions whose leading
// axes often have one input position (any kernel, stride, dilation and
// groups, padding mostly 0), the folded convolution computes, from the
// same input and weight memory, the same float64 output memory; it folds
// exactly the leading axes that qualify; a bias stays the module's, each
// folded channel reading its module channel's.
func TestFoldOnePositionTapsKeepsMemory(t *testing.T) {
	r := rand.New(rand.NewSource(9))
	folds, biased := [4]int{}, 0
	for n := 0; n < 600; n++ {
		g := 1 + r.Intn(3)
		c := geom.Conv{Batch: 1 + r.Intn(2), InChannels: g * (1 + r.Intn(3)), OutChannels: g * (1 + r.Intn(3)), Groups: g, Bias: r.Intn(5) == 0}
		for a := range 3 {
			c.In[a] = 1
			if r.Intn(4) == 0 {
				c.In[a] = 2 + r.Intn(3)
			}
			c.Kernel[a], c.Stride[a], c.Dilation[a] = 1+r.Intn(4), 1+r.Intn(3), 1+r.Intn(2)
			if r.Intn(6) == 0 {
				c.Padding[a] = r.Intn(c.Dilation[a]*(c.Kernel[a]-1) + 1)
			}
			if r.Intn(6) == 0 {
				c.OutputPadding[a] = r.Intn(max(c.Stride[a], c.Dilation[a]))
			}
		}
		if o := c.Out(); o[0] < 1 || o[1] < 1 || o[2] < 1 {
			continue
		}
		f, axes := c.FoldOnePositionTaps()
		folds[axes]++
		want := 0
		for a := range 3 {
			if c.In[a] != 1 || c.Padding[a] != 0 || c.OutputPadding[a] != 0 || c.Dilation[a] != 1 && c.Kernel[a] != 1 {
				break
			}
			want++
		}
		if factor := f.OutChannels / c.OutChannels; axes > 0 && factor == 1 || axes == 0 && f != c || axes > want {
			t.Fatalf("%+v: folded %d axes (%+v), want up to %d", c, axes, f, want)
		}
		if axes == 0 {
			continue
		}
		if f.InputLen() != c.InputLen() || f.WeightLen() != c.WeightLen() || f.OutputLen() != c.OutputLen() || f.Groups != c.Groups {
			t.Fatalf("%+v: folded %+v moves memory", c, f)
		}
		x, w := values(r, c.InputLen()), values(r, c.WeightLen())
		var b []float32
		if c.Bias {
			b = values(r, c.OutChannels)
			biased++
		}
		want64, got := ref.Forward(c, x, w, b), ref.Forward(f, x, w, geom.SharedBias(b, f.OutChannels/c.OutChannels))
		for i := range want64 {
			if math.Abs(got[i]-want64[i]) > 1e-12*(1+math.Abs(want64[i])) {
				t.Fatalf("%+v: output %d is %g, want %g", c, i, got[i], want64[i])
			}
		}
	}
	if folds[1] < 20 || folds[2] < 20 || folds[3] < 20 || biased < 20 {
		t.Errorf("folds by axes %v, %d with a bias: want each seen at least 20 times", folds, biased)
	}
}

// TestCeilingsOf: an H100 run's floors use its slower memory, the same
// arithmetic; any other name gets the H200's ceilings.
func TestCeilingsOf(t *testing.T) {
	h100, h200 := geom.CeilingsOf("NVIDIA H100 80GB HBM3"), geom.CeilingsOf("NVIDIA H200")
	if h100.BW >= h200.BW || h100.FFMA != h200.FFMA || h100.TF32x3 != h200.TF32x3 {
		t.Errorf("H100 %+v against H200 %+v: want less bandwidth, the same rates", h100, h200)
	}
	if geom.CeilingsOf("") != geom.H200 {
		t.Errorf("an unnamed GPU gets %+v, want the H200's", geom.CeilingsOf(""))
	}
	// Memory-bound: the floor scales with the bandwidth; compute-bound: not.
	if got, want := h100.FloorMS(1, 1e9, "fp32")/h200.FloorMS(1, 1e9, "fp32"), h200.BW/h100.BW; math.Abs(got-want) > 1e-9 {
		t.Errorf("memory-bound floor ratio %v, want %v", got, want)
	}
	if h100.FloorMS(1e12, 1, "3xtf32") != h200.FloorMS(1e12, 1, "3xtf32") {
		t.Errorf("compute-bound floors differ")
	}
}
