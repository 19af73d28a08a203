package importer

import (
	"fmt"
	"strconv"
	"strings"
)

// The parser reads the statements and expressions problem files use:
// imports, classes, functions with annotated parameters and defaults,
// assignments (chained, to tuples), return, pass, and expressions of
// names, numbers, strings, tuples, lists, calls, attributes, subscripts
// and arithmetic. Anything else is refused where it starts.

type exprKind int

const (
	eName exprKind = iota
	eInt
	eFloat
	eString
	eTuple
	eList
	eCall
	eAttr
	eSubscript
	eSlice
	eUnary
	eBinary
)

// expr is an expression; at is where it starts.
type expr struct {
	kind     exprKind
	at       pos
	off, end int
	name     string // a name, an attribute's name or an operator
	ival     int64
	fval     float64
	elts     []*expr   // tuple and list elements, subscript and slice parts
	x, y     *expr     // operands; a call's function, an attribute's object
	args     []callArg // a call's arguments
}

type callArg struct {
	keyword string // empty for a positional argument
	value   *expr
	at      pos // where the argument starts, its keyword included
	off     int
}

type stmtKind int

const (
	sExpr stmtKind = iota
	sAssign
	sReturn
	sImport
	sPass
	sClass
	sDef
)

type stmt struct {
	kind     stmtKind
	at       pos
	off, end int
	targets  []*expr // assignment targets, left to right (a = b = value)
	value    *expr   // assigned, returned or evaluated; nil for a bare return
	name     string  // class or function name
	bases    []*expr
	params   []param
	imports  []imported
	body     []*stmt
}

type param struct {
	name     string
	ann, def *expr
	at       pos
}

// imported is one name an import binds: import a.b as c binds c to a.b.
type imported struct {
	name, module string
}

type parser struct {
	file string
	src  string
	toks []token
	i    int
}

// syntaxError stops the parse at the first construct it does not know.
type syntaxError struct{ err Error }

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

func (p *parser) fail(t token, format string, a ...any) {
	panic(syntaxError{Error{File: p.file, Line: t.at.line, Col: t.at.col, Msg: fmt.Sprintf(format, a...), Got: describe(t)}})
}

// describe is a token as an error shows it.
func describe(t token) string {
	switch t.kind {
	case tNewline:
		return "the end of the line"
	case tIndent:
		return "an indented block"
	case tDedent, tEOF:
		return "the end of the block"
	case tString:
		return "a string"
	}
	return t.text
}

func (p *parser) expect(op string) token {
	t := p.next()
	if !t.is(op) {
		p.i--
		p.fail(t, "expected %s", op)
	}
	return t
}

func (p *parser) name() token {
	t := p.next()
	if t.kind != tName || keywords[t.text] {
		p.i--
		p.fail(t, "expected a name")
	}
	return t
}

// keywords are Python's reserved words (True, False and None are read as
// names and given their values later).
var keywords = map[string]bool{"and": true, "as": true, "assert": true, "async": true, "await": true,
	"break": true, "class": true, "continue": true, "def": true, "del": true, "elif": true, "else": true,
	"except": true, "finally": true, "for": true, "from": true, "global": true, "if": true, "import": true,
	"in": true, "is": true, "lambda": true, "nonlocal": true, "not": true, "or": true, "pass": true,
	"raise": true, "return": true, "try": true, "while": true, "with": true, "yield": true}

// parse reads a whole file.
func parse(file, src string) (body []*stmt, err *Error) {
	toks, lerr := lex(file, src)
	if lerr != nil {
		return nil, lerr
	}
	p := &parser{file: file, src: src, toks: toks}
	defer func() {
		if r := recover(); r != nil {
			se, ok := r.(syntaxError)
			if !ok {
				panic(r)
			}
			err = &se.err
		}
	}()
	for p.peek().kind != tEOF {
		if p.peek().kind == tIndent {
			p.fail(p.peek(), "unexpected indentation")
		}
		body = append(body, p.statement()...)
	}
	return body, nil
}

