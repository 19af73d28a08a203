package gen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convtgen/gen/spec"
)

// The level-1 specs' tuning notes name their own problems: no warning.
// A copy of one for another shape warns at its tuned choices, in the
// file:line:col form, and naming both hashes.
func TestTuneWarnings(t *testing.T) {
	path := filepath.Join("..", SpecDir, "level1", "58_asymmetric_input_asymmetric_kernel.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse("specs/58.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	if w := TuneWarnings("specs/58.yaml", data, s); len(w) != 0 {
		t.Errorf("the spec's own notes warn: %v", w)
	}
	copied := []byte(strings.Replace(string(data), "  batch: 16\n", "  batch: 2\n", 1))
	c, err := spec.Parse("specs/copy.yaml", copied)
	if err != nil {
		t.Fatal(err)
	}
	w := TuneWarnings("specs/copy.yaml", copied, c)
	if len(w) != 3 {
		t.Fatalf("%d warnings, want the three tuned choices (sm80 cuda, sm90 cuda and triton): %v", len(w), w)
	}
	for _, e := range w {
		target := "sm90"
		if strings.Contains(e.Error(), "kernel.sm80.") {
			target = "sm80"
		}
		if !strings.HasPrefix(e.Error(), "specs/copy.yaml:") || !strings.Contains(e.Error(), ProblemHash(s, target)) || !strings.Contains(e.Error(), ProblemHash(c, target)) {
			t.Errorf("warning %q: want the file's position and both hashes of its target", e)
		}
	}
	if ProblemHash(s, "sm90") == ProblemHash(s, "sm80") || ProblemHash(s, "sm90") == ProblemHash(c, "sm90") {
		t.Errorf("the hash does not tell targets or problems apart")
	}
	// Stamping the copy makes its notes its own: no warning, and stamping
	// again changes nothing.
	stamped, err := StampTuneNotes(copied, c)
	if err != nil {
		t.Fatal(err)
	}
	if w := TuneWarnings("specs/copy.yaml", stamped, c); len(w) != 0 {
		t.Errorf("stamped notes warn: %v", w)
	}
	if again, _ := StampTuneNotes(stamped, c); string(again) != string(stamped) {
		t.Errorf("stamping twice changed the file")
	}
}
