package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convtgen/gen/plan"
	"convtgen/verify"
)

const root = "../.."

func TestItemsRegistry(t *testing.T) {
	if len(verify.Kernels) == 0 {
		t.Skip("no registered kernels")
	}
	o := &Options{Root: root}
	items, err := Items(o, verify.Kernels, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != len(verify.Kernels) {
		t.Fatalf("%d items for %d kernels", len(items), len(verify.Kernels))
	}
	for i, it := range items {
		if it.Index != i || it.Kernel != verify.Kernels[i] || it.Pre != "" {
			t.Errorf("item %d: index %d, pre %s %q", i, it.Index, it.Pre, it.Reason)
		}
		if it.InputDist != "rand" && it.InputDist != "randn" {
			t.Errorf("%s: input_dist %q", it.Kernel.Spec, it.InputDist)
		}
	}

	// A registry entry that no longer matches its spec is not launched.
	stale := append([]verify.Kernel(nil), verify.Kernels[0])
	stale[0].Grid[0]++
	items, err = Items(o, stale, t.TempDir())
	if err != nil || items[0].Pre != Failed || !strings.Contains(items[0].Reason, "go generate") {
		t.Errorf("stale entry: %+v %v", items, err)
	}
}

func TestItemsSelectAndRandom(t *testing.T) {
	if len(verify.Kernels) < 2 {
		t.Skip("too few registered kernels")
	}
	work := t.TempDir()
	bad := filepath.Join(work, "bad.yaml")
	if err := os.WriteFile(bad, []byte("version: 2\nname: broken\nproblem: {batch: -1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The last spec by name (both targets), the broken file (planned for
	// each target), the last spec's file for its last kernel's target only.
	last := verify.Kernels[len(verify.Kernels)-1]
	o := &Options{Root: root, Specs: last.Spec + ", " + bad + "," + last.SpecPath + "@" + last.Target, Random: 3, Seed: 5}
	items, err := Items(o, verify.Kernels, work)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 8 {
		t.Fatalf("%d items, want 2 by name + 2 invalid + 1 spec file + 3 random", len(items))
	}
	for i, tg := range plan.Targets {
		if k := items[i].Kernel; k.Spec != last.Spec || k.Target != tg.Name || items[i].Pre != "" || !strings.HasSuffix(k.File, "/cuda."+tg.Name+".py") {
			t.Errorf("by name, %s: %+v", tg.Name, items[i])
		}
	}
	if items[1].Kernel != last {
		t.Errorf("by name: %+v", items[1])
	}
	for _, it := range items[2:4] {
		if it.Pre != InvalidSpec || it.Reason == "" {
			t.Errorf("invalid spec file: %s %q", it.Pre, it.Reason)
		}
	}
	// A spec file is planned and rendered afresh: same launch as the registry's, own file.
	fresh := items[4].Kernel
	if items[4].Pre != "" || fresh.Target != last.Target || fresh.Function != last.Function || fresh.Grid != last.Grid ||
		!filepath.IsAbs(fresh.File) || filepath.Base(fresh.File) != filepath.Base(last.File) {
		t.Errorf("spec file: %+v %s %q", fresh, items[4].Pre, items[4].Reason)
	}
	for i, it := range items[5:] {
		if it.Index != 5+i || it.Pre != "" || !strings.HasPrefix(it.Kernel.Spec, "rand_5_") {
			t.Errorf("random item %d: %+v", i, it)
		}
		if _, err := os.Stat(it.Kernel.File); err != nil || filepath.Base(it.Kernel.File) != "cuda."+it.Kernel.Target+".py" {
			t.Errorf("random item %d not rendered for its target %q: %v", i, it.Kernel.Target, err)
		}
	}
	// Same options, same list: shards of separate processes agree.
	again, err := Items(o, verify.Kernels, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for i := range items {
		if again[i].Kernel.Spec != items[i].Kernel.Spec || again[i].Seed(1) != items[i].Seed(1) {
			t.Errorf("item %d differs between calls", i)
		}
	}

	for _, bad := range []string{"no_such_kernel", last.Spec + "@sm70"} {
		if _, err := Items(&Options{Root: root, Specs: bad}, verify.Kernels, work); err == nil {
			t.Errorf("-specs %s accepted", bad)
		}
	}
}
