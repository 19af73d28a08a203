package emulate_test

import (
	"context"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"convtgen/gen"
	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/gen/ref"
	"convtgen/gen/spec"
	"convtgen/verify/emulate"
	"convtgen/verify/gpu"
)

// TestTritonWriteCountsAndOrder plants, in a Triton submission with every
// re-layout (channels last, a zero border, the weight's TF32 parts), an
// output tile stored twice, a last program never launched, a re-laid
// input row stored twice and a last weight program never launched: each
// must fail the write count by the tensor's name, whatever the values.
// Then a kernel whose programs read an output element another program
// writes: right with its programs in order (seed 0), wrong shuffled.
func TestTritonWriteCountsAndOrder(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 on PATH")
	}
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	s := caseSpec(t, "writes", "stride 1, whole channel chunks", geom.Conv{Batch: 2, InChannels: 16, OutChannels: 5, In: [3]int{3, 4, 8},
		Kernel: [3]int{2, 3, 2}, Stride: [3]int{1, 1, 1}, Padding: [3]int{0, 1, 1}, Dilation: [3]int{1, 2, 1}, Groups: 1, Bias: true})
	s.Kernel = spec.Kernel{Backends: []string{"triton"}, Triton: spec.Triton{Precision: "3xtf32",
		BlockM: 16, BlockN: 16, BlockK: 16, Warps: 4, Stages: 2, ChannelsLast: true, PadInput: true, SplitWeight: true}}
	p, err := plan.New(s, plan.SM90)
	if err != nil {
		t.Fatal(err)
	}
	src := renderTriton(t, r, p)
	if m := regexp.MustCompile(`\nPROGRAMS = (\d+)`).FindStringSubmatch(src); m == nil || len(m[1]) < 2 {
		t.Fatalf("programs: %v, want 10 or more", m)
	}
	c := p.Conv
	in := gpu.MakeInputs(c, "rand", 7)
	for _, m := range []struct{ name, old, new, want string }{
		{"output tile stored twice", "tl.store(y_ptrs, acc, mask=y_ok)", "tl.store(y_ptrs, acc, mask=y_ok); tl.store(y_ptrs, acc, mask=y_ok)",
			"y element 0 (0, 0, 0, 0, 0) written 2 times, want once"},
		{"last program dropped", "[(PROGRAMS,)]", "[(PROGRAMS - 1,)]", "written 0 times, want once"},
		{"input row re-laid twice", "tl.store(xk_ptr + dst, v, mask=xw_ok[:, None] & c_ok[None, :])",
			"tl.store(xk_ptr + dst, v, mask=xw_ok[:, None] & c_ok[None, :]); tl.store(xk_ptr + dst, v, mask=xw_ok[:, None] & c_ok[None, :])",
			"xk element 0 (0, 0, 0, 0, 0) written 2 times, want once"},
		{"last weight program dropped", "[(RELAYOUT_PROGRAMS,)]", "[(RELAYOUT_PROGRAMS - 1,)]", "w_hi element 0 (0, 0, 0, 0) written 0 times, want once"},
	} {
		t.Run(m.name, func(t *testing.T) {
			if !strings.Contains(src, m.old) {
				t.Fatalf("no %q in the submission", m.old)
			}
			_, err := runTriton(t, python, strings.Replace(src, m.old, m.new, 1), c, in)
			if err == nil || !strings.Contains(err.Error(), m.want) {
				t.Fatalf("error %v, want one saying %q", err, m.want)
			}
			t.Logf("caught: %v", err)
		})
	}
	// Every program but the first adds 0 times y[0], which the first
	// program writes: NaN until it has run. (Of some 20 programs, each
	// seed's shuffle puts another first.)
	racy := strings.Replace(src, "tl.store(y_ptrs, acc, mask=y_ok)",
		"tl.store(y_ptrs, acc + tl.where(tl.program_id(0) > 0, 0.0 * tl.load(y_ptr), 0.0), mask=y_ok)", 1)
	want := ref.Forward(c, in.X, in.W, in.B)
	for seed := uint64(0); seed <= 3; seed++ {
		y, err := emulate.RunTriton(context.Background(), python, []byte(racy), seed, in.X, in.W, in.B, c.OutputLen())
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		right := nanCount(y) == 0 && ref.RelL2(y, want) < 1e-5
		if right != (seed == 0) {
			t.Errorf("seed %d: %d outputs NaN, right %v", seed, nanCount(y), right)
		}
	}
}
