package gpu

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
	last := verify.Kernels[len(verify.Kernels)-1]
	o := &Options{Root: root, Specs: last.Spec + ", " + bad + "," + last.SpecPath, Random: 3, Seed: 5}
	items, err := Items(o, verify.Kernels, work)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 6 {
		t.Fatalf("%d items, want 3 selected + 3 random", len(items))
	}
	if items[0].Kernel != last || items[0].Pre != "" {
		t.Errorf("by name: %+v", items[0])
	}
	if items[1].Pre != InvalidSpec || items[1].Reason == "" {
		t.Errorf("invalid spec file: %s %q", items[1].Pre, items[1].Reason)
	}
	// A spec file is planned and rendered afresh: same launch as the registry's, own file.
	fresh := items[2].Kernel
	if items[2].Pre != "" || fresh.Function != last.Function || fresh.Grid != last.Grid || !filepath.IsAbs(fresh.File) {
		t.Errorf("spec file: %+v %s %q", fresh, items[2].Pre, items[2].Reason)
	}
	for i, it := range items[3:] {
		if it.Index != 3+i || it.Pre != "" || !strings.HasPrefix(it.Kernel.Spec, "rand_5_") {
			t.Errorf("random item %d: %+v", i, it)
		}
		if _, err := os.Stat(it.Kernel.File); err != nil {
			t.Errorf("random item %d not rendered: %v", i, err)
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

	if _, err := Items(&Options{Root: root, Specs: "no_such_kernel"}, verify.Kernels, work); err == nil {
		t.Error("unknown spec name accepted")
	}
}
