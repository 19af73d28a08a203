package gpu

import (
	"context"
	"flag"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"convtgen/gen/plan"
	"convtgen/verify"
)

func TestJobRoundTrip(t *testing.T) {
	if len(verify.Kernels) == 0 {
		t.Skip("no registered kernels")
	}
	lo := -0.5
	store := &Store{Ops: []plan.PointOp{{Kind: "clamp", Arg: -1, Min: &lo}, {Kind: "mul", Arg: 2, PerChannel: true}}, Args: []int{2}}
	for i, timing := range []*TimingConfig{nil, &DefaultTiming} {
		j := &Job{
			Kernel: verify.Kernels[len(verify.Kernels)-1], InputDist: "randn", Builds: map[string]string{"sm_80": "/tmp/x/sm_80.cubin", "compute_80": "/tmp/x/compute_80.ptx"},
			Seed: math.MaxUint64 - 5, Compare: DefaultCompare, Timing: timing,
		}
		if i == 1 {
			j.Store = store // a level-2 kernel's store ops travel with the job
		}
		enc, err := j.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(enc, "\n") {
			t.Error("encoded job spans lines")
		}
		back, err := DecodeJob(enc)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, j) {
			t.Errorf("round trip:\n%+v\n%+v", back, j)
		}
	}
	for _, bad := range []string{"", "{", `{"kernel":{}}`, `{"kernel":{"Function":"f","Repack":"r"}}`, `{"kernel":{"Function":"f","Repack":"r"},"builds":{"sm_80":"c"},"timing":{"runs":0}}`} {
		if _, err := DecodeJob(bad); err == nil {
			t.Errorf("DecodeJob(%q) accepted", bad)
		}
	}
}

func TestParseRunOutput(t *testing.T) {
	out, err := ParseRunOutput([]byte("some library noise\n{\"nan\":2,\"unwritten\":1,\"rel_l2\":\"+Inf\",\"outputs\":9}\n\n"))
	if err != nil || out.NaN != 2 || out.Unwritten != 1 || !math.IsInf(float64(out.RelL2), 1) || out.Outputs != 9 {
		t.Errorf("%+v %v", out, err)
	}
	if _, err := ParseRunOutput([]byte("Error in initialization: NoDevice\n")); err == nil {
		t.Error("no JSON accepted")
	}
	if _, err := ParseRunOutput([]byte("{nope\n")); err == nil {
		t.Error("bad JSON accepted")
	}
}

// The child protocol end to end, with a shell script standing in for the
// verify binary: a good child, a crashing one, one that prints nothing,
// one that hangs past its timeout.
func TestExecChild(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	j := &Job{Kernel: verify.Kernel{Function: "f", Repack: "r"}, Builds: map[string]string{"sm_90a": "c"}}
	ctx := context.Background()

	good := script("good", `[ "$1" = -run-one ] || exit 3; echo noise; echo '{"rel_l2":1e-7,"compared":{"count":5,"mode":"all"},"outputs":5}'`)
	out, err := ExecChild(ctx, good, j)
	if err != nil || out.Compared == nil || out.Compared.Count != 5 {
		t.Errorf("good child: %+v %v", out, err)
	}
	crash := script("crash", `echo "CUDA error: an illegal memory access" >&2; kill -SEGV $$`)
	if _, err := ExecChild(ctx, crash, j); err == nil || !strings.Contains(err.Error(), "illegal memory access") {
		t.Errorf("crashing child: %v", err)
	}
	silent := script("silent", `exit 0`)
	if _, err := ExecChild(ctx, silent, j); err == nil || !strings.Contains(err.Error(), "no result") {
		t.Errorf("silent child: %v", err)
	}
	hang := script("hang", `exec sleep 30`)
	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := ExecChild(tctx, hang, j); err == nil || !strings.Contains(err.Error(), "timed out") {
		t.Errorf("hanging child: %v", err)
	}
	if time.Since(start) > 5*time.Second {
		t.Error("the timeout did not kill the child")
	}
}

func TestOptionsArgsRoundTrip(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.Register(fs)
	if err := fs.Parse([]string{"-specs", "a,b", "-random", "12", "-seed", "-4", "-time", "-json", "x.json",
		"-jobs", "16", "-timeout", "90s", "-tol", "2e-5", "-commit", "c0ffee"}); err != nil {
		t.Fatal(err)
	}
	child := o.ShardOptions(2, 4, "/w/shard2.json", "/w/shard2")
	if child.Shard != "2/4" || child.JSON != "/w/shard2.json" || child.Work != "/w/shard2" || child.Jobs != 4 || child.GPUs != 0 {
		t.Errorf("shard options: %+v", child)
	}
	var back Options
	fs2 := flag.NewFlagSet("t", flag.ContinueOnError)
	back.Register(fs2)
	if err := fs2.Parse(child.Args()); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, child) {
		t.Errorf("Args round trip:\n%+v\n%+v", back, child)
	}
	if err := back.Check(); err != nil {
		t.Error(err)
	}
	o.Specs = "a@sm70"
	if err := o.Check(); err == nil || !strings.Contains(err.Error(), "sm70") {
		t.Errorf("-specs with an unknown target: %v", err)
	}
}

func TestVisibleDevice(t *testing.T) {
	if d, err := VisibleDevice("", 3); d != "3" || err != nil {
		t.Errorf("no parent list: %q %v", d, err)
	}
	if d, err := VisibleDevice("4, 5,6", 1); d != "5" || err != nil {
		t.Errorf("parent list: %q %v", d, err)
	}
	if _, err := VisibleDevice("4,5", 2); err == nil {
		t.Error("too few devices accepted")
	}
}
