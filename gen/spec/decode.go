package spec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// Load reads and validates one spec file.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// Parse decodes and validates a spec. Every problem found is returned in
// one Errors value; a nil error means the spec is valid.
func Parse(path string, data []byte) (*Spec, error) {
	s, errs := ParsePartial(path, data)
	if errs != nil {
		return nil, errs
	}
	return s, nil
}

// ParsePartial is Parse for callers that check more of a spec than its
// own rules (the plan's tile checks): when the spec is invalid it returns
// the spec as far as it decoded along with its errors, nil when nothing
// did (a YAML error, no mapping). Refused says which fields were refused.
// What decoded is validated too, so that one error does not hide others.
func ParsePartial(path string, data []byte) (*Spec, Errors) {
	d := &decoder{file: path, pos: map[string]*yaml.Node{}, bad: map[string]bool{}, decoding: true}
	s := d.decode(data)
	d.decoding = false
	if s != nil {
		d.validate(s)
		s.nodes = d.pos
	}
	if len(d.errs) == 0 {
		return s, nil
	}
	sort.SliceStable(d.errs, func(i, j int) bool {
		a, b := d.errs[i], d.errs[j]
		return a.Line < b.Line || (a.Line == b.Line && a.Col < b.Col)
	})
	if s != nil {
		s.refused = map[string]bool{}
		for _, e := range d.errs {
			s.refused[e.Field] = true
		}
	}
	return s, d.errs
}

// decoder walks the YAML node tree, remembering each field's node so that
// validation can point at the value it refuses.
type decoder struct {
	file string
	errs Errors
	pos  map[string]*yaml.Node
	root *yaml.Node
	// bad holds the fields that failed to decode or are missing: their
	// values are zeros, which validation must not report a second time.
	bad      map[string]bool
	decoding bool
}

func (d *decoder) fail(n *yaml.Node, field, got, format string, args ...any) {
	line, col := 1, 1
	if n != nil {
		line, col = n.Line, n.Column
	}
	if d.decoding {
		d.bad[field] = true
	}
	d.errs = append(d.errs, Error{File: d.file, Line: line, Col: col, Field: field, Msg: fmt.Sprintf(format, args...), Got: got})
}

// isBad tells whether a field, a part of it or a section holding it
// failed to decode.
func (d *decoder) isBad(field string) bool { return related(d.bad, field) }

// ok is !isBad, for rules between fields.
func (d *decoder) ok(field string) bool { return !d.isBad(field) }

// related tells whether set holds field, one of its parts
// ("problem.kernel[1]" for "problem.kernel") or a section holding it.
func related(set map[string]bool, field string) bool {
	if set[field] {
		return true
	}
	for f := range set {
		if within(f, field) || within(field, f) {
			return true
		}
	}
	return false
}

// within tells whether field is a part of section.
func within(field, section string) bool {
	return strings.HasPrefix(field, section) && len(field) > len(section) &&
		(field[len(section)] == '.' || field[len(section)] == '[')
}

// failAt reports against a field's recorded node, or the document root
// when the field was omitted. A field that failed to decode is not
// reported again.
func (d *decoder) failAt(field, got, format string, args ...any) {
	if d.isBad(field) {
		return
	}
	n := d.pos[field]
	if n == nil {
		n = d.root
	}
	d.fail(n, field, got, format, args...)
}

// source renders a node the way the user wrote it, for "(got X)".
func source(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!str" && n.Style != 0 || n.Value == "" || badText(n.Value) != "" {
			return strconv.Quote(n.Value)
		}
		return n.Value
	case yaml.SequenceNode:
		parts := make([]string, len(n.Content))
		for i, c := range n.Content {
			parts[i] = source(c)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case yaml.MappingNode:
		return "a mapping"
	case yaml.AliasNode:
		return "an alias"
	}
	return "nothing"
}

