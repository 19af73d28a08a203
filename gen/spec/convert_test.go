package spec_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"convtgen/gen/spec"
)

// TestConvertV1 converts the version-1 form of every committed spec
// (testdata/v1, as they were before version 2) and compares the result
// with the version-2 file it became (testdata/v2, as committed when
// converted, before later edits such as the per-target sections): the
// same bytes, comments included.
func TestConvertV1(t *testing.T) {
	olds, _ := filepath.Glob("testdata/v1/*.yaml")
	if len(olds) < 16 {
		t.Fatalf("%d version-1 specs in testdata/v1", len(olds))
	}
	for _, old := range olds {
		name := filepath.Base(old)
		v1, _ := os.ReadFile(old)
		want, err := os.ReadFile(filepath.Join("testdata", "v2", name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := spec.ConvertV1(v1)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if string(got) != string(want) {
			t.Errorf("%s converts to\n%s\nwant\n%s", name, got, want)
		}
		if _, err := spec.Parse(name, got); err != nil {
			t.Errorf("%s: converted spec refused: %v", name, err)
		}
		if _, err := spec.ConvertV1(got); err == nil {
			t.Errorf("%s: a version-2 spec converted again", name)
		}
	}
}

// TestVersion1Refused: a version-1 spec gets one error, at its version,
// that shows its own kernel section in version 2.
func TestVersion1Refused(t *testing.T) {
	v1, _ := os.ReadFile("testdata/v1/72_strided_padded_grouped.yaml")
	_, err := spec.Parse("72.yaml", v1)
	want := "72.yaml:2:10: version: version 1 is refused: this generator reads version 2, whose kernel section is nested by CUDA family (convtgen convert rewrites the file); this spec's kernel section in version 2 reads\n" +
		"    kernel:\n" +
		"      backends: [cuda, triton]\n" +
		"      cuda: {direct: {bm: 128, bn: 4, bk: 2, tw: 16, min_blocks: 1}}"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error:\n%v\nwant it to start with:\n%s", err, want)
	}
	if n := strings.Count(err.Error(), "72.yaml:"); n != 1 {
		t.Errorf("%d errors, want one", n)
	}
}

// TestV1CUDA: version 1's precision and tile as kernel.cuda.
func TestV1CUDA(t *testing.T) {
	for _, c := range []struct{ precision, tile, want string }{
		{"fp32", "", ""},
		{"3xtf32", "", "{mma: {}}"},
		{"fp32", "{bm: 64, cp_async: true}", "{ffma: {bm: 64, cp_async: true}}"},
		{"fp32", "{direct: true, bn: 8, tw: 16}", "{direct: {bn: 8, tw: 16}}"},
		{"3xtf32", "{slabs: 1, wgmma: true, kw_in_n: true}", "{wgmma: {slabs: 1, kw_in_n: true}}"},
	} {
		if got, err := spec.V1CUDA(c.precision, c.tile); err != nil || got != c.want {
			t.Errorf("V1CUDA(%s, %s) = %q, %v; want %q", c.precision, c.tile, got, err, c.want)
		}
	}
}

// TestFamilyOptionsStayInTheirFamily: an option of one family given to
// another is an unknown key at its field, and kernel.cuda holds one family.
func TestFamilyOptionsStayInTheirFamily(t *testing.T) {
	base, err := os.ReadFile("testdata/base.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ cuda, want string }{
		{"{ffma: {tw: 8}}", "base.yaml:38:17: kernel.cuda.ffma.tw: unknown key; known: bk, bm, bn, cp_async, min_blocks, split_k, tm, tn"},
		{"{direct: {cp_async: true}}", "base.yaml:38:19: kernel.cuda.direct.cp_async: unknown key; known: bk, bm, bn, min_blocks, tm, tw"},
		{"{mma: {winograd: true}}", "base.yaml:38:16: kernel.cuda.mma.winograd: unknown key; known: bk, bm, bn, cp_async, min_blocks, presplit, split_k, wm, wn"},
		{"{wgmma: {bm: 64}}", "base.yaml:38:18: kernel.cuda.wgmma.bm: unknown key; known: bulk_weights, cp_async, early_inputs, kw_in_n, min_blocks, park_sums, phase_split, slabs, span, stages, warpgroups, winograd"},
		{"{fma: {}}", "base.yaml:38:10: kernel.cuda.fma: unknown key; known: direct, ffma, mma, spectral, wgmma"},
		{"{ffma: {}, mma: {}}", "base.yaml:38:25: kernel.cuda.mma: kernel.cuda holds one family, and ffma is given too: choose one"},
		{"{}", "base.yaml:38:9: kernel.cuda: must name a family: one of direct, ffma, mma, spectral, wgmma (got {})"},
	} {
		src := strings.Replace(string(base), "  backends: [cuda]", "  backends: [cuda]\n  cuda: "+c.cuda, 1)
		_, err := spec.Parse("base.yaml", []byte(src))
		if err == nil || err.Error() != c.want {
			t.Errorf("cuda: %s:\n%v\nwant:\n%s", c.cuda, err, c.want)
		}
	}
	// Version 1's kernel.precision and kernel.tile are no keys of version 2.
	src := strings.Replace(string(base), "  backends: [cuda]", "  backends: [cuda]\n  precision: fp32", 1)
	if _, err := spec.Parse("base.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), "kernel.precision: unknown key; known: backends, cuda, sm80, sm90, triton") {
		t.Errorf("kernel.precision: %v", err)
	}
}
