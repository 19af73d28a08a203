package gen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBigSpecsAreWide: the big configurations bigcheck.py runs on the GPU
// render, and every one of their submissions computes offsets in 64 bits
// (each has a tensor of 2^31 elements or more).
func TestBigSpecsAreWide(t *testing.T) {
	dir := t.TempDir()
	n, err := WriteSpecs("..", []string{"verify/testdata/big"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	if n < 7 {
		t.Fatalf("%d big specs rendered, want the two reproducers and one per CUDA family and Triton", n)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*.py"))
	subs := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		switch filepath.Base(f) {
		case "cuda.sm80.py", "cuda.sm90.py":
			subs++
			if !strings.Contains(string(data), "typedef long long idx_t;") {
				t.Errorf("%s: offsets not 64-bit", f)
			}
		case "triton.sm80.py", "triton.sm90.py":
			subs++
			if !strings.Contains(string(data), "INT64_OFFSETS=True") {
				t.Errorf("%s: offsets not 64-bit", f)
			}
		}
	}
	if subs < 9 {
		t.Errorf("%d submissions, want 9 at least", subs)
	}
}
