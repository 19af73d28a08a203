// Package importer writes a spec from a KernelBench-style problem file: a
// Model whose __init__ builds one nn.ConvTranspose3d and whose forward
// returns it applied to the input, module constants, get_inputs() and
// get_init_inputs(). The file is parsed, never run; what the spec cannot
// express is refused with its file, line and reason.
package importer

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"convtgen/gen/spec"
)

// Import reads one problem file's source and returns the spec it
// describes, named name, or every refusal found (Errors).
func Import(file string, src []byte, name string) ([]byte, error) {
	body, perr := parse(file, string(src))
	if perr != nil {
		return nil, Errors{*perr}
	}
	im := &importer{evaluator: evaluator{file: file, src: string(src), consts: map[string]value{}, imports: map[string]string{}}}
	m := im.model(body)
	if len(im.errs) > 0 {
		return nil, im.errs.sorted()
	}
	out := render(m, name, strings.TrimSuffix(filepath.Base(file), ".py"))
	if _, err := spec.Parse(file+" (imported)", out); err != nil {
		// Rules the spec checks itself (divisibility, output sizes): the
		// error points at the call that builds the convolution.
		for _, e := range err.(spec.Errors) {
			at := m.call.at
			if e.Field == "name" || e.Field == "title" {
				at = pos{1, 1}
			}
			im.errs = append(im.errs, Error{File: file, Line: at.line, Col: at.col,
				Msg: fmt.Sprintf("the spec it makes is refused: %s: %s", e.Field, e.Msg), Got: e.Got})
		}
		return nil, im.errs.sorted()
	}
	return out, nil
}

// DefaultName derives a spec name from a problem file's name: lower case,
// runs of other characters as one underscore, a leading letter, at most
// 64 characters.
func DefaultName(path string) string {
	base := strings.ToLower(strings.TrimSuffix(filepath.Base(path), ".py"))
	n := strings.Trim(nonIdent.ReplaceAllString(base, "_"), "_")
	if n == "" || n[0] < 'a' || n[0] > 'z' {
		n = "p" + n // a name starts with a letter: problem files start with their number
	}
	if len(n) > 64 {
		n = strings.TrimRight(n[:64], "_")
	}
	return n
}

var nonIdent = regexp.MustCompile(`[^a-z0-9]+`)

// model is what the file says, as the spec writes it.
type model struct {
	attr       string
	init       []initParam
	params     []spec.Param
	conv       []string         // canonical arguments
	built      map[string]value // the convolution's arguments as it runs
	call       *expr            // the nn.ConvTranspose3d call
	initInputs []spec.Value
	initExprs  []*expr // get_init_inputs()'s elements
	initReturn *stmt
	dist       string
	shape      []int
	shapeCall  *expr
	args       []convArg // the call's arguments, bound to their names
	problem    problem

	layers      []spec.Layer // the other attributes, in order
	convAt      int          // layers before the convolution
	prologue    []spec.Op
	ops         []spec.Op
	inputNames  []string // forward's inputs
	inputShapes [][]int  // get_inputs()'s tensors
	env         map[string]spec.Value
}

// initParam is one of __init__'s parameters after self.
type initParam struct {
	name string
	ann  string // int, bool, tuple or "" (none)
	def  *spec.Value
	at   pos
}

// convArg is one argument of the nn.ConvTranspose3d call.
type convArg struct {
	name    string // the parameter it binds to
	keyword bool
	src     string // canonical Python
	value   *expr
}

type importer struct {
	evaluator
	errs Errors
}

func (im *importer) refuse(at pos, got, format string, a ...any) {
	im.errs = append(im.errs, Error{File: im.file, Line: at.line, Col: at.col, Msg: fmt.Sprintf(format, a...), Got: got})
}

func (im *importer) refuseExpr(e *expr, format string, a ...any) {
	im.refuse(e.at, text(im.src, e.off, e.end), format, a...)
}

func (im *importer) refuseArg(a callArg, format string, args ...any) {
	im.refuse(a.at, text(im.src, a.off, a.value.end), format, args...)
}

func (im *importer) refuseStmt(s *stmt, format string, a ...any) {
	im.refuse(s.at, text(im.src, s.off, s.end), format, a...)
}

func (im *importer) add(err *Error) {
	if err != nil {
		im.errs = append(im.errs, *err)
	}
}

