package verify

// The static tier: the seed's rules (shared/seed/kernel-optimization-guide.txt)
// and DESIGN.md's contract, checked on an emitted submission's text in pure Go.
//
// A submission is scanned once into views of the same length as the file, so
// that an offset in any view is an offset in the file and gives its line:
//
//   - code: Python code only; comments, docstrings and string contents are
//     blanked (f-strings stay visible: their {...} parts are code).
//   - noComments: the file with only Python comments blanked.
//   - sources: only the contents of non-docstring string literals (the CUDA and
//     C++ sources, load_inline's arguments), with C/C++ comments blanked.
//   - eval: what the public evaluator's static checker (KernelBench's
//     kernel_static_checker.py) looks at: every line cut at its first '#' and
//     then at its first "//", docstrings and strings included. Rules that mirror
//     that checker's strict rejections use this view, so prose in a docstring
//     that the evaluator would reject ("in one pass", "except for") is caught
//     here rather than at submission time.
//
// So a docstring may say "no TF32, no streams" in prose, while the same words
// in code or in the kernel source are findings.

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"convtgen/gen"
	"convtgen/gen/plan"
	"convtgen/gen/spec"
)

// Finding is one broken rule in a submission.
type Finding struct {
	Rule    string // stable kebab-case name, one of Rules
	Line    int    // 1-based line in the file
	Message string
}

func (f Finding) String() string { return fmt.Sprintf("%d: [%s] %s", f.Line, f.Rule, f.Message) }

// Rule names one static check.
type Rule struct {
	Name string
	Doc  string
}

// Rules lists every static check, forbidden constructs first, then what the
// contract requires. Names are stable: reports and fixtures use them.
var Rules = []Rule{
	{"torch-compile", "no torch.compile / dynamo / inductor"},
	{"torch-jit", "no torch.jit"},
	{"tf32-flag", "no TF32 switches (allow_tf32, fp32_precision, set_float32_matmul_precision, cuBLAS TF32 math)"},
	{"cudnn-benchmark", "no torch.backends.cudnn.benchmark"},
	{"cuda-graph", "no CUDA graphs (torch.cuda.graph, CUDAGraph, cudaGraph*)"},
	{"stream", "no streams: no stream objects, stream= arguments or 4-argument <<<...>>> launches"},
	{"half-precision", "no half or bfloat16 anywhere (float16, bfloat16, .half(), __half, __nv_bfloat16, autocast ...)"},
	{"cpp-template", "no C++ template definitions in the CUDA source"},
	{"pybind", "no PyBind (load_inline's functions=[...] binds the host function)"},
	{"library-conv", "no library convolution or GEMM call (F.conv*, torch.conv*, torch.nn.functional, at::conv*, cuDNN, cuBLAS ...)"},
	{"module-call", "forward never runs the nn.ConvTranspose3d module (self.<attr>(x), .forward, _conv_forward)"},
	{"cache", "nothing kept across forward calls (self.<attr> = ... in forward, register_buffer, global, lru_cache ...)"},
	{"try-except", "no try/except (the evaluator's checker rejects try:, except: and except X anywhere outside # and // comments)"},
	{"pass", "no 'pass' (the evaluator's checker rejects the word anywhere outside # and // comments, docstrings included)"},
	{"get-inputs", "no get_inputs / get_init_inputs definitions"},
	{"usage-code", "no instantiation or usage code (Model(...) calls, __main__ blocks)"},
	{"package-check", "no package or availability checks (importlib, find_spec, is_available, __version__ ...)"},
	{"logging", "no prints or logging (print, logging, warnings, printf, verbose=True ...)"},
	{"threads", "no threads or processes (the evaluator's checker rejects threading, multiprocessing, concurrent.futures)"},
	{"tensor-subclass", "no tensor subclasses or lazy tensors (the evaluator's checker rejects _make_subclass, class X(torch.Tensor))"},
	{"timing-patch", "no reassignment of timing functions (torch.cuda.Event, synchronize, time.*)"},
	{"header", "the first line is the generator's header naming the spec and ending DO NOT EDIT."},
	{"docstring", "a module docstring right after the header says what problem and which algorithm"},
	{"model-class", "exactly one class Model(nn.Module) with __init__ and forward"},
	{"init-signature", "Model.__init__'s parameters equal the spec's reference parameters"},
	{"init-conv", "Model.__init__ creates self.<attr> = nn.ConvTranspose3d(...) exactly as the reference does"},
	{"cuda-sources", "CUDA: the kernel and the host wrapper are the separate raw strings KERNEL_SOURCE and HOST_SOURCE, KERNEL_SOURCE free of host/torch code"},
	{"cuda-kernel", "CUDA: extern \"C\" __global__ kernels in KERNEL_SOURCE, each launched with <<<>>> in HOST_SOURCE, and forward calls the bound host function"},
	{"target", "CUDA: only the file's target's code (no #if on __CUDA_ARCH*, no _ARCH names), load_inline builds exactly the target's -gencode (sm80: arch=compute_80,code=[sm_80,compute_80]; sm90: arch=compute_90a,code=sm_90a), and before load_inline the file raises on a compute capability its target does not run on"},
	{"launch-check", "CUDA: every <<<>>> launch in HOST_SOURCE is followed, before the next launch or return, by a check of cudaGetLastError (C10_CUDA_KERNEL_LAUNCH_CHECK(), TORCH_CHECK(cudaGetLastError() == cudaSuccess, ...), or a HOST_SOURCE function doing that), so a refused launch raises"},
	{"triton-kernel", "Triton: @triton.jit kernels using tl.program_id and tl.load/tl.store, launched from forward"},
	{"precision-mode", "the kernel's arithmetic matches the spec's precision (fp32: no TF32; Triton tl.dot with explicit input_precision)"},
}

var importTritonRe = regexp.MustCompile(`(?m)^\s*(import|from)\s+triton\b`)

// Backend tells which backend a submission is written for: by its file name
// (cuda.<target>.py, triton.<target>.py), else by whether it imports triton.
func Backend(path string, src []byte) string {
	if b, _, ok := SubmissionOf(path); ok {
		return b
	}
	if importTritonRe.Match(src) {
		return "triton"
	}
	return "cuda"
}

// SubmissionOf reads a submission's backend and target from its file name,
// <backend>.<target>.py (gen.SubmissionFile); ok is false for any other.
func SubmissionOf(path string) (backend string, target plan.Target, ok bool) {
	b, tg, found := strings.Cut(strings.TrimSuffix(filepath.Base(path), ".py"), ".")
	if !found || !strings.HasSuffix(path, ".py") || (b != "cuda" && b != "triton") {
		return "", plan.Target{}, false
	}
	t, err := plan.TargetNamed(tg)
	return b, t, err == nil
}

// CheckFile runs every static rule on one emitted submission, of the
// backend and target its name gives (a name that gives none is a finding).
// want is the spec it was generated from; with want nil the rules that
// compare with the spec (init-signature, init-conv, the header's spec
// path, precision-mode) check only what they can without it.
func CheckFile(path string, src []byte, want *spec.Spec) []Finding {
	backend, target, ok := SubmissionOf(path)
	if !ok {
		return []Finding{{Rule: "target", Line: 1, Message: fmt.Sprintf("%s: a submission is named <backend>.<target>.py (cuda.sm80.py, triton.sm90.py)", filepath.Base(path))}}
	}
	return CheckSubmission(src, want, backend, target)
}

