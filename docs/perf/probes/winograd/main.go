// Probe, not product code: how much error Winograd's minimal filtering
// F(2, r) along W adds to an exact-fp32 (3xTF32) kernel, simulated on the
// CPU, to decide whether a kernel_w 5 form (#68: kernel 3x5x5) can stay
// under the 1e-5 relative L2 gate before building it.
//
// For each output pair y0 = sum_k sum_j d_k[j] g_k[j], y1 = sum_k sum_j
// d_k[j+1] g_k[j] (k over channels and (d, h) taps) it computes
//   - direct: every product by the 3xTF32 split, summed as the tensor
//     cores sum (tcDot);
//   - Winograd F(2, r) at the given points (Toom-Cook, exact rational
//     transforms scaled so the input transform is integral): inputs and
//     weights transformed in fp32, the r+1 products' sums by tcDot, the
//     outputs recombined in fp32;
//
// against a float64 sum, and prints the relative L2 error of each. The
// kernels' F(2, 3) (points 0, 1, -1, infinity) is the calibration: on
// level 1 #61 it measured 3.0e-6 on the GPU.
//
//	go run ./docs/perf/probes/winograd
package main

import (
	"fmt"
	"math"
	"math/rand"

	"convtgen/gen/plan"
)

// transforms is F(2, r) as y = At [(G g) . (Bt d)], Bt integral: the
// product's own construction (plan.WinogradAt) in the probe's names.
type transforms struct {
	At, G, Bt [][]float64
}

func pt(num, den int64) plan.WinogradPoint { return plan.WinogradPoint{Num: num, Den: den} }

var inf = plan.WinogradPoint{Inf: true}

// toomCook builds F(2, r) at the r+1 points.
func toomCook(r int, pts []plan.WinogradPoint) transforms {
	w := plan.WinogradAt(r, pts)
	return transforms{At: w.Out[:], G: w.Weight, Bt: w.In}
}

// tf32 rounds to TF32 (10 mantissa bits), to nearest, ties away.
func tf32(x float32) float32 {
	return math.Float32frombits((math.Float32bits(x) + 0x1000) & 0xffffe000)
}

// mmaAdd is acc + sum of terms as a tensor core adds one m16n8k8
// product's column of eight exact TF32 products into its accumulator
// (Fasi et al., "Numerical behavior of NVIDIA tensor cores", 2021): the
// addends aligned to the largest exponent, the bits below 24 of its
// precision truncated, the exact sum of what is left truncated to fp32.
func mmaAdd(acc float32, terms []float64) float32 {
	big := math.Abs(float64(acc))
	for _, t := range terms {
		big = math.Max(big, math.Abs(t))
	}
	if big == 0 {
		return 0
	}
	_, e := math.Frexp(big)
	q := math.Ldexp(1, e-24)
	sum := math.Trunc(float64(acc)/q) * q
	for _, t := range terms {
		sum += math.Trunc(t/q) * q
	}
	// Toward zero to fp32.
	f := float32(sum)
	if math.Abs(float64(f)) > math.Abs(sum) {
		f = math.Nextafter32(f, 0)
	}
	return f
}

// tcDot is sum_k a[k]*b[k] as the kernels compute it: 3xTF32 splits, the
// three products as three MMAs per chunk of eight (lo*hi, hi*lo, hi*hi
// into one accumulator), a tensor-core sum over span terms at a time,
// the spans' sums added in fp32.
func tcDot(a, b []float32, span int) float32 {
	var total float32
	for s0 := 0; s0 < len(a); s0 += span {
		var acc float32
		for c0 := s0; c0 < min(s0+span, len(a)); c0 += 8 {
			var lohi, hilo, hihi []float64
			for k := c0; k < min(c0+8, len(a)); k++ {
				ah := tf32(a[k])
				al := math.Float32frombits(math.Float32bits(a[k]-ah) & 0xffffe000)
				bh := tf32(b[k])
				bl := tf32(b[k] - bh)
				lohi = append(lohi, float64(al)*float64(bh))
				hilo = append(hilo, float64(ah)*float64(bl))
				hihi = append(hihi, float64(ah)*float64(bh))
			}
			acc = mmaAdd(acc, lohi)
			acc = mmaAdd(acc, hilo)
			acc = mmaAdd(acc, hihi)
		}
		total += acc
	}
	return total
}