// isDoc tells whether a statement is a bare string (a docstring or a
// comment written as one): it does nothing.
func isDoc(s *stmt) bool { return s.kind == sExpr && s.value.kind == eString || s.kind == sPass }

// model walks the module: constants in order, then the class and the two
// functions, which run after the module and so see its final constants.
func (im *importer) model(body []*stmt) *model {
	var class, inputs, initInputs *stmt
	for _, s := range body {
		switch {
		case isDoc(s):
		case s.kind == sImport:
			for _, b := range s.imports {
				im.imports[b.name] = b.module
				delete(im.consts, b.name)
			}
		case s.kind == sAssign:
			im.assign(s)
		case s.kind == sClass && s.name == "Model" && class == nil:
			class = s
		case s.kind == sClass && s.name == "Model":
			im.refuseStmt(s, "a second class Model")
		case s.kind == sClass:
			im.refuseStmt(s, "class %s is not supported: the file may define class Model only", s.name)
		case s.kind == sDef && s.name == "get_inputs" && inputs == nil:
			inputs = s
		case s.kind == sDef && s.name == "get_init_inputs" && initInputs == nil:
			initInputs = s
		case s.kind == sDef && (s.name == "get_inputs" || s.name == "get_init_inputs"):
			im.refuseStmt(s, "a second %s()", s.name)
		case s.kind == sDef:
			im.refuseStmt(s, "function %s is not supported: the file may define get_inputs and get_init_inputs only", s.name)
		default:
			im.refuseStmt(s, "this statement is not supported at module level: a problem file holds imports, constants, class Model, get_inputs and get_init_inputs")
		}
	}
	m := &model{}
	missing := func(what string) { im.refuse(pos{1, 1}, "", "the file has no %s", what) }
	if class == nil {
		missing("class Model")
	} else {
		im.class(class, m)
	}
	if initInputs == nil {
		missing("get_init_inputs() function")
	} else {
		im.initInputs(initInputs, m)
	}
	if inputs == nil {
		missing("get_inputs() function")
	} else {
		im.inputs(inputs, m)
	}
	if len(im.errs) == 0 {
		im.bind(m)
	}
	return m
}

// assign evaluates a module-level assignment and binds its targets.
func (im *importer) assign(s *stmt) {
	v, err := im.eval(s.value)
	if err != nil {
		im.add(err)
		for _, t := range s.targets {
			im.forget(t)
		}
		return
	}
	for _, t := range s.targets {
		im.bindTarget(t, v)
	}
}

func (im *importer) forget(t *expr) {
	if t.kind == eName {
		delete(im.consts, t.name)
	}
	for _, x := range t.elts {
		im.forget(x)
	}
}

func (im *importer) bindTarget(t *expr, v value) {
	switch t.kind {
	case eName:
		im.consts[t.name] = v
		delete(im.imports, t.name)
	case eTuple, eList:
		if v.kind != vTuple && v.kind != vList || len(v.elts) != len(t.elts) {
			im.refuseExpr(t, "unpacks %s into %d names", v.String(), len(t.elts))
			return
		}
		for i, x := range t.elts {
			im.bindTarget(x, v.elts[i])
		}
	default:
		im.refuseExpr(t, "only names and tuples of names are assigned at module level")
	}
}

func (im *importer) class(c *stmt, m *model) {
	if len(c.bases) != 1 || im.resolve(c.bases[0]) != "torch.nn.Module" {
		im.refuse(c.at, text(im.src, c.off, c.end), "class Model must derive from nn.Module alone")
	}
	var init, forward *stmt
	for _, s := range c.body {
		switch {
		case isDoc(s):
		case s.kind == sDef && s.name == "__init__" && init == nil:
			init = s
		case s.kind == sDef && s.name == "forward" && forward == nil:
			forward = s
		case s.kind == sDef:
			im.refuseStmt(s, "method %s is not supported: Model may define __init__ and forward only", s.name)
		default:
			im.refuseStmt(s, "this statement is not supported in class Model: it may define __init__ and forward only")
		}
	}
	if init == nil {
		im.refuse(c.at, text(im.src, c.off, c.end), "class Model has no __init__")
	} else {
		im.init(init, m)
	}
	if forward == nil {
		im.refuse(c.at, text(im.src, c.off, c.end), "class Model has no forward")
	} else if m.attr != "" {
		im.forward2(forward, m)
	}
}
