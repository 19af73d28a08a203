package spec

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// identifier is what a name must look like to be safe as a Python name, a
// C identifier and a path segment at once.
var identifier = regexp.MustCompile(`^[a-z][a-z0-9_]{0,63}$`)

var pythonIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

var pythonKeywords = map[string]bool{"False": true, "None": true, "True": true, "and": true, "as": true,
	"assert": true, "async": true, "await": true, "break": true, "class": true, "continue": true, "def": true,
	"del": true, "elif": true, "else": true, "except": true, "finally": true, "for": true, "from": true,
	"global": true, "if": true, "import": true, "in": true, "is": true, "lambda": true, "nonlocal": true,
	"not": true, "or": true, "pass": true, "raise": true, "return": true, "self": true, "try": true,
	"while": true, "with": true, "yield": true,
	// Names the emitted files use at module level or in Model: a parameter
	// or attribute called so would shadow them.
	"nn": true, "torch": true, "triton": true, "tl": true, "super": true, "Model": true,
	"forward": true, "load_inline": true}

// reservedNames are the names under out/ that are not a spec's folder:
// the report's (out/gpu holds the GPU run's results; out/REPORT.md,
// out/report.json and out/speedup.svg are files, and no name takes their
// dots or capitals, but a folder beside them named the same would read as
// theirs) and the verifier's build folders.
var reservedNames = map[string]bool{"gpu": true, "report": true, "speedup": true, "build": true, "bin": true}

// pythonName checks a name the emitted Python uses as an attribute of
// the model or a parameter of its __init__: a Python identifier, not a
// keyword or a name the files use, not a dunder (mangled or special
// inside a class), and none of nn.Module's attributes, which it would
// shadow or break (attr "to" replaces Module.to, "training" the mode).
func (d *decoder) pythonName(field, name string) bool {
	switch {
	case !pythonIdent.MatchString(name) || pythonKeywords[name]:
		d.failAt(field, strconv.Quote(name), "must be a Python identifier")
	case strings.HasPrefix(name, "__"):
		d.failAt(field, strconv.Quote(name), "must not start with __ (Python mangles or reserves such names in a class)")
	case moduleAttrs[name]:
		d.failAt(field, strconv.Quote(name), "is an attribute of torch.nn.Module, which the model would shadow")
	default:
		return true
	}
	return false
}

// seedRule is the submission rule that forbids reduced precision.
const seedRule = `the seed forbids it: "Do Not Use: ... torch.backends.cuda.matmul.allow_tf32, ` +
	`torch.backends.cudnn.allow_tf32, ... or half/mixed precision as they obscure true results"`

// Backends and precisions the generator knows.
var (
	backends   = []string{"cuda", "triton"}
	precisions = []string{"fp32", "3xtf32"}
	reduced    = map[string]bool{"tf32": true, "fp16": true, "bf16": true, "half": true, "float16": true, "bfloat16": true}
)

func (d *decoder) validate(s *Spec) {
	switch {
	case !identifier.MatchString(s.Name):
		d.failAt("name", strconv.Quote(s.Name), "must be a lower-case identifier ([a-z][a-z0-9_]*, at most 64 characters): it names a folder and a Python extension")
	case reservedNames[s.Name]:
		d.failAt("name", strconv.Quote(s.Name), "is reserved: out/%s is the generator's or the report's own (reserved: %s)", s.Name, strings.Join(sortedKeys(reservedNames), ", "))
	}
	d.validateProblem(&s.Problem)
	d.validateReference(s)
	d.validateKernel(&s.Kernel)
}

var dimName = [3]string{"depth", "height", "width"}

func triple(v [3]int) string { return fmt.Sprintf("[%d, %d, %d]", v[0], v[1], v[2]) }

