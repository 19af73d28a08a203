package importer

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// A restricted evaluator for module constants and literals: integers,
// floats, booleans, None, strings, tuples and lists, names bound earlier,
// and arithmetic. Calls, attributes and subscripts are never evaluated.

type valKind int

const (
	vInt valKind = iota
	vFloat
	vBool
	vNone
	vString
	vTuple
	vList
)

type value struct {
	kind valKind
	i    int64
	f    float64
	b    bool
	elts []value
}

// String renders a value as Python would print it, for messages.
func (v value) String() string {
	switch v.kind {
	case vInt:
		return strconv.FormatInt(v.i, 10)
	case vFloat:
		s := strconv.FormatFloat(v.f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eIN") {
			s += ".0"
		}
		return s
	case vBool:
		if v.b {
			return "True"
		}
		return "False"
	case vNone:
		return "None"
	case vString:
		return "a string"
	}
	parts := make([]string, len(v.elts))
	for i, e := range v.elts {
		parts[i] = e.String()
	}
	if v.kind == vList {
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// what names a value's type for messages.
func (v value) what() string {
	return [...]string{"an integer", "a float", "a bool", "None", "a string", "a tuple", "a list"}[v.kind]
}

// evaluator holds a module's constants and imports.
type evaluator struct {
	file    string
	src     string
	consts  map[string]value
	imports map[string]string // bound name: module or object path (torch.nn, torch.nn.ConvTranspose3d)
}

func (ev *evaluator) errorf(e *expr, format string, a ...any) *Error {
	return &Error{File: ev.file, Line: e.at.line, Col: e.at.col, Msg: fmt.Sprintf(format, a...), Got: text(ev.src, e.off, e.end)}
}

func (ev *evaluator) eval(e *expr) (value, *Error) {
	switch e.kind {
	case eInt:
		return value{kind: vInt, i: e.ival}, nil
	case eFloat:
		return value{kind: vFloat, f: e.fval}, nil
	case eString:
		return value{kind: vString}, nil
	case eName:
		switch e.name {
		case "True", "False":
			return value{kind: vBool, b: e.name == "True"}, nil
		case "None":
			return value{kind: vNone}, nil
		}
		if v, ok := ev.consts[e.name]; ok {
			return v, nil
		}
		if _, ok := ev.imports[e.name]; ok {
			return value{}, ev.errorf(e, "%s is an imported module, not a constant", e.name)
		}
		return value{}, ev.errorf(e, "%s is not a constant defined before it is used", e.name)
	case eTuple, eList:
		v := value{kind: vTuple}
		if e.kind == eList {
			v.kind = vList
		}
		for _, x := range e.elts {
			xv, err := ev.eval(x)
			if err != nil {
				return value{}, err
			}
			v.elts = append(v.elts, xv)
		}
		return v, nil
	case eUnary:
		x, err := ev.eval(e.x)
		if err != nil {
			return value{}, err
		}
		switch {
		case x.kind == vInt && e.name == "-" && x.i != math.MinInt64:
			return value{kind: vInt, i: -x.i}, nil
		case x.kind == vInt && e.name == "+":
			return x, nil
		case x.kind == vInt && e.name == "~":
			return value{kind: vInt, i: ^x.i}, nil
		case x.kind == vFloat && e.name == "-":
			return value{kind: vFloat, f: -x.f}, nil
		case x.kind == vFloat && e.name == "+":
			return x, nil
		}
		return value{}, ev.errorf(e, "%s of %s is not evaluated here", e.name, x.what())
	case eBinary:
		return ev.binary(e)
	case eCall:
		return value{}, ev.errorf(e, "calls are not evaluated here: constants are literals, names and arithmetic")
	}
	return value{}, ev.errorf(e, "only literals, names and arithmetic are evaluated here")
}

func (ev *evaluator) binary(e *expr) (value, *Error) {
	x, err := ev.eval(e.x)
	if err != nil {
		return value{}, err
	}
	y, err := ev.eval(e.y)
	if err != nil {
		return value{}, err
	}
	if x.kind == vInt && y.kind == vInt {
		if r, ok := intOp(e.name, x.i, y.i); ok {
			return value{kind: vInt, i: r}, nil
		}
		if e.name == "/" && y.i != 0 {
			return value{kind: vFloat, f: float64(x.i) / float64(y.i)}, nil
		}
		return value{}, ev.errorf(e, "%d %s %d overflows, divides by zero or is not evaluated here", x.i, e.name, y.i)
	}
	num := func(v value) (float64, bool) {
		switch v.kind {
		case vInt:
			return float64(v.i), true
		case vFloat:
			return v.f, true
		}
		return 0, false
	}
	a, ok1 := num(x)
	b, ok2 := num(y)
	if ok1 && ok2 {
		var r float64
		switch e.name {
		case "+":
			r = a + b
		case "-":
			r = a - b
		case "*":
			r = a * b
		case "/":
			r = a / b
		case "**":
			r = math.Pow(a, b)
		default:
			return value{}, ev.errorf(e, "%s on floats is not evaluated here", e.name)
		}
		return value{kind: vFloat, f: r}, nil
	}
	return value{}, ev.errorf(e, "%s of %s and %s is not evaluated here", e.name, x.what(), y.what())
}

// intOp is Python's integer arithmetic within int64: ok is false on
// overflow, division by zero or an operator it does not do.
func intOp(op string, a, b int64) (int64, bool) {
	switch op {
	case "+":
		r := a + b
		return r, (r > a) == (b > 0) || b == 0
	case "-":
		r := a - b
		return r, (r < a) == (b > 0) || b == 0
	case "*":
		if a == 0 || b == 0 {
			return 0, true
		}
		r := a * b
		return r, r/b == a && !(a == -1 && b == math.MinInt64) && !(b == -1 && a == math.MinInt64)
	case "//", "%":
		if b == 0 || a == math.MinInt64 && b == -1 {
			return 0, false
		}
		q, m := a/b, a%b
		if m != 0 && (m < 0) != (b < 0) { // Python floors
			q--
			m += b
		}
		if op == "//" {
			return q, true
		}
		return m, true
	case "**":
		if b < 0 {
			return 0, false
		}
		switch a {
		case 0:
			if b == 0 {
				return 1, true
			}
			return 0, true
		case 1:
			return 1, true
		case -1:
			return 1 - 2*(b%2), true
		}
		r := int64(1)
		for range b { // |a| >= 2: overflows within 63 steps
			n, ok := intOp("*", r, a)
			if !ok {
				return 0, false
			}
			r = n
		}
		return r, true
	}
	return 0, false
}

// resolve names what an expression refers to through the imports:
// nn.ConvTranspose3d is torch.nn.ConvTranspose3d after import torch.nn as nn.
// It returns "" for anything else.
func (ev *evaluator) resolve(e *expr) string {
	switch e.kind {
	case eName:
		if _, shadowed := ev.consts[e.name]; shadowed {
			return ""
		}
		return ev.imports[e.name]
	case eAttr:
		if base := ev.resolve(e.x); base != "" {
			return base + "." + e.name
		}
	}
	return ""
}
