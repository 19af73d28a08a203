package importer

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The tokenizer covers Python's lexical grammar as far as problem files
// need it: names, numbers, strings (docstrings), operators, comments,
// indentation and line joining inside brackets or after a backslash.

type tokKind int

const (
	tName tokKind = iota
	tNumber
	tString
	tOp
	tNewline
	tIndent
	tDedent
	tEOF
)

type token struct {
	kind     tokKind
	text     string
	at       pos
	off, end int // byte offsets in the source
}

func (t token) is(op string) bool { return (t.kind == tOp || t.kind == tName) && t.text == op }

type lexer struct {
	src       string
	file      string
	i         int
	line      int
	lineStart int
	open      []pos // open brackets: newlines inside them join lines
	indents   []int
	toks      []token
}

// operators, longest first so that the longest one matches.
var operators = []string{"**=", "//=", ">>=", "<<=", "...", "->", "**", "//", "==", "!=", "<=", ">=", "+=", "-=",
	"*=", "/=", "%=", "&=", "|=", "^=", ":=", "<<", ">>", "@=",
	"(", ")", "[", "]", "{", "}", ",", ":", ".", ";", "@", "=", "+", "-", "*", "/", "%", "<", ">", "&", "|", "^", "~"}

func (l *lexer) here() pos {
	return pos{l.line, utf8.RuneCountInString(l.src[l.lineStart:l.i]) + 1}
}

func (l *lexer) errorf(at pos, got, format string, a ...any) Error {
	return Error{File: l.file, Line: at.line, Col: at.col, Msg: fmt.Sprintf(format, a...), Got: got}
}

func (l *lexer) emit(kind tokKind, start int, at pos) {
	l.toks = append(l.toks, token{kind: kind, text: l.src[start:l.i], at: at, off: start, end: l.i})
}

func (l *lexer) newline() {
	l.line++
	l.lineStart = l.i
}

// lex splits src into tokens, or returns the first lexical error.
func lex(file, src string) ([]token, *Error) {
	l := &lexer{src: src, file: file, line: 1, indents: []int{0}}
	if err := l.run(); err != nil {
		return nil, err
	}
	return l.toks, nil
}

