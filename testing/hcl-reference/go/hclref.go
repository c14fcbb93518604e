// hclref reads HCL inputs and prints what HashiCorp's hcl/v2 makes of them, in
// the canonical form the differential test compares with packages/hcl.
//
// Input: one JSON object per line on stdin,
//
//	{"id": "...", "src": "<base64 bytes>", "vars": {...}, "env": {"NAME": "value"}, "functions": [...]}
//
// Output: one JSON object per line on stdout, in the same order,
//
//	{"id": "...", "diags": [D...], "body": [ITEM...]}
//
// where D is {"sev", "summary", "from": [line, column, byte], "to": [...]},
// ITEM is {"attr": name, "name": RANGE, "expr": RANGE, "value": V} (or "diags"
// in place of "value" when evaluation failed) or {"block": type, "labels": [...],
// "type": RANGE, "labelRanges": [RANGE...], "open": RANGE, "close": RANGE,
// "body": [ITEM...]}, and V is a JSON rendering of the cty value: strings,
// bools and null as themselves, numbers as the nearest float64 (or
// {"big": "<digits>"} when that is infinite), lists/sets/tuples as arrays and
// maps/objects as objects. Attributes and blocks are listed in source order.
//
// The evaluation context has the input's variables and a fixed function table
// (upper, join, sum, ns::twice, env) whose twin lives in ../src/functions.ts.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
)

type input struct {
	ID   string            `json:"id"`
	Src  string            `json:"src"`
	Vars json.RawMessage   `json:"vars"`
	Env  map[string]string `json:"env"`
	// Functions, when present, limits the function table to these names.
	Functions *[]string `json:"functions"`
}

type diag struct {
	Sev     string `json:"sev"`
	Summary string `json:"summary"`
	From    [3]int `json:"from"`
	To      [3]int `json:"to"`
}

type item struct {
	Attr        string        `json:"attr,omitempty"`
	Name        *[2][3]int    `json:"name,omitempty"`
	Expr        *[2][3]int    `json:"expr,omitempty"`
	Value       interface{}   `json:"value,omitempty"`
	HasValue    bool          `json:"-"`
	Diags       []diag        `json:"diags,omitempty"`
	Block       string        `json:"block,omitempty"`
	Labels      []string      `json:"labels,omitempty"`
	Type        *[2][3]int    `json:"type,omitempty"`
	LabelRanges [][2][3]int   `json:"labelRanges,omitempty"`
	Open        *[2][3]int    `json:"open,omitempty"`
	Close       *[2][3]int    `json:"close,omitempty"`
	Body        []interface{} `json:"body,omitempty"`
}

func pos(p hcl.Pos) [3]int { return [3]int{p.Line, p.Column, p.Byte} }

func rng(r hcl.Range) *[2][3]int { return &[2][3]int{pos(r.Start), pos(r.End)} }

func diags(ds hcl.Diagnostics) []diag {
	out := make([]diag, 0, len(ds))
	for _, d := range ds {
		sev := "error"
		if d.Severity == hcl.DiagWarning {
			sev = "warning"
		}
		x := diag{Sev: sev, Summary: d.Summary}
		if d.Subject != nil {
			x.From = pos(d.Subject.Start)
			x.To = pos(d.Subject.End)
		}
		out = append(out, x)
	}
	return out
}

// value renders a cty value; an unknown value (which a fully known context
// never produces without an error) is {"unknown": "<type>"}.
func value(v cty.Value) interface{} {
	v, _ = v.UnmarkDeep()
	if !v.IsKnown() {
		return map[string]interface{}{"unknown": v.Type().FriendlyName()}
	}
	if v.IsNull() {
		return nil
	}
	t := v.Type()
	switch {
	case t == cty.String:
		return v.AsString()
	case t == cty.Bool:
		return v.True()
	case t == cty.Number:
		f, _ := v.AsBigFloat().Float64()
		if math.IsInf(f, 0) {
			return map[string]interface{}{"big": v.AsBigFloat().Text('g', 40)}
		}
		return f
	case t.IsListType() || t.IsSetType() || t.IsTupleType():
		out := []interface{}{}
		for it := v.ElementIterator(); it.Next(); {
			_, e := it.Element()
			out = append(out, value(e))
		}
		return out
	case t.IsMapType() || t.IsObjectType():
		out := map[string]interface{}{}
		for it := v.ElementIterator(); it.Next(); {
			k, e := it.Element()
			out[k.AsString()] = value(e)
		}
		return out
	}
	return map[string]interface{}{"unsupported": t.FriendlyName()}
}

