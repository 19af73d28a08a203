// Package templates holds the text/template sources of every emitted file.
// They only print: all numbers and decisions come from the generator's plan.
package templates

import (
	"embed"
	"text/template"

	"github.com/Masterminds/sprig/v3"
)

//go:embed *.tmpl
var files embed.FS

// Parse returns all templates, named by file name (e.g. "cuda.py.tmpl"),
// with sprig's hermetic functions (no clock, no randomness, no environment).
func Parse() (*template.Template, error) {
	return template.New("convtgen").
		Funcs(sprig.HermeticTxtFuncMap()).
		Option("missingkey=error").
		ParseFS(files, "*.tmpl")
}
