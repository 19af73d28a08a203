package plan_test

import (
	"strings"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

func genericSpec(t *testing.T, c geom.Conv, backends ...string) (*plan.Plan, error) {
	t.Helper()
	s, err := spec.Parse("limits.yaml", []byte(spec.Generic("limits", "", c, "rand", spec.Kernel{Backends: backends})))
	if err != nil {
		t.Fatal(err)
	}
	return plan.New(s, plan.SM90)
}

// TestPhasesOnlyResiduesWithOutputs: at stride 16 with an output of 3
// along each dimension only the residues below 3 hold outputs, so the
// plan enumerates 27 phases, not 16^3 (stride 100000 hung the planner
// when it walked every residue).
func TestPhasesOnlyResiduesWithOutputs(t *testing.T) {
	one := [3]int{1, 1, 1}
	c := geom.Conv{Batch: 1, InChannels: 1, OutChannels: 1, Groups: 1, Kernel: [3]int{3, 3, 3}, In: one,
		Stride: [3]int{16, 16, 16}, Dilation: one, Bias: true}
	p, err := genericSpec(t, c, "triton") // the CUDA file folds the taps (geom.Conv.FoldOnePositionTaps)
	if err != nil {
		t.Fatal(err)
	}
	if p.Out != [3]int{3, 3, 3} || len(p.Phases) != 27 {
		t.Errorf("output %v, %d phases; want [3 3 3] and 27", p.Out, len(p.Phases))
	}
	for _, ph := range p.Phases {
		for i := range 3 {
			if ph.R[i] >= p.Out[i] {
				t.Errorf("phase of residue %v past the output %v", ph.R, p.Out)
			}
		}
	}
}

// TestTablesOverConstantMemory: 4096 phases with outputs (stride 16 with
// long outputs) do not fit the kernel's tables into 64 KiB of constant
// memory; the CUDA plan refuses them on the stride, a Triton-only plan
// (no tables) takes them.
func TestTablesOverConstantMemory(t *testing.T) {
	one := [3]int{1, 1, 1}
	c := geom.Conv{Batch: 1, InChannels: 1, OutChannels: 1, Groups: 1, Kernel: [3]int{3, 3, 3}, In: [3]int{4, 4, 4},
		Stride: [3]int{16, 16, 16}, Dilation: one}
	_, err := genericSpec(t, c, "cuda")
	want := "limits.yaml:9:11: problem.stride: gives 4096 stride phases with outputs and 27 taps: their tables take 147888 bytes of constant memory, and a kernel has 65536 (got [16, 16, 16])"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v\nwant %s", err, want)
	}
	if _, err := genericSpec(t, c, "triton"); err != nil {
		t.Errorf("triton only: %v", err)
	}
}
