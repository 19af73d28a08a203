package importer

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"convtgen/gen/spec"
)

// problem is the convolution the reference really builds and its input.
type problem struct {
	batch, in, out, groups                      int
	kernel, input, stride, padding, outPad, dil [3]int
	bias                                        bool
}

// bind gives __init__'s parameters their values (get_init_inputs()'s,
// positionally, then the defaults), types them and runs the convolution's
// arguments over them, as Python would.
func (im *importer) bind(m *model) {
	if len(m.initInputs) > len(m.init) {
		im.refuseExpr(m.initExprs[len(m.init)], "get_init_inputs() gives %d values; __init__ takes %d after self", len(m.initInputs), len(m.init))
		return
	}
	env := map[string]spec.Value{}
	for i, p := range m.init {
		var v spec.Value
		var at pos
		var got string
		switch {
		case i < len(m.initInputs):
			v, at, got = m.initInputs[i], m.initExprs[i].at, text(im.src, m.initExprs[i].off, m.initExprs[i].end)
		case p.def != nil:
			v, at, got = *p.def, p.at, p.name
		default:
			im.refuse(p.at, p.name, "parameter %s gets no value: get_init_inputs() gives %d and it has no default", p.name, len(m.initInputs))
			continue
		}
		typ := p.ann
		if typ == "" { // unannotated: the type of what it gets
			typ = map[spec.ValueKind]string{spec.IntValue: "int", spec.BoolValue: "bool", spec.TupleValue: "tuple", spec.FloatValue: "float"}[v.Kind]
		}
		if typ == "tuple" && v.Kind == spec.TupleValue && len(v.Tuple) != 3 {
			typ = "shape" // a tuple that is not (D, H, W): a tensor's shape
		}
		want := map[string]spec.ValueKind{"int": spec.IntValue, "bool": spec.BoolValue, "tuple": spec.TupleValue, "shape": spec.TupleValue, "float": spec.FloatValue}[typ]
		switch {
		case typ == "float" && v.Kind == spec.IntValue:
		case v.Kind != want:
			im.refuse(at, got, "parameter %s is annotated %s but gets %s: the spec's values match their annotations", p.name, typ, v.Python())
			continue
		case v.Kind == spec.TupleValue && len(v.Tuple) == 0:
			im.refuse(at, got, "parameter %s gets an empty tuple", p.name)
			continue
		}
		env[p.name] = v
		m.params = append(m.params, spec.Param{Name: p.name, Type: typ, Default: p.def})
	}
	if len(im.errs) > 0 {
		return
	}
	one := spec.Value{Kind: spec.IntValue, Int: 1}
	zero := spec.Value{Kind: spec.IntValue}
	built := map[string]spec.Value{"stride": one, "padding": zero, "output_padding": zero, "dilation": one,
		"groups": one, "bias": {Kind: spec.BoolValue, Bool: true}} // PyTorch's defaults
	where := map[string]*expr{}
	for _, a := range m.args {
		built[a.name] = convValue(a.value, env)
		where[a.name] = a.value
	}
	var p problem
	intArg := func(name string, dst *int) {
		if v := built[name]; v.Kind == spec.IntValue {
			*dst = v.Int
		} else {
			im.refuseExpr(where[name], "%s is %s: nn.ConvTranspose3d's %s is an integer here", name, v.Python(), name)
		}
	}
	tripleArg := func(name string, dst *[3]int) {
		switch v := built[name]; {
		case v.Kind == spec.IntValue:
			*dst = [3]int{v.Int, v.Int, v.Int}
		case v.Kind == spec.TupleValue && len(v.Tuple) == 3:
			*dst = [3]int{v.Tuple[0], v.Tuple[1], v.Tuple[2]}
		default:
			im.refuseExpr(where[name], "%s is %s: nn.ConvTranspose3d's %s is an integer or three (D, H, W)", name, v.Python(), name)
		}
	}
	intArg("in_channels", &p.in)
	intArg("out_channels", &p.out)
	intArg("groups", &p.groups)
	tripleArg("kernel_size", &p.kernel)
	tripleArg("stride", &p.stride)
	tripleArg("padding", &p.padding)
	tripleArg("output_padding", &p.outPad)
	tripleArg("dilation", &p.dil)
	if v := built["bias"]; v.Kind == spec.BoolValue {
		p.bias = v.Bool
	} else {
		im.refuseExpr(where["bias"], "bias is %s: the spec's bias is True or False", v.Python())
	}
	if len(m.inputNames) != len(m.inputShapes) {
		im.refuseStmt(m.initReturn, "forward takes %d inputs; get_inputs() gives %d", len(m.inputNames), len(m.inputShapes))
		return
	}
	p.batch = m.shape[0]
	copy(p.input[:], m.shape[2:])
	for _, op := range m.prologue {
		p.input = im.pooled(m, op, env, p.input)
	}
	m.env = env
	if m.shape[1] != p.in && len(im.errs) == 0 {
		im.refuseExpr(m.shapeCall, "the input has %d channels; the convolution built from get_init_inputs() takes %d", m.shape[1], p.in)
	}
	m.problem = p
}