// CheckSubmission runs every static rule on a submission of the given
// backend and target.
func CheckSubmission(src []byte, want *spec.Spec, backend string, target plan.Target) []Finding {
	c := &checker{f: scanPython(src), backend: backend, target: target, want: want, seen: map[string]bool{}}
	c.run()
	sort.SliceStable(c.out, func(i, j int) bool {
		if c.out[i].Line != c.out[j].Line {
			return c.out[i].Line < c.out[j].Line
		}
		return c.out[i].Rule < c.out[j].Rule
	})
	return c.out
}

type checker struct {
	f       *pyFile
	backend string
	target  plan.Target
	want    *spec.Spec
	out     []Finding
	seen    map[string]bool // rule+line, one finding per rule and line

	model, init, forward span // regions of the file; zero when absent
}

// span is a byte range of the file.
type span struct{ start, end int }

func (s span) ok() bool { return s.end > s.start }

func (c *checker) add(rule string, off int, format string, args ...any) {
	line := c.f.line(off)
	key := fmt.Sprintf("%s:%d", rule, line)
	if c.seen[key] {
		return
	}
	c.seen[key] = true
	c.out = append(c.out, Finding{Rule: rule, Line: line, Message: fmt.Sprintf(format, args...)})
}

// pattern is one regular expression a rule looks for, and what to say.
type pattern struct {
	re   *regexp.Regexp
	what string
}

func pats(what string, exprs ...string) []pattern {
	p := make([]pattern, len(exprs))
	for i, e := range exprs {
		p[i] = pattern{regexp.MustCompile(e), what}
	}
	return p
}

// forbid reports every match of the patterns in view (restricted to sp when
// it is set).
func (c *checker) forbid(rule string, view []byte, sp span, ps ...pattern) {
	start, end := 0, len(view)
	if sp.ok() {
		start, end = sp.start, sp.end
	}
	for _, p := range ps {
		for _, m := range p.re.FindAllIndex(view[start:end], -1) {
			c.add(rule, start+m[0], "%s: %q", p.what, bytes.TrimSpace(c.f.src[start+m[0]:start+m[1]]))
		}
	}
}

var (
	compilePats = pats("torch.compile and its machinery are not allowed",
		`\btorch\s*\.\s*compile\b`, `\btorch\s*\.\s*_dynamo\b`, `\btorch\s*\.\s*_inductor\b`,
		`\bfrom\s+torch\s+import\s+[^\n]*\bcompile\b`)
	jitPats = pats("torch.jit is not allowed",
		`\btorch\s*\.\s*jit\b`, `\bfrom\s+torch\s+import\s+[^\n]*\bjit\b`)
	tf32Pats = pats("TF32 switches are not allowed",
		`\ballow_tf32\b`, `\bfp32_precision\b`, `\bset_float32_matmul_precision\b`,
		`\bCUBLAS_TF32_TENSOR_OP_MATH\b`, `\bNVIDIA_TF32_OVERRIDE\b`)
	cudnnPats = pats("cudnn.benchmark is not allowed", `\bcudnn\s*\.\s*benchmark\b`)
	graphPats = pats("CUDA graphs are not allowed",
		`\bCUDAGraph\b`, `\bcudaGraph\w*`, `\bcuGraph\w*`, `\btorch\s*\.\s*cuda\s*\.\s*graph\b`,
		`\bmake_graphed_callables\b`, `\bcudaStreamBeginCapture\b`, `\bgraph_pool_handle\b`)
	streamCodePats = pats("streams are not allowed: kernels launch on the default stream",
		`\btorch\s*\.\s*cuda\s*\.\s*[Ss]tream\b`, `\bcuda\s*\.\s*Stream\s*\(`, `\bstream\s*=`,
		`\.\s*(wait_stream|record_stream)\s*\(`, `\b(current_stream|default_stream|ExternalStream|StreamContext)\b`)
	streamSourcePats = pats("streams are not allowed: kernels launch on the default stream",
		`\bcudaStream\w*`, `\bCUstream\b`, `\b\w*CUDAStream\w*`, `\bgetStreamFromPool\b`, `\bstreams?\b`)
	halfPats = pats("half and bfloat16 precision are not allowed",
		`\bfloat16\b`, `\bbfloat16\b`, `\.\s*half\s*\(`, `\.\s*bfloat16\s*\(`, `\btorch\s*\.\s*half\b`,
		`\b__half2?\b`, `\bhalf2\b`, `\b__nv_bfloat162?\b`, `\bnv_bfloat162?\b`, `\bcuda_(fp16|bf16)\b`,
		`\b__float2half\w*`, `\b__half2float\b`, `\b__float2bfloat16\w*`, `\b(at|c10)\s*::\s*(Half|BFloat16)\b`,
		`\bk(Half|BFloat16)\b`, `\bautocast\b`, `\bamp\s*\.\s*custom_fwd\b`, `\b(fp16|bf16)\b`,
		// half as a type (a variable named half, as in "half * 8", is fine):
		// a template argument, a cast, a declaration.
		`<\s*half\s*>`, `\(\s*half\s*\)\s*[\w(]`, `\bhalf\s+[A-Za-z_]\w*\s*[=;,\[)]`)
	templatePats = pats("C++ templates are not allowed; the generator bakes the numbers in", `\btemplate\s*<`)
	pybindPats   = pats("PyBind is not allowed; load_inline's functions=[...] binds the host function", `(?i)\bpybind\w*`, `\bpy\s*::\s*(module|class_|arg)\b`)
	convCodePats = pats("library convolution/GEMM calls are not allowed",
		`\bF\s*\.\s*(conv\w*|unfold|fold|linear)\b`, `\bnn\s*\.\s*functional\b`,
		`\btorch\s*\.\s*(conv\w*|ops\s*\.\s*aten|_C\s*\.\s*_nn|matmul|mm|bmm|addmm|baddbmm|einsum|tensordot|cudnn_\w+|mkldnn_\w+|_convolution\w*)\b`,
		`(?:^|[^.\w])conv_transpose[123]d\s*\(`, `(?:^|[^.\w])convolution\s*\(`)
	convForwardPats = pats("forward must not build library modules", `\bnn\s*\.\s*\w+\s*\(`)
	convSourcePats  = pats("library convolution/GEMM calls are not allowed",
		`\b(at|torch|c10)\s*::\s*(conv\w*|convolution\w*|_convolution\w*|cudnn_\w+|mkldnn_\w+|matmul|mm|bmm|addmm|einsum|linear)\s*\(`,
		`\bcudnn\w*`, `\bcublas\w*`, `\bcutlass\b`)
	cacheAnywherePats = pats("caching across calls is not allowed",
		`\blru_cache\b`, `\bfunctools\s*\.\s*cache\b`, `@\s*cache\b`, `\bcached_property\b`)
	cacheForwardPats = pats("forward must not keep state across calls",
		`\bsetattr\s*\(\s*self\b`, `\bself\s*\.\s*__dict__`, `\bregister_(buffer|parameter)\b`,
		`\bglobal\b`, `\bnonlocal\b`,
		// In-place updates of the module's own tensors (self.conv.weight.copy_(...)).
		`\bself(?:\s*\.\s*\w+)+\s*\.\s*[a-z]\w*_\s*\(`)
	tryEvalPats  = pats("the evaluator's checker rejects try/except", `\btry\s*:`, `\bexcept\s*:`, `\bexcept\s+\w+`)
	tryCodePats  = pats("swallowing errors is a fallback path", `\bcontextlib\s*\.\s*suppress\b`, `\bsuppress\s*\(`)
	passEvalPats = pats("the evaluator's checker rejects the word pass", `\bpass\b`)
	getInputPats = pats("the submission must not define the harness's functions", `\bdef\s+(get_inputs|get_init_inputs)\b`)
	mainPats     = pats("no usage code", `\b__main__\b`)
	pkgPats      = pats("no package or availability checks",
		`\bimportlib\b`, `\bfind_spec\b`, `\bpkg_resources\b`, `\bimport_module\b`, `\bsys\s*\.\s*modules\b`,
		`\bis_available\s*\(`, `\b__version__\b`, `\bsubprocess\b`, `\bos\s*\.\s*system\b`, `\bshutil\s*\.\s*which\b`)
	logCodePats = pats("no prints or logging",
		`\bprint\s*\(`, `\blogging\b`, `\bwarnings\s*\.\s*warn\w*`, `\bsys\s*\.\s*(stdout|stderr)\b`,
		`\bverbose\s*=\s*True\b`, `\blogger\b`, `\bpprint\b`)
	logSourcePats = pats("no prints or logging",
		`\b(printf|fprintf|puts)\s*\(`, `\bstd\s*::\s*(cout|cerr|clog)\b`)
	// The evaluator's strict patterns, verbatim in meaning.
	threadEvalPats = pats("the evaluator's checker rejects threads and processes",
		`threading\.Thread\s*\(`, `import\s+threading`, `from\s+threading\s+import`,
		`multiprocessing\.(Process|Pool|Manager|Queue|Pipe)`, `import\s+multiprocessing`,
		`concurrent\.futures`, `ThreadPoolExecutor`, `ProcessPoolExecutor`)
	threadCodePats   = pats("no threads or processes", `\bthreading\b`, `\bmultiprocessing\b`, `\basyncio\b`)
	threadSourcePats = pats("no host threads", `\bstd\s*::\s*(thread|async)\b`, `\bpthread\w*`)
	subclassEvalPats = pats("the evaluator's checker rejects tensor subclasses",
		`_make_subclass`, `class\s+\w+.*\(torch\.Tensor\)`, `class\s+\w+.*\(Tensor\)`, `torch\.Tensor\.__new__`)
	subclassCodePats = pats("no tensor subclasses", `\b__torch_(function|dispatch)__\b`)
	timingEvalPats   = pats("the evaluator's checker rejects reassigned timing functions",
		`torch\.cuda\.Event\.record\s*=`, `torch\.cuda\.Event\.elapsed_time\s*=`, `torch\.cuda\.synchronize\s*=`,
		`torch\.cuda\.Event\s*=`, `time\.perf_counter\s*=`, `time\.time\s*=`)
	timingCodePats = pats("timing functions must not be reassigned",
		`\btorch\s*\.\s*cuda\s*\.\s*(Event|synchronize|Event\s*\.\s*\w+)\s*=[^=]`, `\btime\s*\.\s*\w+\s*=[^=]`)
)

