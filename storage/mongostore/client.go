package mongostore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/tenant"
)

// Collections of clients (API.md §11) and their tokens.
const (
	collClients      = "clients"
	collClientTokens = "clientTokens"
)

// clientDoc is a client.Client as stored.
type clientDoc struct {
	ID          string            `bson:"_id"`
	Name        string            `bson:"name"`
	Description string            `bson:"description"`
	Metadata    map[string]string `bson:"metadata"`
	Status      string            `bson:"status"`
	CreatedAt   time.Time         `bson:"createdAt"`
	UpdatedAt   time.Time         `bson:"updatedAt"`
}

func toClientDoc(c *tenant.Client) *clientDoc {
	return &clientDoc{
		ID: c.ID, Name: c.Name, Description: c.Description, Metadata: c.Metadata, Status: string(c.Status),
		CreatedAt: ms(c.CreatedAt), UpdatedAt: ms(c.UpdatedAt),
	}
}

func (d *clientDoc) asDomain() *tenant.Client {
	md := d.Metadata
	if md == nil {
		md = map[string]string{}
	}
	return &tenant.Client{
		ID: d.ID, Name: d.Name, Description: d.Description, Metadata: md, Status: tenant.Status(d.Status),
		CreatedAt: utc(d.CreatedAt), UpdatedAt: utc(d.UpdatedAt),
	}
}

// tokenDoc is a client.Token as stored: the hash, never the token.
type tokenDoc struct {
	ID        string    `bson:"_id"`
	ClientID  string    `bson:"clientId"`
	Name      string    `bson:"name"`
	Role      string    `bson:"role"`
	Hash      string    `bson:"hash"`
	ExpiresAt time.Time `bson:"expiresAt"`
	CreatedAt time.Time `bson:"createdAt"`
}

func (d *tokenDoc) asDomain() *tenant.Token {
	return &tenant.Token{
		ID: d.ID, ClientID: d.ClientID, Name: d.Name, Role: d.Role, Hash: d.Hash,
		ExpiresAt: utc(d.ExpiresAt), CreatedAt: utc(d.CreatedAt),
	}
}

// prepareClients creates the token indexes (one per command, see
// createIndexes) and a client for every subscription whose clientId names
// none (subscriptions stored before clients existed), logging each.
func (s *Store) prepareClients(ctx context.Context) error {
	tokens := s.db.Collection(collClientTokens)
	for _, m := range []mongo.IndexModel{
		{Keys: asc("hash"), Options: options.Index().SetName("hash_unique").SetUnique(true)},
		{Keys: asc("clientId", "_id"), Options: options.Index().SetName("clientId")},
	} {
		if _, err := tokens.Indexes().CreateOne(ctx, m); err != nil {
			return fmt.Errorf("create indexes of %s: %w", collClientTokens, translate(ctx, err))
		}
	}
	var named []any
	if err := s.subscriptions.Distinct(ctx, "clientId", bson.D{{Key: "clientId", Value: bson.D{{Key: "$ne", Value: nil}}}}).Decode(&named); err != nil {
		return fmt.Errorf("list client ids of subscriptions: %w", translate(ctx, err))
	}
	clients := s.db.Collection(collClients)
	now := ms(s.nowFunc())
	for _, v := range named {
		id, ok := v.(string)
		if !ok {
			continue
		}
		n, err := clients.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}})
		if err != nil {
			return fmt.Errorf("find client %s: %w", id, translate(ctx, err))
		}
		if n > 0 {
			continue
		}
		_, err = clients.InsertOne(ctx, toClientDoc(tenant.MigratedClient(id, now)))
		if err != nil && !errors.Is(translate(ctx, err), store.ErrConflict) {
			return fmt.Errorf("create client %s for its subscriptions: %w", id, translate(ctx, err))
		}
		s.logger.InfoContext(ctx, "created a client for existing subscriptions", "client_id", id)
	}
	return nil
}

// ClientInsert stores a new client; store.ErrConflict when the id exists.
func (s *Store) ClientInsert(ctx context.Context, c *tenant.Client) error {
	if err := s.check(); err != nil {
		return err
	}
	if _, err := s.db.Collection(collClients).InsertOne(ctx, toClientDoc(c)); err != nil {
		return fmt.Errorf("insert client %s: %w", c.ID, translate(ctx, err))
	}
	return nil
}

// ClientGetByID returns one client.
func (s *Store) ClientGetByID(ctx context.Context, id string) (*tenant.Client, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var d clientDoc
	if err := s.db.Collection(collClients).FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
		return nil, fmt.Errorf("get client %s: %w", id, translate(ctx, err))
	}
	return d.asDomain(), nil
}