// statement reads one line's statements (several when separated by ;)
// or one compound statement.
func (p *parser) statement() []*stmt {
	t := p.peek()
	switch {
	case t.is("class"):
		return []*stmt{p.class()}
	case t.is("def"):
		return []*stmt{p.def()}
	case t.is("@"):
		p.fail(t, "decorators are not supported")
	case t.kind == tName && keywords[t.text] && !simpleKeywords[t.text]:
		p.fail(t, "%s statements are not supported", t.text)
	}
	var out []*stmt
	for {
		out = append(out, p.simple())
		if !p.peek().is(";") {
			break
		}
		p.next()
		if p.peek().kind == tNewline {
			break
		}
	}
	t = p.next()
	if t.kind != tNewline {
		p.i--
		p.fail(t, "unsupported syntax: expected the end of the statement")
	}
	return out
}

var simpleKeywords = map[string]bool{"return": true, "pass": true, "import": true, "from": true}

func (p *parser) finish(s *stmt) *stmt {
	s.end = p.toks[p.i-1].end
	return s
}

func (p *parser) simple() *stmt {
	t := p.peek()
	s := &stmt{at: t.at, off: t.off}
	switch {
	case t.kind == tName && keywords[t.text] && !simpleKeywords[t.text]:
		p.fail(t, "%s statements are not supported", t.text)
	case t.is("pass"):
		p.next()
		s.kind = sPass
	case t.is("return"):
		p.next()
		s.kind = sReturn
		if k := p.peek(); k.kind != tNewline && !k.is(";") {
			s.value = p.exprList()
		}
	case t.is("import"):
		p.next()
		s.kind = sImport
		for {
			mod := p.dotted()
			if p.peek().is("as") {
				p.next()
				s.imports = append(s.imports, imported{p.name().text, mod})
			} else {
				first, _, _ := strings.Cut(mod, ".") // import a.b binds a, to a
				s.imports = append(s.imports, imported{first, first})
			}
			if !p.peek().is(",") {
				break
			}
			p.next()
		}
	case t.is("from"):
		p.next()
		s.kind = sImport
		mod := p.dotted()
		p.expect("import")
		if p.peek().is("*") {
			p.fail(p.peek(), "import * is not supported: the names it binds are unknown here")
		}
		paren := p.peek().is("(")
		if paren {
			p.next()
		}
		for {
			n := p.name().text
			as := n
			if p.peek().is("as") {
				p.next()
				as = p.name().text
			}
			s.imports = append(s.imports, imported{as, mod + "." + n})
			if !p.peek().is(",") {
				break
			}
			p.next()
			if paren && p.peek().is(")") {
				break
			}
		}
		if paren {
			p.expect(")")
		}
	default:
		e := p.exprList()
		if !p.peek().is("=") {
			if k := p.peek(); k.kind == tOp && (strings.HasSuffix(k.text, "=") && k.text != "==" || k.text == ":") {
				p.fail(k, "this kind of assignment is not supported")
			}
			s.kind, s.value = sExpr, e
			return p.finish(s)
		}
		s.kind = sAssign
		for p.peek().is("=") {
			p.next()
			s.targets = append(s.targets, e)
			e = p.exprList()
		}
		s.value = e
	}
	return p.finish(s)
}

func (p *parser) dotted() string {
	parts := []string{p.name().text}
	for p.peek().is(".") {
		p.next()
		parts = append(parts, p.name().text)
	}
	return strings.Join(parts, ".")
}

// suite reads a block after its colon: an indented block, or simple
// statements on the same line.
func (p *parser) suite() []*stmt {
	p.expect(":")
	if p.peek().kind != tNewline {
		return p.statement()
	}
	p.next()
	if t := p.peek(); t.kind != tIndent {
		p.fail(t, "expected an indented block")
	}
	p.next()
	var body []*stmt
	for p.peek().kind != tDedent && p.peek().kind != tEOF {
		body = append(body, p.statement()...)
	}
	p.next()
	return body
}

func (p *parser) class() *stmt {
	t := p.next()
	s := &stmt{kind: sClass, at: t.at, off: t.off, name: p.name().text}
	if p.peek().is("(") {
		p.next()
		for !p.peek().is(")") {
			s.bases = append(s.bases, p.expr())
			if !p.peek().is(",") {
				break
			}
			p.next()
		}
		p.expect(")")
	}
	s.end = p.toks[p.i-1].end
	s.body = p.suite()
	return s
}

