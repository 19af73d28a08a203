package emulate_test

import (
	"fmt"
	"strings"
	"testing"

	"convtgen/gen"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// storeSpecText is a level-2 problem in small whose leading pointwise ops
// read a tensor of every kind the store reads: a 0-dim parameter (e0),
// a second input of the convolution output's shape (e1) and a
// per-channel parameter (e2), besides the convolution's own value; the
// geometry is filled in (kernel, stride, output_padding, input, and the
// second input's shape, the output's).
const storeSpecText = `version: 2
name: l2_store_reads
title: store reads a 0-dim, an elementwise and a per-channel tensor
problem:
  batch: 2
  in_channels: 4
  out_channels: 8
  kernel: %[1]d
  input: [%[4]d, %[5]d, %[6]d]
  stride: %[2]d
  padding: 1
  output_padding: %[3]d
  bias: true
reference:
  attr: conv_transpose
  params:
    - {name: in_channels, type: int}
    - {name: out_channels, type: int}
    - {name: kernel_size, type: int}
    - {name: stride, type: int}
    - {name: padding, type: int}
    - {name: output_padding, type: int}
    - {name: bias_shape, type: shape}
    - {name: scale, type: float}
  conv:
    - in_channels
    - out_channels
    - kernel_size
    - stride=stride
    - padding=padding
    - output_padding=output_padding
  init_inputs: [4, 8, %[1]d, %[2]d, 1, %[3]d, [8, 1, 1, 1], 0.75]
  layers:
    - {attr: scale, parameter: tensor, value: "scale"}
    - {attr: bias, parameter: randn, shape: "bias_shape"}
  inputs:
    - {name: x}
    - {name: add_input, shape: [2, 8, %[7]d, %[8]d, %[9]d]}
  forward:
    - {mul: scale}
    - {add: add_input}
    - {sub: bias}
    - {mul: conv}
    - hardswish
`

// storeSpec is storeSpecText for kernel k, stride s, output_padding op
// (padding 1) and input in, planned with family on sm80 (where the wgmma
// tile runs as mma.sync).
func storeSpec(t *testing.T, k, s, op int, in [3]int, family spec.Family) *plan.Plan {
	t.Helper()
	var out [3]int
	for d := range 3 {
		out[d] = (in[d]-1)*s - 2 + k + op
	}
	text := fmt.Sprintf(storeSpecText, k, s, op, in[0], in[1], in[2], out[0], out[1], out[2])
	sp, err := spec.Parse("store_reads.yaml", []byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	sp.Kernel.CUDA = spec.CUDA{Family: family}
	p, err := plan.New(sp, plan.SM80)
	if err != nil {
		t.Fatal(err)
	}
	want := []plan.StoreExtra{{Arg: 0, Read: plan.StoreScalar}, {Arg: 1, Read: plan.StoreElement}, {Arg: 2, Read: plan.StoreChannel}}
	if len(p.Epilogue.Ops) != 5 || fmt.Sprint(p.Epilogue.Extras) != fmt.Sprint(want) || len(p.Epilogue.Chain.Passes) != 0 {
		t.Fatalf("the store applies %d ops reading %v (%d passes after it), want all 5 reading %v", len(p.Epilogue.Ops),
			p.Epilogue.Extras, len(p.Epilogue.Chain.Passes), want)
	}
	return p
}

// storeCase is a kernel form of the store, pinned by its family and
// geometry.
type storeCase struct {
	name         string
	k, s, op     int
	in           [3]int
	family       spec.Family
	is           func(plan.Tile) bool
	fill         bool
	kernelParams int // the main kernel's pointer parameters: x, wt, bias, the three tensors, y
}

var storeCases = []storeCase{
	{"ffma", 3, 2, 1, [3]int{2, 3, 4}, spec.FFMA{}, func(t plan.Tile) bool { return t.FFMA != nil }, false, 7},
	{"ffma tap-less", 3, 4, 1, [3]int{2, 3, 4}, spec.FFMA{}, func(t plan.Tile) bool { return t.FFMA != nil }, false, 7},
	{"mma", 3, 2, 1, [3]int{2, 3, 4}, spec.MMA{}, func(t plan.Tile) bool { return t.MMA != nil }, false, 7},
	{"direct", 3, 2, 1, [3]int{2, 3, 4}, spec.Direct{}, func(t plan.Tile) bool { return t.Direct != nil && t.TW() == 0 }, false, 7},
	{"direct window", 3, 2, 1, [3]int{2, 3, 4}, spec.Direct{TW: 2}, func(t plan.Tile) bool { return t.TW() == 2 }, false, 7},
	{"direct window float4", 4, 2, 0, [3]int{3, 4, 4}, spec.Direct{TW: 4}, func(t plan.Tile) bool { return t.TW() == 4 && t.Direct != nil }, false, 7},
	{"wgmma", 3, 2, 1, [3]int{2, 3, 4}, spec.WGMMA{}, func(t plan.Tile) bool { return t.WGMMA != nil && !t.WGMMA.KWInN && !t.WGMMA.Winograd }, false, 7},
	{"wgmma winograd", 3, 1, 0, [3]int{2, 3, 4}, spec.WGMMA{Winograd: true}, func(t plan.Tile) bool { return t.WGMMA != nil && t.WGMMA.Winograd }, false, 7},
	{"wgmma kw_in_n", 3, 2, 1, [3]int{2, 3, 4}, spec.WGMMA{KWInN: true}, func(t plan.Tile) bool { return t.WGMMA != nil && t.WGMMA.KWInN }, false, 7},
	{"wgmma fill", 3, 4, 1, [3]int{2, 3, 4}, spec.WGMMA{}, func(t plan.Tile) bool { return t.WGMMA != nil && !t.WGMMA.KWInN }, true, 7},
	{"wgmma kw_in_n fill", 3, 4, 1, [3]int{2, 3, 4}, spec.WGMMA{KWInN: true}, func(t plan.Tile) bool { return t.WGMMA != nil && t.WGMMA.KWInN }, true, 7},
}

func (c storeCase) plan(t *testing.T) *plan.Plan {
	t.Helper()
	p := storeSpec(t, c.k, c.s, c.op, c.in, c.family)
	if !c.is(p.Tile) || (p.Names.Fill != "") != c.fill {
		t.Fatalf("%s: tile %+v, fill %q: not the case asked for", c.name, p.Tile, p.Names.Fill)
	}
	return p
}

// TestFusedStoresReadTensors runs the forward of a problem whose store
// reads a 0-dim, an elementwise and a per-channel tensor in every kernel
// form that stores (and the fill of tap-less phases): every output
// written once, within 1e-5 of the float64 reference; the main kernel and
// the fill take the three tensors and nothing more.
func TestFusedStoresReadTensors(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range storeCases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := c.plan(t)
			run := runChain(t, r, dir, p, func(k string) string {
				if got := pointerParams(k, p.Names.Kernel); got != c.kernelParams {
					t.Errorf("%s takes %d pointer parameters, want %d", p.Names.Kernel, got, c.kernelParams)
				}
				if p.Names.Fill != "" {
					if got := pointerParams(k, p.Names.Fill); got != c.kernelParams-2 {
						t.Errorf("%s takes %d pointer parameters, want %d", p.Names.Fill, got, c.kernelParams-2)
					}
				}
				return k
			})
			run.check(t, p)
		})
	}
}