func (c *checker) run() {
	f := c.f
	all := span{}
	c.regions()

	// Forbidden constructs. Python code and the source strings both count;
	// comments and docstrings do not (they may name what is not done).
	for _, v := range [][]byte{f.code, f.sources} {
		c.forbid("torch-compile", v, all, compilePats...)
		c.forbid("torch-jit", v, all, jitPats...)
		c.forbid("tf32-flag", v, all, tf32Pats...)
		c.forbid("cudnn-benchmark", v, all, cudnnPats...)
		c.forbid("cuda-graph", v, all, graphPats...)
		c.forbid("half-precision", v, all, halfPats...)
		c.forbid("pybind", v, all, pybindPats...)
	}
	c.forbid("stream", f.code, all, streamCodePats...)
	c.forbid("stream", f.sources, all, streamSourcePats...)
	c.launches()
	c.forbid("cpp-template", f.sources, all, templatePats...)
	c.forbid("library-conv", f.code, all, convCodePats...)
	c.forbid("library-conv", f.sources, all, convSourcePats...)
	if c.forward.ok() {
		c.forbid("library-conv", f.code, c.forward, convForwardPats...)
	}
	c.moduleCall()
	c.forbid("cache", f.code, all, cacheAnywherePats...)
	c.selfAssignments()
	c.forbid("try-except", f.eval, all, tryEvalPats...)
	c.forbid("try-except", f.code, all, tryCodePats...)
	c.forbid("pass", f.eval, all, passEvalPats...)
	c.forbid("get-inputs", f.code, all, getInputPats...)
	c.forbid("usage-code", f.code, all, mainPats...)
	c.instantiations()
	c.forbid("package-check", f.code, all, pkgPats...)
	c.forbid("logging", f.code, all, logCodePats...)
	c.forbid("logging", f.sources, all, logSourcePats...)
	c.forbid("threads", f.eval, all, threadEvalPats...)
	c.forbid("threads", f.code, all, threadCodePats...)
	c.forbid("threads", f.sources, all, threadSourcePats...)
	c.forbid("tensor-subclass", f.eval, all, subclassEvalPats...)
	c.forbid("tensor-subclass", f.code, all, subclassCodePats...)
	c.forbid("timing-patch", f.eval, all, timingEvalPats...)
	c.forbid("timing-patch", f.code, all, timingCodePats...)

	// Required.
	c.header()
	c.docstring()
	c.modelClass()
	c.initSignature()
	c.initConv()
	switch c.backend {
	case "cuda":
		c.cudaSources()
		c.cudaKernel()
		c.launchChecks()
		c.targetChecks()
	case "triton":
		c.tritonKernel()
	}
	c.precision()
}

// ---- Regions ----------------------------------------------------------------

var (
	classModelRe = regexp.MustCompile(`(?m)^class[ \t]+Model\b`)
	defRe        = regexp.MustCompile(`(?m)^([ \t]+)def[ \t]+(\w+)[ \t]*\(`)
)

// regions finds class Model and its __init__ and forward methods.
func (c *checker) regions() {
	f := c.f
	m := classModelRe.FindIndex(f.code)
	if m == nil {
		return
	}
	c.model = f.block(m[0])
	body := f.code[c.model.start:c.model.end]
	indent := ""
	for _, d := range defRe.FindAllSubmatchIndex(body, -1) {
		ind := string(body[d[2]:d[3]])
		if indent == "" {
			indent = ind
		}
		if ind != indent {
			continue // a nested def
		}
		sp := f.block(c.model.start + d[0])
		switch string(body[d[4]:d[5]]) {
		case "__init__":
			if !c.init.ok() {
				c.init = sp
			}
		case "forward":
			if !c.forward.ok() {
				c.forward = sp
			}
		}
	}
}

// ---- Forbidden constructs that need more than a pattern ---------------------

// launches reports <<<grid, block, smem, stream>>> launches.
func (c *checker) launches() {
	src := c.f.sources
	for i := 0; ; {
		j := bytes.Index(src[i:], []byte("<<<"))
		if j < 0 {
			return
		}
		start := i + j + 3
		k := bytes.Index(src[start:], []byte(">>>"))
		if k < 0 {
			return
		}
		if topLevelCommas(src[start:start+k]) >= 3 {
			c.add("stream", start, "a launch with a stream argument: %q; kernels launch on the default stream", bytes.TrimSpace(c.f.src[i+j:start+k+3]))
		}
		i = start + k + 3
	}
}