func (p *parser) def() *stmt {
	t := p.next()
	s := &stmt{kind: sDef, at: t.at, off: t.off, name: p.name().text}
	p.expect("(")
	for !p.peek().is(")") {
		if k := p.peek(); k.is("*") || k.is("**") || k.is("/") {
			p.fail(k, "%s in a parameter list is not supported", k.text)
		}
		n := p.name()
		pa := param{name: n.text, at: n.at}
		if p.peek().is(":") {
			p.next()
			pa.ann = p.expr()
		}
		if p.peek().is("=") {
			p.next()
			pa.def = p.expr()
		}
		s.params = append(s.params, pa)
		if !p.peek().is(",") {
			break
		}
		p.next()
	}
	p.expect(")")
	if p.peek().is("->") {
		p.next()
		p.expr() // the return annotation is not evaluated
	}
	s.end = p.toks[p.i-1].end
	s.body = p.suite()
	return s
}

// exprList reads expressions separated by commas: a tuple when there is a
// comma.
func (p *parser) exprList() *expr {
	first := p.expr()
	if !p.peek().is(",") {
		return first
	}
	t := &expr{kind: eTuple, at: first.at, off: first.off, elts: []*expr{first}}
	for p.peek().is(",") {
		p.next()
		if !p.startsExpr() {
			break
		}
		t.elts = append(t.elts, p.expr())
	}
	t.end = p.toks[p.i-1].end
	return t
}

func (p *parser) startsExpr() bool {
	t := p.peek()
	switch t.kind {
	case tName:
		return !keywords[t.text] || t.text == "not" || t.text == "lambda" || t.text == "await" || t.text == "yield"
	case tNumber, tString:
		return true
	case tOp:
		return t.text == "(" || t.text == "[" || t.text == "{" || t.text == "-" || t.text == "+" || t.text == "~"
	}
	return false
}

var binaryPrec = map[string]int{"+": 1, "-": 1, "*": 2, "/": 2, "//": 2, "%": 2, "@": 2}

// unsupportedOps are operators that continue an expression beyond the
// arithmetic this parser reads.
var unsupportedOps = map[string]bool{"<": true, ">": true, "==": true, "!=": true, "<=": true, ">=": true,
	"&": true, "|": true, "^": true, "<<": true, ">>": true, ":=": true, "if": true, "and": true, "or": true,
	"in": true, "is": true, "not": true, "for": true}

func (p *parser) expr() *expr {
	e := p.binary(1)
	if t := p.peek(); unsupportedOps[t.text] && (t.kind == tOp || t.kind == tName) {
		p.fail(t, "unsupported syntax: %s in an expression", t.text)
	}
	return e
}

func (p *parser) binary(min int) *expr {
	x := p.unary()
	for {
		t := p.peek()
		prec, ok := binaryPrec[t.text]
		if t.kind != tOp || !ok || prec < min {
			return x
		}
		p.next()
		y := p.binary(prec + 1)
		x = &expr{kind: eBinary, at: x.at, off: x.off, end: y.end, name: t.text, x: x, y: y}
	}
}

func (p *parser) unary() *expr {
	t := p.peek()
	if t.kind == tOp && (t.text == "-" || t.text == "+" || t.text == "~") {
		p.next()
		x := p.unary()
		return &expr{kind: eUnary, at: t.at, off: t.off, end: x.end, name: t.text, x: x}
	}
	x := p.postfix()
	if t := p.peek(); t.is("**") {
		p.next()
		y := p.unary() // right-associative, binds tighter than a unary minus on its left
		return &expr{kind: eBinary, at: x.at, off: x.off, end: y.end, name: "**", x: x, y: y}
	}
	return x
}

func (p *parser) postfix() *expr {
	x := p.atom()
	for {
		t := p.peek()
		switch {
		case t.is("."):
			p.next()
			n := p.name()
			x = &expr{kind: eAttr, at: x.at, off: x.off, end: n.end, name: n.text, x: x}
		case t.is("("):
			p.next()
			c := &expr{kind: eCall, at: x.at, off: x.off, x: x}
			for !p.peek().is(")") {
				a := p.peek()
				if a.is("*") || a.is("**") {
					p.fail(a, "unpacking arguments (%s) is not supported", a.text)
				}
				arg := callArg{at: a.at, off: a.off}
				if a.kind == tName && p.toks[p.i+1].is("=") {
					p.next()
					p.next()
					arg.keyword = a.text
				}
				arg.value = p.expr()
				c.args = append(c.args, arg)
				if !p.peek().is(",") {
					break
				}
				p.next()
			}
			c.end = p.expect(")").end
			x = c
		case t.is("["):
			p.next()
			s := &expr{kind: eSubscript, at: x.at, off: x.off, x: x}
			for {
				s.elts = append(s.elts, p.sliceItem())
				if !p.peek().is(",") {
					break
				}
				p.next()
				if p.peek().is("]") {
					break
				}
			}
			s.end = p.expect("]").end
			x = s
		default:
			return x
		}
	}
}

