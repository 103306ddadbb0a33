package schema

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// CompileError is a schema that does not compile. Pointer locates the
// problem inside the schema document ("" for the whole document, e.g.
// "/properties/amount/type") when the compiler says where it is.
type CompileError struct {
	Pointer string
	Message string
	// Err is the compiler's error.
	Err error
}

func (e *CompileError) Error() string {
	if e.Pointer == "" {
		return e.Message
	}
	return e.Pointer + ": " + e.Message
}

func (e *CompileError) Unwrap() error { return e.Err }

// refusingLoader loads no URL: a schema is self-contained, so a $ref or
// $schema naming anything but the standard metaschemas (which the compiler
// knows without loading) fails instead of reading local files or the
// network.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("%s: schemas must be self-contained; external references are not loaded", url)
}

// Compile compiles a JSON Schema with format assertions on: draft 2020-12
// by default, or the draft its $schema names (draft-07, 2019-09, -06 and
// -04 are known). A schema that does not compile is a *CompileError, and so
// is one the validator could not use safely:
//   - a number past MaxNumberDigits or MaxNumberExponent (the validator
//     would spend tens of milliseconds on it per event, or ignore it);
//   - a loop of keywords that apply the schema to the same value again
//     ({"$ref": "#"}, definitions referring to each other without a
//     "properties" or "items" between): it would reject every event.
//     Recursion that descends into the value, such as a tree whose
//     "children" items refer back to the root, is allowed.
//
// A panic of the compiler is a *CompileError too.
func Compile(code, version string, raw []byte) (sch *jsonschema.Schema, err error) {
	defer func() {
		if r := recover(); r != nil {
			sch, err = nil, &CompileError{Message: fmt.Sprintf("the schema compiler failed on this schema: %v", r), Err: fmt.Errorf("compiler panic: %v", r)}
		}
	}()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, &CompileError{Message: "is not valid JSON: " + err.Error(), Err: err}
	}
	if vs := numberViolations(doc, ""); len(vs) > 0 {
		return nil, &CompileError{Pointer: vs[0].Pointer, Message: vs[0].Message, Err: errors.New(vs[0].Message)}
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	c.UseLoader(refusingLoader{})
	url := "mem:///" + code + "/" + version + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, &CompileError{Message: err.Error(), Err: err}
	}
	sch, err = c.Compile(url)
	if err != nil {
		return nil, compileError(err)
	}
	if ptr, path, found := refCycle(sch, url); found {
		msg := "refers to itself without end (" + path + "): each step of a recursion must descend into a property or an item"
		return nil, &CompileError{Pointer: ptr, Message: msg, Err: errors.New(msg)}
	}
	return sch, nil
}

// compileError locates a compiler error: a schema that breaks its
// metaschema points at the deepest failing keyword.
func compileError(err error) *CompileError {
	var sve *jsonschema.SchemaValidationError
	var ve *jsonschema.ValidationError
	if !errors.As(err, &sve) || !errors.As(sve.Err, &ve) {
		return &CompileError{Message: err.Error(), Err: err}
	}
	leaf := deepestLeaf(ve)
	p := message.NewPrinter(language.English)
	return &CompileError{
		Pointer: Pointer("", leaf.InstanceLocation),
		Message: leaf.ErrorKind.LocalizedString(p),
		Err:     err,
	}
}

// deepestLeaf returns the first of the deepest-located leaves of e.
func deepestLeaf(e *jsonschema.ValidationError) *jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return e
	}
	var best *jsonschema.ValidationError
	for _, c := range e.Causes {
		l := deepestLeaf(c)
		if best == nil || len(l.InstanceLocation) > len(best.InstanceLocation) {
			best = l
		}
	}
	return best
}
