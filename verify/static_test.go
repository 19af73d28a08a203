package verify

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"convtgen/gen"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// fixtureSpec is the spec the fixtures were derived from: every fixture is
// its FFMA CUDA submission for sm80 (or a Triton submission for its
// signature) with one violation planted; they are checked as sm80 files.
const fixtureSpec = "l1_61_square_input_square_kernel"

// fixtureSpecOf is that spec as the fixtures were derived from it: with
// the fp32 CUDA kernel, whatever tuning has since written into the file.
func fixtureSpecOf(t *testing.T) *spec.Spec {
	t.Helper()
	s := loadSpecs(t)[fixtureSpec]
	if s == nil {
		t.Fatalf("fixture spec %s is gone", fixtureSpec)
	}
	pinned := *s
	pinned.Kernel.CUDA = spec.CUDA{Family: spec.FFMA{}}
	return &pinned
}

// loadSpecs loads the repository's specs by name.
func loadSpecs(t *testing.T) map[string]*spec.Spec {
	t.Helper()
	loaded, err := gen.LoadAll("..")
	if err != nil {
		t.Fatalf("loading specs: %v", err)
	}
	specs := map[string]*spec.Spec{}
	for _, l := range loaded {
		specs[l.Spec().Name] = l.Spec()
	}
	return specs
}

// loadTargetSpecs loads the repository's specs by name@target, each as
// its target's plan sees it: a target's files are judged against that
// target's kernel choices.
func loadTargetSpecs(t *testing.T) map[string]*spec.Spec {
	t.Helper()
	loaded, err := gen.LoadAll("..")
	if err != nil {
		t.Fatalf("loading specs: %v", err)
	}
	specs := map[string]*spec.Spec{}
	for _, l := range loaded {
		for _, p := range l.Plans {
			specs[l.Spec().Name+"@"+p.Target.Name] = p.Spec
		}
	}
	return specs
}

// emittedFiles lists every committed submission under ../out (any depth):
// the files named <backend>.<target>.py.
func emittedFiles(t *testing.T, backends ...string) []string {
	t.Helper()
	if len(backends) == 0 {
		backends = []string{"cuda", "triton"}
	}
	var files []string
	err := filepath.WalkDir(filepath.Join("..", gen.OutDir), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, _, ok := SubmissionOf(path); ok && slices.Contains(backends, b) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no emitted submissions under ../out")
	}
	return files
}

func TestEmittedFilesPass(t *testing.T) {
	specs := loadTargetSpecs(t)
	for _, path := range emittedFiles(t) {
		name := filepath.Base(filepath.Dir(path))
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		_, target, _ := SubmissionOf(path)
		s := specs[name+"@"+target.Name]
		if s == nil {
			t.Errorf("%s: no spec named %s", path, name)
			continue
		}
		for _, f := range CheckFile(path, src, s) {
			t.Errorf("%s:%s", path, f)
		}
	}
}

func TestFixtures(t *testing.T) {
	s := fixtureSpecOf(t)
	for _, r := range Rules {
		t.Run(r.Name, func(t *testing.T) {
			path := filepath.Join("testdata", "static", r.Name+".py")
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("every rule needs a failing fixture: %v", err)
			}
			got := CheckSubmission(src, s, Backend(path, src), plan.SM80)
			fired := false
			for _, f := range got {
				if f.Rule == r.Name {
					fired = true
					t.Logf("%s", f)
				} else {
					t.Errorf("other rule fired: %s", f)
				}
				if f.Line < 1 || f.Line > strings.Count(string(src), "\n")+1 {
					t.Errorf("line out of range: %s", f)
				}
			}
			if !fired {
				t.Errorf("rule %s did not fire", r.Name)
			}
		})
	}
	// The bases the fixtures were derived from pass.
	for _, base := range []string{"valid/cuda.py", "valid/triton.py"} {
		path := filepath.Join("testdata", "static", base)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range CheckSubmission(src, s, Backend(path, src), plan.SM80) {
			t.Errorf("%s:%s", path, f)
		}
	}
}

