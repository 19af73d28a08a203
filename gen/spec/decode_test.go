package spec_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"convtgen/gen/geom"
	"convtgen/gen/spec"
)

// baseFile is the name the table's diagnostics carry.
const baseFile = "base.yaml"

// readBase returns testdata/base.yaml, a valid spec with the shape of
// specs/level1/72_strided_padded_grouped.yaml.
func readBase(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "base.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// edit replaces the one occurrence of Old in the base spec by New.
type edit struct{ Old, New string }

// apply makes the edits, failing the test when an Old text is not found
// exactly once (so a stale table cannot silently test the base spec).
func apply(t *testing.T, src string, edits []edit) string {
	t.Helper()
	for _, e := range edits {
		if n := strings.Count(src, e.Old); n != 1 {
			t.Fatalf("edit %q: found %d times in the base spec, want exactly once", e.Old, n)
		}
		src = strings.Replace(src, e.Old, e.New, 1)
	}
	return src
}

// parseErrors parses src and returns its diagnostics as text, one per line.
func parseErrors(t *testing.T, src string) []string {
	t.Helper()
	s, err := spec.Parse(baseFile, []byte(src))
	if err == nil {
		if s == nil {
			t.Fatal("Parse returned neither a spec nor an error")
		}
		return nil
	}
	if s != nil {
		t.Errorf("Parse returned a spec along with an error")
	}
	var errs spec.Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse error is %T, want spec.Errors: %v", err, err)
	}
	return strings.Split(errs.Error(), "\n")
}

func TestParseBase(t *testing.T) {
	s, err := spec.Parse(baseFile, []byte(readBase(t)))
	if err != nil {
		t.Fatalf("base spec: %v", err)
	}
	want := geom.Conv{
		Batch: 8, InChannels: 32, OutChannels: 32,
		In: [3]int{12, 24, 48}, Kernel: [3]int{3, 5, 7}, Stride: [3]int{2, 2, 2},
		Padding: [3]int{1, 2, 3}, OutputPadding: [3]int{1, 1, 1}, Dilation: [3]int{1, 1, 1},
		Groups: 4, Bias: false,
	}
	if s.Problem.Conv != want {
		t.Errorf("conv = %+v\nwant %+v", s.Problem.Conv, want)
	}
	if s.Path != baseFile || s.Name != "l1_72_strided_padded_grouped" || s.Title != "strided padded grouped" {
		t.Errorf("path, name, title = %q, %q, %q", s.Path, s.Name, s.Title)
	}
	if s.Problem.InputDist != "rand" {
		t.Errorf("input_dist defaults to %q, want rand", s.Problem.InputDist)
	}
	if s.Reference.Attr != "conv_transpose3d" {
		t.Errorf("reference.attr defaults to %q, want conv_transpose3d", s.Reference.Attr)
	}
	if !reflect.DeepEqual(s.Kernel.Backends, []string{"cuda"}) || s.Kernel.PrecisionFor("cuda") != "fp32" || s.Kernel.CUDA != (spec.CUDA{}) {
		t.Errorf("kernel = %+v", s.Kernel)
	}
	if n := len(s.Reference.Params); n != 8 {
		t.Fatalf("%d params, want 8", n)
	}
	if p := s.Reference.Params[3]; p.Name != "stride" || p.Type != "tuple" || p.Default == nil || p.Default.Python() != "(1, 1, 1)" {
		t.Errorf("params[3] = %+v", p)
	}
	inits := make([]string, len(s.Reference.InitInputs))
	for i, v := range s.Reference.InitInputs {
		inits[i] = v.Python()
	}
	if got := strings.Join(inits, ", "); got != "32, 32, (3, 5, 7), (2, 2, 2), (1, 2, 3), (1, 1, 1), 4" {
		t.Errorf("init_inputs = %s", got)
	}
}

