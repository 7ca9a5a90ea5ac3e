package args

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Arg is an argument type with a format of its own, such as a depot path:
// DecodeArg reads field of o into the value the method is called on,
// recording every problem in o, and is told whether the input schema
// requires the argument. Fill calls it for a struct field whose address
// implements it.
type Arg interface {
	DecodeArg(o *Object, field string, required bool)
}

// Parser is a string argument with a format, such as a glob pattern:
// ParseArg sets the value it is called on from s, or returns what is
// wrong with s. Fill calls it for a struct field, or each element of a
// slice field, whose address implements it.
type Parser interface {
	ParseArg(s string) error
}

var (
	argType    = reflect.TypeFor[Arg]()
	parserType = reflect.TypeFor[Parser]()
)

// Fill decodes raw, a call's arguments, into the struct dst points to, as
// the tool's input schema (given to probs by Problems.Check) declares them,
// then lets each of more read what the struct does not say (arguments that
// depend on each other, a message of the tool's own), and reports every
// argument nobody read (Finish). It returns the problems recorded
// (Problems.Err).
//
// Each exported field named by a json tag is one argument, read in the
// order the struct declares them: a string (one of the schema's enum, when
// it has one), a bool, an integer (int, int64 or uint64, within the
// schema's minimum and maximum, a string of digits too; see Int), a
// pointer to one of these (nil when the argument is absent), a slice of
// strings, a type implementing Arg or Parser (or a slice of Parser), or a
// string tagged `args:"path"`, a depot path (see Object.DepotPath). An
// embedded struct's fields are read in its place.
// The schema says which arguments are required; an absent one keeps the
// schema's default, or, where the schema states none, the value the field
// held before the call (the zero value, or one the tool set from its
// configuration).
func Fill(raw json.RawMessage, probs *Problems, dst any, more ...func(o *Object)) error {
	if probs.schema == nil {
		panic("args: Fill without an input schema (Problems.Check)")
	}
	return Parse(raw, probs, func(o *Object) {
		o.Fill(dst)
		for _, f := range more {
			f(o)
		}
	})
}

// Fill reads the fields of the struct dst points to from o, as the
// function Fill describes.
func (o *Object) Fill(dst any) { o.fillStruct(reflect.ValueOf(dst).Elem()) }

// fillStruct reads the fields of the struct v.
func (o *Object) fillStruct(v reflect.Value) {
	t := v.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			o.fillStruct(v.Field(i))
			continue
		}
		name := jsonName(f)
		if name == "" {
			continue
		}
		if f.Tag.Get("args") == "path" {
			p, _ := o.DepotPath(name, o.probs.schema.requires(o.prefix, name))
			v.Field(i).SetString(p)
			continue
		}
		o.fill(name, v.Field(i))
	}
}

// jsonName returns the argument a struct field holds: its json tag's name,
// "" for a field that holds none.
func jsonName(f reflect.StructField) string {
	tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if tag == "-" || !f.IsExported() {
		return ""
	}
	return tag
}

// fill reads field into v, a settable field of the struct being filled.
func (o *Object) fill(field string, v reflect.Value) {
	p := o.declared(field, "")
	required := o.probs.schema.requires(o.prefix, field)
	if p.Default != nil && v.Kind() != reflect.Pointer {
		o.setDefault(field, v, p.Default)
	}
	if v.Addr().Type().Implements(argType) {
		v.Addr().Interface().(Arg).DecodeArg(o, field, required)
		return
	}
	if v.Addr().Type().Implements(parserType) {
		if s, ok := o.Str(field, required); ok {
			if err := v.Addr().Interface().(Parser).ParseArg(s); err != nil {
				o.probs.Add(o.Name(field), err)
			}
		}
		return
	}
	if v.Kind() == reflect.Pointer {
		elem := reflect.New(v.Type().Elem())
		if o.scalar(field, elem.Elem(), required, p) {
			v.Set(elem)
		}
		return
	}
	if v.Kind() == reflect.Slice {
		o.slice(field, v, required)
		return
	}
	o.scalar(field, v, required, p)
}

// setDefault sets v to the schema's default def for field. A default
// that does not fit the field is a build defect, so it panics; the tests
// call every tool.
func (o *Object) setDefault(field string, v reflect.Value, def json.RawMessage) {
	var err error
	if parser, ok := v.Addr().Interface().(Parser); ok {
		var s string
		if err = json.Unmarshal(def, &s); err == nil {
			err = parser.ParseArg(s)
		}
	} else if _, ok := v.Addr().Interface().(Arg); !ok {
		err = json.Unmarshal(def, v.Addr().Interface())
	}
	if err != nil {
		panic(fmt.Sprintf("args: %s: the schema's default %s does not fit %s: %v", o.Name(field), def, v.Type(), err))
	}
}

// scalar reads a string, bool or integer field into v, and reports whether
// the call sent a value that was set.
func (o *Object) scalar(field string, v reflect.Value, required bool, p *node) bool {
	switch v.Kind() {
	case reflect.String:
		if len(p.Enum) > 0 {
			if !o.Has(field) {
				if required {
					o.probs.Addf(o.Name(field), "required string argument is missing")
				}
				return false
			}
			v.SetString(o.Choice(field, v.String()))
			return true
		}
		s, ok := o.Str(field, required)
		if ok {
			v.SetString(s)
		}
		return ok
	case reflect.Bool:
		sent := o.Has(field)
		v.SetBool(o.Bool(field, v.Bool()))
		return sent
	case reflect.Int, reflect.Int64:
		n, ok := o.Int(field, required)
		if ok {
			v.SetInt(n)
		}
		return ok
	case reflect.Uint64:
		n, ok := o.Int(field, required)
		if ok && n < 0 { // the schema should say minimum 0; refused all the same
			o.probs.Addf(o.Name(field), "%d is below the minimum 0", n)
			return false
		}
		if ok {
			v.SetUint(uint64(n))
		}
		return ok
	}
	panic(fmt.Sprintf("args: %s: Fill cannot read a %s", o.Name(field), v.Type()))
}

// slice reads an array field of strings, or of a Parser, into v; an
// absent optional array leaves v nil.
func (o *Object) slice(field string, v reflect.Value, required bool) {
	elems, ok := o.Array(field, required)
	if !ok {
		return
	}
	et := v.Type().Elem()
	parse := reflect.PointerTo(et).Implements(parserType)
	if et.Kind() != reflect.String && !parse {
		panic(fmt.Sprintf("args: %s: Fill cannot read a %s", o.Name(field), v.Type()))
	}
	out := reflect.MakeSlice(v.Type(), 0, len(elems))
	for i, el := range elems {
		name := fmt.Sprintf("%s[%d]", o.Name(field), i)
		if got := JSONType(el); got != "string" {
			o.probs.Addf(name, "expected a string, got %s", got)
			continue
		}
		s, err := DecodeString(el)
		e := reflect.New(et)
		if err == nil && parse {
			err = e.Interface().(Parser).ParseArg(s)
		} else if err == nil {
			e.Elem().SetString(s)
		}
		if err != nil {
			o.probs.Add(name, err)
			continue
		}
		out = reflect.Append(out, e.Elem())
	}
	v.Set(out)
}

// requires reports whether the object at prefix requires field.
func (s *Schema) requires(prefix, field string) bool {
	obj := s.object(prefix)
	return obj != nil && slices.Contains(obj.Required, field)
}
