package mongostore

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/x/mongo/driver/topology"

	"github.com/hooklane/hooklane/store"
)

func TestTranslate(t *testing.T) {
	t.Parallel()
	live := context.Background()
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	network := mongo.CommandError{Code: 6, Name: "HostUnreachable", Labels: []string{"NetworkError"}}
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want error // nil: no sentinel at all
	}{
		{"NoDocuments", live, mongo.ErrNoDocuments, store.ErrNotFound},
		{"DuplicateKeyWrite", live, mongo.WriteException{WriteErrors: mongo.WriteErrors{{Code: 11000, Message: "E11000 duplicate key"}}}, store.ErrConflict},
		{"DuplicateKeyBulk", live, mongo.BulkWriteException{WriteErrors: []mongo.BulkWriteError{{WriteError: mongo.WriteError{Code: 11000}}}}, store.ErrConflict},
		{"FerretUniqueOnUpdate", live, mongo.CommandError{Code: 1, Name: "InternalError", Message: "constraint failed: UNIQUE constraint failed: index 'x' (2067)"}, store.ErrConflict},
		{"FerretBusy", live, mongo.CommandError{Code: 1, Name: "InternalError", Message: "[msg_insert.go:168 handler.(*Handler).MsgInsert] database is locked (5) (SQLITE_BUSY)"}, store.ErrUnavailable},
		{"Disconnected", live, mongo.ErrClientDisconnected, store.ErrClosed},
		{"ServerSelection", live, topology.ServerSelectionError{Wrapped: errors.New("connection refused")}, store.ErrUnavailable},
		{"Network", live, network, store.ErrUnavailable},
		{"NetworkAfterCancel", cancelled, network, context.Canceled},
		{"OtherServerError", live, mongo.CommandError{Code: 2, Name: "BadValue", Message: "bad"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := translate(tt.ctx, tt.err)
			require.Error(t, got)
			sentinels := []error{store.ErrNotFound, store.ErrConflict, store.ErrClosed, store.ErrUnavailable, context.Canceled}
			for _, s := range sentinels {
				require.Equal(t, errors.Is(tt.want, s), errors.Is(got, s), "errors.Is(%v, %v)", got, s)
			}
			if tt.want == nil {
				require.Equal(t, tt.err, got, "an unknown error is passed through")
			}
		})
	}
	require.NoError(t, translate(live, nil))
}

func TestPageLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		in, want int
	}{
		{"ZeroIsDefault", 0, pageLimitDefault},
		{"NegativeIsDefault", -3, pageLimitDefault},
		{"One", 1, 1},
		{"Max", pageLimitMax, pageLimitMax},
		{"AboveMaxClamped", pageLimitMax + 1, pageLimitMax},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, pageLimit(tt.in))
		})
	}
}

func TestValidExtName(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want bool
	}{
		{"Letters", "tenant", true},
		{"Digits", "a1b2", true},
		{"Empty", "", false},
		{"Dot", "a.b", false},
		{"Dollar", "$where", false},
		{"Upper", "Tenant", false},
		{"TooLong", string(make([]byte, 65)), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, validExtName(tt.in))
		})
	}
}