// dot32 is sum_j c[j] v[j] in fp32, c exact (small integers or the
// weights' rational coefficients rounded to fp32).
func dot32(c []float64, v []float32) float32 {
	var s float32
	for j := range c {
		if c[j] != 0 {
			s += float32(c[j]) * v[j]
		}
	}
	return s
}

type scheme struct {
	r    int
	span int // reduction terms a tensor-core sum covers (of one product)
	// parts: the W taps split into consecutive runs, each by its own
	// F(2, len) (nil entry: direct).
	parts []*transforms
	sizes []int
}

// relL2 simulates pairs output pairs of K terms each and returns the
// relative L2 error of the scheme against float64.
func relL2(s scheme, K, pairs int, rng *rand.Rand) float64 {
	var num, den float64
	r := s.r
	d := make([][]float32, K)
	g := make([][]float32, K)
	bound := 1 / math.Sqrt(float64(K*r))
	for p := 0; p < pairs; p++ {
		for k := 0; k < K; k++ {
			d[k] = make([]float32, r+1)
			g[k] = make([]float32, r)
			for j := range d[k] {
				d[k][j] = float32(rng.NormFloat64())
			}
			for j := range g[k] {
				g[k][j] = float32((2*rng.Float64() - 1) * bound)
			}
		}
		var t0, t1 float64
		for k := 0; k < K; k++ {
			for j := 0; j < r; j++ {
				t0 += float64(d[k][j]) * float64(g[k][j])
				t1 += float64(d[k][j+1]) * float64(g[k][j])
			}
		}
		var y0, y1 float32
		off := 0
		for pi, size := range s.sizes {
			t := s.parts[pi]
			if t == nil {
				// Direct: the reduction runs over (k, tap) pairs.
				var a0, a1, b []float32
				for k := 0; k < K; k++ {
					for j := off; j < off+size; j++ {
						a0 = append(a0, d[k][j])
						a1 = append(a1, d[k][j+1])
						b = append(b, g[k][j])
					}
				}
				y0 += tcDot(a0, b, s.span*size)
				y1 += tcDot(a1, b, s.span*size)
				off += size
				continue
			}
			n := size + 1
			m := make([]float32, n)
			for i := 0; i < n; i++ {
				a, b := make([]float32, K), make([]float32, K)
				for k := 0; k < K; k++ {
					a[k] = dot32(t.Bt[i], d[k][off:off+n])
					b[k] = dot32(t.G[i], g[k][off:off+size])
				}
				m[i] = tcDot(a, b, s.span)
			}
			y0 += dot32(t.At[0], m)
			y1 += dot32(t.At[1], m)
			off += size
		}
		num += (float64(y0)-t0)*(float64(y0)-t0) + (float64(y1)-t1)*(float64(y1)-t1)
		den += t0*t0 + t1*t1
	}
	return math.Sqrt(num / den)
}