// The target rule on an emitted file of each target: each planted change
// (another target's gencode, an extra -arch, no compute capability check,
// the sm80 check in an sm90 file, the check after load_inline, an
// architecture switch) fires it, and only it.
func TestTargetRule(t *testing.T) {
	specs := loadSpecs(t)
	for _, tg := range plan.Targets {
		path := filepath.Join("..", gen.OutDir, fixtureSpec, gen.SubmissionFile("cuda", tg))
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		src := string(data)
		other := plan.SM90
		if tg.Exact() {
			other = plan.SM80
		}
		check := regexp.MustCompile(`(?m)^if torch\.cuda\.get_device_capability\(\).*\n.*\n`).FindString(src)
		if check == "" {
			t.Fatalf("%s: no compute capability check", path)
		}
		cmp := map[bool]string{true: "!= (9, 0)", false: "< (8, 0)"}
		cases := map[string]string{
			"other gencode":   strings.Replace(src, tg.Gencode, other.Gencode, 1),
			"extra -arch":     strings.Replace(src, `"-O3",`, `"-O3", "-arch=sm_80",`, 1),
			"no check":        strings.Replace(src, check, "", 1),
			"wrong check":     strings.Replace(src, cmp[tg.Exact()], cmp[!tg.Exact()], 1),
			"check too late":  strings.Replace(strings.Replace(src, check, "", 1), "\nclass Model", "\n"+check+"\nclass Model", 1),
			"arch switch":     strings.Replace(src, "extern \"C\" __global__", "#ifdef __CUDA_ARCH_FEAT_SM90_ALL\n#endif\nextern \"C\" __global__", 1),
			"python arch var": strings.Replace(src, "\n_ext = load_inline(", "\n_ARCH = 80\n_ext = load_inline(", 1),
		}
		for _, f := range CheckFile(path, data, specs[fixtureSpec]) {
			t.Errorf("%s as emitted: %s", path, f)
		}
		for name, planted := range cases {
			if planted == src {
				t.Fatalf("%s/%s: nothing planted", tg.Name, name)
			}
			got := CheckFile(path, []byte(planted), specs[fixtureSpec])
			if len(got) == 0 {
				t.Errorf("%s/%s: the target rule did not fire", tg.Name, name)
			}
			for _, f := range got {
				if f.Rule != "target" {
					t.Errorf("%s/%s: other rule fired: %s", tg.Name, name, f)
				}
			}
		}
	}
	if got := CheckFile("cuda.py", []byte("x = 1\n"), nil); len(got) != 1 || got[0].Rule != "target" {
		t.Errorf("a file named cuda.py: %v", got)
	}
}

// TestFixtureFilesAreRules keeps fixtures and rules in step.
func TestFixtureFilesAreRules(t *testing.T) {
	names := map[string]bool{}
	for _, r := range Rules {
		if names[r.Name] {
			t.Errorf("rule %s listed twice", r.Name)
		}
		names[r.Name] = true
	}
	m, _ := filepath.Glob(filepath.Join("testdata", "static", "*.py"))
	for _, p := range m {
		if n := strings.TrimSuffix(filepath.Base(p), ".py"); !names[n] {
			t.Errorf("%s names no rule", p)
		}
	}
}

func TestPyCompile(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 not on PATH")
	}
	files := emittedFiles(t)
	for _, dir := range []string{filepath.Join("..", gen.OutDir, "*", "problem.py"), filepath.Join("testdata", "static", "*.py"), filepath.Join("testdata", "static", "valid", "*.py")} {
		m, _ := filepath.Glob(dir)
		files = append(files, m...)
	}
	if err := PyCompile(files...); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(t.TempDir(), "bad.py")
	if err := os.WriteFile(bad, []byte("def f(:\n    return 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := PyCompile(bad); err == nil || !strings.Contains(err.Error(), "bad.py") {
		t.Fatalf("PyCompile(bad.py) = %v, want a syntax error naming the file", err)
	}
}

func TestInitSignatureMatchesTemplates(t *testing.T) {
	// The reference problem prints the same signature the submission must
	// have; both come from gen's view.
	specs := loadSpecs(t)
	for name, s := range specs {
		src, err := os.ReadFile(filepath.Join("..", gen.OutDir, name, "problem.py"))
		if err != nil {
			t.Fatal(err)
		}
		want := "def __init__(self, " + s.Reference.InitSignature() + "):"
		if !strings.Contains(string(src), want) {
			t.Errorf("%s: problem.py lacks %q", name, want)
		}
	}
}