// ctyOf turns a JSON value into the cty value of its implied type (objects
// become objects, arrays tuples), as packages/hcl's plain values imply.
func ctyOf(x interface{}) (cty.Value, error) {
	switch v := x.(type) {
	case nil:
		return cty.NullVal(cty.DynamicPseudoType), nil
	case bool:
		return cty.BoolVal(v), nil
	case string:
		return cty.StringVal(v), nil
	case json.Number:
		return cty.ParseNumberVal(v.String())
	case []interface{}:
		vals := make([]cty.Value, 0, len(v))
		for _, e := range v {
			c, err := ctyOf(e)
			if err != nil {
				return cty.NilVal, err
			}
			vals = append(vals, c)
		}
		return cty.TupleVal(vals), nil
	case map[string]interface{}:
		vals := map[string]cty.Value{}
		for k, e := range v {
			c, err := ctyOf(e)
			if err != nil {
				return cty.NilVal, err
			}
			vals[k] = c
		}
		return cty.ObjectVal(vals), nil
	}
	return cty.NilVal, fmt.Errorf("unsupported JSON value %T", x)
}

func variables(raw json.RawMessage) (map[string]cty.Value, error) {
	out := map[string]cty.Value{}
	if len(raw) == 0 {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var m map[string]interface{}
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	for k, x := range m {
		v, err := ctyOf(x)
		if err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, nil
}

// The function table. Parameters are dynamic so that no argument is converted
// before a function sees it; each function checks its arguments itself, so
// both implementations report the same failures at the same arguments.
func anyArgs(impl func(args []cty.Value) (cty.Value, error)) function.Function {
	return function.New(&function.Spec{
		VarParam: &function.Parameter{Name: "args", Type: cty.DynamicPseudoType, AllowNull: true, AllowDynamicType: true},
		Type:     function.StaticReturnType(cty.DynamicPseudoType),
		Impl:     func(args []cty.Value, _ cty.Type) (cty.Value, error) { return impl(args) },
	})
}

// asciiUpper upper-cases a to z only, so that both implementations agree.
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

func isString(v cty.Value) bool { return !v.IsNull() && v.Type() == cty.String }
func isNumber(v cty.Value) bool { return !v.IsNull() && v.Type() == cty.Number }

func functions(env map[string]string) map[string]function.Function {
	return map[string]function.Function{
		"upper": anyArgs(func(args []cty.Value) (cty.Value, error) {
			if len(args) != 1 {
				return cty.NilVal, errors.New("upper takes one argument")
			}
			if !isString(args[0]) {
				return cty.NilVal, function.NewArgErrorf(0, "upper needs a string")
			}
			return cty.StringVal(asciiUpper(args[0].AsString())), nil
		}),
		"join": anyArgs(func(args []cty.Value) (cty.Value, error) {
			if len(args) != 2 {
				return cty.NilVal, errors.New("join takes two arguments")
			}
			if !isString(args[0]) {
				return cty.NilVal, function.NewArgErrorf(0, "the separator must be a string")
			}
			t := args[1].Type()
			if args[1].IsNull() || !(t.IsTupleType() || t.IsListType()) {
				return cty.NilVal, function.NewArgErrorf(1, "join needs a list of strings")
			}
			parts := []string{}
			for it := args[1].ElementIterator(); it.Next(); {
				_, e := it.Element()
				if !isString(e) {
					return cty.NilVal, function.NewArgErrorf(1, "join needs a list of strings")
				}
				parts = append(parts, e.AsString())
			}
			return cty.StringVal(strings.Join(parts, args[0].AsString())), nil
		}),
		"sum": anyArgs(func(args []cty.Value) (cty.Value, error) {
			total := new(big.Float)
			for i, a := range args {
				if !isNumber(a) {
					return cty.NilVal, function.NewArgErrorf(i, "sum adds numbers")
				}
				total.Add(total, a.AsBigFloat())
			}
			return cty.NumberVal(total), nil
		}),
		"ns::twice": anyArgs(func(args []cty.Value) (cty.Value, error) {
			if len(args) != 1 || !isNumber(args[0]) {
				return cty.NilVal, errors.New("twice takes one number")
			}
			return cty.NumberVal(new(big.Float).Mul(args[0].AsBigFloat(), big.NewFloat(2))), nil
		}),
		"env": anyArgs(func(args []cty.Value) (cty.Value, error) {
			if len(args) != 1 {
				return cty.NilVal, errors.New("env takes one argument")
			}
			if !isString(args[0]) {
				return cty.NilVal, function.NewArgErrorf(0, "env needs a variable name")
			}
			v, ok := env[args[0].AsString()]
			if !ok {
				return cty.NilVal, function.NewArgErrorf(0, "the variable is not set")
			}
			return cty.StringVal(v), nil
		}),
	}
}

func body(b *hclsyntax.Body, ctx *hcl.EvalContext) []interface{} {
	type entry struct {
		at int
		it item
	}
	var entries []entry
	for _, a := range b.Attributes {
		it := item{Attr: a.Name, Name: rng(a.NameRange), Expr: rng(a.Expr.Range())}
		v, ds := a.Expr.Value(ctx)
		if ds.HasErrors() {
			it.Diags = diags(ds)
		} else {
			it.Value = value(v)
			it.HasValue = true
		}
		entries = append(entries, entry{a.SrcRange.Start.Byte, it})
	}
	for _, bl := range b.Blocks {
		it := item{Block: bl.Type, Labels: bl.Labels, Type: rng(bl.TypeRange), Open: rng(bl.OpenBraceRange), Close: rng(bl.CloseBraceRange)}
		if it.Labels == nil {
			it.Labels = []string{}
		}
		for _, r := range bl.LabelRanges {
			it.LabelRanges = append(it.LabelRanges, *rng(r))
		}
		it.Body = body(bl.Body, ctx)
		entries = append(entries, entry{bl.TypeRange.Start.Byte, it})
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].at < entries[j].at })
	out := make([]interface{}, 0, len(entries))
	for _, e := range entries {
		out = append(out, render(e.it))
	}
	return out
}