// TestParseValidVariants are edits that must stay valid, with what they
// must decode to.
func TestParseValidVariants(t *testing.T) {
	base := readBase(t)
	for _, tc := range []struct {
		name  string
		edits []edit
		check func(*spec.Spec) string // "" when fine
	}{
		{"scalar triple", []edit{{"  kernel: [3, 5, 7]", "  kernel: 3"}, {"[32, 32, [3, 5, 7]", "[32, 32, [3, 3, 3]"}},
			func(s *spec.Spec) string {
				if s.Problem.Kernel != [3]int{3, 3, 3} {
					return "kernel is not [3, 3, 3]"
				}
				return ""
			}},
		{"output_padding below dilation, above stride", []edit{
			{"  stride: [2, 2, 2]", "  stride: [1, 1, 1]\n  dilation: [2, 2, 2]"},
			{"    - groups=groups", "    - groups=groups\n    - dilation=(2, 2, 2)"},
			{"[2, 2, 2], [1, 2, 3]", "[1, 1, 1], [1, 2, 3]"}},
			func(s *spec.Spec) string {
				if s.Problem.Dilation != [3]int{2, 2, 2} || s.Problem.OutputPadding != [3]int{1, 1, 1} {
					return "dilation/output_padding not decoded"
				}
				return ""
			}},
		{"output size exactly 1", []edit{{"  input: [12, 24, 48]", "  input: [1, 24, 48]"}, {"  kernel: [3, 5, 7]", "  kernel: [1, 5, 7]"},
			{"  padding: [1, 2, 3]", "  padding: [0, 2, 3]"}, {"  output_padding: [1, 1, 1]", "  output_padding: [0, 1, 1]"},
			{"[32, 32, [3, 5, 7], [2, 2, 2], [1, 2, 3], [1, 1, 1], 4]", "[32, 32, [1, 5, 7], [2, 2, 2], [0, 2, 3], [0, 1, 1], 4]"}},
			func(s *spec.Spec) string {
				if s.Problem.Out()[0] != 1 {
					return "depth output is not 1"
				}
				return ""
			}},
		{"keyword order free, literal args", []edit{{`    - in_channels
    - out_channels
    - kernel_size
`, `    - kernel_size=kernel_size
    - out_channels=out_channels
    - in_channels=in_channels
`}}, nil},
		{"randn, bias, triton, 3xtf32, tile", []edit{
			{"  groups: 4", "  groups: 4\n  bias: true\n  input_dist: randn"},
			{"[1, 1, 1], 4]", "[1, 1, 1], 4, true]"},
			{"  backends: [cuda]", "  backends: [cuda, triton]\n  cuda: {mma: {bm: 128, bn: 8, bk: 8, wm: 32, wn: 8}}"}},
			func(s *spec.Spec) string {
				if !s.Problem.Bias || s.Problem.InputDist != "randn" || s.Kernel.PrecisionFor("cuda") != "3xtf32" ||
					!reflect.DeepEqual(s.Kernel.Backends, []string{"cuda", "triton"}) ||
					s.Kernel.CUDA != (spec.CUDA{Family: spec.MMA{BM: 128, BN: 8, BK: 8, WM: 32, WN: 8}}) {
					return "kernel or bias not decoded"
				}
				return ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := apply(t, base, tc.edits)
			s, err := spec.Parse(baseFile, []byte(src))
			if err != nil {
				t.Fatalf("want valid, got:\n%v", err)
			}
			if tc.check != nil {
				if msg := tc.check(s); msg != "" {
					t.Error(msg)
				}
			}
		})
	}
}

// seedRule is the seed's rule the validator quotes when it refuses reduced
// precision, written out here independently.
const seedRule = `the seed forbids it: "Do Not Use: ... torch.backends.cuda.matmul.allow_tf32, ` +
	`torch.backends.cudnn.allow_tf32, ... or half/mixed precision as they obscure true results"`