// validateProblem checks every field against its limits first, then the
// rules between fields only where the fields they read passed, so that
// one refused field gives one error.
func (d *decoder) validateProblem(p *Problem) {
	d.inputDist(p)
	batch := d.limited("problem.batch", p.Batch, MaxCount)
	in := d.limited("problem.in_channels", p.InChannels, MaxCount)
	out := d.limited("problem.out_channels", p.OutChannels, MaxCount)
	groups := d.limited("problem.groups", p.Groups, MaxCount)
	kernel := d.limited3("problem.kernel", p.Kernel, 1, MaxKernel)
	input := d.limited3("problem.input", p.In, 1, MaxExtent)
	stride := d.limited3("problem.stride", p.Stride, 1, MaxStride)
	dilation := d.limited3("problem.dilation", p.Dilation, 1, MaxExtent)
	padding := d.limited3("problem.padding", p.Padding, 0, MaxExtent)
	outPad := d.limited3("problem.output_padding", p.OutputPadding, 0, MaxExtent)
	channels := in && out && groups
	if groups {
		if in && p.InChannels%p.Groups != 0 {
			d.failAt("problem.in_channels", strconv.Itoa(p.InChannels), "must be divisible by groups=%d", p.Groups)
			channels = false
		}
		if out && p.OutChannels%p.Groups != 0 {
			d.failAt("problem.out_channels", strconv.Itoa(p.OutChannels), "must be divisible by groups=%d", p.Groups)
			channels = false
		}
	}
	if stride && dilation && outPad {
		for i := range 3 {
			// PyTorch's rule: output_padding must be smaller than either stride or dilation.
			if op := p.OutputPadding[i]; op >= max(p.Stride[i], p.Dilation[i]) {
				d.failAt("problem.output_padding", triple(p.OutputPadding),
					"%s must be smaller than max(stride, dilation) = %d", dimName[i], max(p.Stride[i], p.Dilation[i]))
				outPad = false
				break
			}
		}
	}
	if !(kernel && input && stride && dilation && padding && outPad) {
		return
	}
	// Within the limits above no term overflows; checked all the same.
	o, ok := p.OutChecked()
	for i := range 3 {
		switch {
		case !ok:
			d.failAt("problem.dilation", triple(p.Dilation), "overflows the output-size formula")
		case o[i] <= 0:
			d.failAt("problem.padding", triple(p.Padding), "leaves no output along %s: (in-1)*stride - 2*padding + dilation*(kernel-1) + output_padding + 1 = %d", dimName[i], o[i])
		case o[i] > MaxExtent:
			d.failAt("problem.input", triple(p.In), "gives an output %s of %d: (in-1)*stride - 2*padding + dilation*(kernel-1) + output_padding + 1 must be at most %d", dimName[i], o[i], MaxExtent)
		default:
			continue
		}
		ok = false
		break
	}
	if ok && batch && channels {
		d.checkMemory(p.Conv)
	}
}

func (d *decoder) inputDist(p *Problem) {
	if p.InputDist != "rand" && p.InputDist != "randn" {
		d.failAt("problem.input_dist", strconv.Quote(p.InputDist), "must be rand or randn")
	}
}

func (d *decoder) validateReference(s *Spec) {
	r := &s.Reference
	d.pythonName("reference.attr", r.Attr)
	env := map[string]Value{}
	seen := map[string]bool{}
	sawDefault := false
	for i, p := range r.Params {
		f := fmt.Sprintf("reference.params[%d]", i)
		switch {
		case !d.pythonName(f+".name", p.Name):
		case seen[p.Name]:
			d.failAt(f+".name", strconv.Quote(p.Name), "duplicate parameter")
		}
		seen[p.Name] = true
		if _, ok := paramTypes[p.Type]; !ok {
			d.failAt(f+".type", strconv.Quote(p.Type), "must be int, float, bool, tuple or shape")
		}
		if p.Default == nil && sawDefault && d.ok(f) {
			d.failAt(f+".name", p.Name, "a parameter without a default cannot follow one with a default")
		}
		if p.Default != nil {
			sawDefault = true
			d.matchType(f+".default", p, *p.Default)
			env[p.Name] = *p.Default
		}
	}
	if len(r.InitInputs) > len(r.Params) {
		d.failAt("reference.init_inputs", strconv.Itoa(len(r.InitInputs)), "has more values than __init__ has parameters (%d)", len(r.Params))
		return
	}
	for i, v := range r.InitInputs {
		d.matchType(fmt.Sprintf("reference.init_inputs[%d]", i), r.Params[i], v)
		env[r.Params[i].Name] = v
	}
	for _, p := range r.Params {
		if _, ok := env[p.Name]; !ok {
			d.failAt("reference.init_inputs", "", "leaves parameter %s without a value", p.Name)
		}
	}
	r.Env = env
	if !d.hasError("reference.params") && !d.hasError("reference.init_inputs") && !d.hasError("problem") {
		d.validateModel(s, env)
	}
	for _, e := range d.errs {
		if e.Field == "reference" || within(e.Field, "reference") {
			return // the reference's own errors first: evaluating it would repeat them
		}
	}
	built, ok := d.evalConv(r.Conv, env)
	if ok {
		d.compareBuilt(s, built)
	}
}