// render keeps "value": null (a null result) apart from "no value".
func render(it item) interface{} {
	m := map[string]interface{}{}
	buf, _ := json.Marshal(it)
	_ = json.Unmarshal(buf, &m)
	if it.HasValue {
		m["value"] = it.Value
	}
	if it.Block != "" {
		m["labels"] = it.Labels
		m["body"] = it.Body
		if it.LabelRanges == nil {
			m["labelRanges"] = [][2][3]int{}
		}
	}
	return m
}

func run(in input) (map[string]interface{}, error) {
	src, err := base64.StdEncoding.DecodeString(in.Src)
	if err != nil {
		return nil, err
	}
	vars, err := variables(in.Vars)
	if err != nil {
		return nil, err
	}
	file, ds := hclsyntax.ParseConfig(src, "input.hcl", hcl.InitialPos)
	out := map[string]interface{}{"id": in.ID, "diags": diags(ds)}
	if b, ok := file.Body.(*hclsyntax.Body); ok {
		fns := functions(in.Env)
		if in.Functions != nil {
			only := map[string]function.Function{}
			for _, name := range *in.Functions {
				if f, ok := fns[name]; ok {
					only[name] = f
				}
			}
			fns = only
		}
		ctx := &hcl.EvalContext{Variables: vars, Functions: fns}
		out["body"] = body(b, ctx)
	}
	return out, nil
}

func main() {
	r := bufio.NewReaderSize(os.Stdin, 1<<20)
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var in input
			if jerr := json.Unmarshal(line, &in); jerr != nil {
				fmt.Fprintln(os.Stderr, "hclref: bad input line:", jerr)
				os.Exit(2)
			}
			out, rerr := func() (out map[string]interface{}, rerr error) {
				// A panic inside hcl/v2 is reported as such, not as a crash of the run.
				defer func() {
					if p := recover(); p != nil {
						out = map[string]interface{}{"id": in.ID, "panic": fmt.Sprint(p)}
					}
				}()
				return run(in)
			}()
			if rerr != nil {
				fmt.Fprintln(os.Stderr, "hclref:", in.ID, rerr)
				os.Exit(2)
			}
			if eerr := enc.Encode(out); eerr != nil {
				fmt.Fprintln(os.Stderr, "hclref: cannot encode result for", in.ID, eerr)
				os.Exit(2)
			}
		}
		if err != nil {
			break
		}
	}
}