func topLevelCommas(b []byte) int {
	depth, n := 0, 0
	for _, ch := range b {
		switch ch {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case ',':
			if depth == 0 {
				n++
			}
		}
	}
	return n
}

var moduleAttrRe = regexp.MustCompile(`\bself\s*\.\s*(\w+)\s*=\s*(?:torch\s*\.\s*)?nn\s*\.\s*\w+\s*\(`)

// moduleCall reports forward running a library module: calling it, its
// forward, or its _conv_forward.
func (c *checker) moduleCall() {
	if !c.forward.ok() {
		return
	}
	f := c.f
	attrs := map[string]bool{}
	if c.want != nil && c.want.Reference.Attr != "" {
		attrs[c.want.Reference.Attr] = true
	}
	for _, m := range moduleAttrRe.FindAllSubmatch(f.code, -1) {
		attrs[string(m[1])] = true
	}
	var names []string
	for a := range attrs {
		names = append(names, `self\s*\.\s*`+regexp.QuoteMeta(a))
	}
	sort.Strings(names)
	body := f.code[c.forward.start:c.forward.end]
	var ps []pattern
	if len(names) > 0 {
		mods := `(?:` + strings.Join(names, "|") + `)`
		ps = append(ps, pats("forward calls the library module", `\b`+mods+`\s*\(`)...)
		// Aliases: conv = self.conv_transpose3d; conv(x).
		alias := regexp.MustCompile(`(?m)^\s*(\w+)\s*=\s*` + mods + `\s*$`)
		for _, m := range alias.FindAllSubmatch(body, -1) {
			ps = append(ps, pats("forward calls the library module", `(?:^|[^.\w])`+regexp.QuoteMeta(string(m[1]))+`\s*\(`)...)
		}
	}
	ps = append(ps, pats("forward calls a module's forward",
		`\.\s*forward\s*\(`, `\bsuper\s*\([^)]*\)\s*\.\s*forward\b`, `\._conv_forward\s*\(`, `\bself\s*\(`)...)
	c.forbid("module-call", f.code, c.forward, ps...)
}

var selfAttrRe = regexp.MustCompile(`\bself\s*\.\s*\w`)

// selfAssignments reports state kept across forward calls: any assignment
// whose target names an attribute of self, inside forward.
func (c *checker) selfAssignments() {
	if !c.forward.ok() {
		return
	}
	c.forbid("cache", c.f.code, c.forward, cacheForwardPats...)
	for off := c.forward.start; off < c.forward.end; {
		end := bytes.IndexByte(c.f.code[off:c.forward.end], '\n')
		if end < 0 {
			end = c.forward.end - off
		}
		line := c.f.code[off : off+end]
		if lhs, ok := assignTarget(line); ok && selfAttrRe.Match(lhs) {
			c.add("cache", off, "forward assigns to self (state kept across calls): %q", bytes.TrimSpace(c.f.src[off:off+end]))
		}
		off += end + 1
	}
}

// assignTarget returns the text before a line's assignment operator (=, +=,
// ...), unless that '=' is a keyword argument inside an open bracket.
func assignTarget(line []byte) ([]byte, bool) {
	depth := 0
	for i, ch := range line {
		switch ch {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
		case '=':
			prev, next := byte(0), byte(0)
			if i > 0 {
				prev = line[i-1]
			}
			if i+1 < len(line) {
				next = line[i+1]
			}
			if next == '=' || prev == '=' || prev == '<' || prev == '>' || prev == '!' {
				continue // a comparison
			}
			if prev == ':' && depth > 0 {
				continue // a walrus inside brackets
			}
			return line[:i], depth <= 0
		}
	}
	return nil, false
}

var modelCallRe = regexp.MustCompile(`\bModel\s*\(`)

// instantiations reports Model(...) calls other than the class statement
// and super(Model, self).
func (c *checker) instantiations() {
	code := c.f.code
	for _, m := range modelCallRe.FindAllIndex(code, -1) {
		ls := bytes.LastIndexByte(code[:m[0]], '\n') + 1
		before := bytes.TrimSpace(code[ls:m[0]])
		if bytes.HasSuffix(before, []byte("class")) || bytes.HasSuffix(before, []byte("super(")) {
			continue
		}
		c.add("usage-code", m[0], "Model is instantiated: the harness does that")
	}
}

// ---- Required ---------------------------------------------------------------

var headerPathRe = regexp.MustCompile(`\bfrom\s+(\S+)\.\s+DO NOT EDIT\.$`)

func (c *checker) header() {
	first, _, _ := strings.Cut(string(c.f.src), "\n")
	first = strings.TrimRight(first, "\r")
	if !strings.HasPrefix(first, gen.Marker) || !strings.HasSuffix(first, "DO NOT EDIT.") {
		c.add("header", 0, "the first line must be the generator's header (%q ... \"DO NOT EDIT.\"), got %q", gen.Marker, first)
		return
	}
	if c.want == nil || c.want.Path == "" {
		return
	}
	want := filepath.ToSlash(c.want.Path)
	m := headerPathRe.FindStringSubmatch(first)
	if m == nil || (m[1] != want && !strings.HasSuffix(want, "/"+m[1])) {
		c.add("header", 0, "the header must name the spec %s: %q", want, first)
	}
}

func (c *checker) docstring() {
	for _, s := range c.f.strs {
		if !s.docstring {
			continue
		}
		if len(bytes.TrimSpace(c.f.code[:s.quote])) == 0 && len(bytes.TrimSpace(c.f.src[s.start:s.end])) > 0 {
			return
		}
		break
	}
	c.add("docstring", c.afterHeader(), "the file must start (after the header) with a docstring saying what problem and which algorithm")
}

// afterHeader is the offset of the second line.
func (c *checker) afterHeader() int {
	if i := bytes.IndexByte(c.f.src, '\n'); i >= 0 && i+1 < len(c.f.src) {
		return i + 1
	}
	return 0
}

var classModelModuleRe = regexp.MustCompile(`(?m)^class[ \t]+Model[ \t]*\([ \t]*(?:torch[ \t]*\.[ \t]*)?nn[ \t]*\.[ \t]*Module[ \t]*\)[ \t]*:`)

func (c *checker) modelClass() {
	all := classModelRe.FindAllIndex(c.f.code, -1)
	switch {
	case len(all) == 0:
		c.add("model-class", c.afterHeader(), "no class Model(nn.Module)")
		return
	case len(all) > 1:
		c.add("model-class", all[1][0], "class Model is defined %d times", len(all))
	}
	if loc := classModelModuleRe.FindIndex(c.f.code[all[0][0]:]); loc == nil || loc[0] != 0 {
		c.add("model-class", all[0][0], "Model must derive from nn.Module directly: %q", c.f.lineText(all[0][0]))
	}
	if !c.init.ok() {
		c.add("model-class", all[0][0], "class Model has no __init__")
	}
	if !c.forward.ok() {
		c.add("model-class", all[0][0], "class Model has no forward")
	}
}

var wsRe = regexp.MustCompile(`\s+`)

func squash(b []byte) string { return strings.TrimSpace(wsRe.ReplaceAllString(string(b), " ")) }

