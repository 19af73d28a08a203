package importer

import (
	"slices"
	"strconv"
	"strings"

	"convtgen/gen/spec"
)

// convParams is nn.ConvTranspose3d's signature in positional order; the
// first three have no default.
var convParams = []string{"in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding", "groups", "bias", "dilation"}

// alone is the reason every refused extra of a level-2 model gives.
const alone = "the spec describes a model that is the nn.ConvTranspose3d alone"

func (im *importer) init(d *stmt, m *model) {
	if len(d.params) == 0 || d.params[0].name != "self" || d.params[0].ann != nil || d.params[0].def != nil {
		im.refuse(d.at, text(im.src, d.off, d.end), "__init__'s first parameter must be self")
	}
	seenDefault := false
	for i, p := range d.params {
		if i == 0 {
			continue
		}
		ip := initParam{name: p.name, at: p.at}
		if p.ann != nil {
			switch {
			case p.ann.kind == eName && (p.ann.name == "int" || p.ann.name == "bool" || p.ann.name == "tuple" || p.ann.name == "float"):
				ip.ann = p.ann.name
			default:
				im.refuseExpr(p.ann, "parameter %s: the spec's parameters are annotated int, float, bool or tuple, or not at all", p.name)
			}
		}
		if p.def != nil {
			seenDefault = true
			// Defaults are evaluated when the class is defined, before the
			// constants below it: literals only.
			lit := &evaluator{file: im.file, src: im.src}
			if v, err := lit.eval(p.def); err != nil {
				im.refuseExpr(p.def, "parameter %s: a default must be a literal", p.name)
			} else if sv, ok := specValue(v); !ok {
				im.refuseExpr(p.def, "parameter %s: the default is %s; the spec's values are integers, floats, True/False and tuples of integers", p.name, v.what())
			} else {
				ip.def = &sv
			}
		} else if seenDefault {
			im.refuse(p.at, p.name, "a parameter without a default follows one with a default")
		}
		m.init = append(m.init, ip)
	}
	superCalled := false
	for _, s := range d.body {
		switch {
		case isDoc(s):
		case s.kind == sExpr && isSuperInit(s.value):
			superCalled = true
		case s.kind == sAssign && len(s.targets) == 1 && isSelfAttr(s.targets[0]) && im.resolve(calledFunc(s.value)) == "torch.nn.ConvTranspose3d":
			if m.attr != "" {
				im.refuseStmt(s, "a second nn.ConvTranspose3d: %s", alone)
				continue
			}
			if !superCalled {
				im.refuseStmt(s, "__init__ must call super().__init__() before it sets attributes")
			}
			m.attr, m.call, m.convAt = s.targets[0].name, s.value, len(m.layers)
			im.convCall(s.value, m)
		case s.kind == sAssign && len(s.targets) == 1 && isSelfAttr(s.targets[0]):
			if !superCalled {
				im.refuseStmt(s, "__init__ must call super().__init__() before it sets attributes")
			}
			params := map[string]bool{}
			for _, p := range m.init {
				params[p.name] = true
			}
			if l, ok := im.layer(s, params); ok {
				m.layers = append(m.layers, l)
			}
		default:
			im.refuseStmt(s, "__init__ may call super().__init__() and build the nn.ConvTranspose3d only")
		}
	}
	if !superCalled {
		im.refuse(d.at, text(im.src, d.off, d.end), "__init__ never calls super().__init__()")
	}
	if m.attr == "" {
		im.refuse(d.at, text(im.src, d.off, d.end), "__init__ builds no nn.ConvTranspose3d as self.<attr> = nn.ConvTranspose3d(...)")
	}
}

func isSelfAttr(e *expr) bool { return e.kind == eAttr && e.x.kind == eName && e.x.name == "self" }

func calledFunc(e *expr) *expr {
	if e.kind == eCall {
		return e.x
	}
	return e
}

// isSuperInit recognises super().__init__() and super(Model, self).__init__().
func isSuperInit(e *expr) bool {
	if e.kind != eCall || len(e.args) != 0 || e.x.kind != eAttr || e.x.name != "__init__" {
		return false
	}
	s := e.x.x
	if s.kind != eCall || s.x.kind != eName || s.x.name != "super" {
		return false
	}
	switch len(s.args) {
	case 0:
		return true
	case 2:
		a, b := s.args[0], s.args[1]
		return a.keyword == "" && b.keyword == "" && a.value.kind == eName && a.value.name == "Model" &&
			b.value.kind == eName && b.value.name == "self"
	}
	return false
}

