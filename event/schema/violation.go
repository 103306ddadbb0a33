package schema

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/hooklane/hooklane/event/cloudevent"
)

// validateData validates ev's data against sch and returns a *Rejection
// with one violation per problem, located in the event's structured form.
func validateData(sch *jsonschema.Schema, ev *cloudevent.Event) error {
	if ev.Data == nil && ev.DataBase64 != nil {
		return &Rejection{
			Detail:     "the event's data is binary but its type has a JSON Schema",
			Violations: []Violation{{Pointer: "/data_base64", Message: "data must be JSON for this event type"}},
		}
	}
	var inst any
	if ev.Data != nil {
		var err error
		inst, err = jsonschema.UnmarshalJSON(bytes.NewReader(ev.Data))
		if err != nil {
			return &Rejection{Detail: "the event's data is not valid JSON", Violations: []Violation{{Pointer: "/data", Message: err.Error()}}}
		}
	}
	return ValidateInstance(sch, inst)
}

// ValidateInstance validates data, decoded by jsonschema.UnmarshalJSON,
// against sch, and returns nil or a *Rejection with one violation per
// problem below /data. Numbers past MaxNumberDigits or MaxNumberExponent
// are refused before the validator sees them (it would spend tens of
// milliseconds on each, or panic), and a panic of the validator is a
// *Rejection whose Err says what happened: bad data never crashes the
// caller, nor answers 500.
func ValidateInstance(sch *jsonschema.Schema, inst any) (err error) {
	if vs := numberViolations(inst, "/data"); len(vs) > 0 {
		return &Rejection{Detail: "the data holds numbers too large or too precise to validate", Violations: vs}
	}
	defer func() {
		if r := recover(); r != nil {
			err = &Rejection{
				Detail:     "the data could not be validated against the schema",
				Violations: []Violation{{Pointer: "/data", Message: "the schema validator failed on this value"}},
				Err:        fmt.Errorf("schema validator panic: %v", r),
			}
		}
	}()
	verr := sch.Validate(inst)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(verr, &ve) {
		return &Rejection{
			Detail:     "the data could not be validated against the schema",
			Violations: []Violation{{Pointer: "/data", Message: verr.Error()}},
			Err:        fmt.Errorf("validate data: %w", verr),
		}
	}
	return &Rejection{Detail: "the event's data does not match the schema of its type", Violations: Violations(ve)}
}

// maxViolations bounds the violations listed for one value: a megabyte of
// wrongly typed items needs no megabyte of answer. Past it, one last entry
// says how many more there are.
const maxViolations = 100

// Violations flattens a validation error into one violation per problem,
// pointing below /data: a missing required property gives one entry per
// property at the object that lacks it; an additional property that is not
// allowed gives one entry at that property. They are ordered by pointer,
// then message, without duplicates; past 100 of them, a last entry at /data
// counts the rest.
func Violations(ve *jsonschema.ValidationError) []Violation {
	p := message.NewPrinter(language.English)
	var out []Violation
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			for _, name := range k.Missing {
				out = append(out, Violation{Pointer: DataPointer(e.InstanceLocation), Message: fmt.Sprintf("missing required property '%s'", name)})
			}
		case *kind.AdditionalProperties:
			for _, name := range k.Properties {
				loc := append(slices.Clip(e.InstanceLocation), name)
				out = append(out, Violation{Pointer: DataPointer(loc), Message: fmt.Sprintf("property '%s' is not allowed (additionalProperties is false)", name)})
			}
		default:
			out = append(out, Violation{Pointer: DataPointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(p)})
		}
	}
	walk(ve)
	slices.SortFunc(out, func(a, b Violation) int {
		if c := strings.Compare(a.Pointer, b.Pointer); c != 0 {
			return c
		}
		return strings.Compare(a.Message, b.Message)
	})
	out = slices.Compact(out)
	if n := len(out); n > maxViolations {
		out = append(out[:maxViolations], Violation{Pointer: "/data", Message: fmt.Sprintf("and %d more violations, not listed", n-maxViolations)})
	}
	return out
}

// DataPointer returns the JSON pointer of an instance location below /data.
func DataPointer(loc []string) string { return Pointer("/data", loc) }

// Pointer returns prefix followed by the RFC 6901 pointer of loc.
func Pointer(prefix string, loc []string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1"))
	}
	return b.String()
}