// hasError tells whether a field or a part of it already has an error:
// the reference's construction is then not compared with it (one error a
// field).
func (d *decoder) hasError(field string) bool {
	for _, e := range d.errs {
		if e.Field == field || within(e.Field, field) {
			return true
		}
	}
	return false
}

// paramTypes are the parameter types and the kind of value each takes: a
// tuple is three integers (D, H, W), a shape any non-empty tuple of
// integers (a tensor's shape; annotated tuple in Python).
var paramTypes = map[string]ValueKind{"int": IntValue, "bool": BoolValue, "tuple": TupleValue, "shape": TupleValue, "float": FloatValue}

func (d *decoder) matchType(field string, p Param, v Value) {
	kind, known := paramTypes[p.Type]
	ok := kind == v.Kind
	switch {
	case ok && p.Type == "tuple" && len(v.Tuple) != 3, ok && p.Type == "shape" && len(v.Tuple) == 0:
		ok = false
	case p.Type == "float" && v.Kind == IntValue:
		ok = true // Python passes an int where a float is expected
	}
	if !ok && known {
		want := map[string]string{"int": "an integer", "bool": "true or false", "tuple": "a list of three integers",
			"shape": "a non-empty list of integers", "float": "a number"}[p.Type]
		d.failAt(field, v.Python(), "parameter %s is annotated %s: expected %s", p.Name, p.Type, want)
	}
}

// convParams is nn.ConvTranspose3d's signature, positional order, with its
// defaults (bias defaults to True in PyTorch).
var convParams = []string{"in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding", "groups", "bias", "dilation"}

func (d *decoder) evalConv(args []string, env map[string]Value) (map[string]Value, bool) {
	built := map[string]Value{
		"stride": {Kind: IntValue, Int: 1}, "padding": {Kind: IntValue}, "output_padding": {Kind: IntValue},
		"groups": {Kind: IntValue, Int: 1}, "bias": {Kind: BoolValue, Bool: true}, "dilation": {Kind: IntValue, Int: 1},
	}
	given := map[string]bool{}
	ok := true
	keywords := false
	for i, src := range args {
		bad := func(format string, a ...any) {
			d.failAt("reference.conv", strconv.Quote(src), "argument %d: "+format, append([]any{i}, a...)...)
			ok = false
		}
		a, err := parseConvArg(src)
		if err != nil {
			bad("%v", err)
			continue
		}
		name := a.keyword
		switch {
		case name == "" && keywords:
			bad("positional argument after a keyword argument")
			continue
		case name == "" && i >= len(convParams):
			bad("too many positional arguments")
			continue
		case name == "":
			name = convParams[i]
		default:
			keywords = true
			if !slices.Contains(convParams, name) {
				bad("nn.ConvTranspose3d has no argument %s", name)
				continue
			}
		}
		if given[name] {
			bad("%s given twice", name)
			continue
		}
		given[name] = true
		v, err := a.value.eval(env)
		if err != nil {
			bad("%v", err)
			continue
		}
		built[name] = v
	}
	for _, req := range convParams[:3] {
		if ok && !given[req] {
			d.failAt("reference.conv", "", "nn.ConvTranspose3d needs %s", req)
			ok = false
		}
	}
	return built, ok
}

