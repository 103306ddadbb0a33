package transform

import (
	"reflect"
	"slices"
	"strings"

	"github.com/dop251/goja"
)

// The handler's argument, on the lazy path, is a goja dynamic object too:
// making a plain object of it (eight members, the headers object, each a
// property definition) cost a tenth of a run, most of it for members a
// handler never reads. An inputObject holds its members' names in the
// argument's order and builds a member's value from the Input on its first
// read. It behaves as the plain object buildInput makes (own, writable,
// enumerable, configurable data properties, Object.prototype as
// prototype); what a dynamic object cannot do takes the lazy payload's way
// back: the run is run again on an input built whole (isDynamicInput).

// inputObject is the goja.DynamicObject of the handler's argument or of its
// headers member.
type inputObject struct {
	arg   *argInput
	props []inputProp
	// headers marks the headers member's object; else it is the argument.
	headers bool
}

// inputProp is one member of an inputObject.
type inputProp struct {
	key string
	// val is nil while the member is the input's own, not read yet.
	val goja.Value
}

// argInput is what the argument's objects of one run share.
type argInput struct {
	rt      *goja.Runtime
	in      Input
	payload goja.Value
	// headers is the headers member's object, made with the argument.
	headers *goja.Object
}

// argMemberCount is how many members the argument has at most.
const argMemberCount = 8

// argMembers are the argument's members in the order of API.md §16 (url
// left out when the input has none).
func argMembers() [argMemberCount]string {
	return [argMemberCount]string{"method", "url", "headers", "payload", "eventType", "eventId", "attempt", "cancel"}
}

// inputObjectType is an inputObject's export type.
func inputObjectType() reflect.Type { return reflect.TypeFor[*inputObject]() }

// isDynamicInput reports whether v is one of the input's dynamic objects —
// the lazy payload's, the argument, its headers — which the sandbox's
// guards send back to a run on an input built whole when the handler asks
// for what only a plain object can do.
func isDynamicInput(v goja.Value) bool {
	if isLazy(v) {
		return true
	}
	obj, ok := v.(*goja.Object)
	if !ok {
		return false
	}
	_, ok = inputObjectOf(obj)
	return ok
}

// inputObjectOf is obj's inputObject when it is one; any other object is
// not exported (a plain object's export would read every property, getters
// included).
func inputObjectOf(obj *goja.Object) (*inputObject, bool) {
	if obj.ExportType() != inputObjectType() {
		return nil, false
	}
	o, ok := obj.Export().(*inputObject)
	return o, ok
}

// argBlock is what newArgument makes, in one allocation.
type argBlock struct {
	arg          argInput
	obj, headers inputObject
	props        [argMemberCount + 2]inputProp
	headerProps  [4]inputProp
}

// newArgument makes the handler's argument over in, with payload as its
// payload member.
func newArgument(rt *goja.Runtime, in Input, payload goja.Value) *goja.Object {
	b := &argBlock{arg: argInput{rt: rt, in: in, payload: payload}}
	a := &b.arg
	h := &b.headers
	*h = inputObject{arg: a, headers: true, props: b.headerProps[:0]}
	for k := range in.Headers {
		h.props = append(h.props, inputProp{key: k})
	}
	if len(h.props) > 1 {
		slices.SortFunc(h.props, func(x, y inputProp) int { return strings.Compare(x.key, y.key) })
	}
	a.headers = rt.NewDynamicObject(h)
	o := &b.obj
	*o = inputObject{arg: a, props: b.props[:0]}
	for _, k := range argMembers() {
		if k == "url" && in.URL == "" {
			continue
		}
		o.props = append(o.props, inputProp{key: k})
	}
	return rt.NewDynamicObject(o)
}

// build is the input's value of member key.
func (o *inputObject) build(key string) goja.Value { //nolint:ireturn // goja values are an interface
	a := o.arg
	if o.headers {
		return a.rt.ToValue(a.in.Headers[key])
	}
	switch key {
	case "method":
		return a.rt.ToValue(a.in.Method)
	case "url":
		return a.rt.ToValue(a.in.URL)
	case "headers":
		return a.headers
	case "payload":
		return a.payload
	case "eventType":
		return a.rt.ToValue(a.in.EventType)
	case "eventId":
		return a.rt.ToValue(a.in.EventID)
	case "attempt":
		return a.rt.ToValue(a.in.Attempt)
	case "cancel":
		return a.rt.ToValue(a.in.Cancel)
	}
	return goja.Undefined()
}

func (o *inputObject) find(key string) int {
	for i := range o.props {
		if o.props[i].key == key {
			return i
		}
	}
	return -1
}

// Get builds the member's value on its first read.
func (o *inputObject) Get(key string) goja.Value { //nolint:ireturn // goja values are an interface
	i := o.find(key)
	if i < 0 {
		return nil
	}
	if o.props[i].val == nil {
		o.props[i].val = o.build(key)
	}
	return o.props[i].val
}

// Set sets or adds the member.
func (o *inputObject) Set(key string, val goja.Value) bool {
	if val == nil {
		val = goja.Undefined() // nil is a member not read yet
	}
	if i := o.find(key); i >= 0 {
		o.props[i].val = val
		return true
	}
	o.props = append(o.props, inputProp{key: key, val: val})
	return true
}

// Has reports whether the member is the object's own.
func (o *inputObject) Has(key string) bool { return o.find(key) >= 0 }

// Delete removes the member.
func (o *inputObject) Delete(key string) bool {
	if i := o.find(key); i >= 0 {
		o.props = slices.Delete(o.props, i, i+1)
	}
	return true
}

// Keys lists the members in a plain object's order.
func (o *inputObject) Keys() []string {
	return orderedKeys(len(o.props), func(i int) string { return o.props[i].key })
}