func (c *checker) initSignature() {
	if !c.init.ok() || c.want == nil {
		return
	}
	f := c.f
	open := bytes.IndexByte(f.code[c.init.start:c.init.end], '(')
	if open < 0 {
		return
	}
	open += c.init.start
	closing := matchParen(f.code, open)
	if closing < 0 {
		c.add("init-signature", open, "__init__'s parameter list is not closed")
		return
	}
	got := strings.TrimSuffix(squash(f.noComments[open+1:closing]), ",")
	got = strings.TrimSpace(got)
	rest, ok := strings.CutPrefix(got, "self")
	want := c.want.Reference.InitSignature()
	if ok {
		rest = strings.TrimSpace(rest)
		if rest == "" || strings.HasPrefix(rest, ",") {
			rest = strings.TrimSpace(strings.TrimPrefix(rest, ","))
			if rest == want {
				return
			}
		}
	}
	c.add("init-signature", c.init.start, "__init__(%s) must be __init__(self, %s), the reference's signature", got, want)
}

// matchParen returns the offset of the bracket closing the one at open, in
// the code view (where strings and comments are blank).
func matchParen(code []byte, open int) int {
	depth := 0
	for i := open; i < len(code); i++ {
		switch code[i] {
		case '(', '[', '{':
			depth++
		case ')', ']', '}':
			depth--
			if depth == 0 {
				return i
			}
		}
	}
	return -1
}

func (c *checker) initConv() {
	if !c.init.ok() || c.want == nil {
		return
	}
	r := c.want.Reference
	want := "self." + r.Attr + " = nn.ConvTranspose3d(" + r.ConvArgs() + ")"
	body := squash(c.f.noComments[c.init.start:c.init.end])
	for _, stmt := range []string{want, strings.Replace(want, "nn.", "torch.nn.", 1)} {
		if strings.Contains(body+" ", stmt+" ") {
			return
		}
	}
	c.add("init-conv", c.init.start, "__init__ must create the module exactly as the reference does: %s", want)
}

var (
	globalRe      = regexp.MustCompile(`(extern\s+"C"\s+)?__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?([A-Za-z_]\w*)\s*\(`)
	launchRe      = regexp.MustCompile(`([A-Za-z_]\w*)\s*<<<`)
	hostInKernel  = pats("KERNEL_SOURCE must be plain CUDA that compiles alone: no host or torch code", `#\s*include\s*<\s*(torch|ATen|c10|pybind)`, `\b(torch|at|c10)\s*::`, `\bTORCH_\w+`, `<<<`)
	cudaSourcesRe = regexp.MustCompile(`\bcuda_sources\s*=\s*\[\s*KERNEL_SOURCE\s*,\s*HOST_SOURCE\s*\]`)
	functionsRe   = regexp.MustCompile(`\bfunctions\s*=\s*\[([^\]]*)\]`)
	quotedRe      = regexp.MustCompile(`["'](\w+)["']`)
	threadIdxRe   = regexp.MustCompile(`\b(threadIdx|blockIdx)\s*\.`)
)

// cudaSources checks that the kernel and the host wrapper are separate raw
// strings, the kernel one free of host code.
func (c *checker) cudaSources() {
	k, kerr := c.f.named("KERNEL_SOURCE")
	h, herr := c.f.named("HOST_SOURCE")
	for _, err := range []error{kerr, herr} {
		if err != nil {
			c.add("cuda-sources", c.afterHeader(), "%v", err)
		}
	}
	if kerr == nil {
		c.forbid("cuda-sources", c.f.sources, span{k.start, k.end}, hostInKernel...)
	}
	if herr == nil {
		for _, m := range globalRe.FindAllSubmatchIndex(c.f.sources[h.start:h.end], -1) {
			c.add("cuda-sources", h.start+m[0], "kernel %s is defined in HOST_SOURCE; kernels belong in KERNEL_SOURCE", c.f.sources[h.start+m[4]:h.start+m[5]])
		}
	}
	if !cudaSourcesRe.Match(c.f.code) {
		c.add("cuda-sources", c.afterHeader(), "load_inline must get cuda_sources=[KERNEL_SOURCE, HOST_SOURCE]")
	}
}

// cudaKernel checks that there is a real kernel, that it is launched and
// that forward calls the host function.
func (c *checker) cudaKernel() {
	f := c.f
	k, kerr := f.named("KERNEL_SOURCE")
	h, herr := f.named("HOST_SOURCE")
	if kerr != nil || herr != nil {
		return // cuda-sources reports it
	}
	kernels := map[string]int{}
	var order []string
	for _, m := range globalRe.FindAllSubmatchIndex(f.sources[k.start:k.end], -1) {
		name := string(f.sources[k.start+m[4] : k.start+m[5]])
		if m[2] < 0 {
			c.add("cuda-kernel", k.start+m[0], "kernel %s must be a plain extern \"C\" __global__ function", name)
		}
		kernels[name] = k.start + m[0]
		order = append(order, name)
	}
	if len(kernels) == 0 {
		c.add("cuda-kernel", k.start, "KERNEL_SOURCE defines no extern \"C\" __global__ kernel")
	}
	if !threadIdxRe.Match(f.sources[k.start:k.end]) {
		c.add("cuda-kernel", k.start, "KERNEL_SOURCE never reads threadIdx or blockIdx: not a real kernel")
	}
	launched := map[string]bool{}
	for _, m := range launchRe.FindAllSubmatchIndex(f.sources[h.start:h.end], -1) {
		name := string(f.sources[h.start+m[2] : h.start+m[3]])
		launched[name] = true
		if _, ok := kernels[name]; !ok {
			c.add("cuda-kernel", h.start+m[0], "HOST_SOURCE launches %s, which KERNEL_SOURCE does not define", name)
		}
	}
	if len(launched) == 0 {
		c.add("cuda-kernel", h.start, "HOST_SOURCE launches no kernel with <<<...>>>")
	}
	for _, name := range order {
		if !launched[name] {
			c.add("cuda-kernel", kernels[name], "kernel %s is never launched", name)
		}
	}
	// The evaluator's own requirements, on its view of the file.
	if !bytes.Contains(f.eval, []byte("__global__")) || !(bytes.Contains(f.eval, []byte("load_inline")) || bytes.Contains(f.eval, []byte("cpp_extension"))) {
		c.add("cuda-kernel", c.afterHeader(), "the evaluator's checker needs __global__ and load_inline outside comments")
	}
	m := functionsRe.FindSubmatchIndex(f.noComments)
	if m == nil {
		c.add("cuda-kernel", c.afterHeader(), "load_inline must bind the host function with functions=[...]")
		return
	}
	if !c.forward.ok() {
		return
	}
	for _, q := range quotedRe.FindAllSubmatch(f.noComments[m[2]:m[3]], -1) {
		call := regexp.MustCompile(`\.\s*` + regexp.QuoteMeta(string(q[1])) + `\s*\(`)
		if !call.Match(f.code[c.forward.start:c.forward.end]) {
			c.add("cuda-kernel", c.forward.start, "forward never calls the bound host function %s", q[1])
		}
	}
}

var (
	archIfPats   = pats("no architecture conditionals: a file holds its target's code only", `(?m)^[ \t]*#[ \t]*(if|ifdef|ifndef|elif)\b[^\n]*__CUDA_ARCH`)
	archNamePats = pats("no _ARCH names: a file holds its target's code only, with no switch on the architecture", `\w*_ARCH\w*`)
	gencodeRe    = regexp.MustCompile(`-gencode[= ]?(arch=[^\s"']+)`)
	archFlagRe   = regexp.MustCompile(`(?:^|[\s"'])(?:-arch|--gpu-architecture|-code|--gpu-code)[= ]`)
	ccCheckRe    = regexp.MustCompile(`(?m)^if[ \t]+torch\.cuda\.get_device_capability\(\)[ \t]*(<|!=)[ \t]*\((\d+),[ \t]*(\d+)\)[ \t]*:[ \t]*\n[ \t]+raise\b`)
	loadInlineRe = regexp.MustCompile(`\bload_inline\s*\(`)
)

