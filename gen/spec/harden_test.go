package spec_test

import (
	"strings"
	"testing"
)

// TestParseHardening holds the reproducers of the issue "No silently
// wrong kernel, no unsafe spec" that the spec itself refuses: YAML that
// yaml.v3 reads otherwise than meant, unsafe strings and names, and
// sizes past the limits or the target's memory (each as an edit of the
// base spec, with the error it must give).
func TestParseHardening(t *testing.T) {
	base := readBase(t)
	cases := []struct {
		name  string
		edits []edit
		want  []string
	}{
		// --- YAML ---------------------------------------------------------------
		{"second document", []edit{{"kernel:\n", "---\nversion: 2\nkernel:\n"}},
			[]string{"base.yaml:36:1: spec: a spec file holds one YAML document; a second one starts here"}},
		{"empty second document", []edit{{"  backends: [cuda]\n", "  backends: [cuda]\n---\n"}},
			[]string{"base.yaml:38:1: spec: a spec file holds one YAML document; a second one starts here"}},
		{"bias !!bool yes", []edit{{"  groups: 4\n", "  groups: 4\n  bias: !!bool yes\n"}},
			[]string{"base.yaml:16:9: problem.bias: must be true or false (got yes)"}},
		{"bias !!bool off", []edit{{"  groups: 4\n", "  groups: 4\n  bias: !!bool off\n"}},
			[]string{"base.yaml:16:9: problem.bias: must be true or false (got off)"}},
		{"bias yes (a string in YAML 1.2)", []edit{{"  groups: 4\n", "  groups: 4\n  bias: yes\n"}},
			[]string{"base.yaml:16:9: problem.bias: must be true or false (got yes)"}},
		{"!!bool True is standard", []edit{{"  groups: 4\n", "  groups: 4\n  bias: !!bool True\n"}, {"{name: bias, type: bool, default: false}", "{name: bias, type: bool, default: true}"}},
			nil},
		{"!!int is allowed", []edit{{"  batch: 8\n", "  batch: !!int 8\n"}}, nil},
		{"!!float tag", []edit{{"  batch: 8\n", "  batch: !!float 8\n"}},
			[]string{"base.yaml:7:10: problem.batch: explicit YAML tags other than !!int, !!str and !!bool are refused (got !!float)"}},
		{"local tag", []edit{{"title: strided padded grouped", "title: !x strided"}},
			[]string{"base.yaml:5:8: title: explicit YAML tags other than !!int, !!str and !!bool are refused (got !x)"}},
		{"!!map tag", []edit{{"problem:\n", "problem: !!map\n"}},
			[]string{"base.yaml:6:10: problem: explicit YAML tags other than !!int, !!str and !!bool are refused (got !!map)"}},
		{"!!int with a hex value", []edit{{"  batch: 8\n", "  batch: !!int 0x8\n"}},
			[]string{"base.yaml:7:10: problem.batch: must be an integer (got 0x8)"}},
		{"octal-looking int", []edit{{"  batch: 8\n", "  batch: 010\n"}},
			[]string{"base.yaml:7:10: problem.batch: must be an integer (got 010)"}},
		{"int with underscores", []edit{{"  batch: 8\n", "  batch: 1_0\n"}},
			[]string{"base.yaml:7:10: problem.batch: must be an integer (got 1_0)"}},
		{"int out of range", []edit{{"  batch: 8\n", "  batch: 99999999999999999999\n"}},
			[]string{"base.yaml:7:10: problem.batch: must be an integer (got 99999999999999999999)"}},
		{"name null", []edit{{"name: l1_72_strided_padded_grouped", "name: null"}},
			[]string{"base.yaml:4:7: name: must be a string (got null)"}},
		{"name ~", []edit{{"name: l1_72_strided_padded_grouped", "name: ~"}},
			[]string{"base.yaml:4:7: name: must be a string (got ~)"}},
		{"name empty", []edit{{"name: l1_72_strided_padded_grouped", "name:"}},
			[]string{`base.yaml:4:6: name: must be a string (got "")`}},
		{"title null", []edit{{"title: strided padded grouped", "title: null"}},
			[]string{"base.yaml:5:8: title: must be a string (got null)"}},
		{"input_dist null", []edit{{"  groups: 4\n", "  groups: 4\n  input_dist: ~\n"}},
			[]string{"base.yaml:16:15: problem.input_dist: must be a string (got ~)"}},
		{"param name null", []edit{{"{name: groups, type: int, default: 1}", "{name: null, type: int, default: 1}"}},
			[]string{"base.yaml:24:14: reference.params[6].name: must be a string (got null)"}},
		{"param type null", []edit{{"{name: groups, type: int, default: 1}", "{name: groups, type: ~, default: 1}"}},
			[]string{"base.yaml:24:28: reference.params[6].type: must be a string (got ~)"}},
		{"conv arg null", []edit{{"    - bias=bias\n", "    - null\n"}},
			[]string{"base.yaml:34:7: reference.conv[7]: must be a string (got null)"}},
		{"backend null", []edit{{"  backends: [cuda]", "  backends: [null]"}},
			[]string{"base.yaml:37:14: kernel.backends[0]: must be a string (got null)"}},
		{"precision null", []edit{{"  backends: [cuda]", "  backends: [cuda]\n  triton: {precision: null}"}},
			[]string{"base.yaml:38:23: kernel.triton.precision: must be a string (got null)"}},
		// --- strings ------------------------------------------------------------
		{"newline in the title", []edit{{"title: strided padded grouped", `title: "x\n__import__('os').system('true')\n#"`}},
			[]string{`base.yaml:5:8: title: contains the character U+000A at byte 1: spec text ends up in generated Python and C++, which takes none (got "x\n__import__('os').system('true')\n#")`}},
		{"NUL in the title", []edit{{"title: strided padded grouped", `title: "a\0b"`}},
			[]string{`base.yaml:5:8: title: contains the character U+0000 at byte 1: spec text ends up in generated Python and C++, which takes none (got "a\x00b")`}},
		{"DEL in the name", []edit{{"name: l1_72_strided_padded_grouped", `name: "a\x7f"`}},
			[]string{`base.yaml:4:7: name: contains the character U+007F at byte 1: spec text ends up in generated Python and C++, which takes none (got "a\x7f")`}},
		{"line separator in the attr", []edit{{"reference:\n", "reference:\n  attr: \"a\\u2028b\"\n"}},
			[]string{`base.yaml:17:9: reference.attr: contains the character U+2028 at byte 1: spec text ends up in generated Python and C++, which takes none (got "a\u2028b")`}},
		{"bidi override in a conv arg", []edit{{"    - bias=bias\n", "    - \"bias=bias\\u202e\"\n"}},
			[]string{`base.yaml:34:7: reference.conv[7]: contains the character U+202E at byte 9: spec text ends up in generated Python and C++, which takes none (got "bias=bias\u202e")`}},
		{"tab in a param name", []edit{{"{name: groups, type: int, default: 1}", "{name: \"gr\\toups\", type: int, default: 1}"}},
			[]string{`base.yaml:24:14: reference.params[6].name: contains the character U+0009 at byte 2: spec text ends up in generated Python and C++, which takes none (got "gr\toups")`}},
		{"carriage return in input_dist", []edit{{"  groups: 4\n", "  groups: 4\n  input_dist: \"rand\\r\"\n"}},
			[]string{`base.yaml:16:15: problem.input_dist: contains the character U+000D at byte 4: spec text ends up in generated Python and C++, which takes none (got "rand\r")`}},
		{"control character in a key", []edit{{"  groups: 4\n", "  groups: 4\n  \"a\\nb\": 1\n"}},
			[]string{`base.yaml:16:3: problem."a\nb": unknown key; known: batch, bias, dilation, groups, in_channels, input, input_dist, kernel, out_channels, output_padding, padding, stride`}},
		// --- names --------------------------------------------------------------
		{"name gpu", []edit{{"name: l1_72_strided_padded_grouped", "name: gpu"}},
			[]string{`base.yaml:4:7: name: is reserved: out/gpu is the generator's or the report's own (reserved: bin, build, gpu, report, speedup) (got "gpu")`}},
		{"attr to", []edit{{"reference:\n", "reference:\n  attr: to\n"}},
			[]string{`base.yaml:17:9: reference.attr: is an attribute of torch.nn.Module, which the model would shadow (got "to")`}},
		{"attr training", []edit{{"reference:\n", "reference:\n  attr: training\n"}},
			[]string{`base.yaml:17:9: reference.attr: is an attribute of torch.nn.Module, which the model would shadow (got "training")`}},
		{"attr _parameters", []edit{{"reference:\n", "reference:\n  attr: _parameters\n"}},
			[]string{`base.yaml:17:9: reference.attr: is an attribute of torch.nn.Module, which the model would shadow (got "_parameters")`}},
		{"attr dunder", []edit{{"reference:\n", "reference:\n  attr: __dict__\n"}},
			[]string{`base.yaml:17:9: reference.attr: must not start with __ (Python mangles or reserves such names in a class) (got "__dict__")`}},
		{"param named state_dict", []edit{{"{name: groups, type: int, default: 1}", "{name: state_dict, type: int, default: 1}"}, {"groups=groups", "groups=state_dict"}},
			[]string{`base.yaml:24:14: reference.params[6].name: is an attribute of torch.nn.Module, which the model would shadow (got "state_dict")`}},
		// --- sizes --------------------------------------------------------------
		{"stride 100000", []edit{{"  stride: [2, 2, 2]", "  stride: [100000, 2, 2]"}},
			[]string{"base.yaml:12:11: problem.stride: depth must be at most 16 (got [100000, 2, 2])"}},
		{"kernel_w 1e9", []edit{{"  kernel: [3, 5, 7]", "  kernel: [3, 5, 1000000000]"}},
			[]string{"base.yaml:10:11: problem.kernel: width must be at most 32 (got [3, 5, 1000000000])"}},
		{"channels 2^62+1", []edit{{"  in_channels: 32\n", "  in_channels: 4611686018427387905\n"}},
			[]string{"base.yaml:8:16: problem.in_channels: must be at most 16777216 (got 4611686018427387905)"}},
		{"dilation near 2^62", []edit{{"  groups: 4\n", "  groups: 4\n  dilation: [1, 1, 4611686018427387903]\n"}},
			[]string{"base.yaml:16:13: problem.dilation: width must be at most 16777216 (got [1, 1, 4611686018427387903])"}},
		{"padding past the limit", []edit{{"  padding: [1, 2, 3]", "  padding: [1, 2, 16777217]"}},
			[]string{"base.yaml:13:12: problem.padding: width must be at most 16777216 (got [1, 2, 16777217])"}},
		{"output extent past the limit", []edit{{"  input: [12, 24, 48]", "  input: [12, 24, 9000000]"}},
			[]string{"base.yaml:11:10: problem.input: gives an output width of 18000000: (in-1)*stride - 2*padding + dilation*(kernel-1) + output_padding + 1 must be at most 16777216 (got [12, 24, 9000000])"}},
		{"output past the A100's memory", []edit{{"  input: [12, 24, 48]", "  input: [120, 240, 480]"}},
			[]string{"base.yaml:7:3: problem: the output (batch x out_channels x output) needs more memory than the A100's 80.0 GiB (got 28311552000 elements)"}},
		{"weight past the A100's memory", []edit{{"  in_channels: 32\n", "  in_channels: 1048576\n"}, {"  out_channels: 32\n", "  out_channels: 1048576\n"}, {"  groups: 4\n", "  groups: 1\n"},
			{"  input: [12, 24, 48]", "  input: [1, 1, 1]"}, {"init_inputs: [32, 32,", "init_inputs: [1048576, 1048576,"}, {"[1, 1, 1], 4]", "[1, 1, 1], 1]"}},
			[]string{"base.yaml:7:3: problem: the weight (in_channels x out_channels/groups x kernel) needs more memory than the A100's 80.0 GiB (got 115448720916480 elements)"}},
		// --- all at once --------------------------------------------------------
		// A decode error hides neither the validation of other fields nor
		// that of the same section.
		{"decode and validation errors together", []edit{{"  batch: 8\n", "  batch: eight\n"}, {"  stride: [2, 2, 2]", "  stride: [0, 2, 2]"},
			{"name: l1_72_strided_padded_grouped", "name: gpu"}, {"  backends: [cuda]", "  backends: [cuda]\n  cuda: {ffma: {bm: 100}}"}},
			[]string{`base.yaml:4:7: name: is reserved: out/gpu is the generator's or the report's own (reserved: bin, build, gpu, report, speedup) (got "gpu")`,
				"base.yaml:7:10: problem.batch: must be an integer (got eight)",
				"base.yaml:12:11: problem.stride: depth must be positive (got [0, 2, 2])",
				"base.yaml:38:21: kernel.cuda.ffma.bm: must be a power of two from 16 to 1024 (got 100)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := parseErrors(t, apply(t, base, tc.edits))
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