func TestScanPython(t *testing.T) {
	src := []byte(`# head
"""Doc: pass, try: and torch.compile in prose."""
import torch
X = r"""
__global__ void k() {}  // stream
/* half */ int y;
"""
s = 'a # not a comment'  # but this is
def f():
    """Docstring of f."""
    return (1,
  2)
`)
	f := scanPython(src)
	if got := len(f.strs); got != 4 {
		t.Fatalf("strings: got %d, want 4", got)
	}
	want := []struct {
		doc  bool
		name string
	}{{true, ""}, {false, "X"}, {false, "s"}, {true, ""}}
	for i, w := range want {
		if f.strs[i].docstring != w.doc || f.strs[i].name != w.name {
			t.Errorf("string %d: docstring=%v name=%q, want %v %q", i, f.strs[i].docstring, f.strs[i].name, w.doc, w.name)
		}
	}
	code := string(f.code)
	for _, gone := range []string{"head", "Doc:", "__global__", "not a comment", "but this is"} {
		if strings.Contains(code, gone) {
			t.Errorf("code view still has %q", gone)
		}
	}
	sources := string(f.sources)
	if !strings.Contains(sources, "__global__") || strings.Contains(sources, "stream") || strings.Contains(sources, "half") || strings.Contains(sources, "Doc:") {
		t.Errorf("sources view wrong:\n%s", sources)
	}
	if strings.Contains(string(f.eval), "head") || !strings.Contains(string(f.eval), "pass, try:") {
		t.Errorf("evaluator view wrong:\n%s", f.eval)
	}
	if len(f.code) != len(src) || len(f.sources) != len(src) || len(f.eval) != len(src) {
		t.Fatal("views must keep the file's length")
	}
	if !f.cont[11] || f.cont[10] || !f.cont[4] || !f.cont[6] {
		t.Errorf("continuation lines: %v", f.cont)
	}
	if b := f.block(strings.Index(string(src), "def f")); string(src[b.start:b.end]) != string(src[strings.Index(string(src), "def f"):]) {
		t.Errorf("block of f: %q", src[b.start:b.end])
	}
}

func TestTritonDotPrecision(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("testdata", "static", "valid", "triton.py"))
	if err != nil {
		t.Fatal(err)
	}
	s := *fixtureSpecOf(t)
	for _, tc := range []struct {
		dot, precision string
		fires          bool
	}{
		{"tl.dot(a, b)", "fp32", true},
		{`tl.dot(a, b, input_precision="ieee")`, "fp32", false},
		{`tl.dot(a, b, input_precision="tf32x3")`, "fp32", true},
		{`tl.dot(a, b, input_precision="tf32x3")`, "3xtf32", false},
		{`tl.dot(a, b, input_precision="tf32")`, "3xtf32", true},
		{`tl.dot(a, b, allow_tf32=True, input_precision="ieee")`, "fp32", true},
		// Hand-written 3xTF32: tf32 on split parts, all three products.
		{split3("a_lo, b_hi", "a_hi, b_lo", "a_hi, b_hi"), "3xtf32", false},
		{split3("a_lo, b_hi", "a_hi, b_lo", "a_hi, b_hi"), "fp32", true},
		{split3("a_hi, b_hi", "a_hi, b_hi", "a_hi, b_hi"), "3xtf32", true}, // plain TF32
		{split3("a_lo, b_lo", "a_hi, b_lo", "a_hi, b_hi"), "3xtf32", true},
		{split3("a, b_hi", "a_hi, b_lo", "a_hi, b_hi"), "3xtf32", true},
	} {
		src := strings.Replace(string(base), `tl.dot(a, b, input_precision="ieee")`, tc.dot, 1)
		if !strings.Contains(string(base), `tl.dot(a, b, input_precision="ieee")`) {
			t.Fatal("triton base changed: no tl.dot(a, b, input_precision=\"ieee\")")
		}
		s.Kernel.Triton.Precision = tc.precision
		fired := false
		for _, f := range CheckSubmission([]byte(src), &s, "triton", plan.SM80) {
			if f.Rule == "precision-mode" {
				fired = true
			} else if f.Rule != "tf32-flag" {
				t.Errorf("%s: unexpected %s", tc.dot, f)
			}
		}
		if fired != tc.fires {
			t.Errorf("%s with %s: precision-mode fired=%v, want %v", tc.dot, tc.precision, fired, tc.fires)
		}
	}
}

// TestProseIsNotCode: docstrings, comments and identifiers that only look
// like forbidden words are not findings (the evaluator's own words, pass
// and try/except, are the exception: see the pass fixture).
func TestProseIsNotCode(t *testing.T) {
	base, err := os.ReadFile(filepath.Join("testdata", "static", "valid", "cuda.py"))
	if err != nil {
		t.Fatal(err)
	}
	s := fixtureSpecOf(t)
	src := string(base)
	for _, r := range [][2]string{
		{"weight tiles load contiguously;", "weight tiles load contiguously (no torch.compile, torch.jit, allow_tf32,\ncudnn.benchmark, CUDAGraph, torch.cuda.Stream, float16, bfloat16, template<>,\nPYBIND11, F.conv_transpose3d, print(), lru_cache, threading);"},
		{"KERNEL_SOURCE = r\"\"\"\n", "KERNEL_SOURCE = r\"\"\"\n// Not used: __half, cudaStream_t, template <int>, tf32, printf(), cudnnConvolutionForward.\n/* nor std::thread,\n   nor at::conv_transpose3d() */\n__device__ __forceinline__ int halves(int half) { return half * 8 + (half) * 2; }\n"},
		{"import torch\n", "import torch  # no torch.compile, no streams, print() nothing\n"},
	} {
		if !strings.Contains(src, r[0]) {
			t.Fatalf("base changed: no %q", r[0])
		}
		src = strings.Replace(src, r[0], r[1], 1)
	}
	for _, f := range CheckSubmission([]byte(src), s, "cuda", plan.SM80) {
		t.Errorf("%s", f)
	}
}