func (d *decoder) decode(data []byte) *Spec {
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	err := dec.Decode(&doc)
	if errors.Is(err, io.EOF) || err == nil && len(doc.Content) == 0 {
		d.errs = append(d.errs, Error{File: d.file, Line: 1, Col: 1, Field: "spec", Msg: "empty document"})
		return nil
	}
	if err != nil {
		d.yamlError(err)
		return nil
	}
	// yaml.v3 reads one document at a time: a second one would be
	// silently ignored.
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		d.yamlError(err)
	default:
		d.fail(&next, "spec", "", "a spec file holds one YAML document; a second one starts here")
	}
	d.root = doc.Content[0]
	if d.root.Kind != yaml.MappingNode {
		d.fail(d.root, "spec", source(d.root), "must be a mapping")
		return nil
	}
	if !d.plain(d.root, "spec") {
		return nil
	}
	if v := MapValue(d.root, "version"); v != nil && v.Kind == yaml.ScalarNode && v.Value == "1" {
		// Version 1's kernel section would only give errors of keys that
		// moved: show this spec's in the new form instead.
		d.fail(v, "version", "", "version 1 is refused: this generator reads version %d, whose kernel section is nested by CUDA family "+
			"(convtgen convert rewrites the file); this spec's kernel section in version %d reads%s", Version, Version, indent("\n"+v1KernelSection(d.root)))
		return nil
	}
	s := &Spec{Path: d.file}
	version := 0
	d.fields(d.root, "", map[string]func(*yaml.Node, string){
		"version": func(n *yaml.Node, f string) { version, _ = d.int(n, f) },
		"name":    func(n *yaml.Node, f string) { s.Name, _ = d.str(n, f) },
		"title":   func(n *yaml.Node, f string) { s.Title, _ = d.str(n, f) },
		"problem": func(n *yaml.Node, f string) { d.problem(n, f, &s.Problem) },
		"reference": func(n *yaml.Node, f string) {
			d.reference(n, f, &s.Reference)
		},
		"kernel": func(n *yaml.Node, f string) { d.kernel(n, f, &s.Kernel) },
	}, "version", "name", "problem", "reference")
	if _, ok := d.pos["version"]; ok && version != Version && d.ok("version") {
		d.failAt("version", strconv.Itoa(version), "this generator reads version %d", Version)
	}
	return s
}

// indent prefixes every line after a newline with four spaces, so that
// a section quoted in an error reads apart from the message.
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }

// fields decodes a mapping: each key goes to its handler; unknown and
// duplicate keys are errors, and so are missing required keys.
func (d *decoder) fields(n *yaml.Node, prefix string, handlers map[string]func(*yaml.Node, string), required ...string) {
	field := prefix
	if field == "" {
		field = "spec"
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, field, source(n), "must be a mapping")
		return
	}
	if !d.plain(n, field) {
		return
	}
	if prefix != "" {
		prefix += "."
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		name := k.Value
		if k.Kind != yaml.ScalarNode || name == "" || badText(name) != "" {
			name = source(k) // an empty, non-scalar or unprintable key still gets a field name
		}
		field := prefix + name
		h, ok := handlers[k.Value]
		switch {
		case !d.plain(k, field):
		case !ok:
			d.fail(k, field, "", "unknown key; known: %s", strings.Join(sortedKeys(handlers), ", "))
		case seen[k.Value]:
			d.fail(k, field, "", "duplicate key")
		default:
			seen[k.Value] = true
			d.pos[field] = v
			h(v, field)
		}
	}
	for _, r := range required {
		if !seen[r] {
			d.fail(n, prefix+r, "", "required field is missing")
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func (d *decoder) scalar(n *yaml.Node, field, want string) bool {
	if n.Kind != yaml.ScalarNode {
		d.fail(n, field, source(n), "must be %s", want)
		return false
	}
	return d.plain(n, field)
}

// plain refuses explicit tags other than !!int, !!str and !!bool: the
// others (!!float, !!binary, !!map, local tags such as !x) make yaml.v3
// read something else than what the user sees, and a spec needs none.
// The three allowed still have to carry a standard value (a decimal
// integer, true or false): "!!bool yes" is refused, not read as false.
func (d *decoder) plain(n *yaml.Node, field string) bool {
	if n.Style&yaml.TaggedStyle == 0 || n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!str" || n.Tag == "!!bool") {
		return true
	}
	d.fail(n, field, n.Tag, "explicit YAML tags other than !!int, !!str and !!bool are refused")
	return false
}

// decimal is the one integer syntax a spec takes: no sign but a minus, no
// leading zeros, no 0x/0o prefixes or underscores (YAML 1.1 would read
// 010 as 8).
var decimal = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

func (d *decoder) int(n *yaml.Node, field string) (int, bool) {
	if !d.scalar(n, field, "an integer") {
		return 0, false
	}
	if n.Tag != "!!int" || !decimal.MatchString(n.Value) {
		d.fail(n, field, source(n), "must be an integer")
		return 0, false
	}
	v, err := strconv.Atoi(n.Value)
	if err != nil {
		d.fail(n, field, source(n), "is out of range")
		return 0, false
	}
	return v, true
}

// bool takes YAML 1.2's spellings of true and false only: an explicit
// !!bool tag makes yaml.v3 accept YAML 1.1's yes/no/on/off and read all
// of them but true as false.
func (d *decoder) bool(n *yaml.Node, field string) (bool, bool) {
	if !d.scalar(n, field, "true or false") {
		return false, false
	}
	switch {
	case n.Tag != "!!bool":
	case n.Value == "true" || n.Value == "True" || n.Value == "TRUE":
		return true, true
	case n.Value == "false" || n.Value == "False" || n.Value == "FALSE":
		return false, true
	}
	d.fail(n, field, source(n), "must be true or false")
	return false, false
}

// str reads a string field: not null (null, ~ or nothing), and free of
// the characters badText refuses.
func (d *decoder) str(n *yaml.Node, field string) (string, bool) {
	if !d.scalar(n, field, "a string") {
		return "", false
	}
	if n.Tag == "!!null" {
		d.fail(n, field, source(n), "must be a string")
		return "", false
	}
	if what := badText(n.Value); what != "" {
		d.fail(n, field, source(n), "contains %s: spec text ends up in generated Python and C++, which takes none", what)
		return "", false
	}
	return n.Value, true
}

// badText names the first character of s that no spec string may hold,
// or returns "": invalid UTF-8, control characters (C0 with NUL, tab and
// newlines, DEL, C1), Unicode line and paragraph separators, and the
// invisible direction marks and overrides that make code read otherwise
// than it runs.
func badText(s string) string {
	for i, r := range s {
		switch {
		case r == utf8.RuneError:
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return fmt.Sprintf("invalid UTF-8 at byte %d", i)
			}
		case unicode.IsControl(r), r == '\u2028', r == '\u2029', r == '\ufeff',
			r >= '\u200e' && r <= '\u200f', r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
			return fmt.Sprintf("the character %U at byte %d", r, i)
		}
	}
	return ""
}

