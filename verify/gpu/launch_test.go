package gpu

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"convtgen/verify"
)

var (
	repackLaunchRe = regexp.MustCompile(`(\w+)<<<(\d+), 256>>>\(`)
	mainLaunchRe   = regexp.MustCompile(`(\w+)<<<dim3\((\d+), (\d+), (\d+)\), (\d+)(?:, (\d+))?>>>\(`)
)

// The verifier launches kernels the way the emitted host wrapper does:
// same names, same grids, blocks and dynamic shared memory, and the
// argument lists (w, wt) and (x, wt or w, bias, the store's tensors, y) it
// passes as 8-byte slots.
// Checked on every registered kernel and a few random configurations.
func TestLaunchMatchesHostWrapper(t *testing.T) {
	items, err := Items(&Options{Root: root, Random: 8, Seed: 2}, verify.Kernels, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		k := it.Kernel
		path := k.File
		if !filepath.IsAbs(path) {
			path = filepath.Join(root, path)
		}
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		text := string(src)
		ml := mainLaunchRe.FindStringSubmatch(text)
		if ml == nil {
			t.Errorf("%s: no launch of the form name<<<dim3(x, y, z), threads>>> in the host wrapper", k.Spec)
			continue
		}
		// The weight re-layout, the input re-layout and the bias fill,
		// where there are, in that order, with the record's blocks (a
		// direct kernel with a tiny weight has no re-layout: Repack "").
		var want []string
		if k.Repack != "" {
			want = append(want, k.Repack+" "+strconv.Itoa(k.RepackBlocks))
		} else if k.RepackLen != 0 {
			t.Errorf("%s: no re-layout kernel, but %d re-laid weights", k.Spec, k.RepackLen)
		}
		if k.Relayout != "" {
			want = append(want, k.Relayout+" "+strconv.Itoa(k.RelayoutBlocks))
		}
		if k.Fill != "" {
			want = append(want, k.Fill+" "+strconv.Itoa(k.FillBlocks))
		}
		// The launches before the main kernel's: a level-2 file's passes
		// (its host function after the convolution's) are not the
		// verifier's.
		var got []string
		mainAt := mainLaunchRe.FindStringIndex(text)[0]
		for _, l := range repackLaunchRe.FindAllStringSubmatchIndex(text, -1) {
			if l[0] < mainAt {
				got = append(got, text[l[2]:l[3]]+" "+text[l[4]:l[5]])
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: host launches %v before the main kernel, verifier %v", k.Spec, got, want)
		}
		grid := [3]int{atoiT(ml[2]), atoiT(ml[3]), atoiT(ml[4])}
		smem := 0 // the launch's dynamic shared memory, when it has any
		if ml[6] != "" {
			smem = atoiT(ml[6])
		}
		if ml[1] != k.Function || grid != k.Grid || atoiT(ml[5]) != k.Threads || smem != k.DynamicSmem {
			t.Errorf("%s: host launches %s<<<%v, %s, %d>>>, verifier %s<<<%v, %d, %d>>>", k.Spec, ml[1], grid, ml[5], smem, k.Function, k.Grid, k.Threads, k.DynamicSmem)
		}
		kernel, err := verify.KernelSource(src)
		if err != nil {
			t.Fatalf("%s: %v", k.Spec, err)
		}
		if got := params(kernel, k.Repack); k.Repack != "" && got != 2 {
			t.Errorf("%s: %s takes %d parameters, the verifier passes 2", k.Spec, k.Repack, got)
		}
		if k.Repack == "" && strings.Contains(kernel, "_repack_weight") {
			t.Errorf("%s: the verifier launches no weight re-layout, but the file has one", k.Spec)
		}
		store := 0
		for _, n := range k.StoreExtras {
			if n > 0 {
				store++
			}
		}
		if got := params(kernel, k.Function); got != 4+store {
			t.Errorf("%s: %s takes %d parameters, the verifier passes %d", k.Spec, k.Function, got, 4+store)
		}
		if k.Fill != "" {
			if got := params(kernel, k.Fill); got != 2+store {
				t.Errorf("%s: %s takes %d parameters, the verifier passes %d", k.Spec, k.Fill, got, 2+store)
			}
		}
		if strings.Contains(kernel, "extern __shared__") != (k.DynamicSmem > 0) {
			t.Errorf("%s: declares dynamic shared memory %v, the verifier launches with %d bytes", k.Spec, strings.Contains(kernel, "extern __shared__"), k.DynamicSmem)
		}
	}
}

// params counts the pointer parameters of an extern "C" kernel.
func params(src, name string) int {
	i := strings.Index(src, name+"(")
	if i < 0 {
		return -1
	}
	rest := src[i+len(name)+1:]
	end := strings.Index(rest, ")")
	if end < 0 {
		return -1
	}
	return strings.Count(rest[:end], "*")
}

func atoiT(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
