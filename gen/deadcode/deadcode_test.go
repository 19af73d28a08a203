package deadcode

import (
	"strings"
	"testing"
)

// prelude declares what the snippets use: constants of every kind the
// analyser knows, and a kernel that the host part launches.
const prelude = `
typedef int idx_t;
static constexpr int kA = 4, kB = kA * 2;
static constexpr idx_t kC = (idx_t)kA * kB;
enum { kE0, kE1 = 3 };
__device__ int sink(int v) { return v; }
extern "C" __global__ void __launch_bounds__(128, 1)
kern(const float* __restrict__ x, float* y)
{
    const int tid = threadIdx.x;
    int n = tid;
    BODY
    y[0] = sink(n);
}
void host() { kern<<<1, 128>>>(nullptr, nullptr); }
`

func check(t *testing.T, body string) []Finding {
	t.Helper()
	found, err := Check(strings.Replace(prelude, "BODY", body, 1))
	if err != nil {
		t.Fatalf("%q: %v", body, err)
	}
	return found
}

// TestFlags: each class of dead code is found, with what it is.
func TestFlags(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{"if (kA > 2) n += 1;", "if on constants only: kA > 2"},
		{"if (kE1) n += 1;", "if on constants only"},
		{"if (sizeof(float) == 4) n += 1;", "if on constants only"},
		{"if ((idx_t)kC < (unsigned)kB) n += 1;", "if on constants only"},
		{"if (min(kA, kB) > 1) n += 1;", "if on constants only"},
		{"if (true) n += 1;", "if on constants only"},
		{"if (n > 0 && kA == 4) n += 1;", "if with an operand on constants only: kA == 4"},
		{"if (n > 0 || (tid < 3 && !(kB > 1))) n += 1;", "if with an operand on constants only: ( kB > 1 )"},
		{"if constexpr (kA > 1) n += 1;", "if constexpr"},
		{"while (kA < 2) n += 1;", "while on constants only"},
		{"do { n += 1; } while (0);", "while on constants only: 0"},
		{"switch (kE1) { default: n += 1; }", "switch on constants only"},
		{"for (int i = 0; kA > 3; ++i) n += i;", "for on constants only"},
		{"n = kA > 2 ? n : 0;", "?: on constants only: kA > 2"},
		{"n += (kB == 8 ? 1 : 2) * tid;", "?: on constants only: kB == 8"},
		{"sink(n ? 1 : kA ? 2 : 3);", "?: on constants only: kA"},
		{"return kA ? n : 0;", "?: on constants only: kA"},
		{"y[0] = x[tid] + (kA < 1 ? 1.0f : 0.0f);", "?: on constants only: kA < 1"},
		{"static constexpr bool kFlag = true; n += kFlag;", "constexpr bool"},
		{"constexpr const bool kF = false; n += kF;", "constexpr bool"},
		{"auto unused = [&](int i) { return i + n; };", "lambda unused is never called"},
		{"\n#if __CUDA_ARCH__ >= 900\n    n += 1;\n#endif\n", "architecture #if"},
		{"\n#ifdef FOO\n    n += 1;\n#endif\n", "conditional preprocessor directive"},
	} {
		found := check(t, c.body)
		ok := false
		for _, f := range found {
			ok = ok || strings.Contains(f.What, c.want)
		}
		if !ok {
			t.Errorf("%q: want a finding %q, got %v", c.body, c.want, found)
		}
	}
}

// TestClean: run-time conditions, loops over constants, constants outside
// conditions and called functions are not dead code, nor is anything in
// comments or strings.
func TestClean(t *testing.T) {
	for _, body := range []string{
		"if (tid < kA) n += 1;",
		"if (n > 0 && tid < kB) n += 1;",
		"if ((unsigned)n < (unsigned)kA) n += 1;",
		"if (x[n] > 0.0f) n += 1;",
		"for (int i = 0; i < kA; ++i) { if (i % kB != 0) continue; n += i; }",
		"#pragma unroll\n    for (int i = 0; i < kA; ++i) n += i;",
		"n = tid < kA ? kB : kC;",
		"n = sink(kA) ? 1 : 0;", // (a call: not a constant)
		"const int m = kA * kB; n += m;",
		"auto used = [&](int i) { return i + n; }; n = used(kA);",
		"// if (kA > 2) n += 1; static constexpr bool kX = true;\n    n += 1;",
		"/* kA ? 1 : 0 */ n += 1;",
		`asm volatile("setp.ne.b32 p, %0, 0; // kA ? x : y" :: "r"(n));`,
		"n += sink(3);",
		"y[n % kA] = kA == 4 && n > 0;", // (not a branch)
	} {
		if found := check(t, body); len(found) > 0 {
			t.Errorf("%q: want no finding, got %v", body, found)
		}
	}
}

// TestUnusedFunctions: a __device__ function or kernel nothing calls is
// dead, and so is one that only dead code calls; a kernel the host
// launches is live.
func TestUnusedFunctions(t *testing.T) {
	src := `
__device__ __forceinline__ void helper(float* p) { *p = 0.0f; }
__device__ __forceinline__ void only_from_dead(float* p) { helper(p); }
__device__ __forceinline__ void dead(float* p) { only_from_dead(p); }
__device__ __forceinline__ void live(float* p) { *p = 1.0f; }
extern "C" __global__ void __launch_bounds__(kThreads) launched(float* y) { live(y); }
extern "C" __global__ void never_launched(float* y) { live(y); }
void host(float* y) { launched<<<1, 1>>>(y); }
`
	found, err := Check(src)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range found {
		got = append(got, f.What)
	}
	want := []string{"__device__ function helper is never called", "__device__ function only_from_dead is never called",
		"__device__ function dead is never called", "__global__ function never_launched is never called"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestSources: only the raw strings' C++ is read, at the file's own lines
// and columns, and an unterminated literal is an error.
func TestSources(t *testing.T) {
	py := "\"\"\"Docstring: if (kA) ...\"\"\"\nKERNEL_SOURCE = r\"\"\"\nstatic constexpr int kA = 1;\nint f(int n) { return kA ? n : 0; }\n\"\"\"\nif True:\n    pass\n"
	src, err := Sources(py)
	if err != nil {
		t.Fatal(err)
	}
	found, err := Check(src)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 || found[0].Line != 4 || found[0].Col != 26 {
		t.Errorf("got %v, want one finding at 4:26 (the ?)", found)
	}
	if _, err := Sources("no kernel here"); err == nil {
		t.Error("a file without raw strings: want an error")
	}
	if _, err := Check("int f() { return \"open; }\n"); err == nil {
		t.Error("an unterminated string: want an error")
	}
}
