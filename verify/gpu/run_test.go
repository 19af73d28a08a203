package gpu

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"convtgen/gen/geom"
	"convtgen/gen/plan"
	"convtgen/verify"
)

// fakeRunner has every hook faked: the items' "files" hold the source
// text, compiling fails for sources that say so (a cubin reports
// registers, PTX nothing, as the real hook), and Exec answers per spec.
func fakeRunner(t *testing.T, o *Options, answers map[string]RunOutput) (*Runner, *[]string, *bytes.Buffer) {
	var mu sync.Mutex
	var ran []string
	var log bytes.Buffer
	r := &Runner{
		Opts: o, Work: t.TempDir(), Stderr: &log, Enabled: true,
		Source: func(src []byte) (string, error) {
			if bytes.Contains(src, []byte("no kernel")) {
				return "", errors.New("no KERNEL_SOURCE")
			}
			return string(src), nil
		},
		Compile: func(ctx context.Context, nvcc, source, arch, out string, k verify.Kernel) (ArchInfo, error) {
			if IsPTX(arch) {
				return ArchInfo{}, nil
			}
			if strings.Contains(source, "spills") {
				return ArchInfo{Registers: 255, SpillBytes: 64}, errors.New("registers spill to local memory")
			}
			return ArchInfo{Registers: 100}, nil
		},
		Exec: func(ctx context.Context, j *Job) (RunOutput, error) {
			mu.Lock()
			ran = append(ran, j.Kernel.Spec)
			mu.Unlock()
			// Every build of the kernel's target, and only those.
			tg, _ := plan.TargetNamed(j.Kernel.Target)
			want := Builds(tg)
			for _, arch := range want {
				ext := map[bool]string{true: ".ptx", false: ".cubin"}[IsPTX(arch)]
				if !strings.HasSuffix(j.Builds[arch], "_"+tg.Name+"/"+arch+ext) {
					t.Errorf("%s: builds %v, no %s", j.Kernel.Spec, j.Builds, arch)
				}
			}
			if len(j.Builds) != len(want) {
				t.Errorf("%s: builds %v, want %v", j.Kernel.Spec, j.Builds, want)
			}
			if (j.Timing != nil) != o.Time {
				t.Errorf("%s: timing %v with -time=%v", j.Kernel.Spec, j.Timing, o.Time)
			}
			a, ok := answers[j.Kernel.Spec]
			if !ok {
				return RunOutput{}, errors.New("child process: signal: segmentation fault")
			}
			return a, nil
		},
	}
	return r, &ran, &log
}

// fakeItems are the named items, of the targets in turn (sm80, sm90, ...).
func fakeItems(t *testing.T, root string, sources map[string]string, order []string) []Item {
	var items []Item
	for i, name := range order {
		file := filepath.Join(root, name+".py")
		if err := os.WriteFile(file, []byte(sources[name]), 0o644); err != nil {
			t.Fatal(err)
		}
		items = append(items, Item{Index: i, InputDist: "rand", Kernel: verify.Kernel{
			Spec: name, Target: plan.Targets[i%len(plan.Targets)].Name, File: name + ".py", Function: name + "_igemm", Repack: name + "_repack_weight",
			Conv: geom.Conv{Batch: 1}, FLOPs: 1e9, MinBytes: 1e6,
		}})
	}
	return items
}

