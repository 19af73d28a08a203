package importer

import (
	"fmt"
	"sort"
	"strings"
)

// Error is one refusal: where in the problem file, what is wrong and the
// source seen there.
type Error struct {
	File      string
	Line, Col int
	Msg       string
	Got       string // empty when there is nothing to show (a missing function)
}

func (e Error) Error() string {
	s := fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
	if e.Got != "" {
		s += " (got " + e.Got + ")"
	}
	return s
}

// Errors is every refusal of one file, in file order.
type Errors []Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (es Errors) sorted() Errors {
	sort.SliceStable(es, func(i, j int) bool {
		a, b := es[i], es[j]
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
	return es
}

// pos is a place in the source: 1-based line and column (in characters).
type pos struct{ line, col int }