// compareBuilt checks that the problem section says what the reference
// really builds from its init inputs (KernelBench's #73 passes "groups" into
// a parameter the constructor ignores, for example).
func (d *decoder) compareBuilt(s *Spec, built map[string]Value) {
	p := &s.Problem
	ints := []struct {
		arg, field string
		want       int
	}{{"in_channels", "in_channels", p.InChannels}, {"out_channels", "out_channels", p.OutChannels}, {"groups", "groups", p.Groups}}
	for _, c := range ints {
		v := built[c.arg]
		if v.Kind != IntValue {
			d.failAt("reference.conv", v.Python(), "%s must be an integer", c.arg)
		} else if v.Int != c.want && !d.hasError("problem."+c.field) {
			d.failAt("problem."+c.field, strconv.Itoa(c.want), "the reference builds %s=%d from its init inputs", c.arg, v.Int)
		}
	}
	triples := []struct {
		arg, field string
		want       [3]int
	}{{"kernel_size", "kernel", p.Kernel}, {"stride", "stride", p.Stride}, {"padding", "padding", p.Padding},
		{"output_padding", "output_padding", p.OutputPadding}, {"dilation", "dilation", p.Dilation}}
	for _, c := range triples {
		v := built[c.arg]
		var got [3]int
		switch {
		case v.Kind == IntValue:
			got = [3]int{v.Int, v.Int, v.Int}
		case v.Kind == TupleValue && len(v.Tuple) == 3:
			got = [3]int{v.Tuple[0], v.Tuple[1], v.Tuple[2]}
		default:
			d.failAt("reference.conv", v.Python(), "%s must be an integer or a 3-tuple", c.arg)
			continue
		}
		if got != c.want && !d.hasError("problem."+c.field) {
			d.failAt("problem."+c.field, triple(c.want), "the reference builds %s=%s from its init inputs", c.arg, v.Python())
		}
	}
	if b := built["bias"]; b.Kind != BoolValue {
		d.failAt("reference.conv", b.Python(), "bias must be True or False")
	} else if b.Bool != p.Bias && !d.hasError("problem.bias") {
		d.failAt("problem.bias", strconv.FormatBool(p.Bias), "the reference builds bias=%s from its init inputs", b.Python())
	}
}

// validateKernel checks the kernel section; left out, the backends are
// both, and the plan drops one that cannot express the problem's ops
// (BackendsOmitted).
func (d *decoder) validateKernel(k *Kernel) {
	if k.Backends == nil {
		k.Backends, k.BackendsOmitted = DefaultBackends, true
	}
	if len(k.Backends) == 0 {
		d.failAt("kernel.backends", "[]", "must name at least one of %s", strings.Join(backends, ", "))
	}
	seen := map[string]bool{}
	for i, b := range k.Backends {
		f := fmt.Sprintf("kernel.backends[%d]", i)
		switch {
		case !slices.Contains(backends, b):
			d.fail(d.item("kernel.backends", i), f, strconv.Quote(b), "must be one of %s", strings.Join(backends, ", "))
		case seen[b]:
			d.fail(d.item("kernel.backends", i), f, strconv.Quote(b), "listed twice")
		}
		seen[b] = true
	}
	d.validateTriton(k.Triton, k.TritonField)
	d.checkFamily(k.CUDA.Of(), k.CUDAField)
	for _, name := range TargetNames {
		t, ok := k.Targets[name]
		if !ok {
			continue
		}
		at := k.For(name)
		if t.Triton != nil {
			d.validateTriton(at.Triton, at.TritonField)
		}
		if t.CUDA != nil {
			d.checkFamily(at.CUDA.Of(), at.CUDAField)
			if w, ok := at.CUDA.Of().(WGMMA); ok && name == "sm80" && w.BulkWeights {
				d.failAt(at.CUDAField("wgmma.bulk_weights"), "true", "bulk copies (TMA) exist on sm90 only: an sm80 wgmma tile loads its weights by cp.async")
			}
		}
	}
}

// validateTriton checks one Triton section; field names an option's spec
// field (kernel.triton.<key> or a target's).
func (d *decoder) validateTriton(tt Triton, field func(key string) string) {
	if tt.Precision != "" {
		d.precision(field("precision"), tt.Precision)
	}
	d.sizes(field(""), tritonRule, []sizeCheck{
		{"block_m", tt.BlockM, pow2In(tt.BlockM, 16, 256)},
		{"block_n", tt.BlockN, pow2In(tt.BlockN, 16, 256)},
		{"block_k", tt.BlockK, pow2In(tt.BlockK, 16, 128)},
		{"warps", tt.Warps, pow2In(tt.Warps, 1, 16)},
		{"stages", tt.Stages, tt.Stages >= 0 && tt.Stages <= 8},
		{"fold_w", tt.FoldW, tt.FoldW >= 0 && tt.FoldW <= 8},
	})
	if tt.FoldW > 1 && !tt.FuseW {
		d.failAt(field("fold_w"), strconv.Itoa(tt.FoldW), "folds outputs into the columns of fused W phases: only with fuse_w: true")
	}
	if p := tt.precision(); tt.SplitWeight && p != "3xtf32" {
		d.failAt(field("split_weight"), "true", "splits operands into TF32 parts: only with precision 3xtf32 (the Triton precision is %s)", p)
	}
}

