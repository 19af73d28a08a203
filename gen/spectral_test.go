package gen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// TestChooserTakesSpectralWhereItApplies: with the kernel left open the
// chooser takes the spectral plan for #77 on both targets (its estimate
// a fraction of the convolution's) and for no other level-2 problem.
func TestChooserTakesSpectralWhereItApplies(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "specs", "level2", "*.yaml"))
	if err != nil || len(paths) != 19 {
		t.Fatalf("%d level-2 specs: %v", len(paths), err)
	}
	for _, path := range paths {
		s, err := spec.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, target := range plan.Targets {
			p, err := Plan(s, target)
			if err != nil {
				t.Fatalf("%s for %s: %v", s.Name, target.Name, err)
			}
			want := s.Name == "l2_77_scale_batchnorm_globalavgpool"
			if got := p.Spectral != nil; got != want {
				t.Errorf("%s for %s: spectral %t, want %t (%s)", s.Name, target.Name, got, want, p.Tile)
			}
			if want && (p.Unfolded == nil || p.Unfolded.Spectral != nil || p.TritonLeftOut != "") {
				t.Errorf("%s for %s: the Triton file's plan %v (left out: %q), want the forward as written", s.Name, target.Name, p.Unfolded, p.TritonLeftOut)
			}
		}
	}
}

// TestSpectralRefusals: a spectral kernel named where it cannot compute
// the forward is refused at kernel.cuda.spectral, saying why: padding
// (the output is cropped), a forward of another form (#96: a max pool
// before the mean, and padding: both said). A Triton backend named
// beside it gets the forward as written (Plan.Unfolded).
func TestSpectralRefusals(t *testing.T) {
	fixture, err := os.ReadFile(filepath.Join("..", "verify", "emulate", "testdata", "spectral.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	padded := strings.NewReplacer(
		"  dilation: [2, 1, 3]\n", "  dilation: [2, 1, 3]\n  padding: [0, 1, 0]\n",
		"    - {name: dilation, type: shape}\n", "    - {name: dilation, type: shape}\n    - {name: padding, type: shape}\n",
		"    - dilation=dilation\n", "    - dilation=dilation\n    - padding=padding\n",
		"[2, 1, 3], 2, 0.5]", "[2, 1, 3], [0, 1, 0], 2, 0.5]",
	).Replace(string(fixture))
	named := strings.Replace(string(fixture), "kernel:\n  cuda: {spectral: {}}", "kernel:\n  backends: [cuda, triton]\n  cuda: {spectral: {}}", 1)
	l96, err := os.ReadFile(filepath.Join("..", "specs", "level2", "96_multiply_max_globalavgpool_clamp.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	other := string(l96) + "kernel:\n  cuda: {spectral: {}}\n"
	for name, c := range map[string]struct{ src, says string }{
		"padding": {padded, "needs padding 0"},
		"#96":     {other, "needs padding 0"},
		"#96 too": {other, "needs a forward of affine ops"},
	} {
		s, err := spec.Parse("spec.yaml", []byte(c.src))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		_, err = plan.New(s, plan.SM90)
		if err == nil || !strings.Contains(err.Error(), "kernel.cuda.spectral") || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: got %v, want an error at kernel.cuda.spectral saying %q", name, err, c.says)
		}
	}
	s, err := spec.Parse("spec.yaml", []byte(named))
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.New(s, plan.SM90)
	if err != nil || p.Spectral == nil || p.Unfolded == nil || p.Unfolded.Spectral != nil || p.Unfolded.Epilogue.Chain == nil {
		t.Errorf("spectral with Triton named: plan %v, Triton's %v (%v)", p, p != nil && p.Unfolded != nil, err)
	}
}