func (d *decoder) strList(n *yaml.Node, field string) []string {
	if n.Kind != yaml.SequenceNode || !d.plain(n, field) {
		d.fail(n, field, source(n), "must be a list of strings")
		return nil
	}
	out := make([]string, 0, len(n.Content))
	for i, c := range n.Content {
		if s, ok := d.str(c, fmt.Sprintf("%s[%d]", field, i)); ok {
			out = append(out, s)
		}
	}
	return out
}

// triple reads a per-dimension size: one integer for all three dimensions,
// or a [D, H, W] list, the two forms nn.ConvTranspose3d accepts.
func (d *decoder) triple(n *yaml.Node, field string) [3]int {
	if n.Kind == yaml.ScalarNode {
		v, _ := d.int(n, field)
		return [3]int{v, v, v}
	}
	var t [3]int
	if n.Kind == yaml.SequenceNode && !d.plain(n, field) {
		return t
	}
	if n.Kind != yaml.SequenceNode || len(n.Content) != 3 {
		d.fail(n, field, source(n), "must be an integer or a list of three integers [D, H, W]")
		return t
	}
	for i, c := range n.Content {
		t[i], _ = d.int(c, fmt.Sprintf("%s[%d]", field, i))
	}
	return t
}

// value reads a Python literal: an integer, a bool or a list of integers
// (a tuple on the Python side).
func (d *decoder) value(n *yaml.Node, field string) Value {
	switch {
	case !d.plain(n, field):
		return Value{}
	case n.Kind == yaml.SequenceNode:
		v := Value{Kind: TupleValue, Tuple: []int{}}
		for i, c := range n.Content {
			x, _ := d.int(c, fmt.Sprintf("%s[%d]", field, i))
			v.Tuple = append(v.Tuple, x)
		}
		return v
	case n.Kind == yaml.ScalarNode && n.Tag == "!!bool":
		b, _ := d.bool(n, field)
		return Value{Kind: BoolValue, Bool: b}
	case n.Kind == yaml.ScalarNode && n.Tag == "!!int":
		x, _ := d.int(n, field)
		return Value{Kind: IntValue, Int: x}
	case n.Kind == yaml.ScalarNode && n.Tag == "!!float":
		x, _ := d.float(n, field)
		return Value{Kind: FloatValue, Float: x}
	}
	d.fail(n, field, source(n), "must be an integer, a float, true/false or a list of integers")
	return Value{}
}