// targetChecks checks that a CUDA file is its target's alone: no code for
// another architecture, the target's -gencode and nothing else, and a
// compute capability check that raises before anything is compiled (a
// file must refuse a GPU it does not run on, not fall back).
func (c *checker) targetChecks() {
	f, t := c.f, c.target
	c.forbid("target", f.sources, span{}, archIfPats...)
	c.forbid("target", f.sources, span{}, archNamePats...)
	c.forbid("target", f.code, span{}, archNamePats...)
	var codes []string
	for _, m := range gencodeRe.FindAllSubmatch(f.sources, -1) {
		codes = append(codes, string(m[1]))
	}
	if len(codes) != 1 || codes[0] != t.Gencode {
		c.add("target", c.afterHeader(), "load_inline must build -gencode=%s alone for %s (got %v)", t.Gencode, t.Name, codes)
	}
	if m := archFlagRe.FindIndex(f.sources); m != nil {
		c.add("target", m[0], "no -arch or -code flags besides the target's -gencode")
	}
	load := loadInlineRe.FindIndex(f.code)
	if load == nil {
		return // cuda-kernel reports it
	}
	cmp, want := "<", [2]int{t.Major, t.Minor}
	if t.Exact() {
		cmp = "!="
	}
	m := ccCheckRe.FindSubmatchIndex(f.code[:load[0]])
	if m == nil {
		c.add("target", load[0], "before load_inline the file must raise when torch.cuda.get_device_capability() %s (%d, %d) (%s)", cmp, want[0], want[1], t.Name)
		return
	}
	got := [2]int{atoi(string(f.code[m[4]:m[5]])), atoi(string(f.code[m[6]:m[7]]))}
	if string(f.code[m[2]:m[3]]) != cmp || got != want {
		c.add("target", m[0], "the compute capability check must raise when get_device_capability() %s (%d, %d) for %s (got %s (%d, %d))",
			cmp, want[0], want[1], t.Name, f.code[m[2]:m[3]], got[0], got[1])
	}
}

var (
	inlineLaunchCheckRe = regexp.MustCompile(`\bC10_CUDA_KERNEL_LAUNCH_CHECK\s*\(\s*\)|\bTORCH_CHECK\s*\(\s*cudaGetLastError\s*\(\s*\)\s*==\s*cudaSuccess\b`)
	hostFuncRe          = regexp.MustCompile(`\b(?:static\s+)?(?:inline\s+)?void\s+([A-Za-z_]\w*)\s*\([^)]*\)\s*\{`)
	getLastErrorRe      = regexp.MustCompile(`\bcudaGetLastError\s*\(\s*\)`)
	torchCheckRe        = regexp.MustCompile(`\bTORCH_CHECK\s*\(`)
	returnRe            = regexp.MustCompile(`\breturn\b`)
)

// launchChecks checks that every kernel launch in HOST_SOURCE is checked:
// a launch the GPU refuses (a grid dimension past its limit, too much
// shared memory) runs nothing and only records an error, and an unchecked
// one returns the output's uninitialised memory as if it had worked.
func (c *checker) launchChecks() {
	f := c.f
	h, err := f.named("HOST_SOURCE")
	if err != nil {
		return // cuda-sources reports it
	}
	host := f.sources[h.start:h.end]
	// Host functions whose body raises on cudaGetLastError count as checks.
	checks := []string{inlineLaunchCheckRe.String()}
	for _, m := range hostFuncRe.FindAllSubmatchIndex(host, -1) {
		end := matchParen(host, m[1]-1)
		if end < 0 {
			continue
		}
		body := host[m[1]:end]
		if getLastErrorRe.Match(body) && torchCheckRe.Match(body) {
			checks = append(checks, `\b`+regexp.QuoteMeta(string(host[m[2]:m[3]]))+`\s*\(`)
		}
	}
	checked := regexp.MustCompile(strings.Join(checks, "|"))
	launches := launchRe.FindAllSubmatchIndex(host, -1)
	for i, m := range launches {
		name := string(host[m[2]:m[3]])
		// The statement ends at the ';' after the argument list.
		stmt := bytes.Index(host[m[1]:], []byte(">>>"))
		end := -1
		if stmt >= 0 {
			if open := bytes.IndexByte(host[m[1]+stmt:], '('); open >= 0 {
				end = matchParen(host, m[1]+stmt+open)
			}
		}
		if end < 0 {
			c.add("launch-check", h.start+m[0], "the launch of %s has no argument list", name)
			continue
		}
		next := len(host)
		if i+1 < len(launches) {
			next = launches[i+1][0]
		}
		seg := host[end:next]
		if r := returnRe.FindIndex(seg); r != nil {
			seg = seg[:r[0]]
		}
		if !checked.Match(seg) {
			c.add("launch-check", h.start+m[0], "the launch of %s is not checked: a launch the GPU refuses would return uninitialised memory; check cudaGetLastError() after it (C10_CUDA_KERNEL_LAUNCH_CHECK() or TORCH_CHECK)", name)
		}
	}
}

var (
	tritonJitRe = regexp.MustCompile(`(?m)^@[ \t]*triton[ \t]*\.[ \t]*jit\b[^\n]*\n(?:@[^\n]*\n)*def[ \t]+(\w+)`)
	tritonMemRe = regexp.MustCompile(`\btl\s*\.\s*(load|store)\s*\(`)
	tritonPidRe = regexp.MustCompile(`\btl\s*\.\s*program_id\s*\(`)
	moduleDefRe = regexp.MustCompile(`(?m)^def[ \t]+(\w+)`)
)

// tritonKernel checks for @triton.jit kernels doing real work, launched by
// forward directly or through a module-level wrapper function.
func (c *checker) tritonKernel() {
	f := c.f
	var kernels []string
	for _, m := range tritonJitRe.FindAllSubmatch(f.code, -1) {
		kernels = append(kernels, regexp.QuoteMeta(string(m[1])))
	}
	if len(kernels) == 0 {
		c.add("triton-kernel", c.afterHeader(), "no @triton.jit kernel")
		return
	}
	if !tritonMemRe.Match(f.code) || !tritonPidRe.Match(f.code) {
		c.add("triton-kernel", c.afterHeader(), "the Triton kernel must use tl.program_id and tl.load/tl.store")
	}
	if !c.forward.ok() {
		return
	}
	launch := regexp.MustCompile(`\b(?:` + strings.Join(kernels, "|") + `)\s*\[`)
	body := f.code[c.forward.start:c.forward.end]
	if launch.Match(body) {
		return
	}
	// The module-level functions that launch a kernel, directly or through
	// another such function (a forward function calling the convolution's
	// wrapper), found until no more are.
	type fn struct {
		name       string
		start, end int
	}
	var fns []fn
	for _, m := range moduleDefRe.FindAllSubmatchIndex(f.code, -1) {
		b := f.block(m[0])
		fns = append(fns, fn{string(f.code[m[2]:m[3]]), b.start, b.end})
	}
	launches := map[string]bool{}
	var callees []string
	for grew := true; grew; {
		grew = false
		var calls *regexp.Regexp
		if len(callees) > 0 {
			calls = regexp.MustCompile(strings.Join(callees, "|"))
		}
		for _, d := range fns {
			if launches[d.name] {
				continue
			}
			code := f.code[d.start:d.end]
			if launch.Match(code) || calls != nil && calls.Match(code) {
				launches[d.name], grew = true, true
				callees = append(callees, `(?:^|[^.\w])`+regexp.QuoteMeta(d.name)+`\s*\(`)
			}
		}
	}
	if len(callees) > 0 && regexp.MustCompile(strings.Join(callees, "|")).Match(body) {
		return
	}
	c.add("triton-kernel", c.forward.start, "forward launches no Triton kernel, directly (kernel[grid](...)) or through a wrapper")
}

