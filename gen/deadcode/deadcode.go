// Package deadcode finds, in the C++ of an emitted CUDA file, code that
// cannot matter for the file's one target: conditional preprocessor
// directives, constexpr bool flags, if constexpr, branches (if, while,
// switch, for, ?:) whose condition or one of whose && / || operands uses
// only compile-time constants, and __device__ / __global__ functions or
// named lambdas that nothing live calls. It tokenises the source (comments
// and string literals dropped) and reads conditions by balanced brackets;
// it is a check of generated code, not a C++ parser.
package deadcode

import (
	"fmt"
	"slices"
	"strings"
)

// Finding is one piece of dead code: where and what.
type Finding struct {
	Line, Col int
	What      string
}

func (f Finding) String() string { return fmt.Sprintf("%d:%d: %s", f.Line, f.Col, f.What) }

type kind int

const (
	ident kind = iota
	number
	punct
	literal   // a string or character literal, its text dropped
	directive // a preprocessor line, whole
)

type token struct {
	kind      kind
	text      string
	line, col int
}

// puncts are the multi-character operators, longest first.
var puncts = []string{"<<<", ">>>", "<<=", ">>=", "->*", "...", "::", "->", "++", "--", "&&", "||", "==", "!=", "<=", ">=",
	"<<", ">>", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*"}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isDigit(c byte) bool      { return c >= '0' && c <= '9' }

// tokenize splits C++ source into tokens, dropping comments and the text
// of string and character literals (an unterminated one is an error).
func tokenize(src string) ([]token, error) {
	var toks []token
	line, col := 1, 1
	i := 0
	advance := func(n int) {
		for ; n > 0 && i < len(src); n-- {
			if src[i] == '\n' {
				line, col = line+1, 1
			} else {
				col++
			}
			i++
		}
	}
	lineStart := true // only blanks since the last newline
	for i < len(src) {
		c := src[i]
		l, cl := line, col
		switch {
		case c == '\n':
			advance(1)
			lineStart = true
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			advance(1)
			continue
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				advance(1)
			}
			continue
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				return nil, fmt.Errorf("%d:%d: unterminated comment", l, cl)
			}
			advance(end + 4)
			continue
		case c == '#' && lineStart:
			start := i
			for i < len(src) && (src[i] != '\n' || src[i-1] == '\\') {
				advance(1)
			}
			toks = append(toks, token{directive, src[start:i], l, cl})
			continue
		case c == '"' || c == '\'':
			advance(1)
			for i < len(src) && src[i] != c {
				if src[i] == '\\' {
					advance(1)
				}
				if i < len(src) && src[i] == '\n' {
					return nil, fmt.Errorf("%d:%d: unterminated literal", l, cl)
				}
				advance(1)
			}
			if i >= len(src) {
				return nil, fmt.Errorf("%d:%d: unterminated literal", l, cl)
			}
			advance(1)
			toks = append(toks, token{literal, string(c), l, cl})
		case isIdentStart(c):
			start := i
			for i < len(src) && (isIdentStart(src[i]) || isDigit(src[i])) {
				advance(1)
			}
			toks = append(toks, token{ident, src[start:i], l, cl})
		case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			// A pp-number: digits, letters, dots, and a sign after an exponent.
			start := i
			for i < len(src) {
				d := src[i]
				if (d == '+' || d == '-') && strings.ContainsRune("eEpP", rune(src[i-1])) {
					advance(1)
					continue
				}
				if !isIdentStart(d) && !isDigit(d) && d != '.' {
					break
				}
				advance(1)
			}
			toks = append(toks, token{number, src[start:i], l, cl})
		default:
			p := string(c)
			for _, m := range puncts {
				if strings.HasPrefix(src[i:], m) {
					p = m
					break
				}
			}
			advance(len(p))
			toks = append(toks, token{punct, p, l, cl})
		}
		lineStart = false
	}
	return toks, nil
}

// neutral are the keywords and type names that say nothing about whether
// an expression depends on run-time values.
var neutral = map[string]bool{
	"int": true, "unsigned": true, "signed": true, "long": true, "short": true, "char": true, "float": true,
	"double": true, "bool": true, "const": true, "volatile": true, "size_t": true, "sizeof": true, "alignof": true,
	"static_cast": true, "true": true, "false": true, "nullptr": true, "uint32_t": true, "uint64_t": true,
	"int64_t": true, "uintptr_t": true,
}