// pooled is the input's size after a prologue layer: a pool's window.
func (im *importer) pooled(m *model, op spec.Op, env map[string]spec.Value, in [3]int) [3]int {
	var l *spec.Layer
	for i := range m.layers {
		if m.layers[i].Attr == op.Attr {
			l = &m.layers[i]
		}
	}
	if l == nil || l.Module != "AvgPool3d" && l.Module != "MaxPool3d" {
		im.refuse(m.call.at, op.Attr, "before the convolution the spec takes pool layers only")
		return in
	}
	args := map[string][3]int{"padding": {}}
	for i, src := range l.Args {
		kw, v, err := spec.EvalArg(src, env)
		if kw == "" {
			kw = []string{"kernel_size", "stride", "padding"}[min(i, 2)]
		}
		switch {
		case err == nil && v.Kind == spec.IntValue:
			args[kw] = [3]int{v.Int, v.Int, v.Int}
		case err == nil && v.Kind == spec.TupleValue && len(v.Tuple) == 3:
			args[kw] = [3]int{v.Tuple[0], v.Tuple[1], v.Tuple[2]}
		default:
			im.refuse(m.call.at, src, "a pool's sizes are integers or 3-tuples")
			return in
		}
	}
	k := args["kernel_size"]
	s, ok := args["stride"]
	if !ok {
		s = k
	}
	var out [3]int
	for i := range out {
		if s[i] <= 0 {
			im.refuse(m.call.at, op.Attr, "a pool's stride is positive")
			return in
		}
		out[i] = (in[i]+2*args["padding"][i]-k[i])/s[i] + 1
	}
	return out
}

// convValue evaluates a convolution argument that convExpr accepted.
func convValue(e *expr, env map[string]spec.Value) spec.Value {
	switch e.kind {
	case eName:
		if e.name == "True" || e.name == "False" {
			return spec.Value{Kind: spec.BoolValue, Bool: e.name == "True"}
		}
		return env[e.name]
	case eInt:
		return spec.Value{Kind: spec.IntValue, Int: int(e.ival)}
	case eUnary:
		return spec.Value{Kind: spec.IntValue, Int: -int(e.x.ival)}
	}
	t := spec.Value{Kind: spec.TupleValue, Tuple: []int{}}
	for _, x := range e.elts {
		v := convValue(x, env)
		if v.Kind != spec.IntValue {
			return spec.Value{Kind: spec.BoolValue} // not a tuple of integers: refused by the caller
		}
		t.Tuple = append(t.Tuple, v.Int)
	}
	return t
}