// convCall binds the call's arguments to nn.ConvTranspose3d's parameters
// and writes each in the spec's canonical form.
func (im *importer) convCall(c *expr, m *model) {
	params := map[string]bool{}
	for _, p := range m.init {
		params[p.name] = true
	}
	given := map[string]bool{}
	for i, a := range c.args {
		name := a.keyword
		switch {
		case name == "" && i >= len(convParams):
			im.refuseExpr(a.value, "too many positional arguments for nn.ConvTranspose3d")
			continue
		case name == "":
			name = convParams[i]
		case !slices.Contains(convParams, name):
			im.refuseArg(a, "nn.ConvTranspose3d argument %s is not supported (the spec takes %s)", name, strings.Join(convParams, ", "))
			continue
		}
		if given[name] {
			im.refuseArg(a, "nn.ConvTranspose3d gets %s twice", name)
			continue
		}
		given[name] = true
		src, ok := im.convExpr(a.value, params)
		if !ok {
			continue
		}
		m.args = append(m.args, convArg{name: name, keyword: a.keyword != "", src: src, value: a.value})
	}
	for _, req := range convParams[:3] {
		if !given[req] {
			im.refuseExpr(c, "nn.ConvTranspose3d needs %s", req)
		}
	}
	// The spec writes the three required arguments positionally, the
	// others as the file does: the same call, one spelling of it.
	var rest []string
	for _, req := range convParams[:3] {
		for _, a := range m.args {
			if a.name == req {
				m.conv = append(m.conv, a.src)
			}
		}
	}
	for _, a := range m.args {
		switch {
		case slices.Contains(convParams[:3], a.name):
		case a.keyword:
			rest = append(rest, a.name+"="+a.src)
		default:
			rest = append(rest, a.src)
		}
	}
	m.conv = append(m.conv, rest...)
}

// convExpr writes an argument as the spec's reference.conv takes it:
// __init__ parameters, integers, True/False and tuples of them.
func (im *importer) convExpr(e *expr, params map[string]bool) (string, bool) {
	switch {
	case e.kind == eName && (e.name == "True" || e.name == "False"):
		return e.name, true
	case e.kind == eName && params[e.name]:
		return e.name, true
	case e.kind == eName:
		im.refuseExpr(e, "%s is not a parameter of __init__: the spec's convolution reads __init__'s parameters only", e.name)
		return "", false
	case e.kind == eInt:
		return strconv.FormatInt(e.ival, 10), true
	case e.kind == eUnary && e.name == "-" && e.x.kind == eInt:
		return "-" + strconv.FormatInt(e.x.ival, 10), true
	case e.kind == eFloat:
		return spec.PyFloat(e.fval), true
	case e.kind == eUnary && e.name == "-" && e.x.kind == eFloat:
		return spec.PyFloat(-e.x.fval), true
	case e.kind == eTuple && len(e.elts) > 0:
		parts := make([]string, len(e.elts))
		for i, x := range e.elts {
			s, ok := im.convExpr(x, params)
			if !ok {
				return "", false
			}
			parts[i] = s
		}
		if len(parts) == 1 {
			return "(" + parts[0] + ",)", true
		}
		return "(" + strings.Join(parts, ", ") + ")", true
	}
	im.refuseExpr(e, "unsupported nn.ConvTranspose3d argument: the spec takes __init__'s parameters, integers, True/False and tuples of them")
	return "", false
}

// specValue converts a value to the spec's: an integer, a bool or a tuple
// of integers.
func specValue(v value) (spec.Value, bool) {
	switch v.kind {
	case vInt:
		return spec.Value{Kind: spec.IntValue, Int: int(v.i)}, true
	case vBool:
		return spec.Value{Kind: spec.BoolValue, Bool: v.b}, true
	case vFloat:
		return spec.Value{Kind: spec.FloatValue, Float: v.f}, true
	case vTuple:
		t := spec.Value{Kind: spec.TupleValue, Tuple: []int{}}
		for _, e := range v.elts {
			if e.kind != vInt {
				return spec.Value{}, false
			}
			t.Tuple = append(t.Tuple, int(e.i))
		}
		return t, true
	}
	return spec.Value{}, false
}

