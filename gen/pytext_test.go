package gen

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"convtgen/gen/spec"
)

// TestPyEscapeRoundTrips: Python reads every escaped string back as the
// same text, as a string literal, a docstring and a comment's content.
func TestPyEscapeRoundTrips(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	in := []string{"plain", `"""`, `""""`, `'''`, `a\`, `\`, `\N{BULLET}`, `\u0041`, "x\n__import__('os').system('id')\n#",
		"\x00", "\r\n", "\t\v\f\x1b\x7f\u0085", "\u00a0\u00ad é ü", "\u2028\u2029", "\ufeff", "🙂", "\U000e0001", `\x41`}
	var cases []map[string]string
	for _, s := range in {
		cases = append(cases, map[string]string{"want": s, "literal": pyString(s), "doc": `"""` + docstringSafe(s) + `"""`, "comment": "# " + commentSafe(s)})
	}
	data, _ := json.Marshal(cases)
	script := `
import ast, io, json, sys, tokenize
for c in json.load(sys.stdin):
    for k in ("literal", "doc"):
        got = ast.literal_eval(c[k])
        assert got == c["want"], (k, c[k], got, c["want"])
    src = "x = 1  " + c["comment"] + "\ny = 2\n"
    assert src.count("\n") == 2 and "\r" not in src, src
    toks = [t for t in tokenize.generate_tokens(io.StringIO(src).readline) if t.type == tokenize.COMMENT]
    assert len(toks) == 1 and toks[0].string == c["comment"], (toks, c["comment"])
    assert ast.literal_eval('"' + c["comment"][2:] + '"') == c["want"]
    assert [type(n).__name__ for n in ast.parse(src).body] == ["Assign", "Assign"]
`
	cmd := exec.Command(python, "-c", script)
	cmd.Stdin = strings.NewReader(string(data))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Invalid UTF-8 reads as U+FFFD, as Go reads it.
	if got := pyEscape("a\xffb"); got != `a\ufffdb` {
		t.Errorf("invalid UTF-8: %q", got)
	}
}

// nastyTexts are titles and spec paths that would end a comment line or a
// docstring, or run code, if printed as they are.
var nastyTexts = []string{
	`x"""; __import__("os").system("echo pwned") #`,
	"x\n__import__(\"os\").system(\"echo pwned\")\n#",
	`ends with a backslash \`, `''' and """ and ""`, `\N{BULLET} \u0041 \x41 \" \\`,
	"\x00 NUL", "\r carriage return", "\u2028 line separator \u0085 \ufeff", "bad utf-8 \xff\xfe", "é 🙂",
}

// TestRenderNastyText renders a spec whose title and path hold nasty text
// (set on the plan, past validation, and through YAML where the spec
// format allows it) and checks with Python that every generated file has
// the module structure of a plain render, its docstring reads back the
// exact title and its header comment the exact path: no text became code.
func TestRenderNastyText(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not found")
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, SpecDir, "level1", "58_asymmetric_input_asymmetric_kernel.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const baseTitle = "title: 58_conv_transposed_3D__asymmetric_input__asymmetric_kernel\n"
	if !strings.Contains(string(raw), baseTitle) || !strings.Contains(string(raw), "backends: [cuda, triton]") {
		t.Fatal("spec 58 changed: update the test")
	}
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	type job struct {
		File, Base, Title, BaseTitle, Path string
	}
	var jobs []job
	render := func(label, src, path string, title *string) {
		t.Helper()
		ps, errs := parseAndPlan("specs/base.yaml", []byte(src))
		if errs != nil {
			t.Fatalf("%s: %v", label, errs)
		}
		for _, p := range ps {
			if title != nil {
				p.Spec.Title = *title
			}
		}
		files, err := r.Render(ps, path)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if len(files) != 5 {
			t.Fatalf("%s: %d files, want problem, and cuda and triton for two targets", label, len(files))
		}
		for _, f := range files {
			file := filepath.Join(dir, label, f.Path)
			writeFile(t, file, string(f.Data))
			jobs = append(jobs, job{File: file, Base: filepath.Join(dir, "base", f.Path), Title: ps[0].Spec.Title,
				BaseTitle: "58_conv_transposed_3D__asymmetric_input__asymmetric_kernel", Path: path})
		}
	}
	render("base", string(raw), "specs/base.yaml", nil)
	jobs = jobs[:0]
	for i, s := range nastyTexts {
		render("title"+string(rune('a'+i)), string(raw), "specs/base.yaml", &s)
		render("path"+string(rune('a'+i)), string(raw), "specs/"+s+".yaml", nil)
	}
	// Nasty text the spec format itself accepts (no control characters),
	// decoded from YAML like any spec.
	yamlTitle := `x"""; __import__("os").system("echo pwned") # \ ''' \N{BULLET} \u0041 é`
	render("yaml", strings.Replace(string(raw), baseTitle, "title: '"+strings.ReplaceAll(yamlTitle, "'", "''")+"'\n", 1), "specs/base.yaml", nil)
	if got := jobs[len(jobs)-1].Title; got != yamlTitle {
		t.Fatalf("YAML title decoded as %q", got)
	}

	data, _ := json.Marshal(jobs)
	script := `
import ast, json, sys
def read(path):
    with open(path, "rb") as f:
        src = f.read().decode("utf-8")
    tree = ast.parse(src)
    doc = ast.get_docstring(tree, clean=False)
    if doc is not None:
        tree.body[0].value.value = "DOC"
    return src, doc, ast.dump(tree, include_attributes=True)
def lit(s):
    try:
        return ast.literal_eval(s)
    except (SyntaxError, ValueError):
        return None
fails = 0
for j in json.load(sys.stdin):
    bsrc, bdoc, bshape = read(j["Base"])
    try:
        src, doc, shape = read(j["File"])
    except (SyntaxError, ValueError) as e:
        print(j["File"], "does not parse:", e)
        fails += 1
        continue
    problems = []
    if shape != bshape:
        problems.append("module structure differs from the plain render")
    if doc != bdoc.replace(j["BaseTitle"], j["Title"], 1):
        problems.append("docstring does not read back the title: %r" % (doc or "")[:200])
    if src.count("\n") != bsrc.count("\n") or "\r" in src:
        problems.append("line count differs from the plain render")
    head = [l for l in src.split("\n") if l.startswith("# Code generated by convtgen from ")]
    pre, post = "# Code generated by convtgen from ", ". DO NOT EDIT."
    if len(head) != 1 or not head[0].endswith(post) or lit('"' + head[0][len(pre):-len(post)] + '"') != j["Path"]:
        problems.append("header comment does not read back the path: %r" % head)
    for p in problems:
        print(j["File"], p)
        fails += 1
sys.exit(1 if fails else 0)
`
	cmd := exec.Command(python, "-c", script)
	cmd.Stdin = strings.NewReader(string(data))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestRenderRefusesNonIdentifiers: text printed bare as code (names,
// attributes) is refused at render time when it is not an identifier, for
// plans that did not come through validation.
func TestRenderRefusesNonIdentifiers(t *testing.T) {
	raw := readSpec(t, "72_strided_padded_grouped.yaml")
	r, err := NewRenderer()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		set   func(p *spec.Spec)
	}{
		{"name", func(p *spec.Spec) { p.Name = "x\n__import__('os')" }},
		{"reference.attr", func(p *spec.Spec) { p.Reference.Attr = "conv; __import__('os')" }},
		{"problem.input_dist", func(p *spec.Spec) { p.Problem.InputDist = "randn; __import__('os')" }},
	} {
		ps, errs := parseAndPlan("specs/x.yaml", []byte(raw))
		if errs != nil {
			t.Fatal(errs)
		}
		for _, p := range ps {
			tc.set(p.Spec)
		}
		_, err := r.Render(ps, "specs/x.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.field+" ") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: want a one-line refusal naming it, got %v", tc.field, err)
		}
	}
}
