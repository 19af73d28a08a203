package gpu

import (
	"math"
	"path/filepath"
	"testing"

	"convtgen/gen"
	"convtgen/gen/plan"
	"convtgen/gen/ref"
	"convtgen/gen/spec"
	"convtgen/verify"
)

// A store that adds a per-channel tensor, multiplies by the convolution,
// applies hardswish and clamps: Compare judges the kernel's output
// against those ops of the reference, not the bare convolution.
func TestCompareAppliesStore(t *testing.T) {
	hi := 0.4
	store := &Store{
		Ops: []plan.PointOp{
			{Kind: "add", Arg: 3, PerChannel: true},
			{Kind: "mul", Arg: -1, Conv: true},
			{Kind: "hardswish", Arg: -1},
			{Kind: "clamp", Arg: -1, Max: &hi},
		},
		Args: []int{3},
	}
	in := MakeInputs(small, "randn", 7)
	in.Extras = MakeExtras([plan.MaxStoreExtras]int{small.OutChannels}, 7)
	inner := small.OutputLen() / small.Batch / small.OutChannels
	conv := ref.Forward(small, in.X, in.W, in.B)
	y := make([]float32, len(conv))
	wrongChannel := make([]float32, len(conv))
	for i, v := range conv {
		c := i / inner % small.OutChannels
		f := func(e float32) float32 {
			u := (float32(v) + e) * float32(v)
			u = u * float32(math.Min(math.Max(float64(u)+3, 0), 6)) / 6
			return float32(math.Min(float64(u), hi))
		}
		y[i] = f(in.Extras[0][c])
		wrongChannel[i] = f(in.Extras[0][(c+1)%small.OutChannels])
	}
	o, _ := Compare(small, in, store, y, DefaultCompare)
	if d, why := Decide(o, Tolerance); d != Passed {
		t.Errorf("the store's ops: %s %q", d, why)
	}
	if o, _ := Compare(small, in, nil, y, DefaultCompare); !(o.RelL2 > Tolerance) {
		t.Errorf("compared with the bare convolution: rel_l2 %g", o.RelL2)
	}
	if o, _ := Compare(small, in, store, wrongChannel, DefaultCompare); !(o.RelL2 > Tolerance) {
		t.Errorf("another channel's tensor value: rel_l2 %g", o.RelL2)
	}
	missing := &Store{Ops: store.Ops, Args: []int{4}}
	if o, _ := Compare(small, in, missing, y, DefaultCompare); o.Err == nil {
		t.Error("an op reading a tensor the store has none for was accepted")
	}
}

// StoreOf takes a level-2 plan's fused ops with their tensors, and is nil
// for a kernel that writes the convolution.
func TestStoreOf(t *testing.T) {
	for _, c := range []struct {
		spec  string
		kinds []string
	}{
		{"specs/level2/20_sum_residualadd_multiply_residualadd.yaml", []string{"add", "add", "mul", "add"}},
		{"specs/level1/61_square_input_square_kernel.yaml", nil},
	} {
		s, err := spec.Load(filepath.Join(root, c.spec))
		if err != nil {
			t.Fatal(err)
		}
		p, err := gen.Plan(s, plan.Targets[0])
		if err != nil {
			t.Fatal(err)
		}
		st := StoreOf(p)
		var kinds []string
		if st != nil {
			for _, op := range st.Ops {
				kinds = append(kinds, op.Kind)
			}
			if len(st.Args) != len(p.Epilogue.Extras) {
				t.Errorf("%s: %d store tensors, the plan's store reads %d", c.spec, len(st.Args), len(p.Epilogue.Extras))
			}
		}
		if len(kinds) != len(c.kinds) || (st == nil) != (c.kinds == nil) {
			t.Errorf("%s: store ops %v, want %v", c.spec, kinds, c.kinds)
		}
		for i := range kinds {
			if kinds[i] != c.kinds[i] {
				t.Errorf("%s: store ops %v, want %v", c.spec, kinds, c.kinds)
				break
			}
		}
	}
}

// Every registered level-2 kernel whose store applies ops has a float64
// reference for each of them, with a tensor for every one it reads: the
// GPU tier can judge each such kernel.
func TestStoreOpsOfRegisteredKernels(t *testing.T) {
	items, err := Items(&Options{Root: root}, verify.Kernels, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	stores := 0
	for _, it := range items {
		st := StoreOf(it.plan)
		if st == nil {
			continue
		}
		stores++
		c := it.Kernel.Conv
		extras := MakeExtras(it.Kernel.StoreExtras, 1)
		if len(extras) != len(st.Args) {
			t.Errorf("%s: %d store tensors drawn, its ops read %d", it.Kernel.Spec, len(extras), len(st.Args))
			continue
		}
		for _, i := range []int{0, c.OutputLen() - 1} {
			if v, err := st.Apply(c, extras, 0.25, i); err != nil || v != v {
				t.Errorf("%s: the store's ops at output %d: %v, %v", it.Kernel.Spec, i, v, err)
			}
		}
	}
	if stores == 0 {
		t.Error("no registered kernel applies ops in its store")
	}
}