// TestParseErrors edits one thing of the base spec per case and expects
// exactly these diagnostics, in this order.
func TestParseErrors(t *testing.T) {
	base := readBase(t)
	cases := []struct {
		name  string
		edits []edit
		want  []string
	}{
		// --- decoding ---------------------------------------------------------
		// yaml.v3 reports its parser errors on the line before the one
		// where the unclosed construct starts (0-based context line,
		// go-yaml/yaml#205), and always without a column.
		{"yaml syntax error", []edit{{"  batch: 8\n", "  batch: [8\n"}},
			[]string{"base.yaml:6:1: yaml: did not find expected ',' or ']'"}},
		{"yaml scanner error", []edit{{"name: l1_72_strided_padded_grouped\n", "name: 'l1_72_strided_padded_grouped\n"}},
			[]string{"base.yaml:4:1: yaml: found unexpected end of stream"}},
		// BUG (decode.go, decode): yaml.v3 errors without a line keep their
		// own "yaml: " prefix, printed after the field "yaml:" a second time.
		{"yaml error without a line", []edit{{"version: 2\n", "version: 2\x01\n"}},
			[]string{"base.yaml:1:1: yaml: control characters are not allowed"}},
		{"unknown top-level key", []edit{{"title: strided padded grouped\n", "title: strided padded grouped\ncolour: red\n"}},
			[]string{"base.yaml:6:1: colour: unknown key; known: kernel, name, problem, reference, title, version"}},
		{"unknown nested key", []edit{{"  groups: 4\n", "  groups: 4\n  colour: red\n"}},
			[]string{"base.yaml:16:3: problem.colour: unknown key; known: batch, bias, dilation, groups, in_channels, input, input_dist, kernel, out_channels, output_padding, padding, stride"}},
		{"unknown key in a param", []edit{{"{name: groups, type: int, default: 1}", "{name: groups, type: int, defualt: 1}"}},
			[]string{"base.yaml:24:33: reference.params[6].defualt: unknown key; known: default, name, type"}},
		{"unknown key in tile", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {ffma: {bm: 64, bz: 2}}"}},
			[]string{"base.yaml:38:25: kernel.cuda.ffma.bz: unknown key; known: bk, bm, bn, cp_async, min_blocks, split_k, tm, tn"}},
		// BUG (decode.go, fields): an empty key is reported with the
		// field name of its mapping only ("problem." here, "" at the top).
		{"empty key", []edit{{"  groups: 4\n", "  groups: 4\n  \"\": 1\n"}},
			[]string{`base.yaml:16:3: problem."": unknown key; known: batch, bias, dilation, groups, in_channels, input, input_dist, kernel, out_channels, output_padding, padding, stride`}},
		{"duplicate key", []edit{{"  in_channels: 32\n", "  in_channels: 32\n  in_channels: 16\n"}},
			[]string{"base.yaml:9:3: problem.in_channels: duplicate key"}},
		{"duplicate top-level key", []edit{{"title: strided padded grouped\n", "title: strided padded grouped\nversion: 2\n"}},
			[]string{"base.yaml:6:1: version: duplicate key"}},
		{"missing required field", []edit{{"  batch: 8\n", ""}},
			[]string{"base.yaml:7:3: problem.batch: required field is missing"}},
		{"missing required section", []edit{{"name: l1_72_strided_padded_grouped\n", ""}},
			[]string{"base.yaml:3:1: name: required field is missing"}},
		{"string for int", []edit{{"  batch: 8\n", "  batch: eight\n"}},
			[]string{"base.yaml:7:10: problem.batch: must be an integer (got eight)"}},
		{"quoted string for int", []edit{{"  batch: 8\n", "  batch: \"8\"\n"}},
			[]string{`base.yaml:7:10: problem.batch: must be an integer (got "8")`}},
		{"float for int", []edit{{"  in_channels: 32\n", "  in_channels: 32.0\n"}},
			[]string{"base.yaml:8:16: problem.in_channels: must be an integer (got 32.0)"}},
		{"string in a triple", []edit{{"  kernel: [3, 5, 7]", "  kernel: [3, five, 7]"}},
			[]string{"base.yaml:10:15: problem.kernel[1]: must be an integer (got five)"}},
		{"triple of two", []edit{{"  kernel: [3, 5, 7]", "  kernel: [3, 5]"}},
			[]string{"base.yaml:10:11: problem.kernel: must be an integer or a list of three integers [D, H, W] (got [3, 5])"}},
		{"mapping for a section", []edit{{"kernel:\n  backends: [cuda]\n", "kernel: fast\n"}},
			[]string{"base.yaml:36:9: kernel: must be a mapping (got fast)"}},
		{"string for bool", []edit{{"  groups: 4\n", "  groups: 4\n  bias: yes\n"}},
			[]string{"base.yaml:16:9: problem.bias: must be true or false (got yes)"}},
		{"version not 2", []edit{{"version: 2\n", "version: 3\n"}},
			[]string{"base.yaml:3:10: version: this generator reads version 2 (got 3)"}},

		// --- name --------------------------------------------------------------
		{"name with a path", []edit{{"name: l1_72_strided_padded_grouped", "name: ../x"}},
			[]string{`base.yaml:4:7: name: must be a lower-case identifier ([a-z][a-z0-9_]*, at most 64 characters): it names a folder and a Python extension (got "../x")`}},
		{"name upper case", []edit{{"name: l1_72_strided_padded_grouped", "name: L1"}},
			[]string{`base.yaml:4:7: name: must be a lower-case identifier ([a-z][a-z0-9_]*, at most 64 characters): it names a folder and a Python extension (got "L1")`}},
		{"name with a dash", []edit{{"name: l1_72_strided_padded_grouped", "name: a-b"}},
			[]string{`base.yaml:4:7: name: must be a lower-case identifier ([a-z][a-z0-9_]*, at most 64 characters): it names a folder and a Python extension (got "a-b")`}},
		{"name too long", []edit{{"name: l1_72_strided_padded_grouped", "name: a" + strings.Repeat("b", 64)}},
			[]string{`base.yaml:4:7: name: must be a lower-case identifier ([a-z][a-z0-9_]*, at most 64 characters): it names a folder and a Python extension (got "a` + strings.Repeat("b", 64) + `")`}},

		// --- problem -------------------------------------------------------------
		{"batch 0", []edit{{"  batch: 8\n", "  batch: 0\n"}},
			[]string{"base.yaml:7:10: problem.batch: must be positive (got 0)"}},
		{"in_channels negative", []edit{{"  in_channels: 32\n", "  in_channels: -4\n"}},
			[]string{"base.yaml:8:16: problem.in_channels: must be positive (got -4)"}},
		{"out_channels 0", []edit{{"  out_channels: 32\n", "  out_channels: 0\n"}},
			[]string{"base.yaml:9:17: problem.out_channels: must be positive (got 0)"}},
		{"groups 0", []edit{{"  groups: 4\n", "  groups: 0\n"}},
			[]string{"base.yaml:15:11: problem.groups: must be positive (got 0)"}},
		{"kernel 0", []edit{{"  kernel: [3, 5, 7]", "  kernel: [3, 0, 7]"}},
			[]string{"base.yaml:10:11: problem.kernel: height must be positive (got [3, 0, 7])"}},
		{"input 0", []edit{{"  input: [12, 24, 48]", "  input: [12, 24, 0]"}},
			[]string{"base.yaml:11:10: problem.input: width must be positive (got [12, 24, 0])"}},
		{"scalar input negative", []edit{{"  input: [12, 24, 48]", "  input: -1"}},
			[]string{"base.yaml:11:10: problem.input: depth must be positive (got [-1, -1, -1])"}},
		{"stride 0", []edit{{"  stride: [2, 2, 2]", "  stride: [0, 2, 2]"}, {"  output_padding: [1, 1, 1]", "  output_padding: [0, 1, 1]"}},
			// The reference still builds output_padding 1, said too: a
			// refused field hides no other error.
			[]string{"base.yaml:12:11: problem.stride: depth must be positive (got [0, 2, 2])",
				"base.yaml:14:19: problem.output_padding: the reference builds output_padding=(1, 1, 1) from its init inputs (got [0, 1, 1])"}},
		{"dilation 0", []edit{{"  groups: 4\n", "  groups: 4\n  dilation: [1, 0, 1]\n"}},
			[]string{"base.yaml:16:13: problem.dilation: height must be positive (got [1, 0, 1])"}},
		{"padding negative", []edit{{"  padding: [1, 2, 3]", "  padding: [1, -2, 3]"}},
			[]string{"base.yaml:13:12: problem.padding: height must be zero or more (got [1, -2, 3])"}},
		{"output_padding negative", []edit{{"  output_padding: [1, 1, 1]", "  output_padding: [1, 1, -1]"}},
			[]string{"base.yaml:14:19: problem.output_padding: width must be zero or more (got [1, 1, -1])"}},
		{"in_channels not divisible by groups", []edit{{"  in_channels: 32\n", "  in_channels: 30\n"}},
			[]string{"base.yaml:8:16: problem.in_channels: must be divisible by groups=4 (got 30)"}},
		{"out_channels not divisible by groups", []edit{{"  out_channels: 32\n", "  out_channels: 6\n"}},
			[]string{"base.yaml:9:17: problem.out_channels: must be divisible by groups=4 (got 6)"}},
		{"output size 0", []edit{{"  input: [12, 24, 48]", "  input: [1, 24, 48]"}, {"  padding: [1, 2, 3]", "  padding: [2, 2, 3]"}},
			// (1-1)*2 - 2*2 + 1*(3-1) + 1 + 1 = 0
			[]string{"base.yaml:13:12: problem.padding: leaves no output along depth: (in-1)*stride - 2*padding + dilation*(kernel-1) + output_padding + 1 = 0 (got [2, 2, 3])"}},
		{"output size negative", []edit{{"  input: [12, 24, 48]", "  input: [12, 24, 1]"}, {"  padding: [1, 2, 3]", "  padding: [1, 2, 9]"}},
			// (1-1)*2 - 2*9 + 1*(7-1) + 1 + 1 = -10
			[]string{"base.yaml:13:12: problem.padding: leaves no output along width: (in-1)*stride - 2*padding + dilation*(kernel-1) + output_padding + 1 = -10 (got [1, 2, 9])"}},
		{"output_padding equal to stride", []edit{{"  output_padding: [1, 1, 1]", "  output_padding: [1, 2, 1]"}},
			[]string{"base.yaml:14:19: problem.output_padding: height must be smaller than max(stride, dilation) = 2 (got [1, 2, 1])"}},
		{"output_padding equal to dilation, stride 1", []edit{{"  stride: [2, 2, 2]", "  stride: [2, 2, 1]\n  dilation: [1, 1, 3]"}, {"  output_padding: [1, 1, 1]", "  output_padding: [1, 1, 3]"}},
			[]string{"base.yaml:12:11: problem.stride: the reference builds stride=(2, 2, 2) from its init inputs (got [2, 2, 1])",
				"base.yaml:13:13: problem.dilation: the reference builds dilation=1 from its init inputs (got [1, 1, 3])",
				"base.yaml:15:19: problem.output_padding: width must be smaller than max(stride, dilation) = 3 (got [1, 1, 3])"}},
		{"input_dist unknown", []edit{{"  groups: 4\n", "  groups: 4\n  input_dist: normal\n"}},
			[]string{`base.yaml:16:15: problem.input_dist: must be rand or randn (got "normal")`}},

		// --- reference -------------------------------------------------------------
		{"attr not an identifier", []edit{{"reference:\n", "reference:\n  attr: conv-t\n"}},
			[]string{`base.yaml:17:9: reference.attr: must be a Python identifier (got "conv-t")`}},
		{"param name not an identifier", []edit{{"{name: groups, type: int, default: 1}", "{name: n-groups, type: int, default: 1}"}},
			[]string{`base.yaml:24:14: reference.params[6].name: must be a Python identifier (got "n-groups")`}},
		{"param name a keyword", []edit{{"{name: groups, type: int, default: 1}", "{name: lambda, type: int, default: 1}"}},
			[]string{`base.yaml:24:14: reference.params[6].name: must be a Python identifier (got "lambda")`}},
		{"param name duplicate", []edit{{"{name: groups, type: int, default: 1}", "{name: padding, type: int, default: 1}"}},
			[]string{`base.yaml:24:14: reference.params[6].name: duplicate parameter (got "padding")`}},
		{"param type unknown", []edit{{"{name: groups, type: int, default: 1}", "{name: groups, type: str, default: 1}"}},
			[]string{`base.yaml:24:28: reference.params[6].type: must be int, float, bool, tuple or shape (got "str")`}},
		{"required param after a defaulted one", []edit{{"{name: groups, type: int, default: 1}", "{name: groups, type: int}"}},
			[]string{`base.yaml:24:14: reference.params[6].name: a parameter without a default cannot follow one with a default (got groups)`}},
		{"default of the wrong type", []edit{{"{name: groups, type: int, default: 1}", "{name: groups, type: int, default: true}"}},
			[]string{`base.yaml:24:42: reference.params[6].default: parameter groups is annotated int: expected an integer (got True)`}},
		{"tuple default of two", []edit{{"{name: stride, type: tuple, default: [1, 1, 1]}", "{name: stride, type: tuple, default: [1, 1]}"}},
			[]string{`base.yaml:21:44: reference.params[3].default: parameter stride is annotated tuple: expected a list of three integers (got (1, 1))`}},
		{"init_input of the wrong type", []edit{{"[32, 32, [3, 5, 7],", "[32, 32, 3,"}},
			[]string{`base.yaml:35:25: reference.init_inputs[2]: parameter kernel_size is annotated tuple: expected a list of three integers (got 3)`}},
		{"init_input bool for int", []edit{{"[1, 1, 1], 4]", "[1, 1, 1], false]"}},
			[]string{`base.yaml:35:69: reference.init_inputs[6]: parameter groups is annotated int: expected an integer (got False)`}},
		{"too many init_inputs", []edit{{"[1, 1, 1], 4]", "[1, 1, 1], 4, false, 7]"}},
			[]string{`base.yaml:35:16: reference.init_inputs: has more values than __init__ has parameters (8) (got 9)`}},
		{"param left without a value", []edit{{"[32, 32, [3, 5, 7], [2, 2, 2], [1, 2, 3], [1, 1, 1], 4]", "[32, 32]"}},
			[]string{`base.yaml:35:16: reference.init_inputs: leaves parameter kernel_size without a value`}},
		{"conv argument parse error", []edit{{"    - stride=stride\n", "    - stride=(2, 2\n"}},
			[]string{`base.yaml:27:5: reference.conv: argument 3: expected ',' or ')' at offset 12 (got "stride=(2, 2")`}},
		{"conv argument trailing text", []edit{{"    - stride=stride\n", "    - stride=stride + 1\n"}},
			[]string{`base.yaml:27:5: reference.conv: argument 3: unexpected "+ 1" at offset 14 (got "stride=stride + 1")`}},
		{"conv unknown keyword", []edit{{"    - stride=stride\n", "    - strides=stride\n"}},
			[]string{`base.yaml:27:5: reference.conv: argument 3: nn.ConvTranspose3d has no argument strides (got "strides=stride")`}},
		{"conv unknown name", []edit{{"    - stride=stride\n", "    - stride=step\n"}},
			[]string{`base.yaml:27:5: reference.conv: argument 3: step is not an __init__ parameter (got "stride=step")`}},
		{"conv positional after keyword", []edit{{"    - groups=groups\n", "    - groups\n"}},
			[]string{`base.yaml:27:5: reference.conv: argument 6: positional argument after a keyword argument (got "groups")`}},
		{"conv argument given twice", []edit{{"    - bias=bias\n", "    - bias=bias\n    - stride=stride\n"}},
			[]string{`base.yaml:27:5: reference.conv: argument 8: stride given twice (got "stride=stride")`}},
		{"conv too many positionals", []edit{{`    - stride=stride
    - padding=padding
    - output_padding=output_padding
    - groups=groups
    - bias=bias
`, `    - stride
    - padding
    - output_padding
    - groups
    - bias
    - 1
    - 2
`}},
			[]string{`base.yaml:27:5: reference.conv: argument 9: too many positional arguments (got "2")`}},
		{"conv missing in_channels", []edit{{"    - in_channels\n    - out_channels\n    - kernel_size\n", "    - out_channels=out_channels\n    - kernel_size=kernel_size\n"}},
			[]string{`base.yaml:27:5: reference.conv: nn.ConvTranspose3d needs in_channels`}},
		{"conv tuple of bools", []edit{{"    - stride=stride\n", "    - stride=(True, 2, 2)\n"}},
			[]string{`base.yaml:27:5: reference.conv: argument 3: tuple elements must be integers (got "stride=(True, 2, 2)")`}},
		{"conv kernel of two", []edit{{"    - kernel_size\n", "    - (3, 5)\n"}},
			[]string{`base.yaml:27:5: reference.conv: kernel_size must be an integer or a 3-tuple (got (3, 5))`}},

		// --- problem vs what the reference builds ----------------------------------
		{"groups the reference ignores (KernelBench #73)", []edit{{"    - groups=groups\n", ""}},
			[]string{`base.yaml:15:11: problem.groups: the reference builds groups=1 from its init inputs (got 4)`}},
		{"kernel disagrees", []edit{{"  kernel: [3, 5, 7]", "  kernel: [3, 5, 5]"}},
			[]string{`base.yaml:10:11: problem.kernel: the reference builds kernel_size=(3, 5, 7) from its init inputs (got [3, 5, 5])`}},
		{"in_channels disagrees", []edit{{"[32, 32, [3, 5, 7]", "[16, 32, [3, 5, 7]"}},
			[]string{`base.yaml:8:16: problem.in_channels: the reference builds in_channels=16 from its init inputs (got 32)`}},
		{"stride default disagrees", []edit{{"    - stride=stride\n", ""}},
			[]string{`base.yaml:12:11: problem.stride: the reference builds stride=1 from its init inputs (got [2, 2, 2])`}},
		{"bias disagrees", []edit{{"  groups: 4\n", "  groups: 4\n  bias: true\n"}},
			[]string{`base.yaml:16:9: problem.bias: the reference builds bias=False from its init inputs (got true)`}},

		// --- kernel ----------------------------------------------------------------
		{"backend unknown", []edit{{"  backends: [cuda]", "  backends: [cuda, opencl]"}},
			[]string{`base.yaml:37:20: kernel.backends[1]: must be one of cuda, triton (got "opencl")`}},
		{"backend duplicate", []edit{{"  backends: [cuda]", "  backends: [cuda, triton, cuda]"}},
			[]string{`base.yaml:37:28: kernel.backends[2]: listed twice (got "cuda")`}},
		{"backends empty", []edit{{"  backends: [cuda]", "  backends: []"}},
			[]string{`base.yaml:37:13: kernel.backends: must name at least one of cuda, triton (got [])`}},
		{"tile bm not a power of two", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {ffma: {bm: 100}}"}},
			[]string{`base.yaml:38:21: kernel.cuda.ffma.bm: must be a power of two from 16 to 1024 (got 100)`}},
		{"tile bm too big", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {ffma: {bm: 2048}}"}},
			[]string{`base.yaml:38:21: kernel.cuda.ffma.bm: must be a power of two from 16 to 1024 (got 2048)`}},
		{"tile bn too small", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {ffma: {bn: 2}}"}},
			[]string{`base.yaml:38:21: kernel.cuda.ffma.bn: must be a power of two from 4 to 256 (got 2)`}},
		{"tile bk too big", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {ffma: {bk: 65}}"}},
			[]string{`base.yaml:38:21: kernel.cuda.ffma.bk: must be from 1 to 64 (got 65)`}},
		{"tile bk negative", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {ffma: {bk: -1}}"}},
			[]string{`base.yaml:38:21: kernel.cuda.ffma.bk: must be from 1 to 64 (got -1)`}},
		{"tile tm", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {ffma: {tm: 2}}"}},
			[]string{`base.yaml:38:21: kernel.cuda.ffma.tm: must be 4 or 8 (each thread reads its rows as float4) (got 2)`}},
		{"tile tn", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {ffma: {tn: 16}}"}},
			[]string{`base.yaml:38:21: kernel.cuda.ffma.tn: must be 4 or 8 (each thread reads its columns as float4) (got 16)`}},
		{"tile wm", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {mma: {wm: 8}}"}},
			[]string{`base.yaml:38:20: kernel.cuda.mma.wm: must be 16, 32 or 64 (whole m16n8k8 fragments per warp) (got 8)`}},
		{"tile wn", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {mma: {wn: 4}}"}},
			[]string{`base.yaml:38:20: kernel.cuda.mma.wn: must be 8, 16, 32 or 64 (whole m16n8k8 fragments per warp) (got 4)`}},
		{"triton precision tf32", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  triton: {precision: tf32}"}},
			[]string{`base.yaml:38:23: kernel.triton.precision: reduced precision is refused, ` + seedRule + `; use fp32 or 3xtf32 (fp32-accurate) (got "tf32")`}},
		{"triton blocks, warps and stages, all at once", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  triton: {block_m: 100, block_n: 8, block_k: 256, warps: 3, stages: 9}"}},
			[]string{
				`base.yaml:38:21: kernel.triton.block_m: must be a power of two from 16 to 256 (tl.dot's smallest block is 16) (got 100)`,
				`base.yaml:38:35: kernel.triton.block_n: must be a power of two from 16 to 256 (tl.dot's smallest block is 16) (got 8)`,
				`base.yaml:38:47: kernel.triton.block_k: must be a power of two from 16 to 128 (tl.dot's smallest block is 16) (got 256)`,
				`base.yaml:38:59: kernel.triton.warps: must be 1, 2, 4, 8 or 16 (got 3)`,
				`base.yaml:38:70: kernel.triton.stages: must be from 0 (unset) to 8 (got 9)`,
			}},
		{"tw out of range", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {direct: {tw: 32}}"}},
			[]string{"base.yaml:38:23: kernel.cuda.direct.tw: must be from 0 (unset) to 16 (outputs along W per thread) (got 32)"}},
		{"cp_async with presplit", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {mma: {presplit: true, cp_async: true}}"}},
			[]string{"base.yaml:38:42: kernel.cuda.mma.cp_async: copies tiles without passing through registers, where presplit splits them: choose one (got true)"}},
		{"early_inputs with cp_async", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {wgmma: {cp_async: true, early_inputs: true}}"}},
			[]string{"base.yaml:38:48: kernel.cuda.wgmma.early_inputs: loads the inputs into registers during the products, where cp_async stages them in shared memory: choose one (got true)"}},
		{"winograd with kw_in_n and cp_async", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {wgmma: {kw_in_n: true, cp_async: true, winograd: true}}"}},
			[]string{
				"base.yaml:38:59: kernel.cuda.wgmma.winograd: pairs outputs along W, where kw_in_n makes the W taps columns: choose one (got true)",
				"base.yaml:38:59: kernel.cuda.wgmma.winograd: combines two input positions in registers, where cp_async stages one in shared memory: choose one (got true)",
			}},
		{"triton split_weight in fp32", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  cuda: {mma: {}}\n  triton: {precision: fp32, split_weight: true}"}},
			[]string{"base.yaml:39:43: kernel.triton.split_weight: splits operands into TF32 parts: only with precision 3xtf32 (the Triton precision is fp32) (got true)"}},
		{"triton fold_w without fuse_w", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  triton: {fold_w: 2}"}},
			[]string{"base.yaml:38:20: kernel.triton.fold_w: folds outputs into the columns of fused W phases: only with fuse_w: true (got 2)"}},
		{"triton fold_w too large", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  triton: {fold_w: 9, fuse_w: true}"}},
			[]string{"base.yaml:38:20: kernel.triton.fold_w: must be from 0 (unset) to 8 (got 9)"}},
		{"triton unknown key", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  triton: {block_z: 16}"}},
			[]string{"base.yaml:38:12: kernel.triton.block_z: unknown key; known: block_k, block_m, block_n, channels_last, flat_k, fold_w, fuse_w, pad_input, precision, split_weight, stages, warps"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parseErrors(t, apply(t, base, tc.edits))
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// TestParseDocumentErrors covers inputs that are not a spec-shaped mapping
// at all: every diagnostic must still name a field.
func TestParseDocumentErrors(t *testing.T) {
	for _, tc := range []struct{ name, src, want string }{
		// BUG (decode.go, decode): yaml.v3 returns io.EOF for a document
		// with no node, so the "empty document" branch never runs and the
		// user reads "yaml: EOF".
		{"empty file", "", "x.yaml:1:1: spec: empty document"},
		{"only a comment", "# nothing here\n", "x.yaml:1:1: spec: empty document"},
		// BUG (decode.go, fields): the root mapping has the empty prefix,
		// so "must be a mapping" is reported with an empty field.
		{"scalar document", "hello\n", "x.yaml:1:1: spec: must be a mapping (got hello)"},
		{"list document", "- 1\n- 2\n", "x.yaml:1:1: spec: must be a mapping (got [1, 2])"},
		{"all required sections missing", "title: t\n", strings.Join([]string{
			"x.yaml:1:1: version: required field is missing",
			"x.yaml:1:1: name: required field is missing",
			"x.yaml:1:1: problem: required field is missing",
			"x.yaml:1:1: reference: required field is missing",
		}, "\n")},
		{"empty sections", "version: 2\nname: x\nproblem: {}\nreference: {}\n", strings.Join([]string{
			"x.yaml:3:10: problem.batch: required field is missing",
			"x.yaml:3:10: problem.in_channels: required field is missing",
			"x.yaml:3:10: problem.out_channels: required field is missing",
			"x.yaml:3:10: problem.kernel: required field is missing",
			"x.yaml:3:10: problem.input: required field is missing",
			"x.yaml:4:12: reference.params: required field is missing",
			"x.yaml:4:12: reference.conv: required field is missing",
			"x.yaml:4:12: reference.init_inputs: required field is missing",
		}, "\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := spec.Parse("x.yaml", []byte(tc.src))
			var errs spec.Errors
			if s != nil || !errors.As(err, &errs) {
				t.Fatalf("Parse = %v, %v; want nil and spec.Errors", s, err)
			}
			if got := errs.Error(); got != tc.want {
				t.Errorf("errors:\n%s\nwant:\n%s", got, tc.want)
			}
			checkErrors(t, "x.yaml", errs)
		})
	}
}

// checkErrors asserts the Errors contract: every entry names the file, a
// 1-based position and a field, and entries are sorted by position.
func checkErrors(t testing.TB, file string, errs spec.Errors) {
	t.Helper()
	if len(errs) == 0 {
		t.Errorf("empty spec.Errors returned as an error")
	}
	for i, e := range errs {
		if e.File != file || e.Line < 1 || e.Col < 1 || e.Field == "" || e.Msg == "" {
			t.Errorf("error %d breaks the contract (file %q, line %d, col %d, field %q, msg %q): %v",
				i, e.File, e.Line, e.Col, e.Field, e.Msg, e)
		}
		if i > 0 {
			p := errs[i-1]
			if p.Line > e.Line || p.Line == e.Line && p.Col > e.Col {
				t.Errorf("errors not sorted by position: %v before %v", p, e)
			}
		}
	}
}

// TestParseReportsAllAtOnce breaks several things of one spec and expects
// every one of them, sorted by position.
func TestParseReportsAllAtOnce(t *testing.T) {
	base := readBase(t)
	t.Run("validation", func(t *testing.T) {
		src := apply(t, base, []edit{
			{"  backends: [cuda]", "  backends: [opencl]\n  triton: {precision: fp16}\n  cuda: {ffma: {bm: 100, tn: 3}}"},
			{"  input: [12, 24, 48]", "  input: [12, 0, 48]"},
			{"  batch: 8\n", "  batch: -1\n"},
			{"name: l1_72_strided_padded_grouped", "name: Bad-Name"},
			{"  groups: 4\n", "  groups: 4\n  input_dist: uniform\n"},
		})
		got := parseErrors(t, src)
		want := []string{
			`base.yaml:4:7: name: must be a lower-case identifier ([a-z][a-z0-9_]*, at most 64 characters): it names a folder and a Python extension (got "Bad-Name")`,
			`base.yaml:7:10: problem.batch: must be positive (got -1)`,
			`base.yaml:11:10: problem.input: height must be positive (got [12, 0, 48])`,
			`base.yaml:16:15: problem.input_dist: must be rand or randn (got "uniform")`,
			`base.yaml:38:14: kernel.backends[0]: must be one of cuda, triton (got "opencl")`,
			`base.yaml:39:23: kernel.triton.precision: reduced precision is refused, ` + seedRule + `; use fp32 or 3xtf32 (fp32-accurate) (got "fp16")`,
			`base.yaml:40:21: kernel.cuda.ffma.bm: must be a power of two from 16 to 1024 (got 100)`,
			`base.yaml:40:30: kernel.cuda.ffma.tn: must be 4 or 8 (each thread reads its columns as float4) (got 3)`,
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("decoding", func(t *testing.T) {
		// The missing field is found after the mapping's children but is
		// reported at the mapping's start, so sorting moves it first.
		src := apply(t, base, []edit{
			{"  batch: 8\n", ""},
			{"  out_channels: 32\n", "  out_channels: many\n  colour: red\n"},
			{"  backends: [cuda]", "  backends: cuda"},
			{"    - bias=bias\n", "    - bias=bias\n    - [1]\n"},
		})
		got := parseErrors(t, src)
		want := []string{
			`base.yaml:7:3: problem.batch: required field is missing`,
			`base.yaml:8:17: problem.out_channels: must be an integer (got many)`,
			`base.yaml:9:3: problem.colour: unknown key; known: batch, bias, dilation, groups, in_channels, input, input_dist, kernel, out_channels, output_padding, padding, stride`,
			`base.yaml:35:7: reference.conv[8]: must be a string (got [1])`,
			`base.yaml:38:13: kernel.backends: must be a list of strings (got cuda)`,
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
}

// TestParseSpecsDir parses every committed spec; names are unique.
func TestParseSpecsDir(t *testing.T) {
	root := filepath.Join("..", "..", "specs")
	n := 0
	names := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
			return err
		}
		n++
		s, err := spec.Load(path)
		if err != nil {
			t.Errorf("%v", err)
			return nil
		}
		if other, dup := names[s.Name]; dup {
			t.Errorf("%s: name %s already used by %s", path, s.Name, other)
		}
		names[s.Name] = path
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no specs under %s", root)
	}
}
