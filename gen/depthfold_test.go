package gen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// TestDepthFoldFilesPerBackend renders a forward that is a depth mean
// alone, both backends and targets: the CUDA files fold it (the sums and
// the weight re-layout, a convolution of one depth position), the Triton
// files compute the convolution as written and the mean after it.
func TestDepthFoldFilesPerBackend(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "specs", "level2", "13_mean_add_softmax_tanh_scaling.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)[:strings.Index(string(src), "    - {add: bias}")]
	files := renderText(t, "mean.yaml", text)
	seen := 0
	for _, f := range files {
		body := string(f.Data)
		switch {
		case strings.Contains(f.Path, "/cuda."):
			seen++
			if !strings.Contains(body, "_fold_weight<<<") || !strings.Contains(body, "static constexpr int kInD = 1,") {
				t.Errorf("%s: not folded", f.Path)
			}
		case strings.Contains(f.Path, "/triton."):
			seen++
			if strings.Contains(body, "_fold_weight") || strings.Contains(body, "moved in front") || !strings.Contains(body, "OUTPUT_SHAPE = (16, 64, 32, 128, 128)") {
				t.Errorf("%s: not the convolution as written", f.Path)
			}
		}
	}
	if seen != 4 {
		t.Errorf("%d submissions, want CUDA and Triton for both targets", seen)
	}
}

// renderText plans the spec text src (its path for messages) for every
// target as the generator does, the chooser included, and renders its
// files.
func renderText(t *testing.T, path, src string) []File {
	t.Helper()
	s, err := spec.Parse(path, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	var ps []*plan.Plan
	for _, tg := range plan.Targets {
		p, err := Plan(s, tg)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, p)
	}
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	files, err := r.Render(ps, path)
	if err != nil {
		t.Fatal(err)
	}
	return files
}