func main() {
	f23 := toomCook(3, []plan.WinogradPoint{pt(0, 1), pt(1, 1), pt(-1, 1), inf})
	f22 := toomCook(2, []plan.WinogradPoint{pt(0, 1), pt(1, 1), inf})
	f25a := toomCook(5, []plan.WinogradPoint{pt(0, 1), pt(1, 1), pt(-1, 1), pt(2, 1), pt(-2, 1), inf})
	f25b := toomCook(5, []plan.WinogradPoint{pt(0, 1), pt(1, 1), pt(-1, 1), pt(1, 2), pt(-1, 2), inf})
	f27 := toomCook(7, []plan.WinogradPoint{pt(0, 1), pt(1, 1), pt(-1, 1), pt(2, 1), pt(-2, 1), pt(1, 2), pt(-1, 2), inf})
	f27b := toomCook(7, []plan.WinogradPoint{pt(0, 1), pt(1, 1), pt(-1, 1), pt(2, 1), pt(-2, 1), pt(3, 1), pt(-3, 1), inf})
	f24 := toomCook(4, []plan.WinogradPoint{pt(0, 1), pt(1, 1), pt(-1, 1), pt(2, 1), inf})
	rng := rand.New(rand.NewSource(1))
	const pairs = 4000
	// #61: 48 channels x 9 (d, h) taps a product, kernel_w 3; #68: 32 x 15, kernel_w 5.
	for _, c := range []struct {
		label string
		K     int
		s     scheme
	}{
		// Spans as the specs have them: #61 16 steps of 32 (one sum for its
		// 432 terms), #68 4 steps of 32 (128 terms of one (d, h, w) tap
		// order, 5 x that in (k, tap) pairs here).
		{"#61 direct (r 3)", 48 * 9, scheme{3, 512, []*transforms{nil}, []int{3}}},
		{"#61 F(2,3) as built", 48 * 9, scheme{3, 512, []*transforms{&f23}, []int{3}}},
		{"#68 direct (r 5), as built", 32 * 15, scheme{5, 128, []*transforms{nil}, []int{5}}},
		{"#68 F(2,3) + F(2,2): 7 products for 10", 32 * 15, scheme{5, 512, []*transforms{&f23, &f22}, []int{3, 2}}},
		{"#68 F(2,5) at 0, ±1, ±2, inf: 6 for 10", 32 * 15, scheme{5, 512, []*transforms{&f25a}, []int{5}}},
		{"#68 F(2,5) at 0, ±1, ±1/2, inf: 6 for 10", 32 * 15, scheme{5, 512, []*transforms{&f25b}, []int{5}}},
		{"#68 F(2,3) + F(2,2), sums of 128 terms", 32 * 15, scheme{5, 128, []*transforms{&f23, &f22}, []int{3, 2}}},
		{"#68 F(2,5) at 0, ±1, ±2, inf, sums of 128", 32 * 15, scheme{5, 128, []*transforms{&f25a}, []int{5}}},
		// #58: 32 channels x 15 (d, h) taps a product, kernel_w 7.
		{"#58 direct (r 7), sums of 128", 32 * 15, scheme{7, 128, []*transforms{nil}, []int{7}}},
		{"#58 F(2,7) at 0, ±1, ±2, ±1/2, inf: 8 for 14", 32 * 15, scheme{7, 128, []*transforms{&f27}, []int{7}}},
		{"#58 F(2,7) at 0, ±1, ±2, ±1/2, inf, sums of 64", 32 * 15, scheme{7, 64, []*transforms{&f27}, []int{7}}},
		{"#58 F(2,7) at 0, ±1, ±2, ±1/2, inf, sums of 32", 32 * 15, scheme{7, 32, []*transforms{&f27}, []int{7}}},
		{"#58 F(2,7) at 0, ±1, ±2, ±3, inf: 8 for 14", 32 * 15, scheme{7, 128, []*transforms{&f27b}, []int{7}}},
		{"#58 F(2,4) + F(2,3): 9 for 14, sums of 128", 32 * 15, scheme{7, 128, []*transforms{&f24, &f23}, []int{4, 3}}},
		{"#58 F(2,5) + F(2,2): 9 for 14, sums of 128", 32 * 15, scheme{7, 128, []*transforms{&f25a, &f22}, []int{5, 2}}},
	} {
		fmt.Printf("%-44s rel L2 %.2e\n", c.label, relL2(c.s, c.K, pairs, rng))
	}
}