// pointerParams counts the pointer parameters of kernel name's definition.
func pointerParams(src, name string) int {
	i := strings.Index(src, name+"(")
	if i < 0 {
		return -1
	}
	rest := src[i+len(name)+1:]
	return strings.Count(rest[:strings.Index(rest, ")")], "*")
}

// TestFusedStoreMutantsAreCaught plants a bug in how a store reads the
// fused ops' tensors: the forward check must fail.
func TestFusedStoreMutantsAreCaught(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	byName := map[string]storeCase{}
	for _, c := range storeCases {
		byName[c.name] = c
	}
	for _, m := range []struct {
		name, form, old, new string
	}{
		// The per-channel tensor loaded for the next channel of the group.
		{"per-channel tensor at the wrong channel", "ffma",
			"__ldg(e2 + g * kCoutG + co)", "__ldg(e2 + g * kCoutG + (co + 1) % kCoutG)"},
		// The hoisted values of the fragments' columns mixed up: both
		// columns of a pair read the first's.
		{"wgmma fragment reads its pair's first channel", "wgmma",
			"e2v[e / 4 * 2 + e % 2]", "e2v[e / 4 * 2]"},
		// The second input read at the neighbouring channel's element (in
		// bounds: the channels are even).
		{"elementwise tensor at the wrong index", "mma",
			"__ldg(e1 + row + (idx_t)c * kOutDHW)", "__ldg(e1 + row + (idx_t)(c ^ 1) * kOutDHW)"},
		{"elementwise tensor off by one along W in the window", "direct window float4",
			"__ldg(e1 + (dst - y) + j + 1)", "__ldg(e1 + (dst - y) + j)"},
		// The 0-dim parameter taken as 1.
		{"0-dim tensor ignored", "direct", "const float e0v = __ldg(e0);", "const float e0v = 1.0f;"},
		// The fill's per-channel read at channel 0.
		{"fill reads channel 0", "wgmma fill",
			"__ldg(e2 + (int)(i / kOutDHW % kCout))", "__ldg(e2 + 0)"},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			p := byName[m.form].plan(t)
			edited := false
			run := runChain(t, r, dir, p, func(k string) string {
				e := strings.Replace(k, m.old, m.new, 1)
				edited = e != k
				return e
			})
			if !edited {
				t.Fatalf("the edit does not apply to the %s kernel source", m.form)
			}
			if run.err != nil {
				t.Logf("caught: %v", strings.SplitN(run.err.Error(), "\n", 2)[0])
				return
			}
			if nan := nanCount(run.y); nan > 0 {
				t.Logf("caught: %d outputs NaN", nan)
				return
			}
			name, e := run.worst()
			if e <= 1e-5 {
				t.Fatalf("mutant %s: relative L2 error %.2e (worst: %s), every output written: not caught", m.name, e, name)
			}
			t.Logf("caught: %s: relative L2 error %.2e", name, e)
		})
	}
}