func (l *lexer) run() *Error {
	atLineStart := true
	for {
		if atLineStart && len(l.open) == 0 {
			done, err := l.indentation()
			if err != nil {
				return err
			}
			if done {
				break
			}
			atLineStart = false
		}
		if l.i >= len(l.src) {
			break
		}
		c := l.src[l.i]
		at := l.here()
		start := l.i
		switch {
		case c == ' ' || c == '\t' || c == '\f':
			l.i++
		case c == '#':
			for l.i < len(l.src) && l.src[l.i] != '\n' {
				l.i++
			}
		case c == '\r' || c == '\n':
			l.i++
			if c == '\r' && l.i < len(l.src) && l.src[l.i] == '\n' {
				l.i++
			}
			if len(l.open) == 0 {
				l.toks = append(l.toks, token{kind: tNewline, at: at, off: start, end: start})
				atLineStart = true
			}
			l.newline()
		case c == '\\':
			l.i++
			switch {
			case strings.HasPrefix(l.src[l.i:], "\r\n"):
				l.i += 2
			case strings.HasPrefix(l.src[l.i:], "\n"):
				l.i++
			default:
				e := l.errorf(at, `\`, "a backslash outside a string must end its line")
				return &e
			}
			l.newline()
		case isStringStart(l.src[l.i:]):
			if err := l.string(at); err != nil {
				return err
			}
		case c >= '0' && c <= '9' || c == '.' && l.i+1 < len(l.src) && l.src[l.i+1] >= '0' && l.src[l.i+1] <= '9':
			l.number(start)
			l.emit(tNumber, start, at)
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= utf8.RuneSelf:
			r, _ := utf8.DecodeRuneInString(l.src[l.i:])
			if r != '_' && !unicode.IsLetter(r) {
				e := l.errorf(at, fmt.Sprintf("%q", r), "unexpected character")
				return &e
			}
			for l.i < len(l.src) {
				r, n := utf8.DecodeRuneInString(l.src[l.i:])
				if r != '_' && !unicode.IsLetter(r) && !unicode.IsDigit(r) {
					break
				}
				l.i += n
			}
			l.emit(tName, start, at)
		default:
			op := ""
			for _, o := range operators {
				if strings.HasPrefix(l.src[l.i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				r, _ := utf8.DecodeRuneInString(l.src[l.i:])
				e := l.errorf(at, fmt.Sprintf("%q", r), "unexpected character")
				return &e
			}
			switch op {
			case "(", "[", "{":
				l.open = append(l.open, at)
			case ")", "]", "}":
				if len(l.open) == 0 {
					e := l.errorf(at, op, "closing bracket without an opening one")
					return &e
				}
				l.open = l.open[:len(l.open)-1]
			}
			l.i += len(op)
			l.emit(tOp, start, at)
		}
	}
	at := l.here()
	if n := len(l.open); n > 0 {
		e := l.errorf(l.open[n-1], "", "this bracket is never closed: the file ends inside it")
		return &e
	}
	if n := len(l.toks); n > 0 && l.toks[n-1].kind != tNewline && l.toks[n-1].kind != tDedent {
		l.toks = append(l.toks, token{kind: tNewline, at: at, off: l.i, end: l.i})
	}
	for len(l.indents) > 1 {
		l.indents = l.indents[:len(l.indents)-1]
		l.toks = append(l.toks, token{kind: tDedent, at: at, off: l.i, end: l.i})
	}
	l.toks = append(l.toks, token{kind: tEOF, at: at, off: l.i, end: l.i})
	return nil
}

// indentation reads the indentation of the next line that holds code,
// skipping blank and comment-only lines, and emits INDENT or DEDENT
// tokens; done means the source ended.
func (l *lexer) indentation() (done bool, err *Error) {
	for {
		width := 0
		for l.i < len(l.src) && (l.src[l.i] == ' ' || l.src[l.i] == '\t' || l.src[l.i] == '\f') {
			if l.src[l.i] == '\t' {
				e := l.errorf(l.here(), "a tab", "tabs in indentation are not supported")
				return false, &e
			}
			width++
			l.i++
		}
		if l.i >= len(l.src) {
			return true, nil
		}
		switch l.src[l.i] {
		case '#':
			for l.i < len(l.src) && l.src[l.i] != '\n' {
				l.i++
			}
			continue
		case '\r', '\n':
			if l.src[l.i] == '\r' && l.i+1 < len(l.src) && l.src[l.i+1] == '\n' {
				l.i++
			}
			l.i++
			l.newline()
			continue
		}
		at := l.here()
		top := l.indents[len(l.indents)-1]
		switch {
		case width > top:
			l.indents = append(l.indents, width)
			l.toks = append(l.toks, token{kind: tIndent, at: at, off: l.i, end: l.i})
		case width < top:
			for width < l.indents[len(l.indents)-1] {
				l.indents = l.indents[:len(l.indents)-1]
				l.toks = append(l.toks, token{kind: tDedent, at: at, off: l.i, end: l.i})
			}
			if width != l.indents[len(l.indents)-1] {
				e := l.errorf(at, "", "the indentation matches no outer block")
				return false, &e
			}
		}
		return false, nil
	}
}

func isStringStart(s string) bool {
	for i := 0; i < 3 && i < len(s); i++ {
		switch s[i] {
		case '\'', '"':
			return true
		case 'r', 'R', 'b', 'B', 'u', 'U', 'f', 'F':
			if i == 2 {
				return false
			}
		default:
			return false
		}
	}
	return false
}

func (l *lexer) string(at pos) *Error {
	start := l.i
	for l.src[l.i] != '\'' && l.src[l.i] != '"' {
		l.i++
	}
	raw := strings.ContainsAny(l.src[start:l.i], "rR")
	q := l.src[l.i : l.i+1]
	if strings.HasPrefix(l.src[l.i:], q+q+q) {
		q = q + q + q
	}
	l.i += len(q)
	for {
		if l.i >= len(l.src) {
			e := l.errorf(at, "", "the string starting here is not closed")
			return &e
		}
		c := l.src[l.i]
		switch {
		case strings.HasPrefix(l.src[l.i:], q):
			l.i += len(q)
			l.emit(tString, start, at)
			return nil
		case c == '\\' && !raw || c == '\\' && raw && l.i+1 < len(l.src):
			l.i++
			if l.i < len(l.src) && l.src[l.i] == '\n' {
				l.i++
				l.newline()
				continue
			}
			if l.i < len(l.src) {
				l.i++
			}
		case c == '\n':
			if len(q) == 1 {
				e := l.errorf(at, "", "the string starting here is not closed on its line")
				return &e
			}
			l.i++
			l.newline()
		default:
			l.i++
		}
	}
}

// number takes a numeric literal's characters from start; parsing decides
// whether they form one. A sign belongs to it after a decimal exponent
// (1e-3), not after a hexadecimal digit e (0xe-3 is a subtraction).
func (l *lexer) number(start int) {
	hex := strings.HasPrefix(strings.ToLower(l.src[start:]), "0x")
	for l.i < len(l.src) {
		c := l.src[l.i]
		switch {
		case c >= '0' && c <= '9', c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '.':
			l.i++
		case (c == '+' || c == '-') && !hex && (l.src[l.i-1] == 'e' || l.src[l.i-1] == 'E'):
			l.i++
		default:
			return
		}
	}
}