// checkFamily reports what a CUDA family refuses of its own options, at
// the field field gives for <family>.<option>.
func (d *decoder) checkFamily(f Family, field func(key string) string) {
	f.check(func(key, got, format string, args ...any) { d.failAt(field(f.Key()+"."+key), got, format, args...) })
}

// FamilyErrors is what the CUDA family of s's kernel section refuses of
// its own options (the checks reading the spec made), for a section set
// in code (tuning's and the chooser's candidates), which no decoder reads.
func (s *Spec) FamilyErrors() Errors {
	var errs Errors
	f := s.Kernel.CUDA.Of()
	f.check(func(key, got, format string, args ...any) {
		errs = append(errs, s.Errorf(s.Kernel.CUDAField(f.Key()+"."+key), got, format, args...))
	})
	return errs
}

// checks reports every failed size check with its rule.
func checks(bad func(key, got, format string, args ...any), cs ...sizeCheck) {
	for _, c := range cs {
		if !c.ok {
			bad(c.name, strconv.Itoa(c.v), "%s", tileRule[c.name])
		}
	}
}

// splitKCheck: the GEMM families' split of the reduction among blocks.
func splitKCheck(n int) sizeCheck { return sizeCheck{"split_k", n, n >= 0 && n <= 16} }

// The block sizes FFMA, direct and mma.sync tiles share (bn is each
// family's own).
func blockChecks(bm, bk, minBlocks int) []sizeCheck {
	return []sizeCheck{
		{"bm", bm, pow2In(bm, 16, 1024)},
		{"bk", bk, bk == 0 || bk >= 1 && bk <= 64},
		{"min_blocks", minBlocks, minBlocks >= 0 && minBlocks <= 32},
	}
}

func (Spectral) check(func(key, got, format string, args ...any)) {}

func (t FFMA) check(bad func(key, got, format string, args ...any)) {
	checks(bad, append(blockChecks(t.BM, t.BK, t.MinBlocks),
		sizeCheck{"bn", t.BN, pow2In(t.BN, 4, 256)},
		sizeCheck{"tm", t.TM, t.TM == 0 || t.TM == 4 || t.TM == 8},
		sizeCheck{"tn", t.TN, t.TN == 0 || t.TN == 4 || t.TN == 8},
		splitKCheck(t.SplitK))...)
}

func (t Direct) check(bad func(key, got, format string, args ...any)) {
	// A direct thread's rows need not fill float4 reads: 1 and 2 as well;
	// nor its columns (one or two output channels a group read as a float
	// or a float2), so bn is checked here.
	checks(bad, append(blockChecks(t.BM, t.BK, t.MinBlocks),
		sizeCheck{"tw", t.TW, t.TW >= 0 && t.TW <= 16})...)
	if !pow2In(t.BN, 1, 256) {
		bad("bn", strconv.Itoa(t.BN), "must be a power of two from 1 to 256")
	}
	if !(t.TM == 0 || t.TM == 1 || t.TM == 2 || t.TM == 4 || t.TM == 8) {
		bad("tm", strconv.Itoa(t.TM), "must be 1, 2, 4 or 8")
	}
	if t.TW != 0 && t.TM > 1 {
		bad("tm", strconv.Itoa(t.TM), "must be 1 or unset with tw (a thread's outputs are its tw along W)")
	}
}

func (t MMA) check(bad func(key, got, format string, args ...any)) {
	checks(bad, append(blockChecks(t.BM, t.BK, t.MinBlocks),
		sizeCheck{"bn", t.BN, pow2In(t.BN, 4, 256)},
		sizeCheck{"wm", t.WM, t.WM == 0 || t.WM == 16 || t.WM == 32 || t.WM == 64},
		sizeCheck{"wn", t.WN, t.WN == 0 || t.WN == 8 || t.WN == 16 || t.WN == 32 || t.WN == 64},
		splitKCheck(t.SplitK))...)
	if t.CpAsync && t.Presplit {
		bad("cp_async", "true", "copies tiles without passing through registers, where presplit splits them: choose one")
	}
}