var (
	tf32Re        = regexp.MustCompile(`(?i)tf32`)
	tlDotRe       = regexp.MustCompile(`\btl\s*\.\s*dot\s*\(`)
	inputPrecRe   = regexp.MustCompile(`\binput_precision\s*=\s*(?:["'](\w+)["']|([A-Za-z_]\w*))`)
	allowTF32True = regexp.MustCompile(`\ballow_tf32\s*=\s*True\b`)
	// splitOperands: a tl.dot's first two arguments, names ending in _hi or
	// _lo (the TF32 parts of a hand-written 3xTF32 product).
	splitOperands = regexp.MustCompile(`^\s*\w+_(hi|lo)\s*,\s*\w+_(hi|lo)\s*,`)
)

// dotPrecisions returns the input_precision values a tl.dot call's
// arguments give: the literal, or for a name (a tl.constexpr parameter,
// a module constant) every string the file assigns or passes to that name.
func (f *pyFile) dotPrecisions(args []byte) (vals []string, stated bool) {
	p := inputPrecRe.FindSubmatch(args)
	switch {
	case p == nil:
		return nil, false
	case p[1] != nil:
		return []string{string(p[1])}, true
	}
	re := regexp.MustCompile(`\b` + regexp.QuoteMeta(string(p[2])) + `\s*(?::[^=\n]*)?=\s*["'](\w+)["']`)
	for _, m := range re.FindAllSubmatch(f.noComments, -1) {
		vals = append(vals, string(m[1]))
	}
	return vals, true
}

// precision checks the arithmetic against the spec's precision: an fp32 kernel
// has no TF32 at all; a Triton tl.dot states its input precision (it defaults
// to TF32 for fp32 inputs), ieee, or for 3xtf32 either tf32x3 or tf32 on
// split parts: operands named *_hi/*_lo, never lo*lo, and the file holding
// all three products hi*hi, hi*lo and lo*hi (fewer are plain TF32).
func (c *checker) precision() {
	mode := ""
	if c.want != nil {
		mode = c.want.Kernel.PrecisionFor(c.backend)
	}
	f := c.f
	if mode == "fp32" {
		for _, m := range tf32Re.FindAllIndex(f.sources, -1) {
			c.add("precision-mode", m[0], "the spec asks for fp32 (FFMA) but the source uses TF32: %q", c.f.lineText(m[0]))
		}
	}
	products := map[string]bool{}
	firstSplit := -1
	for _, m := range tlDotRe.FindAllIndex(f.code, -1) {
		end := matchParen(f.code, m[1]-1)
		if end < 0 {
			end = len(f.code)
		}
		args := f.noComments[m[1]:end]
		vals, stated := f.dotPrecisions(args)
		switch {
		case allowTF32True.Match(args):
			c.add("precision-mode", m[0], "tl.dot with allow_tf32=True is plain TF32")
			continue
		case !stated:
			c.add("precision-mode", m[0], "tl.dot must state input_precision: it defaults to TF32 for fp32 inputs")
			continue
		case len(vals) == 0:
			c.add("precision-mode", m[0], "tl.dot's input_precision is given by a name no string is assigned to")
		}
		for _, v := range vals {
			if s := splitOperands.FindSubmatch(args); v == "tf32" && mode == "3xtf32" && s != nil && string(s[1])+string(s[2]) != "lolo" {
				products[string(s[1])+"*"+string(s[2])] = true
				if firstSplit < 0 {
					firstSplit = m[0]
				}
				continue
			}
			if v != "ieee" && (v != "tf32x3" || mode == "fp32") {
				c.add("precision-mode", m[0], "tl.dot input_precision=%q does not give %s results", v, map[bool]string{true: "fp32", false: "fp32-level"}[mode == "fp32"])
			}
		}
	}
	if firstSplit >= 0 && !(products["hi*hi"] && products["hi*lo"] && products["lo*hi"]) {
		c.add("precision-mode", firstSplit, "TF32 products of split parts give fp32-level results only as hi*hi + hi*lo + lo*hi; this file has %v", slices.Sorted(maps.Keys(products)))
	}
}

// ---- Python scanning --------------------------------------------------------

// pyFile is a scanned Python file; every view has the file's length.
type pyFile struct {
	src        []byte
	code       []byte
	noComments []byte
	sources    []byte
	eval       []byte
	strs       []pyString
	lineStarts []int
	cont       []bool // per line (0-based): it continues a statement (open bracket, string or backslash)
}

// pyString is one string literal: its content is src[start:end].
type pyString struct {
	quote      int // offset of the prefix/opening quote
	start, end int
	raw        bool
	fstring    bool
	triple     bool
	docstring  bool   // an expression statement of its own: prose
	name       string // NAME in a module-level `NAME = "..."`
}

func (f *pyFile) line(off int) int { return sort.SearchInts(f.lineStarts, off+1) }

func (f *pyFile) lineText(off int) string {
	l := f.line(off) - 1
	end := len(f.src)
	if l+1 < len(f.lineStarts) {
		end = f.lineStarts[l+1] - 1
	}
	return strings.TrimSpace(string(f.src[f.lineStarts[l]:end]))
}

// named returns the one module-level raw string assigned to name.
func (f *pyFile) named(name string) (*pyString, error) {
	var found *pyString
	for i := range f.strs {
		s := &f.strs[i]
		if s.name != name {
			continue
		}
		if found != nil {
			return nil, fmt.Errorf("%s is assigned more than once", name)
		}
		found = s
	}
	switch {
	case found == nil:
		return nil, fmt.Errorf("no module-level %s = r\"\"\"...\"\"\" string", name)
	case !found.raw || found.fstring || !found.triple:
		return nil, fmt.Errorf("%s must be a plain raw triple-quoted string (r\"\"\"...\"\"\"), so the file's text is the compiled text", name)
	}
	return found, nil
}

var assignNameRe = regexp.MustCompile(`^([A-Za-z_]\w*)[ \t]*=[ \t]*$`)

