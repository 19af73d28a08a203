package importer

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"convtgen/gen/spec"
)

const testdata = "testdata/kernelbench"

func files(t *testing.T, level string) []string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(testdata, level, "*.py"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no problem files in %s: %v", level, err)
	}
	return paths
}

// committed finds the repository's spec of a problem by its level and number.
func committed(t *testing.T, level, problem string) *spec.Spec {
	t.Helper()
	num, _, _ := strings.Cut(filepath.Base(problem), "_")
	paths, _ := filepath.Glob(filepath.Join("..", "..", "specs", level, num+"_*.yaml"))
	if len(paths) != 1 {
		t.Fatalf("%s: want one committed spec numbered %s, found %v", problem, num, paths)
	}
	s, err := spec.Load(paths[0])
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestMatchesCommittedSpecs: each KernelBench file imports to its
// committed spec's problem and reference: level 2's signature, layers in
// order with their initialisation, inputs, and forward's op chain.
func TestMatchesCommittedSpecs(t *testing.T) {
	for _, level := range []string{"level1", "level2"} {
		testMatchesCommitted(t, level)
	}
	if n := len(files(t, "level2")); n != 19 {
		t.Errorf("%d level-2 files; want 19", n)
	}
}

func testMatchesCommitted(t *testing.T, level string) {
	for _, path := range files(t, level) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want := committed(t, level, path)
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			out, err := Import(path, src, want.Name)
			if err != nil {
				t.Fatal(err)
			}
			got, err := spec.Parse(path+".yaml", out)
			if err != nil {
				t.Fatalf("imported spec does not parse: %v\n%s", err, out)
			}
			if got.Name != want.Name || got.Title != want.Title {
				t.Errorf("name, title = %q, %q; want %q, %q", got.Name, got.Title, want.Name, want.Title)
			}
			if !reflect.DeepEqual(got.Problem, want.Problem) {
				t.Errorf("problem:\n got %+v\nwant %+v", got.Problem, want.Problem)
			}
			if !reflect.DeepEqual(got.Reference, want.Reference) {
				t.Errorf("reference:\n got %+v\nwant %+v", got.Reference, want.Reference)
			}
			if regexp.MustCompile(`(?m)^kernel:`).Match(out) {
				t.Errorf("imported spec has a kernel section:\n%s", out)
			}
		})
	}
}

// errorsOf imports src and returns its refusals, failing when it imports.
func errorsOf(t *testing.T, file, src string) Errors {
	t.Helper()
	out, err := Import(file, []byte(src), "x")
	if err == nil {
		t.Fatalf("imported; want a refusal:\n%s", out)
	}
	var es Errors
	if !errors.As(err, &es) || len(es) == 0 {
		t.Fatalf("error %T %v; want Errors", err, err)
	}
	line := regexp.MustCompile(`^` + regexp.QuoteMeta(file) + `:[1-9][0-9]*:[1-9][0-9]*: \S`)
	for _, e := range es {
		if !line.MatchString(e.Error()) {
			t.Errorf("not a positioned error: %q", e.Error())
		}
	}
	return es
}

// TestLevel2Positions pins one file's refusals, made by editing problem
// 15: each at its statement.
func TestLevel2Positions(t *testing.T) {
	path := filepath.Join(testdata, "level2", "15_ConvTranspose3d_BatchNorm_Subtract.py")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(src), "nn.BatchNorm3d(out_channels)", "nn.InstanceNorm3d(out_channels)", 1)
	es := errorsOf(t, path, bad)
	var got []string
	for _, e := range es {
		got = append(got, fmt.Sprintf("%d:%d %s", e.Line, e.Col, e.Got))
	}
	want := []string{"11:9 self.batch_norm = nn.InstanceNorm3d(out_channels)", "15:9 x = self.batch_norm(x)"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("refusals at\n%q\nwant\n%q", got, want)
	}
	if !strings.Contains(es[0].Msg, "extra layer self.batch_norm (nn.InstanceNorm3d)") {
		t.Errorf("first refusal %q does not name the layer", es[0].Msg)
	}
}

// base is problem 61, which imports; each malformed case edits it.
func base(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(testdata, "level1", "61_conv_transposed_3D__square_input__square_kernel.py"))
	if err != nil {
		t.Fatal(err)
	}
	return string(src)
}

