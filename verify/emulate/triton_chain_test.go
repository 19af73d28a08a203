package emulate_test

import (
	"context"
	"os/exec"
	"testing"

	"convtgen/gen"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
	"convtgen/verify/emulate"
	"convtgen/verify/gpu"
)

// tritonChainPlan plans s's Triton file alone for sm90 (the Triton files
// of both targets are the same code; only a chooser's tiling differs),
// with tiles of 32 rows by 16 channels unless triton says otherwise, so
// that the emulation stays quick.
func tritonChainPlan(t *testing.T, s *spec.Spec, triton spec.Triton) *plan.Plan {
	t.Helper()
	if triton.BlockM == 0 {
		triton.BlockM, triton.BlockN, triton.BlockK = 32, 16, 16
	}
	s.Kernel = spec.Kernel{Backends: []string{"triton"}, Triton: triton}
	p, err := plan.New(s, plan.SM90)
	if err != nil {
		t.Fatalf("%s: %v", s.Name, err)
	}
	return p
}

// runTritonChain renders p's Triton submission, applies edit to it (nil:
// none), runs its whole forward in the emulator on inputs shift changes
// (nil: none) and compares with the float64 reference.
func runTritonChain(t *testing.T, r *gen.Renderer, python string, p *plan.Plan, edit func(string) string, shift func(*gpu.Inputs)) chainRun {
	t.Helper()
	src := renderTriton(t, r, p)
	if edit != nil {
		src = edit(src)
	}
	ci := newChainInputs(t, p, shift)
	c := p.Conv
	xShape := []int{c.Batch, c.InChannels, c.In[0], c.In[1], c.In[2]}
	if len(p.Epilogue.Chain.Prologue) > 0 {
		xShape = p.Spec.Reference.Inputs[0].Shape
	}
	seed, err := emulate.SeedFor([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	y, after, err := emulate.RunTritonChain(context.Background(), python, []byte(src), seed, ci.x, ci.in.W, ci.in.B, xShape, p.Epilogue.Chain, ci.extras)
	return ci.run(y, after, seed, err)
}

func python3(t *testing.T) string {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	return python
}

// TestLevel2TritonForwardMatchesReference runs every level-2 problem's
// Triton file in small, its whole forward (prologue, convolution with
// the fused store, the kernels after it, BatchNorm updates) as its
// forward function launches it: every output written, each element at
// most once a launch, relative L2 within 1e-5 of the float64 reference
// on the output and on the running statistics.
func TestLevel2TritonForwardMatchesReference(t *testing.T) {
	python := python3(t)
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range level2Specs(t) {
		s := shrink(t, path)
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			p := tritonChainPlan(t, s, spec.Triton{})
			run := runTritonChain(t, r, python, p, nil, nil)
			run.check(t, p)
			name, e := run.worst()
			t.Logf("worst relative L2 error %.2e (%s)", e, name)
		})
	}
}