func scanPython(src []byte) *pyFile {
	n := len(src)
	f := &pyFile{src: src, code: bytes.Clone(src), noComments: bytes.Clone(src), sources: bytes.Repeat([]byte{' '}, n)}
	f.lineStarts = []int{0}
	for i, ch := range src {
		if ch == '\n' {
			f.lineStarts = append(f.lineStarts, i+1)
			f.sources[i] = '\n'
		}
	}
	f.cont = make([]bool, len(f.lineStarts))
	blank := func(v []byte, from, to int) {
		for i := from; i < to; i++ {
			if v[i] != '\n' {
				v[i] = ' '
			}
		}
	}
	depth := 0
	lineNo := 0
	atStmtStart := true // only whitespace since the start of a logical line
	backslash := false
	newline := func(i int) { // src[i] == '\n', outside strings
		lineNo = f.line(i+1) - 1
		if lineNo < len(f.cont) {
			f.cont[lineNo] = depth > 0 || backslash
		}
		atStmtStart = depth == 0 && !backslash
		backslash = false
	}
	for i := 0; i < n; {
		ch := src[i]
		switch {
		case ch == '\n':
			newline(i)
			i++
		case ch == '#':
			j := i
			for j < n && src[j] != '\n' {
				j++
			}
			blank(f.code, i, j)
			blank(f.noComments, i, j)
			i = j
		case ch == '\\' && i+1 < n && src[i+1] == '\n':
			backslash = true
			i++
		case ch == '"' || ch == '\'' || isPrefixedString(src, i):
			q := i
			raw, fstr := false, false
			for src[i] != '"' && src[i] != '\'' {
				switch src[i] | 0x20 {
				case 'r':
					raw = true
				case 'f':
					fstr = true
				}
				i++
			}
			quote := src[i]
			triple := i+2 < n && src[i+1] == quote && src[i+2] == quote
			open := 1
			if triple {
				open = 3
			}
			start := i + open
			j := start
			end := n
			for j < n {
				if src[j] == '\\' {
					j += 2
					continue
				}
				if src[j] == '\n' && !triple {
					end = j // unterminated; stop at the line's end
					break
				}
				if src[j] == quote && (!triple || (j+2 < n && src[j+1] == quote && src[j+2] == quote)) {
					end = j
					break
				}
				j++
			}
			if j > n {
				j = n
			}
			if end > n {
				end = n
			}
			close := end
			if end < n && src[end] == quote {
				close = end + open
			}
			s := pyString{quote: q, start: start, end: end, raw: raw, fstring: fstr, triple: triple}
			// A docstring: a statement that is only this string.
			if atStmtStart && depth == 0 {
				k := close
				for k < n && (src[k] == ' ' || src[k] == '\t' || src[k] == '\r') {
					k++
				}
				s.docstring = k >= n || src[k] == '\n' || src[k] == '#'
			}
			if depth == 0 {
				ls := f.lineStarts[f.line(q)-1]
				if m := assignNameRe.FindSubmatch(src[ls:q]); m != nil {
					s.name = string(m[1])
				}
			}
			f.strs = append(f.strs, s)
			if !fstr {
				blank(f.code, start, end)
			}
			if !s.docstring {
				copy(f.sources[start:end], src[start:end])
				blankCComments(f.sources[start:end])
			}
			// Lines that start inside the string continue the statement.
			for l := f.line(start); l < f.line(close); l++ {
				f.cont[l] = true
			}
			atStmtStart = false
			i = close
		default:
			switch ch {
			case '(', '[', '{':
				depth++
			case ')', ']', '}':
				if depth > 0 {
					depth--
				}
			}
			if isIdentStart(ch) { // skip the whole word so a prefix check never starts mid-word
				j := i
				for j < n && isIdent(src[j]) {
					j++
				}
				i = j
			} else {
				i++
			}
			if ch != ' ' && ch != '\t' && ch != '\r' {
				atStmtStart = false
			}
		}
	}
	f.eval = evaluatorView(src)
	return f
}

// isPrefixedString reports a string prefix (r, b, u, f and pairs) at i
// followed by a quote, at the start of a word.
func isPrefixedString(src []byte, i int) bool {
	if i > 0 && isIdent(src[i-1]) {
		return false
	}
	j := i
	for j < len(src) && j-i < 3 && strings.IndexByte("rRbBuUfF", src[j]) >= 0 {
		j++
	}
	if j == i || j-i > 2 || j >= len(src) || (src[j] != '"' && src[j] != '\'') {
		return false
	}
	p := strings.ToLower(string(src[i:j]))
	switch p {
	case "r", "b", "u", "f", "rb", "br", "fr", "rf":
		return true
	}
	return false
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c >= 0x80
}

func isIdent(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') }

// blankCComments blanks // and /* */ comments in C/C++ source, leaving string
// and character literals alone.
func blankCComments(b []byte) {
	for i := 0; i < len(b); {
		switch {
		case b[i] == '"' || b[i] == '\'':
			q := b[i]
			i++
			for i < len(b) && b[i] != q && b[i] != '\n' {
				if b[i] == '\\' {
					i++
				}
				i++
			}
			i++
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				b[i] = ' '
				i++
			}
		case b[i] == '/' && i+1 < len(b) && b[i+1] == '*':
			for i < len(b) && !(b[i] == '*' && i+1 < len(b) && b[i+1] == '/') {
				if b[i] != '\n' {
					b[i] = ' '
				}
				i++
			}
			for k := i; k < len(b) && k < i+2; k++ {
				b[k] = ' '
			}
			i += 2
		default:
			i++
		}
	}
}

// evaluatorView is the public evaluator checker's _strip_comments: each line
// cut at its first '#', then at its first "//" (blanked, not removed, so
// offsets stay the file's).
func evaluatorView(src []byte) []byte {
	v := bytes.Clone(src)
	for start := 0; start < len(v); {
		end := bytes.IndexByte(v[start:], '\n')
		if end < 0 {
			end = len(v)
		} else {
			end += start
		}
		line := v[start:end]
		if i := bytes.IndexByte(line, '#'); i >= 0 {
			for k := i; k < len(line); k++ {
				line[k] = ' '
			}
		}
		if i := bytes.Index(line, []byte("//")); i >= 0 {
			for k := i; k < len(line); k++ {
				line[k] = ' '
			}
		}
		start = end + 1
	}
	return v
}

// block returns the span of the compound statement (class or def) whose
// header starts at off: up to the next statement line indented no deeper.
func (f *pyFile) block(off int) span {
	first := f.line(off) - 1
	indent := indentOf(f.code[f.lineStarts[first]:])
	// The header may span lines; the body begins after the line holding ':'.
	end := len(f.src)
	for l := first + 1; l < len(f.lineStarts); l++ {
		if f.cont[l] {
			continue
		}
		ls := f.lineStarts[l]
		le := len(f.code)
		if l+1 < len(f.lineStarts) {
			le = f.lineStarts[l+1]
		}
		text := f.code[ls:le]
		if len(bytes.TrimSpace(text)) == 0 {
			continue
		}
		if indentOf(text) <= indent {
			end = ls
			break
		}
	}
	return span{f.lineStarts[first], end}
}

func indentOf(b []byte) int {
	n := 0
	for _, c := range b {
		switch c {
		case ' ':
			n++
		case '\t':
			n += 8 - n%8
		default:
			return n
		}
	}
	return n
}

// ---- Python syntax ----------------------------------------------------------

// PyCompile checks the files' Python syntax with python3 -m py_compile. The
// byte code goes to a temporary cache prefix, never next to the files.
func PyCompile(paths ...string) error {
	if len(paths) == 0 {
		return nil
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		return err
	}
	cache, err := os.MkdirTemp("", "convtgen-pycache-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(cache)
	cmd := exec.Command(py, append([]string{"-m", "py_compile"}, paths...)...)
	cmd.Env = append(os.Environ(), "PYTHONPYCACHEPREFIX="+cache)
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("python3 -m py_compile: %s", strings.TrimSpace(string(out)))
		}
		return err
	}
	return nil
}
