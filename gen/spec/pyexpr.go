package spec

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"unicode"
)

// The reference builds its convolution with a Python call whose arguments
// are tiny expressions over the __init__ parameters. This file parses and
// evaluates exactly that subset: names, integers, True/False and tuples.

// floatLit is a Python float literal with an optional minus: digits with
// a point or an exponent.
var floatLit = regexp.MustCompile(`^-?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?`)

// expr is a parsed argument expression.
type expr struct {
	name  string // parameter reference when set
	lit   *Value // literal when set
	tuple []expr // tuple display when neither is set
}

// convArg is one argument of the nn.ConvTranspose3d call.
type convArg struct {
	keyword string // empty for a positional argument
	value   expr
}

// parseConvArg parses "expr" or "keyword=expr".
func parseConvArg(s string) (convArg, error) {
	p := &exprParser{src: s}
	var a convArg
	p.space()
	start := p.i
	if id := p.ident(); id != "" {
		p.space()
		if p.peek() == '=' {
			p.i++
			a.keyword = id
		} else {
			p.i = start
		}
	}
	e, err := p.expr()
	if err != nil {
		return a, err
	}
	p.space()
	if p.i != len(p.src) {
		return a, fmt.Errorf("unexpected %q at offset %d", p.src[p.i:], p.i)
	}
	a.value = e
	return a, nil
}

type exprParser struct {
	src string
	i   int
}

func (p *exprParser) peek() byte {
	if p.i < len(p.src) {
		return p.src[p.i]
	}
	return 0
}

func (p *exprParser) space() {
	for p.i < len(p.src) && p.src[p.i] == ' ' {
		p.i++
	}
}

func (p *exprParser) ident() string {
	j := p.i
	for j < len(p.src) && (p.src[j] == '_' || unicode.IsLetter(rune(p.src[j])) || (j > p.i && unicode.IsDigit(rune(p.src[j])))) {
		j++
	}
	id := p.src[p.i:j]
	p.i = j
	return id
}

func (p *exprParser) expr() (expr, error) {
	p.space()
	c := p.peek()
	switch {
	case c == '(':
		p.i++
		var t []expr
		for {
			p.space()
			if p.peek() == ')' {
				p.i++
				break
			}
			e, err := p.expr()
			if err != nil {
				return expr{}, err
			}
			t = append(t, e)
			p.space()
			switch p.peek() {
			case ',':
				p.i++
			case ')':
			default:
				return expr{}, fmt.Errorf("expected ',' or ')' at offset %d", p.i)
			}
		}
		if len(t) == 0 {
			return expr{}, fmt.Errorf("empty tuple")
		}
		if len(t) == 1 && !trailingComma(p.src[:p.i-1]) {
			return t[0], nil // (x) is x in Python; only (x,) is a tuple
		}
		return expr{tuple: t}, nil
	case c == '-' || c == '.' || (c >= '0' && c <= '9'):
		j := p.i + 1
		for j < len(p.src) && p.src[j] >= '0' && p.src[j] <= '9' {
			j++
		}
		if f := floatLit.FindString(p.src[p.i:]); len(f) > j-p.i {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || math.IsInf(v, 0) {
				return expr{}, fmt.Errorf("bad float %q", f)
			}
			p.i += len(f)
			return expr{lit: &Value{Kind: FloatValue, Float: v}}, nil
		}
		n, err := strconv.Atoi(p.src[p.i:j])
		if err != nil {
			return expr{}, fmt.Errorf("bad integer %q", p.src[p.i:j])
		}
		p.i = j
		return expr{lit: &Value{Kind: IntValue, Int: n}}, nil
	case c == '_' || unicode.IsLetter(rune(c)):
		id := p.ident()
		switch id {
		case "True", "False":
			return expr{lit: &Value{Kind: BoolValue, Bool: id == "True"}}, nil
		}
		return expr{name: id}, nil
	}
	return expr{}, fmt.Errorf("expected a name, an integer, True/False or a tuple at offset %d", p.i)
}

// eval computes an expression's value with the bound parameters.
func (e expr) eval(env map[string]Value) (Value, error) {
	switch {
	case e.lit != nil:
		return *e.lit, nil
	case e.name != "":
		v, ok := env[e.name]
		if !ok {
			return Value{}, fmt.Errorf("%s is not an __init__ parameter", e.name)
		}
		return v, nil
	}
	t := Value{Kind: TupleValue}
	for _, x := range e.tuple {
		v, err := x.eval(env)
		if err != nil {
			return Value{}, err
		}
		if v.Kind != IntValue {
			return Value{}, fmt.Errorf("tuple elements must be integers")
		}
		t.Tuple = append(t.Tuple, v.Int)
	}
	return t, nil
}

// Python renders a value as a Python literal.
func (v Value) Python() string {
	switch v.Kind {
	case BoolValue:
		if v.Bool {
			return "True"
		}
		return "False"
	case FloatValue:
		return PyFloat(v.Float)
	case TupleValue:
		parts := make([]string, len(v.Tuple))
		for i, x := range v.Tuple {
			parts[i] = strconv.Itoa(x)
		}
		if len(parts) == 1 {
			return "(" + parts[0] + ",)"
		}
		return "(" + strings.Join(parts, ", ") + ")"
	}
	return strconv.Itoa(v.Int)
}

// Python renders a parsed argument expression in canonical form, so the
// emitted call never depends on how the spec spelled it (spacing, leading
// zeros).
func (e expr) Python() string {
	switch {
	case e.lit != nil:
		return e.lit.Python()
	case e.name != "":
		return e.name
	}
	parts := make([]string, len(e.tuple))
	for i, x := range e.tuple {
		parts[i] = x.Python()
	}
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// ConvArgs renders the nn.ConvTranspose3d arguments, canonical and in the
// spec's order. The spec is validated, so every argument parses.
func (r Reference) ConvArgs() string {
	out := make([]string, len(r.Conv))
	for i, src := range r.Conv {
		a, err := parseConvArg(src)
		if err != nil {
			panic("spec: ConvArgs on an unvalidated spec: " + err.Error())
		}
		out[i] = a.value.Python()
		if a.keyword != "" {
			out[i] = a.keyword + "=" + out[i]
		}
	}
	return strings.Join(out, ", ")
}

// InitSignature renders __init__'s parameters after self, with annotations
// and defaults, as both the reference and the submission declare them.
func (r Reference) InitSignature() string {
	params := make([]string, len(r.Params))
	for i, p := range r.Params {
		typ := p.Type
		if typ == "shape" {
			typ = "tuple" // a shape is a tuple to Python
		}
		params[i] = p.Name + ": " + typ
		if p.Default != nil {
			params[i] += " = " + p.Default.Python()
		}
	}
	return strings.Join(params, ", ")
}

// trailingComma reports whether s ends with a comma, spaces aside.
func trailingComma(s string) bool {
	return strings.HasSuffix(strings.TrimRight(s, " "), ",")
}

// PyFloat renders a float as a Python float literal (always with a point
// or an exponent, so Python reads a float back).
func PyFloat(f float64) string {
	s := strconv.FormatFloat(f, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eIN") {
		s += ".0"
	}
	return s
}

// EvalArg evaluates one call argument, "expr" or "keyword=expr", with the
// bound parameters (for the importer, which reads the same arguments).
func EvalArg(src string, env map[string]Value) (keyword string, v Value, err error) {
	a, err := parseConvArg(src)
	if err != nil {
		return "", Value{}, err
	}
	v, err = a.value.eval(env)
	return a.keyword, v, err
}