// float reads a finite float written as a Python float literal would be
// (digits with a point or an exponent; no .inf or .nan).
func (d *decoder) float(n *yaml.Node, field string) (float64, bool) {
	if !d.scalar(n, field, "a number") {
		return 0, false
	}
	if f := floatLit.FindString(n.Value); n.Tag != "!!float" || f != n.Value {
		d.fail(n, field, source(n), "must be a float such as 0.5 or 1e-5")
		return 0, false
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || math.IsInf(v, 0) {
		d.fail(n, field, source(n), "is out of range")
		return 0, false
	}
	return v, true
}

func (d *decoder) problem(n *yaml.Node, f string, p *Problem) {
	one := [3]int{1, 1, 1}
	p.Stride, p.Dilation, p.Groups, p.InputDist = one, one, 1, "rand"
	d.fields(n, f, map[string]func(*yaml.Node, string){
		"batch":          func(n *yaml.Node, f string) { p.Batch, _ = d.int(n, f) },
		"in_channels":    func(n *yaml.Node, f string) { p.InChannels, _ = d.int(n, f) },
		"out_channels":   func(n *yaml.Node, f string) { p.OutChannels, _ = d.int(n, f) },
		"kernel":         func(n *yaml.Node, f string) { p.Kernel = d.triple(n, f) },
		"input":          func(n *yaml.Node, f string) { p.In = d.triple(n, f) },
		"stride":         func(n *yaml.Node, f string) { p.Stride = d.triple(n, f) },
		"padding":        func(n *yaml.Node, f string) { p.Padding = d.triple(n, f) },
		"output_padding": func(n *yaml.Node, f string) { p.OutputPadding = d.triple(n, f) },
		"dilation":       func(n *yaml.Node, f string) { p.Dilation = d.triple(n, f) },
		"groups":         func(n *yaml.Node, f string) { p.Groups, _ = d.int(n, f) },
		"bias":           func(n *yaml.Node, f string) { p.Bias, _ = d.bool(n, f) },
		"input_dist":     func(n *yaml.Node, f string) { p.InputDist, _ = d.str(n, f) },
	}, "batch", "in_channels", "out_channels", "kernel", "input")
}

func (d *decoder) reference(n *yaml.Node, f string, r *Reference) {
	r.Attr = "conv_transpose3d"
	d.fields(n, f, map[string]func(*yaml.Node, string){
		"attr": func(n *yaml.Node, f string) { r.Attr, _ = d.str(n, f) },
		"params": func(n *yaml.Node, f string) {
			if n.Kind != yaml.SequenceNode {
				d.fail(n, f, source(n), "must be a list of parameters")
				return
			}
			if !d.plain(n, f) {
				return
			}
			for i, c := range n.Content {
				r.Params = append(r.Params, d.param(c, fmt.Sprintf("%s[%d]", f, i)))
			}
		},
		"conv": func(n *yaml.Node, f string) { r.Conv = d.strList(n, f) },
		"init_inputs": func(n *yaml.Node, f string) {
			if n.Kind != yaml.SequenceNode {
				d.fail(n, f, source(n), "must be a list")
				return
			}
			if !d.plain(n, f) {
				return
			}
			for i, c := range n.Content {
				field := fmt.Sprintf("%s[%d]", f, i)
				d.pos[field] = c
				r.InitInputs = append(r.InitInputs, d.value(c, field))
			}
		},
		"layers":   func(n *yaml.Node, f string) { d.layers(n, f, r) },
		"inputs":   func(n *yaml.Node, f string) { d.inputs(n, f, r) },
		"prologue": func(n *yaml.Node, f string) { r.Prologue = d.ops(n, f) },
		"forward":  func(n *yaml.Node, f string) { r.Forward = d.ops(n, f) },
	}, "params", "conv", "init_inputs")
}

func (d *decoder) param(n *yaml.Node, f string) Param {
	var p Param
	d.fields(n, f, map[string]func(*yaml.Node, string){
		"name": func(n *yaml.Node, f string) { p.Name, _ = d.str(n, f) },
		"type": func(n *yaml.Node, f string) { p.Type, _ = d.str(n, f) },
		"default": func(n *yaml.Node, f string) {
			v := d.value(n, f)
			p.Default = &v
		},
	}, "name", "type")
	return p
}

func (d *decoder) kernel(n *yaml.Node, f string, k *Kernel) {
	handlers := map[string]func(*yaml.Node, string){
		"backends": func(n *yaml.Node, f string) { k.Backends = d.strList(n, f) },
		"cuda":     func(n *yaml.Node, f string) { d.cuda(n, f, &k.CUDA) },
		"triton":   func(n *yaml.Node, f string) { d.decodeOptions(n, f, &k.Triton) },
	}
	for _, name := range TargetNames {
		handlers[name] = func(n *yaml.Node, f string) {
			var t TargetKernel
			d.fields(n, f, map[string]func(*yaml.Node, string){
				"cuda":   func(n *yaml.Node, f string) { t.CUDA = &CUDA{}; d.cuda(n, f, t.CUDA) },
				"triton": func(n *yaml.Node, f string) { t.Triton = &Triton{}; d.decodeOptions(n, f, t.Triton) },
			})
			if k.Targets == nil {
				k.Targets = map[string]TargetKernel{}
			}
			k.Targets[name] = t
		}
	}
	d.fields(n, f, handlers)
}

// Defaults applied when the kernel section omits them.
var (
	DefaultBackends  = []string{"cuda", "triton"}
	DefaultPrecision = "fp32"
)

// yamlError records one of yaml.v3's errors, at the line it names.
func (d *decoder) yamlError(err error) {
	line := 1
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if _, err2 := fmt.Sscanf(msg, "line %d:", &line); err2 == nil {
		msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
	}
	d.errs = append(d.errs, Error{File: d.file, Line: line, Col: 1, Field: "yaml", Msg: msg})
}