// body returns a function's statements other than docstrings, refusing
// parameters: get_inputs and get_init_inputs take none.
func (im *importer) body(d *stmt) []*stmt {
	if len(d.params) > 0 {
		im.refuse(d.params[0].at, d.params[0].name, "%s() takes no parameters", d.name)
	}
	var out []*stmt
	for _, s := range d.body {
		if !isDoc(s) {
			out = append(out, s)
		}
	}
	return out
}

func (im *importer) initInputs(d *stmt, m *model) {
	body := im.body(d)
	if len(body) != 1 || body[0].kind != sReturn || body[0].value == nil || body[0].value.kind != eList && body[0].value.kind != eTuple {
		at, got := d.at, text(im.src, d.off, d.end)
		if len(body) > 0 {
			at, got = body[0].at, text(im.src, body[0].off, body[0].end)
		}
		im.refuse(at, got, "get_init_inputs() must be return [values...]")
		return
	}
	m.initReturn = body[0]
	for _, e := range body[0].value.elts {
		v, err := im.eval(e)
		if err != nil {
			im.add(err)
			continue
		}
		sv, ok := specValue(v)
		if !ok {
			im.refuseExpr(e, "get_init_inputs() gives %s, %s: the spec's values are integers, floats, True/False and tuples of integers", v.String(), v.what())
			continue
		}
		m.initInputs = append(m.initInputs, sv)
		m.initExprs = append(m.initExprs, e)
	}
}

func (im *importer) inputs(d *stmt, m *model) {
	body := im.body(d)
	locals := map[string]*expr{}
	var ret *stmt
	for _, s := range body {
		switch {
		case ret != nil:
			im.refuseStmt(s, "statements after get_inputs()'s return are not supported")
			return
		case s.kind == sAssign && len(s.targets) == 1 && s.targets[0].kind == eName && s.value.kind == eCall:
			locals[s.targets[0].name] = s.value
		case s.kind == sReturn && s.value != nil && (s.value.kind == eList || s.value.kind == eTuple):
			ret = s
		default:
			im.refuseStmt(s, "get_inputs() may assign torch.rand(...) to names and return a list of them only")
			return
		}
	}
	if ret == nil {
		im.refuse(d.at, text(im.src, d.off, d.end), "get_inputs() must end with return [torch.rand(...)]")
		return
	}
	for i, c := range ret.value.elts {
		if c.kind == eName && locals[c.name] != nil {
			c = locals[c.name]
		}
		shape := im.tensor(c, m)
		if shape == nil {
			return
		}
		if i == 0 {
			m.shape, m.shapeCall = shape, c
		}
		m.inputShapes = append(m.inputShapes, shape)
	}
}

// tensor reads one of get_inputs()'s torch.rand(...) calls: its shape, nil
// where it was refused. Every tensor takes the first one's distribution.
func (im *importer) tensor(c *expr, m *model) []int {
	dist := ""
	switch im.resolve(calledFunc(c)) {
	case "torch.rand":
		dist = "rand"
	case "torch.randn":
		dist = "randn"
	default:
		im.refuseExpr(c, "the input must be torch.rand(...) or torch.randn(...)")
		return nil
	}
	if m.dist == "" {
		m.dist = dist
	} else if m.dist != dist {
		im.refuseExpr(c, "every input is drawn as the first one is (torch.%s)", m.dist)
		return nil
	}
	var shape []int
	args := c.args
	for _, a := range args {
		if a.keyword != "" {
			im.refuseArg(a, "torch.%s's keyword arguments are not supported (the spec's input is fp32 on the GPU)", m.dist)
			return nil
		}
	}
	var dims []value
	if len(args) == 1 && (args[0].value.kind == eTuple || args[0].value.kind == eList) {
		v, err := im.eval(args[0].value)
		if err != nil {
			im.add(err)
			return nil
		}
		dims = v.elts
	} else {
		for _, a := range args {
			v, err := im.eval(a.value)
			if err != nil {
				im.add(err)
				return nil
			}
			dims = append(dims, v)
		}
	}
	if len(dims) != 5 {
		im.refuseExpr(c, "the input has %d dimensions: the spec's is (batch, channels, depth, height, width)", len(dims))
		return nil
	}
	for _, v := range dims {
		if v.kind != vInt {
			im.refuseExpr(c, "the input's sizes must be integers (one is %s)", v.String())
			return nil
		}
		shape = append(shape, int(v.i))
	}
	return shape
}