func (t WGMMA) check(bad func(key, got, format string, args ...any)) {
	checks(bad,
		sizeCheck{"min_blocks", t.MinBlocks, t.MinBlocks >= 0 && t.MinBlocks <= 32},
		sizeCheck{"slabs", t.Slabs, t.Slabs >= 0 && t.Slabs <= 2},
		sizeCheck{"warpgroups", t.Warpgroups, t.Warpgroups == 0 || t.Warpgroups == 1 || t.Warpgroups == 2 || t.Warpgroups == 4},
		sizeCheck{"span", t.Span, t.Span >= 0 && t.Span <= 16},
		sizeCheck{"stages", t.Stages, t.Stages == 0 || t.Stages >= 2 && t.Stages <= 8},
		sizeCheck{"phase_split", t.PhaseSplit, t.PhaseSplit >= 0 && t.PhaseSplit <= MaxPhaseSplit})
	if t.Winograd && t.KWInN {
		bad("winograd", "true", "pairs outputs along W, where kw_in_n makes the W taps columns: choose one")
	}
	if t.EarlyInputs && t.CpAsync {
		bad("early_inputs", "true", "loads the inputs into registers during the products, where cp_async stages them in shared memory: choose one")
	}
	if t.Winograd && t.CpAsync {
		bad("winograd", "true", "combines two input positions in registers, where cp_async stages one in shared memory: choose one")
	}
}

// sizeCheck is one integer kernel field and whether its value is allowed.
type sizeCheck struct {
	name string
	v    int
	ok   bool
}

// sizes reports every check that failed, under prefix, with its rule.
func (d *decoder) sizes(prefix string, rules map[string]string, checks []sizeCheck) {
	for _, c := range checks {
		if !c.ok {
			d.failAt(prefix+c.name, strconv.Itoa(c.v), "%s", rules[c.name])
		}
	}
}

// pow2In: unset (0), or a power of two from lo to hi.
func pow2In(v, lo, hi int) bool { return v == 0 || v >= lo && v <= hi && v&(v-1) == 0 }

var tritonRule = map[string]string{
	"block_m": "must be a power of two from 16 to 256 (tl.dot's smallest block is 16)",
	"block_n": "must be a power of two from 16 to 256 (tl.dot's smallest block is 16)",
	"block_k": "must be a power of two from 16 to 128 (tl.dot's smallest block is 16)",
	"warps":   "must be 1, 2, 4, 8 or 16",
	"stages":  "must be from 0 (unset) to 8",
	"fold_w":  "must be from 0 (unset) to 8",
}

// precision checks one precision field: reduced precisions are refused
// with the seed's rule, unknown ones listed.
func (d *decoder) precision(field, p string) {
	switch {
	case reduced[p]:
		d.failAt(field, strconv.Quote(p), "reduced precision is refused, %s; use fp32 or 3xtf32 (fp32-accurate)", seedRule)
	case !slices.Contains(precisions, p):
		d.failAt(field, strconv.Quote(p), "must be one of %s", strings.Join(precisions, ", "))
	}
}

var tileRule = map[string]string{
	"bm":          "must be a power of two from 16 to 1024",
	"bn":          "must be a power of two from 4 to 256",
	"bk":          "must be from 1 to 64",
	"tm":          "must be 4 or 8 (each thread reads its rows as float4)",
	"tn":          "must be 4 or 8 (each thread reads its columns as float4)",
	"wm":          "must be 16, 32 or 64 (whole m16n8k8 fragments per warp)",
	"wn":          "must be 8, 16, 32 or 64 (whole m16n8k8 fragments per warp)",
	"min_blocks":  "must be from 0 (unset) to 32 (resident blocks per SM)",
	"tw":          "must be from 0 (unset) to 16 (outputs along W per thread)",
	"slabs":       "must be 1 or 2 (0: the plan's choice), 64-row slabs per warpgroup",
	"warpgroups":  "must be 1, 2 or 4 (0: 1), warpgroups per block sharing the weight stages",
	"span":        "must be from 0 (the plan's choice) to 16, reduction steps per tensor-core sum",
	"stages":      "must be 2 to 8 (0: the plan's choice), reduction steps staged in shared memory",
	"split_k":     "must be from 1 to 16 (0: 1), blocks sharing a phase's reduction steps",
	"phase_split": "must be from 1 to 64 (0: the plan's choice), blocks sharing a row tile's phases",
}

// MaxPhaseSplit: the most blocks a wgmma row tile's phases are shared
// among (the plan also refuses more than the phases with taps).
const MaxPhaseSplit = 64

// item returns the node of a list element, or the list itself.
func (d *decoder) item(field string, i int) *yaml.Node {
	n := d.pos[field]
	if n != nil && n.Kind == yaml.SequenceNode && i < len(n.Content) {
		return n.Content[i]
	}
	return n
}
