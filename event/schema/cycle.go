package schema

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// A schema may be recursive: a tree whose nodes hold an optional list of
// children refers to itself through "properties" and "items", and each
// step of that recursion moves to a smaller part of the value, so
// validation ends. What must not happen is a loop of keywords that apply a
// schema to the same value again — $ref, $dynamicRef, $recursiveRef,
// allOf, anyOf, oneOf, not, if/then/else, dependentSchemas (and draft-07
// dependencies with a schema) — such as {"$ref": "#"}, or two definitions
// that refer to each other with no keyword between that descends into a
// property or an item. JSON Schema leaves the behaviour of such a schema
// undefined; the validator stops at the loop and rejects the value, so the
// schema would reject every event that reaches it.

// schemaEdge is a subschema and the keyword path that leads to it.
type schemaEdge struct {
	keyword string
	to      *jsonschema.Schema
}

// inPlace returns the subschemas s applies to the same instance location.
func inPlace(s *jsonschema.Schema) []schemaEdge {
	var out []schemaEdge
	add := func(kw string, to *jsonschema.Schema) {
		if to != nil {
			out = append(out, schemaEdge{kw, to})
		}
	}
	add("$ref", s.Ref)
	add("$recursiveRef", s.RecursiveRef)
	if s.DynamicRef != nil {
		add("$dynamicRef", s.DynamicRef.Ref)
	}
	add("not", s.Not)
	add("if", s.If)
	add("then", s.Then)
	add("else", s.Else)
	list := func(kw string, l []*jsonschema.Schema) {
		for i, to := range l {
			add(kw+"/"+strconv.Itoa(i), to)
		}
	}
	list("allOf", s.AllOf)
	list("anyOf", s.AnyOf)
	list("oneOf", s.OneOf)
	for _, k := range slices.Sorted(maps.Keys(s.DependentSchemas)) {
		add("dependentSchemas/"+escapeToken(k), s.DependentSchemas[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.Dependencies)) {
		if to, ok := s.Dependencies[k].(*jsonschema.Schema); ok {
			add("dependencies/"+escapeToken(k), to)
		}
	}
	return out
}

// descending returns the subschemas s applies to parts of the instance
// (properties, items, …), which end every recursion through them.
func descending(s *jsonschema.Schema) []*jsonschema.Schema {
	var out []*jsonschema.Schema
	add := func(to ...*jsonschema.Schema) {
		for _, t := range to {
			if t != nil {
				out = append(out, t)
			}
		}
	}
	anySchema := func(v any) {
		switch x := v.(type) {
		case *jsonschema.Schema:
			add(x)
		case []*jsonschema.Schema:
			add(x...)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Properties)) {
		add(s.Properties[k])
	}
	for _, to := range s.PatternProperties {
		add(to)
	}
	anySchema(s.AdditionalProperties)
	anySchema(s.Items)
	anySchema(s.AdditionalItems)
	add(s.PrefixItems...)
	add(s.PropertyNames, s.Items2020, s.Contains, s.UnevaluatedItems, s.UnevaluatedProperties, s.ContentSchema)
	return out
}

// refCycle looks for a loop of in-place keywords among the schemas
// reachable from root (the compiled document at docURL). When it finds
// one it returns the JSON pointer, inside the document, of the keyword
// that closes the loop, and the loop as a readable path.
func refCycle(root *jsonschema.Schema, docURL string) (pointer, path string, found bool) {
	// Every reachable schema, through both kinds of keywords.
	seen := map[*jsonschema.Schema]bool{root: true}
	order := []*jsonschema.Schema{root}
	for i := 0; i < len(order); i++ {
		s := order[i]
		next := descending(s)
		for _, e := range inPlace(s) {
			next = append(next, e.to)
		}
		for _, t := range next {
			if !seen[t] {
				seen[t] = true
				order = append(order, t)
			}
		}
	}
	// A depth-first search over the in-place keywords alone: an edge back
	// to a schema still on the stack closes a loop.
	const (
		white = iota
		grey
		black
	)
	color := make(map[*jsonschema.Schema]int, len(order))
	var stack []*jsonschema.Schema
	var visit func(s *jsonschema.Schema) bool
	visit = func(s *jsonschema.Schema) bool {
		color[s] = grey
		stack = append(stack, s)
		for _, e := range inPlace(s) {
			switch color[e.to] {
			case grey:
				loop := stack[slices.Index(stack, e.to):]
				parts := make([]string, 0, len(loop)+1)
				for _, l := range loop {
					parts = append(parts, displayLocation(l, docURL))
				}
				parts = append(parts, displayLocation(e.to, docURL))
				pointer = location(s, docURL) + "/" + e.keyword
				path = strings.Join(parts, " → ")
				return true
			case white:
				if visit(e.to) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[s] = black
		return false
	}
	for _, s := range order {
		if color[s] == white && visit(s) {
			return pointer, path, true
		}
	}
	return "", "", false
}

// location returns the JSON pointer of s inside the document at docURL, ""
// for the root or for a schema the pointer cannot name (one in an embedded
// resource with its own $id).
func location(s *jsonschema.Schema, docURL string) string {
	frag, ok := strings.CutPrefix(s.Location, docURL+"#")
	if !ok {
		return ""
	}
	if p, err := url.PathUnescape(frag); err == nil {
		return p
	}
	return frag
}

// displayLocation names s for a message: its pointer, "#" for the root,
// or its full location when it lies in an embedded resource.
func displayLocation(s *jsonschema.Schema, docURL string) string {
	if !strings.HasPrefix(s.Location, docURL+"#") {
		return s.Location
	}
	return "#" + location(s, docURL)
}

// escapeToken escapes one JSON pointer reference token (RFC 6901).
func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
