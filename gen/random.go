package gen

import (
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
)

// RandomBackends are the backends a random configuration is rendered for.
var RandomBackends = []string{"cuda", "triton"}

// RandomSpec writes the YAML of one random valid small configuration:
// stride, dilation and kernel sizes of 1 to 3 (kernel up to 5) per
// dimension, odd and prime extents, groups, bias, output_padding, either
// precision, and half of the time an explicit random tile, so the sweep
// exercises the kernel's loader and fragment mappings as well as its
// geometry. The caller validates it.
func RandomSpec(r *rand.Rand, name string) string {
	pick := func(xs ...int) int { return xs[r.Intn(len(xs))] }
	var k, in, s, p, op, dil [3]int
	for i := range 3 {
		k[i] = 1 + r.Intn(5)
		in[i] = pick(1, 2, 3, 5, 7, 8, 11, 13)
		s[i] = 1 + r.Intn(3)
		dil[i] = 1 + r.Intn(3)
		op[i] = r.Intn(max(s[i], dil[i]))
		span := dil[i]*(k[i]-1) + op[i] // output = (in-1)*s + span + 1 - 2p must stay positive
		p[i] = r.Intn((in[i]-1)*s[i]+span+1) / 2
		if r.Intn(3) == 0 {
			p[i] = 0
		}
	}
	groups := pick(1, 1, 2, 3, 4)
	cin := groups * (1 + r.Intn(pick(3, 9, 17)))
	cout := groups * (1 + r.Intn(pick(3, 9, 17)))
	bias := r.Intn(2) == 0
	precision := []string{"fp32", "3xtf32"}[r.Intn(2)]
	tile := ""
	switch {
	case r.Intn(2) == 0:
	case precision == "fp32":
		tile = fmt.Sprintf("\n  tile: {bm: %d, bn: %d, bk: %d, tm: %d, tn: %d}",
			pick(64, 128, 256, 512), pick(8, 16, 32, 64), pick(1, 3, 4, 8, 16), pick(4, 8), pick(4, 8))
	default:
		tile = fmt.Sprintf("\n  tile: {bm: %d, bn: %d, bk: %d, wm: %d, wn: %d, presplit: %t}",
			pick(64, 128, 256), pick(8, 16, 32, 64), pick(8, 16, 24), pick(16, 32, 64), pick(8, 16, 32), r.Intn(2) == 0)
	}
	list := func(v [3]int) string { return fmt.Sprintf("[%d, %d, %d]", v[0], v[1], v[2]) }
	return fmt.Sprintf(`version: 1
name: %s
title: random configuration
problem:
  batch: %d
  in_channels: %d
  out_channels: %d
  kernel: %s
  input: %s
  stride: %s
  padding: %s
  output_padding: %s
  dilation: %s
  groups: %d
  bias: %t
  input_dist: %s
reference:
  params:
    - {name: in_channels, type: int}
    - {name: out_channels, type: int}
    - {name: kernel_size, type: tuple}
    - {name: stride, type: tuple, default: [1, 1, 1]}
    - {name: padding, type: tuple, default: [0, 0, 0]}
    - {name: output_padding, type: tuple, default: [0, 0, 0]}
    - {name: dilation, type: tuple, default: [1, 1, 1]}
    - {name: groups, type: int, default: 1}
    - {name: bias, type: bool, default: false}
  conv:
    - in_channels
    - out_channels
    - kernel_size
    - stride=stride
    - padding=padding
    - output_padding=output_padding
    - dilation=dilation
    - groups=groups
    - bias=bias
  init_inputs: [%d, %d, %s, %s, %s, %s, %s, %d, %t]
kernel:
  backends: [%s]
  precision: %s%s
`, name, 1+r.Intn(3), cin, cout, list(k), list(in), list(s), list(p), list(op), list(dil), groups, bias,
		[]string{"rand", "randn"}[r.Intn(2)],
		cin, cout, list(k), list(s), list(p), list(op), list(dil), groups, bias,
		strings.Join(RandomBackends, ", "), precision, tile)
}

// Random returns n random configurations that pass validation and
// planning, as planned specs, drawing again when a draw is invalid (an
// infeasible tile, say).
func Random(n int, seed int64) ([]Loaded, error) {
	r := rand.New(rand.NewSource(seed))
	var out []Loaded
	for tries := 0; len(out) < n; tries++ {
		if tries > 100*n {
			return nil, fmt.Errorf("random: only %d of %d draws were valid", len(out), n)
		}
		name := fmt.Sprintf("rand_%d_%03d", seed, len(out))
		path := "random/" + name + ".yaml"
		if p, errs := parseAndPlan(path, []byte(RandomSpec(r, name))); errs == nil {
			out = append(out, Loaded{Path: path, Plan: p})
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
		files, err := r.Render(l.Plan, l.Path)
		if err != nil {
			return 0, err
		}
		for _, f := range files {
			if err := writeAtomic(filepath.Join(dir, f.Path), f.Data); err != nil {
				return 0, err
			}
		}
	}
	return len(specs), os.WriteFile(filepath.Join(dir, "SEED"), []byte(fmt.Sprintf("%d %d\n", seed, n)), 0o644)
}