// render writes the spec's top level, problem and reference sections.
func render(m *model, name, title string) []byte {
	var b strings.Builder
	p := m.problem
	fmt.Fprintf(&b, "# Imported from %s by convtgen import. No kernel section: the\n", yamlComment(title+".py"))
	b.WriteString("# generator's defaults and the plan choose the kernel; add one to pin it.\n")
	fmt.Fprintf(&b, "version: %d\nname: %s\ntitle: %s\n", spec.Version, yamlString(name), yamlString(title))
	b.WriteString("problem:\n")
	fmt.Fprintf(&b, "  batch: %d\n  in_channels: %d\n  out_channels: %d\n  kernel: %s\n  input: %s\n",
		p.batch, p.in, p.out, triple(p.kernel), triple(p.input))
	for _, f := range []struct {
		key   string
		v     [3]int
		unset int
	}{{"stride", p.stride, 1}, {"padding", p.padding, 0}, {"output_padding", p.outPad, 0}, {"dilation", p.dil, 1}} {
		if f.v != [3]int{f.unset, f.unset, f.unset} {
			fmt.Fprintf(&b, "  %s: %s\n", f.key, triple(f.v))
		}
	}
	if p.groups != 1 {
		fmt.Fprintf(&b, "  groups: %d\n", p.groups)
	}
	if p.bias {
		b.WriteString("  bias: true\n")
	}
	if m.dist != "rand" {
		fmt.Fprintf(&b, "  input_dist: %s\n", m.dist)
	}
	fmt.Fprintf(&b, "reference:\n  attr: %s\n  params:\n", yamlString(m.attr))
	for _, pa := range m.params {
		fmt.Fprintf(&b, "    - {name: %s, type: %s", yamlString(pa.Name), pa.Type)
		if pa.Default != nil {
			fmt.Fprintf(&b, ", default: %s", yamlValue(*pa.Default))
		}
		b.WriteString("}\n")
	}
	b.WriteString("  conv:\n")
	for _, c := range m.conv {
		fmt.Fprintf(&b, "    - %s\n", yamlString(c))
	}
	vals := make([]string, len(m.initInputs))
	for i, v := range m.initInputs {
		vals[i] = yamlValue(v)
	}
	fmt.Fprintf(&b, "  init_inputs: [%s]\n", strings.Join(vals, ", "))
	if len(m.layers) > 0 {
		b.WriteString("  layers:\n")
		for i, l := range m.layers {
			if i == m.convAt && i > 0 {
				b.WriteString("    - conv\n")
			}
			fmt.Fprintf(&b, "    - %s\n", yamlLayer(l))
		}
	}
	if len(m.inputShapes) > 1 || len(m.prologue) > 0 || len(m.inputNames) > 0 && m.inputNames[0] != "x" {
		b.WriteString("  inputs:\n")
		for i, n := range m.inputNames {
			fmt.Fprintf(&b, "    - {name: %s", yamlString(n))
			if i < len(m.inputShapes) && (i > 0 || len(m.prologue) > 0) {
				fmt.Fprintf(&b, ", shape: %s", ints(m.inputShapes[i]))
			}
			b.WriteString("}\n")
		}
	}
	for _, sec := range []struct {
		key string
		ops []spec.Op
	}{{"prologue", m.prologue}, {"forward", m.ops}} {
		if len(sec.ops) == 0 {
			continue
		}
		fmt.Fprintf(&b, "  %s:\n", sec.key)
		for _, op := range sec.ops {
			fmt.Fprintf(&b, "    - %s\n", yamlOp(op))
		}
	}
	return []byte(b.String())
}

func triple(v [3]int) string {
	if v[0] == v[1] && v[1] == v[2] {
		return strconv.Itoa(v[0])
	}
	return fmt.Sprintf("[%d, %d, %d]", v[0], v[1], v[2])
}

func yamlValue(v spec.Value) string {
	switch v.Kind {
	case spec.FloatValue:
		return spec.PyFloat(v.Float)
	case spec.BoolValue:
		return strconv.FormatBool(v.Bool)
	case spec.TupleValue:
		parts := make([]string, len(v.Tuple))
		for i, x := range v.Tuple {
			parts[i] = strconv.Itoa(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return strconv.Itoa(v.Int)
}

// yamlString writes a string as a YAML scalar that reads back as that
// string (quoted where YAML would read it otherwise, as a number, null
// or a flow item).
func yamlString(s string) string {
	if plainSafe(s) {
		return s
	}
	out, err := yaml.Marshal(s)
	if err != nil || strings.Contains(strings.TrimSuffix(string(out), "\n"), "\n") {
		return strconv.Quote(s) // a JSON-style string is YAML too
	}
	return strings.TrimSuffix(string(out), "\n")
}

// plainSafe: a name-like string (what the specs hold) with a letter in it
// before any digit-only reading, so YAML reads it as a string.
func plainSafe(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z' || s[0] == '_' || s[0] == '(') {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "y", "n", "~":
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_=(), -", r)) {
			return false
		}
	}
	return !strings.Contains(s, ", -") && !strings.HasSuffix(s, " ")
}

// yamlComment keeps a file name on its comment line.
func yamlComment(s string) string {
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return '?'
		}
		return r
	}, s)
}
