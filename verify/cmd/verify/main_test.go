package main

import (
	"bytes"
	"flag"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"convtgen/gen/plan"
	"convtgen/verify"
	"convtgen/verify/gpu"
)

func TestParseInterspersed(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	merge := fs.Bool("merge", false, "")
	out := fs.String("json", "", "")
	pos, err := parseInterspersed(fs, []string{"-merge", "a.json", "b.json", "-json", "out.json", "c.json"})
	if err != nil || !*merge || *out != "out.json" || !reflect.DeepEqual(pos, []string{"a.json", "b.json", "c.json"}) {
		t.Errorf("%v %v %q %v", pos, *merge, *out, err)
	}
}

func TestMergeCommand(t *testing.T) {
	dir := t.TempDir()
	var files []string
	for i := range 2 {
		r := &gpu.Report{GPU: "g", Seed: 1, Shard: gpu.Shard{I: i, N: 2}.String()}
		for _, k := range (gpu.Shard{I: i, N: 2}).Indices(5) {
			r.Results = append(r.Results, gpu.Result{Index: k, Spec: string(rune('a' + k)), Backend: "cuda", Disposition: gpu.Passed})
		}
		f := filepath.Join(dir, r.Shard[:1]+".json")
		if err := gpu.WriteReport(f, r); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	merged := filepath.Join(dir, "all.json")
	var stdout, stderr bytes.Buffer
	if rc := run([]string{"-merge", files[0], files[1], "-json", merged}, &stdout, &stderr); rc != 0 {
		t.Fatalf("rc %d: %s", rc, stderr.String())
	}
	m, err := gpu.ReadReport(merged)
	if err != nil || len(m.Results) != 5 || !strings.Contains(stdout.String(), "5 items: 5 passed") {
		t.Errorf("%v %+v\n%s", err, m, stdout.String())
	}
	if rc := run([]string{"-merge", files[0], files[0]}, &stdout, &stderr); rc != 2 || !strings.Contains(stderr.String(), "report 0 and report 1") {
		t.Errorf("duplicate merge: rc %d, %s", rc, stderr.String())
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{{"-shard", "3/2"}, {"-arch", "90"}, {"stray"}, {"-gpus", "2", "-shard", "0/2"}, {"-specs", "no_such_kernel", "-root", "../../.."}} {
		var stdout, stderr bytes.Buffer
		if rc := run(args, &stdout, &stderr); rc != 2 {
			t.Errorf("%v: rc %d, want 2 (%s)", args, rc, stderr.String())
		}
	}
}

// With nvcc on PATH: the real compile path on the registered kernels of
// one spec, each for its own target, run with -compile-only (no GPU
// needed); an sm90 kernel only where nvcc builds sm_90a (CUDA 12.0+).
func TestCompileOnly(t *testing.T) {
	if _, err := exec.LookPath("nvcc"); err != nil {
		t.Skip("no nvcc")
	}
	if len(verify.Kernels) == 0 {
		t.Skip("no registered kernels")
	}
	k := verify.Kernels[len(verify.Kernels)-1]
	var specs []string
	for _, tg := range plan.Targets {
		if verify.NVCCKnows("nvcc", tg.Arch) {
			specs = append(specs, k.Spec+"@"+tg.Name)
		} else {
			t.Logf("%s left out: nvcc cannot build %s", tg.Name, tg.Arch)
		}
	}
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	if rc := run([]string{"-root", "../../..", "-specs", strings.Join(specs, ","), "-compile-only", "-json", out}, &stdout, &stderr); rc != 0 {
		t.Fatalf("rc %d\n%s\n%s", rc, stdout.String(), stderr.String())
	}
	r, err := gpu.ReadReport(out)
	if err != nil || len(r.Results) != len(specs) {
		t.Fatalf("%v %+v", err, r)
	}
	for _, res := range r.Results {
		tg, _ := plan.TargetNamed(res.Target)
		if a := res.Arch[tg.Arch]; res.Disposition != gpu.NotRun || len(res.Arch) != 1 || a.Registers == 0 || a.SmemBytes == 0 {
			t.Errorf("%+v", res)
		}
	}
}

func TestParseTiers(t *testing.T) {
	for _, c := range []struct {
		in          string
		kernel, e2e bool
		bad         bool
	}{
		{"kernel", true, false, false},
		{"e2e", false, true, false},
		{"kernel,e2e", true, true, false},
		{" e2e , kernel ", true, true, false},
		{"kernels", false, false, true},
		{"", false, false, true},
	} {
		k, e, err := parseTiers(c.in)
		if (err != nil) != c.bad || k != c.kernel || e != c.e2e {
			t.Errorf("parseTiers(%q) = %v, %v, %v; want %v, %v, error %v", c.in, k, e, err, c.kernel, c.e2e, c.bad)
		}
	}
}
