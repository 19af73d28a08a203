package plan

import (
	"maps"
	"math/big"
	"slices"
	"strconv"
	"strings"
)

// Winograd is F(2, r), Winograd's minimal filtering of a pair of
// neighbouring outputs along W from r taps: with the pair's r+1 inputs d
// (from the taps' lowest W offset on) and the weights g of the taps that
// read d_0 .. d_{r-1} for the first output,
//
//	y_o = sum_k g_k d_{o+k} = sum_p Out[o][p] m_p,
//	m_p = (sum_j In[p][j] d_j) (sum_k Weight[p][k] g_k),
//
// r+1 products where the direct pair takes 2r. The transforms are
// Toom-Cook's at r finite points and infinity, built exactly in rationals
// (correlation is the transpose of polynomial multiplication), each
// product's input row scaled to integers and its weight row divided by the
// same factor, so that the kernels' fp32 input transform is exact in the
// small integers and the fractions sit in the weight, transformed once a
// forward.
type Winograd struct {
	R      int
	In     [][]float64 // (r+1) x (r+1), integers
	Weight [][]float64 // (r+1) x r
	Out    [2][]float64
}

// WinogradPoint is an interpolation point: Num/Den, or infinity.
type WinogradPoint struct {
	Num, Den int64
	Inf      bool
}

// winogradPoints are the points of the F(2, r) the kernels use, by
// kernel_w: r = 3 at 0, ±1 (measured on #61, 3.0e-6); r = 5 at 0, ±1, ±2,
// whose error docs/perf/probes/winograd puts at 2.2e-6 in tensor-core
// sums of 128 terms and 4.3e-6 in sums of 512 (WinogradMaxSpan).
var winogradPoints = map[int][]WinogradPoint{
	3: {{0, 1, false}, {1, 1, false}, {-1, 1, false}, {Inf: true}},
	5: {{0, 1, false}, {1, 1, false}, {-1, 1, false}, {2, 1, false}, {-2, 1, false}, {Inf: true}},
}

// WinogradMaxSpan is, by kernel_w, the most steps a tensor-core sum of
// one product may cover: F(2, 5)'s larger transforms leave less room under
// the 1e-5 gate, so its sums stay at 128 terms (4 steps); none for 3.
var WinogradMaxSpan = map[int]int{5: 4}

// WinogradTaps are the kernel_w a Winograd tile computes, ascending.
func WinogradTaps() []int { return slices.Sorted(maps.Keys(winogradPoints)) }

// winogradTapsText is WinogradTaps for a message: "3 or 5".
func winogradTapsText() string {
	var s []string
	for _, k := range WinogradTaps() {
		s = append(s, strconv.Itoa(k))
	}
	return strings.Join(s, " or ")
}

// NewWinograd is the kernels' F(2, r); false where r has no form.
func NewWinograd(r int) (Winograd, bool) {
	pts, ok := winogradPoints[r]
	if !ok {
		return Winograd{}, false
	}
	return WinogradAt(r, pts), true
}

// WinogradAt builds F(2, r) at the given r+1 distinct points (the last
// may be infinity).
func WinogradAt(r int, pts []WinogradPoint) Winograd {
	n := r + 1
	v := make([][]*big.Rat, n)
	for i, p := range pts {
		v[i] = evalRow(p, n)
	}
	vi := invertRat(v)
	w := Winograd{R: r}
	for i := range n {
		// Row i of V^-T (column i of V^-1), scaled to integers by the
		// least common multiple of its denominators.
		lcm := big.NewInt(1)
		for j := range n {
			d := vi[j][i].Denom()
			lcm.Mul(lcm, new(big.Int).Quo(d, new(big.Int).GCD(nil, nil, lcm, d)))
		}
		scale := new(big.Rat).SetInt(lcm)
		in := make([]float64, n)
		for j := range n {
			in[j], _ = new(big.Rat).Mul(vi[j][i], scale).Float64()
		}
		w.In = append(w.In, in)
		g := evalRow(pts[i], r)
		weight := make([]float64, r)
		for k := range g {
			weight[k], _ = new(big.Rat).Quo(g[k], scale).Float64()
		}
		w.Weight = append(w.Weight, weight)
	}
	for o := range 2 {
		for _, p := range pts {
			f, _ := evalRow(p, 2)[o].Float64()
			w.Out[o] = append(w.Out[o], f)
		}
	}
	return w
}

// evalRow evaluates a polynomial of k coefficients at p (at infinity: its
// leading coefficient).
func evalRow(p WinogradPoint, k int) []*big.Rat {
	row := make([]*big.Rat, k)
	for j := range row {
		row[j] = new(big.Rat)
	}
	if p.Inf {
		row[k-1].SetInt64(1)
		return row
	}
	x, at := big.NewRat(1, 1), big.NewRat(p.Num, p.Den)
	for j := range k {
		row[j].Set(x)
		x = new(big.Rat).Mul(x, at)
	}
	return row
}

// invertRat inverts a nonsingular rational matrix (Gauss-Jordan).
func invertRat(a [][]*big.Rat) [][]*big.Rat {
	n := len(a)
	m := make([][]*big.Rat, n)
	for i := range m {
		m[i] = make([]*big.Rat, 2*n)
		for j := range n {
			m[i][j] = new(big.Rat).Set(a[i][j])
			m[i][n+j] = new(big.Rat)
		}
		m[i][n+i].SetInt64(1)
	}
	for c := range n {
		p := c + slices.IndexFunc(m[c:], func(row []*big.Rat) bool { return row[c].Sign() != 0 })
		m[c], m[p] = m[p], m[c]
		inv := new(big.Rat).Inv(m[c][c])
		for j := range m[c] {
			m[c][j].Mul(m[c][j], inv)
		}
		for i := range n {
			if i == c || m[i][c].Sign() == 0 {
				continue
			}
			f := new(big.Rat).Set(m[i][c])
			for j := range m[i] {
				m[i][j].Sub(m[i][j], new(big.Rat).Mul(f, m[c][j]))
			}
		}
	}
	out := make([][]*big.Rat, n)
	for i := range out {
		out[i] = m[i][n:]
	}
	return out
}

// Products is r+1, the products a pair takes.
func (w Winograd) Products() int { return w.R + 1 }

// ReadPos is the inputs along W that pairs consecutive pairs read.
func (w Winograd) ReadPos(pairs int) int { return 2*pairs + w.R - 1 }

// DirectProducts is 2r, the products a pair takes without the transform.
func (w Winograd) DirectProducts() int { return 2 * w.R }
