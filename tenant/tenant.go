// Package tenant holds the clients of the gateway (API.md §11): the tenants
// of a platform that runs it. A client owns subscriptions, events and the
// jobs of its subscriptions; access tokens scoped to it let a customer see
// and change its own objects and nothing else. The package has the domain
// (Client, Token, validation), the Service that runs their lifecycle, the
// Scope a request carries, and the Gate that holds a suspended client's
// deliveries.
package tenant

import (
	"context"
	"regexp"
	"time"
)

// Status is a client's state.
type Status string

// Client statuses.
const (
	// StatusActive accepts events and delivers its jobs.
	StatusActive Status = "ACTIVE"
	// StatusSuspended refuses its events; its jobs wait PENDING.
	StatusSuspended Status = "SUSPENDED"
)

// Limits of a client's fields.
const (
	// NameMaxLength is the longest name.
	NameMaxLength = 200
	// DescriptionMaxLength is the longest description.
	DescriptionMaxLength = 2000
	// MetadataMaxEntries is the most metadata entries.
	MetadataMaxEntries = 50
	// MetadataValueMaxLength is the longest metadata key or value.
	MetadataValueMaxLength = 500
)

// idRe is a client id (API.md §11).
var idRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$`)

// ValidID reports whether id is a well-formed client id.
func ValidID(id string) bool { return idRe.MatchString(id) }

// Client is one tenant. Its JSON form is the API's.
type Client struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata"`
	Status      Status            `json:"status"`
	CreatedAt   time.Time         `json:"createdAt"`
	UpdatedAt   time.Time         `json:"updatedAt"`
}

// Token is an access token issued to a client. Only the SHA-256 of the
// token is stored; the token itself is shown once, when issued.
type Token struct {
	ID        string    `json:"id"`
	ClientID  string    `json:"clientId"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Hash      string    `json:"-"`
	ExpiresAt time.Time `json:"expiresAt"`
	CreatedAt time.Time `json:"createdAt"`
}

// Store is the storage port for clients and their tokens.
type Store interface {
	// ClientInsert stores a new client; store.ErrConflict when the id exists.
	ClientInsert(ctx context.Context, c *Client) error
	// ClientGetByID returns one client; store.ErrNotFound when none.
	ClientGetByID(ctx context.Context, id string) (*Client, error)
	// ClientList returns one page of clients in id order, after Cursor.
	ClientList(ctx context.Context, p *ListParams) (*Page, error)
	// ClientUpdate replaces a stored client; store.ErrNotFound when none.
	ClientUpdate(ctx context.Context, c *Client) error
	// ClientDelete removes a client and every token of it;
	// store.ErrNotFound when none.
	ClientDelete(ctx context.Context, id string) error
	// TokenInsert stores a new token.
	TokenInsert(ctx context.Context, t *Token) error
	// TokenGetByHash returns the token with that hash; store.ErrNotFound
	// when none.
	TokenGetByHash(ctx context.Context, hash string) (*Token, error)
	// TokenList returns the tokens of a client, oldest first.
	TokenList(ctx context.Context, clientID string) ([]*Token, error)
	// TokenDelete removes a token of a client; store.ErrNotFound when the
	// client has no such token.
	TokenDelete(ctx context.Context, clientID, id string) error
}

// ListParams pages ClientList.
type ListParams struct {
	// Status keeps clients of that status when set.
	Status Status
	Limit  int
	// Cursor is the id of the last client of the previous page.
	Cursor string
}

// Page is one page of clients.
type Page struct {
	Clients    []*Client
	NextCursor string
}

// MigratedClient is the client a store creates for subscriptions whose
// clientId named no client when clients were introduced: ACTIVE, named
// after its id.
func MigratedClient(id string, now time.Time) *Client {
	return &Client{
		ID: id, Name: id, Description: "created for existing subscriptions when clients were introduced",
		Metadata: map[string]string{}, Status: StatusActive, CreatedAt: now, UpdatedAt: now,
	}
}
