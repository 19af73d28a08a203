package spec

import (
	"fmt"
	"strings"
)

// Error is one diagnostic: where, which field, what is wrong and the value seen.
type Error struct {
	File      string
	Line, Col int
	Field     string
	Msg       string
	Got       string // empty when there is no value to show (a missing field)
}

func (e Error) Error() string {
	s := fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Col, e.Field, e.Msg)
	if e.Got != "" {
		s += " (got " + e.Got + ")"
	}
	return s
}

// Errors is every problem found in one or more specs, in file order.
type Errors []Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}
