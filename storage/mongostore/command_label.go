package mongostore

import "context"

// commandTag marks, in an operation's context, the commands a MongoDB
// server would not be sent (see Config.OnCommandFunc); the command
// monitor reads it.
type commandTag struct{}

// Tags of commandTag.
const (
	// tagGuard: a write guard's command (see replaceVersioned).
	tagGuard = "guard"
	// tagFerretDB: a per-document write on FerretDB where MongoDB takes
	// one command for all the documents.
	tagFerretDB = "ferretdb"
	// tagRelay: the status relay's (see statusRelay), which MongoDB is
	// sent too: named apart to be seen, not subtracted.
	tagRelay = "relay"
)

// withCommandTag returns ctx with its commands tagged tag.
func withCommandTag(ctx context.Context, tag string) context.Context {
	return context.WithValue(ctx, commandTag{}, tag)
}

// commandLabel is the name a command is counted under: its own, prefixed
// with its context's tag ("guard:insert").
func commandLabel(ctx context.Context, name string) string {
	if ctx == nil {
		return name
	}
	if tag, ok := ctx.Value(commandTag{}).(string); ok {
		return tag + ":" + name
	}
	return name
}
