package api

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/hooklane/hooklane/event/cloudevent"
	"github.com/hooklane/hooklane/router/transformrun"
	"github.com/hooklane/hooklane/subscription/transform"
)

// transformTestRequest is the body of POST
// /api/subscriptions/{id}/transformation/test (API.md §16).
type transformTestRequest struct {
	Event json.RawMessage `json:"event"`
	Code  *string         `json:"code"`
}

// transformTestResult is what a successful run would send.
type transformTestResult struct {
	Method  string            `json:"method"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
	Payload json.RawMessage   `json:"payload"`
	Cancel  bool              `json:"cancel"`
}

// transformTestAnswer is the endpoint's 200 answer: the result, or the
// error with its position.
type transformTestAnswer struct {
	OK     bool                 `json:"ok"`
	Result *transformTestResult `json:"result,omitempty"`
	Error  string               `json:"error,omitempty"`
	Line   *int                 `json:"line,omitempty"`
	Column *int                 `json:"column,omitempty"`
}

// failedAnswer is an answer for a failed compile or run.
func failedAnswer(msg string, line, column int) transformTestAnswer {
	return transformTestAnswer{Error: msg, Line: &line, Column: &column}
}

// testTransformation runs a subscription's transformation (or the code of
// the request) on an event, as a delivery's first attempt would, and says
// what would be sent. It sends nothing and stores nothing.
func (s *Server) testTransformation(c *gin.Context) error {
	sub, err := s.subscriptions.Get(c.Request.Context(), c.Param("id"))
	if err != nil {
		return s.notFoundOr(err, "subscription")
	}
	var in transformTestRequest
	if err := decodeJSON(c.Request, &in, adminBodyLimit); err != nil {
		return err
	}
	ev, payload, perr := testEventPayload(in.Event, sub.DataOnly)
	if perr != nil {
		return perr
	}
	var src string
	switch {
	case in.Code != nil:
		src = *in.Code
	case sub.Transformation != nil:
		src = sub.Transformation.Code
	default:
		return unprocessable("the subscription has no transformation: send the code to test",
			FieldError{Pointer: "/code", Message: "is required when the subscription has no transformation"})
	}
	prog, err := transform.Compile(src)
	if err != nil {
		if ce, ok := errors.AsType[*transform.CompileError](err); ok {
			c.JSON(http.StatusOK, failedAnswer(ce.Message, ce.Line, ce.Column))
			return nil
		}
		return fmt.Errorf("compile transformation: %w", err)
	}
	headers := make(map[string]string, len(sub.Headers))
	for k, v := range sub.Headers {
		headers[strings.ToLower(k)] = v
	}
	// The delivery's request: a destination's handler gets no url (API.md
	// §15, §16).
	req := transformrun.Request{URL: sub.Target, Credentialed: sub.Auth != nil || sub.TLS != nil}
	if sub.HasDestination() {
		req.URL = ""
	}
	out, err := s.cfg.Transform.Run(c.Request.Context(), prog, transform.Input{
		Method: http.MethodPost, URL: req.URL, Headers: headers, Payload: payload,
		EventType: ev.Type, EventID: ev.ID, Attempt: 1,
	})
	if err != nil {
		if re, ok := errors.AsType[*transform.RunError](err); ok {
			c.JSON(http.StatusOK, failedAnswer(re.Error(), re.Line, re.Column))
			return nil
		}
		return fmt.Errorf("run transformation: %w", err)
	}
	// The checks every delivery makes of the result (a destination's method
	// and url, a credentialed target's host): what fails at delivery fails
	// here, with the delivery's error.
	if !out.Cancel {
		if err := transformrun.Check(&out, req); err != nil {
			if te, ok := errors.AsType[*transformrun.Error](err); ok {
				c.JSON(http.StatusOK, failedAnswer(te.Error(), te.Line, te.Column))
				return nil
			}
			return fmt.Errorf("check transformation result: %w", err)
		}
	}
	if out.Headers == nil {
		out.Headers = map[string]string{}
	}
	c.JSON(http.StatusOK, transformTestAnswer{OK: true, Result: &transformTestResult{
		Method: out.Method, URL: out.URL, Headers: out.Headers, Payload: out.Payload, Cancel: out.Cancel,
	}})
	return nil
}

// testEventPayload checks the request's event and returns it with the
// payload a delivery of it would carry: the structured CloudEvent, or its
// data alone with dataOnly (null when it has none).
func testEventPayload(raw json.RawMessage, dataOnly bool) (*cloudevent.Event, json.RawMessage, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, unprocessable("the event is required", FieldError{Pointer: "/event", Message: "is required"})
	}
	var ev cloudevent.Event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, nil, eventProblem(err)
	}
	if err := ev.Validate(); err != nil {
		return nil, nil, eventProblem(err)
	}
	if dataOnly {
		if ev.Data == nil {
			return &ev, json.RawMessage("null"), nil
		}
		return &ev, ev.Data, nil
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, nil, fmt.Errorf("encode event: %w", err)
	}
	return &ev, b, nil
}

// eventProblem is the 422 of a malformed event, at the attribute's pointer
// when the error names one.
func eventProblem(err error) error {
	ptr := "/event"
	if ae, ok := errors.AsType[*cloudevent.AttributeError](err); ok {
		ptr += "/" + ae.Name
	}
	return unprocessable("the event is not a valid CloudEvent", FieldError{Pointer: ptr, Message: err.Error()})
}