func TestMalformed(t *testing.T) {
	const conv = "self.conv_transpose3d = nn.ConvTranspose3d(in_channels, out_channels, kernel_size=(kernel_size, kernel_size, kernel_size), stride=stride, padding=padding, output_padding=output_padding, groups=groups, bias=bias)"
	const ret = "return self.conv_transpose3d(x)"
	const inputs = "    x = torch.rand(batch_size, in_channels, depth, height, width)\n    return [x]"
	const initInputs = "return [in_channels, out_channels, kernel_size]"
	cases := []struct {
		name, old, new string
		at             string // line:col of an error
		msg            string // in its message
	}{
		{"unknown syntax", "batch_size = 8", "batch_size = 8 if True else 4", "35:16", "unsupported syntax: if"},
		{"for loop", "batch_size = 8", "for i in range(3): pass", "35:1", "for statements are not supported"},
		{"dict", "batch_size = 8", "batch_size = {}", "35:14", "dictionaries and sets"},
		{"unclosed bracket", initInputs, "return [in_channels, out_channels, kernel_size", "48:12", "bracket is never closed"},
		{"tab indentation", "    def forward", "\tdef forward", "22:1", "tabs in indentation"},
		{"leading zero", "batch_size = 8", "batch_size = 08", "35:14", "leading zeros"},
		{"forward op after", ret, "return self.conv_transpose3d(x) * 2", "32:9", "forward must return self.conv_transpose3d(x)"},
		{"forward wraps", ret, "return torch.relu(self.conv_transpose3d(x))", "32:9", "operations before or around"},
		{"forward other attr", ret, "return self.other(x)", "32:9", "forward must return self.conv_transpose3d(x)"},
		{"forward after assign", ret, "y = self.conv_transpose3d(x)\n        return y + 1", "33:9", "operations after the convolution"},
		{"no get_inputs", "def get_inputs():\n" + inputs, "", "1:1", "no get_inputs() function"},
		{"no get_init_inputs", "def get_init_inputs():\n    " + initInputs, "", "1:1", "no get_init_inputs() function"},
		{"input not rand", "torch.rand(batch_size", "torch.ones(batch_size", "44:9", "torch.rand(...) or torch.randn(...)"},
		{"input 4d", "torch.rand(batch_size, in_channels, depth, height, width)", "torch.rand(batch_size, in_channels, depth, height)", "44:9", "has 4 dimensions"},
		{"input channels", "torch.rand(batch_size, in_channels,", "torch.rand(batch_size, 3,", "44:9", "the input has 3 channels"},
		{"input dtype", "depth, height, width)\n    return", "depth, height, width, dtype=torch.float16)\n    return", "44:67", "keyword arguments are not supported"},
		{"float init input", initInputs, "return [in_channels, out_channels, 2.5]", "48:40", "annotated int but gets 2.5"},
		{"undefined constant", initInputs, "return [in_channels, out_channels, kernel]", "48:40", "kernel is not a constant"},
		{"too many init inputs", initInputs, "return [1, 2, 3, 1, 0, 0, 1, False, 7]", "48:41", "gives 9 values; __init__ takes 8"},
		{"missing init input", initInputs, "return [in_channels, out_channels]", "18:61", "kernel_size gets no value"},
		{"annotation mismatch", initInputs, "return [in_channels, out_channels, (3, 5, 7)]", "48:40", "annotated int but gets (3, 5, 7)"},
		{"global in conv", "stride=stride,", "stride=batch_size,", "20:139", "batch_size is not a parameter of __init__"},
		{"padding_mode", "bias=bias)", "bias=bias, padding_mode='zeros')", "20:221", "padding_mode is not supported"},
		{"conv arithmetic", "stride=stride,", "stride=stride * 2,", "20:139", "unsupported nn.ConvTranspose3d argument"},
		{"no conv", conv, "self.conv_transpose3d = nn.Conv3d(in_channels, out_channels, kernel_size)", "20:9", "extra layer self.conv_transpose3d (nn.Conv3d)"},
		{"no super", "super(Model, self).__init__()", "pass", "20:9", "must call super().__init__() before"},
		{"helper function", "def get_inputs():", "def helper():\n    pass\n\ndef get_inputs():", "43:1", "function helper is not supported"},
		{"not nn.Module", "class Model(nn.Module):", "class Model(object):", "4:1", "must derive from nn.Module"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := base(t)
			if !strings.Contains(src, c.old) {
				t.Fatalf("the base file has no %q", c.old)
			}
			src = strings.Replace(src, c.old, c.new, 1)
			es := errorsOf(t, "p.py", src)
			for _, e := range es {
				if fmt.Sprintf("%d:%d", e.Line, e.Col) == c.at && strings.Contains(e.Msg, c.msg) {
					return
				}
			}
			t.Errorf("got\n%v\nwant an error at %s with %q", es, c.at, c.msg)
		})
	}
}

// TestSpecRules: what the spec's own validation refuses (here groups
// that do not divide the channels) is refused at the convolution.
func TestSpecRules(t *testing.T) {
	src := strings.Replace(base(t), "return [in_channels, out_channels, kernel_size]", "return [in_channels, out_channels, kernel_size, 1, 0, 0, 5]", 1)
	es := errorsOf(t, "p.py", src)
	if es[0].Line != 20 || !strings.Contains(es[0].Msg, "the spec it makes is refused: problem.in_channels: must be divisible by groups=5") {
		t.Errorf("got %v", es)
	}
}

func TestDefaultName(t *testing.T) {
	for in, want := range map[string]string{
		"dir/61_conv_transposed_3D__square_input__square_kernel.py": "p61_conv_transposed_3d_square_input_square_kernel",
		"My-Problem.py":                 "my_problem",
		"__.py":                         "p",
		strings.Repeat("a", 70) + ".py": strings.Repeat("a", 64),
	} {
		if got := DefaultName(in); got != want {
			t.Errorf("DefaultName(%q) = %q; want %q", in, got, want)
		}
	}
}

// TestSyntaxForms: the forms level-2 files use for constants, and others
// Python allows, evaluate as Python does.
func TestSyntaxForms(t *testing.T) {
	src := strings.Replace(base(t), "batch_size = 8\n", "batch_size = 2 ** 3; q, (r, s) = 7 // -2, (1, 2)\n", 1)
	src = strings.Replace(src, "depth = 64\nheight = 64\nwidth = 64\n", "depth = height = \\\n    64\nwidth = (0x20 +\n    32)  # comment\n", 1)
	src = strings.Replace(src, "torch.rand(", "torch.randn(", 1)
	out, err := Import("p.py", []byte(src), "x")
	if err != nil {
		t.Fatal(err)
	}
	s, err := spec.Parse("p.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Problem.Batch != 8 || s.Problem.In != [3]int{64, 64, 64} || s.Problem.InputDist != "randn" {
		t.Errorf("problem %+v", s.Problem)
	}
}