// TestRandomFilesPass: the static rules hold on random configurations too,
// whose Triton choices (precision included) differ from their CUDA ones.
func TestRandomFilesPass(t *testing.T) {
	specs, err := gen.Random(60, 5)
	if err != nil {
		t.Fatal(err)
	}
	r, err := gen.NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range specs {
		files, err := r.Render(l.Plans, l.Path)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if filepath.Base(f.Path) == "problem.py" {
				continue
			}
			for _, finding := range CheckFile(f.Path, f.Data, l.Spec()) {
				t.Errorf("%s:%s", f.Path, finding)
			}
		}
	}
}

// split3 is three tf32 dots over the given operand pairs, summed.
func split3(p, q, r string) string {
	return fmt.Sprintf(`tl.dot(%s, input_precision="tf32") + tl.dot(%s, input_precision="tf32") + tl.dot(%s, input_precision="tf32")`, p, q, r)
}

// TestLaunchCheckForms: each accepted form of checking a launch passes,
// and a check that only a later launch or an early return would reach
// does not count for the launch before it.
func TestLaunchCheckForms(t *testing.T) {
	s := fixtureSpecOf(t)
	base, err := os.ReadFile(filepath.Join("testdata", "static", "valid", "cuda.py"))
	if err != nil {
		t.Fatal(err)
	}
	const main = "    check_launch(\"igemm\");\n"
	if !strings.Contains(string(base), main) {
		t.Fatal("the valid fixture no longer checks its main launch as this test expects")
	}
	for _, tc := range []struct {
		name, replace string
		ok            bool
	}{
		{"helper", main, true},
		{"torch-check", "    TORCH_CHECK(cudaGetLastError() == cudaSuccess, \"igemm failed\");\n", true},
		{"c10-macro", "    C10_CUDA_KERNEL_LAUNCH_CHECK();\n", true},
		{"none", "", false},
		{"after-return", "    return y;\n    check_launch(\"igemm\");\n", false},
		{"other-function", "    cudaDeviceSynchronize();\n", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(string(base), main, tc.replace, 1)
			fired := false
			for _, f := range CheckSubmission([]byte(src), s, "cuda", plan.SM80) {
				if f.Rule != "launch-check" {
					t.Errorf("other rule fired: %s", f)
					continue
				}
				fired = true
				if !strings.Contains(f.Message, "igemm") {
					t.Errorf("finding does not name the main kernel: %s", f)
				}
			}
			if fired == tc.ok {
				t.Errorf("launch-check fired %v, want %v", fired, !tc.ok)
			}
		})
	}
}

// TestTritonLaunchThroughForward: a level-2 Triton file whose forward
// launches nothing itself (every op fused into the convolution's store:
// Model.forward calls the forward function, which calls the convolution's
// wrapper, which launches) passes the triton-kernel rule; with the wrapper's
// call taken out of the forward function it fails it.
func TestTritonLaunchThroughForward(t *testing.T) {
	specs := loadTargetSpecs(t)
	name := "l2_100_clamp_min_divide"
	path := filepath.Join("..", gen.OutDir, name, gen.SubmissionFile("triton", plan.SM90))
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := specs[name+"@sm90"]
	if !strings.Contains(string(src), "    cur = implicit_gemm_forward(cur,") || regexp.MustCompile(`(?m)^        return model_forward\(`).Find(src) == nil {
		t.Fatalf("%s: forward does not reach the launch through model_forward", path)
	}
	for _, f := range CheckFile(path, src, s) {
		t.Errorf("as emitted: %s", f)
	}
	cut := strings.Replace(string(src), "    cur = implicit_gemm_forward(cur,", "    cur = (cur,", 1)
	got := CheckFile(path, []byte(cut), s)
	if len(got) != 1 || got[0].Rule != "triton-kernel" {
		t.Errorf("without the wrapper's call: %v, want the triton-kernel rule alone", got)
	}
}
