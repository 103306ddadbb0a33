package destination

import "errors"

// PublishError is a failed publish as [Clients.Publish] returns it: a
// failed delivery attempt whose error is Error(). Its text is what the
// broker (or the way to it) answered, with every secret of the
// destination replaced by "***", and it keeps no wrapped error that could
// print one.
type PublishError struct {
	// Type is the destination type.
	Type string
	// Text says what went wrong.
	Text string
	// Permanent says no retry can fix it (the type marked it with
	// [Permanent]). Every other failure is retryable (§15: the broker
	// unreachable, refusing the credentials, without the queue, topic,
	// exchange or stream).
	Permanent bool
	// Timeout says the publish or the connection ran out of time.
	Timeout bool
}

// Error returns the type and the text.
func (e *PublishError) Error() string { return e.Type + ": " + e.Text }

// Permanent marks err as a failure no retry can fix (a message larger
// than the broker ever accepts). A [Publisher] returns it; [Clients]
// turns it into a PublishError with Permanent set.
func Permanent(err error) error { return &permanentError{err: err} }

type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// IsPermanent reports whether err, or an error it wraps, was marked with
// [Permanent], or is a *PublishError with Permanent set.
func IsPermanent(err error) bool {
	if pe, ok := errors.AsType[*PublishError](err); ok {
		return pe.Permanent
	}
	_, ok := errors.AsType[*permanentError](err)
	return ok
}

// ErrClosed is returned by [Clients.Publish] after [Clients.Close].
var ErrClosed = errors.New("destination clients closed")