// sliceItem reads a subscript's part: an expression or a slice a:b:c.
func (p *parser) sliceItem() *expr {
	t := p.peek()
	var parts []*expr
	colons := 0
	for {
		if k := p.peek(); k.is(":") {
			parts = append(parts, nil)
		} else if p.startsExpr() {
			parts = append(parts, p.expr())
		} else {
			parts = append(parts, nil)
		}
		if !p.peek().is(":") || colons == 2 {
			break
		}
		p.next()
		colons++
	}
	if colons == 0 {
		if parts[0] == nil {
			p.fail(p.peek(), "expected an index")
		}
		return parts[0]
	}
	return &expr{kind: eSlice, at: t.at, off: t.off, end: p.toks[p.i-1].end, elts: parts}
}

func (p *parser) atom() *expr {
	t := p.next()
	e := &expr{at: t.at, off: t.off, end: t.end}
	switch {
	case t.kind == tName && !keywords[t.text]:
		e.kind, e.name = eName, t.text
	case t.kind == tNumber:
		p.number(t, e)
	case t.kind == tString:
		e.kind = eString
		for p.peek().kind == tString { // "a" "b" is one string
			e.end = p.next().end
		}
	case t.is("("):
		if p.peek().is(")") {
			e.kind, e.end = eTuple, p.next().end
			return e
		}
		inner := p.expr()
		if !p.peek().is(",") {
			p.expect(")")
			return inner // (x) is x
		}
		e.kind, e.elts = eTuple, []*expr{inner}
		for p.peek().is(",") {
			p.next()
			if p.peek().is(")") {
				break
			}
			e.elts = append(e.elts, p.expr())
		}
		e.end = p.expect(")").end
	case t.is("["):
		e.kind = eList
		for !p.peek().is("]") {
			e.elts = append(e.elts, p.expr())
			if !p.peek().is(",") {
				break
			}
			p.next()
		}
		e.end = p.expect("]").end
	case t.is("{"):
		p.fail(t, "dictionaries and sets are not supported")
	case t.kind == tName:
		p.fail(t, "unsupported syntax: %s in an expression", t.text)
	default:
		p.i--
		p.fail(t, "expected an expression")
	}
	return e
}

// number reads an integer or float literal with Python's rules: decimal
// without leading zeros, 0x/0o/0b prefixes, underscores between digits.
func (p *parser) number(t token, e *expr) {
	s := t.text
	lower := strings.ToLower(s)
	if strings.HasSuffix(lower, "j") {
		p.fail(t, "complex numbers are not supported")
	}
	if strings.Contains(s, "__") || strings.HasSuffix(s, "_") {
		p.fail(t, "malformed number")
	}
	clean := strings.ReplaceAll(s, "_", "")
	isPrefixed := len(lower) > 1 && lower[0] == '0' && strings.ContainsRune("xob", rune(lower[1]))
	if isPrefixed {
		v, err := strconv.ParseInt(clean, 0, 64)
		if err != nil {
			p.fail(t, "malformed or too large integer")
		}
		e.kind, e.ival = eInt, v
		return
	}
	if strings.ContainsAny(lower, ".e") {
		v, err := strconv.ParseFloat(clean, 64)
		if err != nil || strings.ContainsAny(lower, "abcdfghijklmnopqrstuvwxyz") {
			p.fail(t, "malformed number")
		}
		e.kind, e.fval = eFloat, v
		return
	}
	if len(clean) > 1 && clean[0] == '0' && strings.Trim(clean, "0") != "" {
		p.fail(t, "leading zeros in a decimal integer are not Python")
	}
	v, err := strconv.ParseInt(clean, 10, 64)
	if err != nil {
		p.fail(t, "malformed or too large integer")
	}
	e.kind, e.ival = eInt, v
}

// text is the source of a node, on one line, shortened for messages.
func text(src string, off, end int) string {
	s := strings.Join(strings.Fields(src[off:end]), " ")
	if r := []rune(s); len(r) > 72 {
		s = string(r[:69]) + "..."
	}
	return s
}