// ClientList returns one page of clients in id order.
func (s *Store) ClientList(ctx context.Context, p *tenant.ListParams) (*tenant.Page, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	filter := bson.D{}
	if p.Status != "" {
		filter = append(filter, bson.E{Key: "status", Value: string(p.Status)})
	}
	if p.Cursor != "" {
		filter = append(filter, bson.E{Key: "_id", Value: bson.D{{Key: "$gt", Value: p.Cursor}}})
	}
	limit := pageLimit(p.Limit)
	cur, err := s.db.Collection(collClients).Find(ctx, filter,
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit+1)))
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", translate(ctx, err))
	}
	var docs []clientDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list clients: %w", translate(ctx, err))
	}
	out := make([]*tenant.Client, len(docs))
	for i := range docs {
		out[i] = docs[i].asDomain()
	}
	pg := &tenant.Page{Clients: out}
	if len(out) > limit {
		pg.Clients = out[:limit]
		pg.NextCursor = out[limit-1].ID
	}
	return pg, nil
}

// ClientUpdate replaces a stored client.
func (s *Store) ClientUpdate(ctx context.Context, c *tenant.Client) error {
	if err := s.check(); err != nil {
		return err
	}
	res, err := s.db.Collection(collClients).ReplaceOne(ctx, bson.D{{Key: "_id", Value: c.ID}}, toClientDoc(c))
	if err != nil {
		return fmt.Errorf("update client %s: %w", c.ID, translate(ctx, err))
	}
	if res.MatchedCount == 0 {
		return fmt.Errorf("update client %s: %w", c.ID, store.ErrNotFound)
	}
	return nil
}

// ClientDelete removes a client, then its tokens. Without a transaction the
// client goes first: a token whose client is gone is refused anyway.
func (s *Store) ClientDelete(ctx context.Context, id string) error {
	if err := s.check(); err != nil {
		return err
	}
	res, err := s.db.Collection(collClients).DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return fmt.Errorf("delete client %s: %w", id, translate(ctx, err))
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("delete client %s: %w", id, store.ErrNotFound)
	}
	if _, err := s.db.Collection(collClientTokens).DeleteMany(ctx, bson.D{{Key: "clientId", Value: id}}); err != nil {
		return fmt.Errorf("delete tokens of client %s: %w", id, translate(ctx, err))
	}
	return nil
}

// TokenInsert stores a new token.
func (s *Store) TokenInsert(ctx context.Context, t *tenant.Token) error {
	if err := s.check(); err != nil {
		return err
	}
	d := &tokenDoc{
		ID: t.ID, ClientID: t.ClientID, Name: t.Name, Role: t.Role, Hash: t.Hash,
		ExpiresAt: ms(t.ExpiresAt), CreatedAt: ms(t.CreatedAt),
	}
	if _, err := s.db.Collection(collClientTokens).InsertOne(ctx, d); err != nil {
		return fmt.Errorf("insert token %s: %w", t.ID, translate(ctx, err))
	}
	return nil
}

// TokenGetByHash returns the token with that hash.
func (s *Store) TokenGetByHash(ctx context.Context, hash string) (*tenant.Token, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	var d tokenDoc
	if err := s.db.Collection(collClientTokens).FindOne(ctx, bson.D{{Key: "hash", Value: hash}}).Decode(&d); err != nil {
		return nil, fmt.Errorf("get token: %w", translate(ctx, err))
	}
	return d.asDomain(), nil
}

// TokenList returns the tokens of a client, oldest first.
func (s *Store) TokenList(ctx context.Context, clientID string) ([]*tenant.Token, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	cur, err := s.db.Collection(collClientTokens).Find(ctx, bson.D{{Key: "clientId", Value: clientID}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		return nil, fmt.Errorf("list tokens of client %s: %w", clientID, translate(ctx, err))
	}
	var docs []tokenDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, fmt.Errorf("list tokens of client %s: %w", clientID, translate(ctx, err))
	}
	out := make([]*tenant.Token, len(docs))
	for i := range docs {
		out[i] = docs[i].asDomain()
	}
	return out, nil
}

// TokenDelete removes a token of a client.
func (s *Store) TokenDelete(ctx context.Context, clientID, id string) error {
	if err := s.check(); err != nil {
		return err
	}
	res, err := s.db.Collection(collClientTokens).DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "clientId", Value: clientID}})
	if err != nil {
		return fmt.Errorf("delete token %s: %w", id, translate(ctx, err))
	}
	if res.DeletedCount == 0 {
		return fmt.Errorf("delete token %s: %w", id, store.ErrNotFound)
	}
	return nil
}
