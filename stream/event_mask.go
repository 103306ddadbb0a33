package stream

import (
	"strings"

	"github.com/hooklane/hooklane/destination/endpoint"
)

// Masked returns e with the URLs in its error message and its reason (a
// circuit's reason names the last failure) masked by
// endpoint.MaskTargetsInText, or e itself when they hold none. Status
// events go to every stream client and into every job's history, so they
// leave the store masked for every role.
func (e *Event) Masked() *Event {
	if !strings.Contains(e.Data.Error, "://") && !strings.Contains(e.Data.Reason, "://") {
		return e
	}
	out := *e
	out.Data.Error = endpoint.MaskTargetsInText(e.Data.Error)
	out.Data.Reason = endpoint.MaskTargetsInText(e.Data.Reason)
	return &out
}