func TestRunnerDispositions(t *testing.T) {
	root := t.TempDir()
	order := []string{"good", "wrong", "crash", "spills", "nosrc", "invalid", "unsupported", "nofile"}
	items := fakeItems(t, root, map[string]string{
		"good": "ok", "wrong": "ok", "crash": "ok", "spills": "spills", "nosrc": "no kernel", "invalid": "ok", "unsupported": "ok",
	}, order)
	os.Remove(filepath.Join(root, "nofile.py"))
	items[5].Pre, items[5].Reason = InvalidSpec, "problem.batch: must be positive"
	items[6].Pre, items[6].Reason = NotSupported, "the spec has no cuda backend"
	o := &Options{Root: root, Shard: "0/1", Jobs: 3, Timeout: time.Minute, Tol: Tolerance, Samples: 10, FullMax: 10, Runs: 100, Time: true}
	r, ran, log := fakeRunner(t, o, map[string]RunOutput{
		"good":  {RelL2: 2e-7, Compared: &Compared{10, "all"}, Outputs: 10, Time: &Timing{MeanMS: 1.1, MedianMS: 1, Runs: 100}},
		"wrong": {RelL2: 0.3, Compared: &Compared{10, "all"}, Outputs: 10},
	})
	res := r.Run(context.Background(), items)
	want := []Disposition{Passed, Incorrect, Failed, Failed, Failed, InvalidSpec, NotSupported, Failed}
	for i, w := range want {
		if res[i].Disposition != w || res[i].Index != i || res[i].Spec != order[i] {
			t.Errorf("%s: %s %q, want %s", order[i], res[i].Disposition, res[i].Reason, w)
		}
	}
	if !strings.Contains(res[2].Reason, "segmentation fault") || !strings.Contains(res[3].Reason, "compile sm_") ||
		!strings.Contains(res[4].Reason, "KERNEL_SOURCE") {
		t.Errorf("reasons: %q / %q / %q", res[2].Reason, res[3].Reason, res[4].Reason)
	}
	// Each item's own target's cubin only: good is sm80, wrong and spills sm90.
	if got := res[0].Arch; len(got) != 1 || got["sm_80"].Registers != 100 {
		t.Errorf("sm80 arch info: %+v", got)
	}
	if got := res[1].Arch; len(got) != 1 || got["sm_90a"].Registers != 100 {
		t.Errorf("sm90 arch info: %+v", got)
	}
	if res[3].Arch["sm_90a"].SpillBytes != 64 || !strings.Contains(res[3].Reason, "compile sm_90a:") {
		t.Errorf("spill numbers lost: %+v %q", res[3].Arch, res[3].Reason)
	}
	if res[0].Target != "sm80" || res[1].Target != "sm90" {
		t.Errorf("targets %q %q", res[0].Target, res[1].Target)
	}
	if res[0].Time == nil || res[0].GFLOPS != 1000 {
		t.Errorf("timing: %+v %v", res[0].Time, res[0].GFLOPS)
	}
	if strings.Join(*ran, ",") != "good,wrong,crash" {
		t.Errorf("ran %v: only compiled, undecided items run, in order", *ran)
	}
	if lines := strings.Count(log.String(), "\n["); lines != len(items) || !strings.HasPrefix(log.String(), "compiling 6 builds of 4 kernels") {
		t.Errorf("%d progress lines for %d items:\n%s", lines, len(items), log)
	}
	rep := &Report{Results: res}
	if !rep.Bad() || rep.Counts()[Failed] != 4 {
		t.Errorf("counts %v", rep.Counts())
	}
	var table bytes.Buffer
	WriteSummary(&table, rep)
	if !strings.Contains(table.String(), "8 items: 1 passed, 1 incorrect, 4 failed, 1 not_supported, 1 invalid_spec") {
		t.Errorf("summary:\n%s", table.String())
	}
}

func TestRunnerShardAndNoGPU(t *testing.T) {
	root := t.TempDir()
	order := []string{"a", "b", "c", "d", "e"}
	items := fakeItems(t, root, map[string]string{"a": "ok", "b": "ok", "c": "ok", "d": "ok", "e": "ok"}, order)
	o := &Options{Root: root, Shard: "1/2", Jobs: 1, Timeout: time.Minute, Tol: Tolerance, Runs: 1}
	r, ran, _ := fakeRunner(t, o, nil)
	r.Enabled = false
	res := r.Run(context.Background(), items)
	if len(res) != 2 || res[0].Spec != "b" || res[1].Spec != "d" {
		t.Fatalf("shard 1/2 of 5: %+v", res)
	}
	for _, x := range res {
		if x.Disposition != NotRun || !strings.Contains(x.Reason, "without GPU support") || len(x.Arch) != 1 || x.Arch["sm_90a"].Registers != 100 {
			t.Errorf("%s: %s %q %v", x.Spec, x.Disposition, x.Reason, x.Arch)
		}
	}
	if len(*ran) != 0 {
		t.Errorf("ran %v without GPU support", *ran)
	}

	o.CompileOnly, r.Enabled = true, true
	res = r.Run(context.Background(), items)
	if res[0].Disposition != NotRun || res[0].Reason != "-compile-only" || len(*ran) != 0 {
		t.Errorf("compile-only: %+v, ran %v", res[0], *ran)
	}

	o.CompileOnly = false
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res = r.Run(ctx, items)
	if res[0].Disposition != Failed && res[0].Disposition != NotRun {
		t.Errorf("interrupted: %s", res[0].Disposition)
	}
}
