package emulate_test

import (
	"context"
	"os"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"convtgen/gen"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
	"convtgen/verify/emulate"
)

// spectralSpec is testdata/spectral.yaml with the problem's keys in
// problem and init_inputs set to their YAML values.
func spectralSpec(t *testing.T, init string, problem map[string]string) *spec.Spec {
	t.Helper()
	const path = "testdata/spectral.yaml"
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	root := doc.Content[0]
	for k, v := range problem {
		setKey(t, getKey(t, root, "problem"), k, v)
	}
	if init != "" {
		setKey(t, getKey(t, root, "reference"), "init_inputs", init)
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse(path, out)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return s
}

// TestSpectralForwardMatchesReference runs spectral submissions' whole
// forward on the CPU against the float64 reference of the convolution,
// the ops, the BatchNorm and the mean (output and running statistics
// within 1e-5 relative L2, every output written), for both targets: the
// fixture's geometry (groups, strides, dilations, output padding, an
// asymmetric kernel and input, affine ops reading a per-channel and a
// one-element parameter), one with more samples than a thread holds and
// channel counts off the energy kernel's tiles, one with an odd W
// extent (no Nyquist bin), one with one sample, and #77 in small.
func TestSpectralForwardMatchesReference(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cases := map[string]func() *spec.Spec{
		"fixture": func() *spec.Spec { return spectralSpec(t, "", nil) },
		"ragged": func() *spec.Spec {
			return spectralSpec(t, "[10, 9, [3, 2, 2], [2, 1, 1], [1, 0, 0], [1, 2, 1], 1, -2.0]",
				map[string]string{"batch": "20", "in_channels": "10", "out_channels": "9", "groups": "1", "kernel": "[3, 2, 2]",
					"input": "[2, 3, 3]", "stride": "[2, 1, 1]", "output_padding": "[1, 0, 0]", "dilation": "[1, 2, 1]"})
		},
		"odd_w": func() *spec.Spec {
			return spectralSpec(t, "[3, 3, [2, 2, 3], [1, 1, 2], [0, 0, 0], [1, 1, 1], 3, 1.0]",
				map[string]string{"in_channels": "3", "out_channels": "3", "groups": "3", "kernel": "[2, 2, 3]",
					"input": "[2, 2, 3]", "stride": "[1, 1, 2]", "output_padding": "[0, 0, 0]", "dilation": "[1, 1, 1]"})
		},
		"one_sample": func() *spec.Spec {
			return spectralSpec(t, "", map[string]string{"batch": "1"})
		},
		"l2_77": func() *spec.Spec {
			s := shrink(t, "../../specs/level2/77_scale_batchnorm_globalavgpool.yaml")
			s.Kernel.CUDA = spec.CUDA{Family: spec.Spectral{}}
			return s
		},
	}
	for name, mk := range cases {
		for _, target := range plan.Targets {
			s := mk()
			t.Run(name+"/"+target.Name, func(t *testing.T) {
				t.Parallel()
				p, err := plan.New(s, target)
				if err != nil {
					t.Fatal(err)
				}
				if p.Spectral == nil {
					t.Fatalf("%s: not a spectral plan: %s", s.Name, p.Tile)
				}
				runChain(t, r, dir, p, nil).check(t, p)
			})
		}
	}
}

// TestSpectralMutantsAreCaught: the check above fails a spectral kernel
// with the conjugate bins counted once, the f = 0 bin counted, or the
// weight's sums a tap short.
func TestSpectralMutantsAreCaught(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, m := range map[string][2]string{
		"conjugates once": {"? 1.0f : 2.0f", "? 1.0f : 1.0f"},
		"dc counted":      {"f == 0 || f >= kFreqs", "f >= kFreqs"},
		"a tap short":     {"k < kTaps; ++k", "k < kTaps - 1; ++k"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p, err := plan.New(spectralSpec(t, "", nil), plan.SM80)
			if err != nil {
				t.Fatal(err)
			}
			run := runChain(t, r, dir, p, func(k string) string {
				if !strings.Contains(k, m[0]) {
					t.Fatalf("the kernel has no %q", m[0])
				}
				return strings.Replace(k, m[0], m[1], 1)
			})
			if run.err != nil {
				t.Fatal(run.err)
			}
			if what, e := run.worst(); e <= 1e-5 {
				t.Fatalf("mutant passes: %s within %.2e", what, e)
			}
		})
	}
}

// TestSpectralTransformsStride: the transforms' threads stride over their
// outputs when the grid is smaller than they are (DFTMaxBlocks caps it on
// the GPU; in small no grid reaches the cap, so here the host's launches
// are cut to two blocks and one).
func TestSpectralTransformsStride(t *testing.T) {
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(spectralSpec(t, "", nil), plan.SM80)
	if err != nil {
		t.Fatal(err)
	}
	kernel, host := cudaSources(t, r, p)
	cut := regexp.MustCompile(`(_r?dft(?:_w)?)<<<\d+,`)
	if n := len(cut.FindAllString(host, -1)); n != 6 {
		t.Fatalf("%d transform launches, want 6", n)
	}
	host = cut.ReplaceAllStringFunc(host, func(s string) string {
		if strings.Contains(s, "rdft") {
			return cut.ReplaceAllString(s, "${1}<<<2,")
		}
		return cut.ReplaceAllString(s, "${1}<<<1,")
	})
	prog, err := emulate.BuildSpectral(context.Background(), cxx(t), t.TempDir(), kernel, host, p)
	if err != nil {
		t.Fatal(err)
	}
	ci := newChainInputs(t, p, nil)
	y, after, err := prog.Run(context.Background(), ci.x, ci.in.W, ci.in.B, ci.extras)
	ci.run(y, after, prog.Seed, err).check(t, p)
}