// pure are the functions that are constant where their arguments are.
var pure = map[string]bool{"min": true, "max": true, "sizeof": true, "alignof": true, "static_cast": true}

// Check returns the dead code of C++ source (the kernel and host sources
// of one file, together: a kernel is live where the host launches it).
func Check(src string) ([]Finding, error) {
	toks, err := tokenize(src)
	if err != nil {
		return nil, err
	}
	a := analysis{toks: toks, consts: map[string]bool{}, types: map[string]bool{}}
	a.declarations()
	a.conditions()
	a.unused()
	slices.SortStableFunc(a.found, func(x, y Finding) int {
		if x.Line != y.Line {
			return x.Line - y.Line
		}
		return x.Col - y.Col
	})
	return a.found, nil
}

type analysis struct {
	toks   []token
	consts map[string]bool // constexpr names and enumerators
	types  map[string]bool // typedef and using names
	found  []Finding
}

func (a *analysis) flag(t token, format string, args ...any) {
	a.found = append(a.found, Finding{t.line, t.col, fmt.Sprintf(format, args...)})
}

func (a *analysis) is(i int, text string) bool {
	return i >= 0 && i < len(a.toks) && a.toks[i].kind != literal && a.toks[i].text == text
}

// match is the index of the bracket closing the one at i (len(toks) if none).
func (a *analysis) match(i int) int {
	open := a.toks[i].text
	shut := map[string]string{"(": ")", "[": "]", "{": "}"}[open]
	depth := 0
	for j := i; j < len(a.toks); j++ {
		switch {
		case a.is(j, open):
			depth++
		case a.is(j, shut):
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return len(a.toks)
}

// declarations collects the constant names (constexpr declarators,
// enumerators) and type names, and flags constexpr bool and the
// conditional directives.
func (a *analysis) declarations() {
	for i, t := range a.toks {
		switch {
		case t.kind == directive:
			d := strings.Fields(strings.TrimPrefix(t.text, "#"))
			if len(d) > 0 && slices.Contains([]string{"if", "ifdef", "ifndef", "elif", "else", "endif"}, d[0]) {
				what := "conditional preprocessor directive"
				if strings.Contains(t.text, "ARCH") {
					what = "architecture #if"
				}
				a.flag(t, "%s: %s", what, strings.TrimSpace(t.text))
			}
		case a.is(i, "constexpr"):
			if a.is(i-1, "if") {
				a.flag(t, "if constexpr")
				continue
			}
			end := i
			for end < len(a.toks) && !a.is(end, ";") && !a.is(end, "{") {
				end++
			}
			for _, d := range a.declarators(i+1, end) {
				a.consts[a.toks[d].text] = true
			}
			for j := i + 1; j < end && !a.is(j, "="); j++ {
				if a.is(j, "bool") {
					a.flag(t, "constexpr bool")
					break
				}
			}
		case a.is(i, "typedef"):
			end := i
			for end < len(a.toks) && !a.is(end, ";") {
				end++
			}
			if a.toks[end-1].kind == ident {
				a.types[a.toks[end-1].text] = true
			}
		case a.is(i, "using") && i+2 < len(a.toks) && a.toks[i+1].kind == ident && a.is(i+2, "="):
			a.types[a.toks[i+1].text] = true
		case a.is(i, "enum"):
			j := i + 1
			for j < len(a.toks) && !a.is(j, "{") && !a.is(j, ";") {
				j++
			}
			if !a.is(j, "{") {
				continue
			}
			end := a.match(j)
			expect := true // an enumerator comes first and after each comma
			depth := 0
			for k := j + 1; k < end; k++ {
				switch {
				case a.is(k, "(") || a.is(k, "["):
					depth++
				case a.is(k, ")") || a.is(k, "]"):
					depth--
				case depth == 0 && a.is(k, ","):
					expect = true
				case expect && a.toks[k].kind == ident:
					a.consts[a.toks[k].text] = true
					expect = false
				}
			}
		}
	}
}

// declarators are the names declared by the tokens [from, to) of a
// declaration after its constexpr: the last identifier before the first
// =, [, { or ( of the first declarator, the first of each after a comma
// at depth 0.
func (a *analysis) declarators(from, to int) []int {
	var names []int
	last, inInit, depth := -1, false, 0
	for j := from; j < to; j++ {
		t := a.toks[j]
		switch {
		case a.is(j, "(") || a.is(j, "[") || a.is(j, "{"):
			if depth == 0 && !inInit && last >= 0 {
				names = append(names, last)
				inInit = true
			}
			depth++
		case a.is(j, ")") || a.is(j, "]") || a.is(j, "}"):
			depth--
		case depth == 0 && a.is(j, "="):
			if !inInit && last >= 0 {
				names = append(names, last)
			}
			inInit = true
		case depth == 0 && a.is(j, ","):
			if !inInit && last >= 0 {
				names = append(names, last)
			}
			inInit, last = false, -1
		case t.kind == ident && !inInit && depth == 0:
			last = j
		}
	}
	if !inInit && last >= 0 {
		names = append(names, last)
	}
	return names
}

// constant reports whether tokens [from, to) use compile-time constants
// alone: no identifier but constant names, type names, neutral keywords
// and pure functions, no member access on a non-constant.
func (a *analysis) constant(from, to int) bool {
	if from >= to {
		return false
	}
	for j := from; j < to; j++ {
		t := a.toks[j]
		if t.kind == literal {
			return false // (a string's pointer)
		}
		if t.kind != ident {
			continue
		}
		switch {
		case a.consts[t.text], a.types[t.text], neutral[t.text]:
		case pure[t.text] && a.is(j+1, "("):
		default:
			return false
		}
	}
	return true
}

// checkCondition flags a condition [from, to) that is constant, or one of
// whose && / || operands (at its own depth, or inside an operand that is
// wholly parenthesised) is.
func (a *analysis) checkCondition(at token, what string, from, to int) {
	if a.constant(from, to) {
		a.flag(at, "%s on constants only: %s", what, a.text(from, to))
		return
	}
	for _, op := range a.operands(from, to) {
		if a.constant(op[0], op[1]) {
			a.flag(a.toks[op[0]], "%s with an operand on constants only: %s", what, a.text(op[0], op[1]))
		}
	}
}

// operands splits [from, to) at its depth-0 && and ||, recursing into
// operands that are wholly parenthesised; no split, no operands.
func (a *analysis) operands(from, to int) [][2]int {
	for a.is(from, "(") && a.match(from) == to-1 {
		from, to = from+1, to-1
	}
	var cuts []int
	depth := 0
	for j := from; j < to; j++ {
		switch {
		case a.is(j, "(") || a.is(j, "[") || a.is(j, "{"):
			depth++
		case a.is(j, ")") || a.is(j, "]") || a.is(j, "}"):
			depth--
		case depth == 0 && (a.is(j, "&&") || a.is(j, "||")):
			cuts = append(cuts, j)
		case depth == 0 && (a.is(j, "?") || a.is(j, "=")):
			return nil // (not a plain logical chain)
		}
	}
	if len(cuts) == 0 {
		return nil
	}
	var ops [][2]int
	start := from
	for _, c := range append(cuts, to) {
		op := [2]int{start, c}
		for a.is(op[0], "!") {
			op[0]++
		}
		if sub := a.operands(op[0], op[1]); sub != nil {
			ops = append(ops, sub...)
		} else {
			ops = append(ops, op)
		}
		start = c + 1
	}
	return ops
}

func (a *analysis) text(from, to int) string {
	var b strings.Builder
	for j := from; j < to && j < len(a.toks); j++ {
		if j > from {
			b.WriteByte(' ')
		}
		b.WriteString(a.toks[j].text)
	}
	return b.String()
}

// conditions checks every if, while, switch and for condition and every
// ternary's.
func (a *analysis) conditions() {
	for i, t := range a.toks {
		switch {
		case a.is(i, "if") || a.is(i, "while") || a.is(i, "switch"):
			j := i + 1
			if a.is(j, "constexpr") {
				j++
			}
			if !a.is(j, "(") {
				continue
			}
			a.checkCondition(t, t.text, j+1, a.match(j))
		case a.is(i, "for") && a.is(i+1, "("):
			end := a.match(i + 1)
			var semis []int
			depth := 0
			for j := i + 2; j < end; j++ {
				switch {
				case a.is(j, "(") || a.is(j, "[") || a.is(j, "{"):
					depth++
				case a.is(j, ")") || a.is(j, "]") || a.is(j, "}"):
					depth--
				case depth == 0 && a.is(j, ";"):
					semis = append(semis, j)
				}
			}
			if len(semis) == 2 && semis[1] > semis[0]+1 {
				a.checkCondition(t, "for", semis[0]+1, semis[1])
			}
		case a.is(i, "?"):
			a.checkCondition(t, "?:", a.ternaryStart(i), i)
		}
	}
}

// ternaryStart is the first token of the condition of the ternary whose
// ? is at q: back over balanced brackets to an unmatched opening bracket,
// a comma, a semicolon, an assignment, return, or the ? or : of an
// enclosing ternary.
func (a *analysis) ternaryStart(q int) int {
	depth := 0
	for j := q - 1; j >= 0; j-- {
		t := a.toks[j]
		if t.kind != punct && t.kind != ident {
			continue
		}
		switch t.text {
		case ")", "]", "}":
			depth++
			continue
		case "(", "[", "{":
			if depth == 0 {
				return j + 1
			}
			depth--
			continue
		}
		if depth > 0 {
			continue
		}
		switch t.text {
		case ",", ";", "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "return", "?", ":", "<<<", ">>>":
			return j + 1
		}
	}
	return 0
}

// fn is a function or named lambda: its name's token, its whole
// definition's tokens, and what it is.
type fn struct {
	name, from, to int
	what           string
}

// unused flags the __device__ and __global__ functions and the named
// lambdas that no live code refers to: references from a dead function's
// own body do not count, to a fixed point.
func (a *analysis) unused() {
	var fns []fn
	for i := range a.toks {
		switch {
		case a.is(i, "__device__") || a.is(i, "__global__"):
			// The name is the identifier before the parameter list, which
			// the body follows (qualifiers between them skipped).
			j := i
			for j < len(a.toks) && !a.is(j, ";") && !a.is(j, "{") && !a.is(j, "=") {
				if a.is(j, "(") {
					if !a.is(j-1, "__launch_bounds__") {
						break
					}
					j = a.match(j)
				}
				j++
			}
			if !a.is(j, "(") || a.toks[j-1].kind != ident {
				continue
			}
			close := a.match(j)
			k := close + 1
			for k < len(a.toks) && !a.is(k, "{") && !a.is(k, ";") {
				k++
			}
			if a.is(k, "{") {
				fns = append(fns, fn{j - 1, i, a.match(k), a.toks[i].text + " function"})
			}
		case a.is(i, "auto") && i+2 < len(a.toks) && a.toks[i+1].kind == ident && a.is(i+2, "=") && a.is(i+3, "["):
			end := i + 3
			for end < len(a.toks) && !a.is(end, ";") {
				if a.is(end, "{") || a.is(end, "(") || a.is(end, "[") {
					end = a.match(end)
				}
				end++
			}
			fns = append(fns, fn{i + 1, i, end, "lambda"})
		}
	}
	dead := make([]bool, len(fns))
	for changed := true; changed; {
		changed = false
		for f := range fns {
			if dead[f] {
				continue
			}
			name := a.toks[fns[f].name].text
			used := false
		scan:
			for j, t := range a.toks {
				if t.kind != ident || t.text != name || j == fns[f].name || a.is(j-1, ".") || a.is(j-1, "->") {
					continue
				}
				for g := range fns {
					if (dead[g] || g == f) && j >= fns[g].from && j <= fns[g].to {
						continue scan
					}
				}
				used = true
				break
			}
			if !used {
				dead[f], changed = true, true
			}
		}
	}
	for f := range fns {
		if dead[f] {
			a.flag(a.toks[fns[f].name], "%s %s is never called", fns[f].what, a.toks[fns[f].name].text)
		}
	}
}

// Sources returns the C++ of an emitted Python file: its raw strings
// (r"""...""": the kernel and host sources) where they stand, everything
// else blanked, so that a finding's line and column are the file's.
func Sources(py string) (string, error) {
	b := []byte(py)
	for i := range b {
		if b[i] != '\n' {
			b[i] = ' '
		}
	}
	found := false
	for at := 0; ; {
		i := strings.Index(py[at:], `r"""`)
		if i < 0 {
			break
		}
		start := at + i + 4
		j := strings.Index(py[start:], `"""`)
		if j < 0 {
			return "", fmt.Errorf("a raw string is not terminated")
		}
		copy(b[start:], py[start:start+j])
		at, found = start+j+3, true
	}
	if !found {
		return "", fmt.Errorf("no raw string (kernel source) in the file")
	}
	return string(b), nil
}
