package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/hooklane/hooklane/tenant"
)

// clientDocument is the stored form of a client.
type clientDocument tenant.Client

func encodeClient(c *tenant.Client) ([]byte, error) {
	cc := *c
	cc.CreatedAt, cc.UpdatedAt = msUTC(cc.CreatedAt), msUTC(cc.UpdatedAt)
	b, err := json.Marshal((*clientDocument)(&cc))
	if err != nil {
		return nil, fmt.Errorf("encode client %s: %w", c.ID, err)
	}
	return b, nil
}

func scanClient(r rowScanner) (*tenant.Client, error) {
	var doc []byte
	if err := r.Scan(&doc); err != nil {
		return nil, err
	}
	c := &tenant.Client{}
	if err := json.Unmarshal(doc, (*clientDocument)(c)); err != nil {
		return nil, fmt.Errorf("decode client: %w", err)
	}
	if c.Metadata == nil {
		c.Metadata = map[string]string{}
	}
	return c, nil
}

// ClientInsert stores a new client; store.ErrConflict when the id exists.
func (s *Store) ClientInsert(ctx context.Context, c *tenant.Client) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	doc, err := encodeClient(c)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO clients (id, status, doc) VALUES (?, ?, ?)`, c.ID, string(c.Status), doc)
		return err
	})
	if err != nil {
		return fmt.Errorf("insert client %s: %w", c.ID, s.translate(err))
	}
	return nil
}

// ClientGetByID returns one client.
func (s *Store) ClientGetByID(ctx context.Context, id string) (*tenant.Client, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	c, err := scanClient(s.queryRow(ctx, `SELECT doc FROM clients WHERE id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("get client %s: %w", id, s.translate(err))
	}
	return c, nil
}

// ClientList returns one page of clients in id order.
func (s *Store) ClientList(ctx context.Context, p *tenant.ListParams) (*tenant.Page, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var w where
	if p.Status != "" {
		w.add("status = ?", string(p.Status))
	}
	if p.Cursor != "" {
		w.add("id > ?", p.Cursor)
	}
	limit := pageLimit(p.Limit)
	rows, err := s.rdb.QueryContext(ctx, `SELECT doc FROM clients`+w.sql()+` ORDER BY id LIMIT ?`, append(w.args, limit+1)...) //nolint:gosec // the conditions are constant text; the values are bound
	if err != nil {
		return nil, fmt.Errorf("list clients: %w", s.translate(err))
	}
	defer rows.Close()
	var out []*tenant.Client
	for rows.Next() {
		c, err := scanClient(rows)
		if err != nil {
			return nil, fmt.Errorf("list clients: %w", s.translate(err))
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list clients: %w", s.translate(err))
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
	if err := s.checkOpen(); err != nil {
		return err
	}
	doc, err := encodeClient(c)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		return execOne(ctx, tx, `UPDATE clients SET status = ?, doc = ? WHERE id = ?`, string(c.Status), doc, c.ID)
	})
	if err != nil {
		return fmt.Errorf("update client %s: %w", c.ID, s.translate(err))
	}
	return nil
}

// ClientDelete removes a client and its tokens, in one transaction.
func (s *Store) ClientDelete(ctx context.Context, id string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if err := execOne(ctx, tx, `DELETE FROM clients WHERE id = ?`, id); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `DELETE FROM client_tokens WHERE client_id = ?`, id)
		return err
	})
	if err != nil {
		return fmt.Errorf("delete client %s: %w", id, s.translate(err))
	}
	return nil
}

// tokenDocument is the stored form of a token, hash included.
type tokenDocument struct {
	tenant.Token
	Hash string `json:"hash"`
}

func scanToken(r rowScanner) (*tenant.Token, error) {
	var doc []byte
	if err := r.Scan(&doc); err != nil {
		return nil, err
	}
	var d tokenDocument
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("decode token: %w", err)
	}
	t := d.Token
	t.Hash = d.Hash
	return &t, nil
}

// TokenInsert stores a new token.
func (s *Store) TokenInsert(ctx context.Context, t *tenant.Token) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	d := tokenDocument{Token: *t, Hash: t.Hash}
	d.ExpiresAt, d.CreatedAt = msUTC(d.ExpiresAt), msUTC(d.CreatedAt)
	doc, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode token %s: %w", t.ID, err)
	}
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO client_tokens (id, client_id, hash, expires_at, doc) VALUES (?, ?, ?, ?, ?)`,
			t.ID, t.ClientID, t.Hash, t.ExpiresAt.UnixMilli(), doc)
		return err
	})
	if err != nil {
		return fmt.Errorf("insert token %s: %w", t.ID, s.translate(err))
	}
	return nil
}

// TokenGetByHash returns the token with that hash.
func (s *Store) TokenGetByHash(ctx context.Context, hash string) (*tenant.Token, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	t, err := scanToken(s.queryRow(ctx, `SELECT doc FROM client_tokens WHERE hash = ?`, hash))
	if err != nil {
		return nil, fmt.Errorf("get token: %w", s.translate(err))
	}
	return t, nil
}

// TokenList returns the tokens of a client, oldest first.
func (s *Store) TokenList(ctx context.Context, clientID string) ([]*tenant.Token, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT doc FROM client_tokens WHERE client_id = ? ORDER BY id`, clientID)
	if err != nil {
		return nil, fmt.Errorf("list tokens of client %s: %w", clientID, s.translate(err))
	}
	defer rows.Close()
	out := []*tenant.Token{}
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens of client %s: %w", clientID, s.translate(err))
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tokens of client %s: %w", clientID, s.translate(err))
	}
	return out, nil
}

// TokenDelete removes a token of a client.
func (s *Store) TokenDelete(ctx context.Context, clientID, id string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		return execOne(ctx, tx, `DELETE FROM client_tokens WHERE id = ? AND client_id = ?`, id, clientID)
	})
	if err != nil {
		return fmt.Errorf("delete token %s: %w", id, s.translate(err))
	}
	return nil
}

// backfillClients creates a client for every subscription whose clientId
// names none (subscriptions stored before clients existed, API.md §11), so
// an upgrade loses nothing, and logs each. It runs at every Open, after the
// migrations; with nothing to do it is one query.
func backfillClients(ctx context.Context, db *sql.DB, logger *slog.Logger) error {
	ids, err := clientlessIDs(ctx, db)
	if err != nil {
		return fmt.Errorf("find subscriptions without a client: %w", err)
	}
	now := msUTC(time.Now().UTC())
	for _, id := range ids {
		c := tenant.MigratedClient(id, now)
		doc, err := encodeClient(c)
		if err != nil {
			return err
		}
		if _, err := db.ExecContext(ctx, `INSERT OR IGNORE INTO clients (id, status, doc) VALUES (?, ?, ?)`, c.ID, string(c.Status), doc); err != nil {
			return fmt.Errorf("create client %s for its subscriptions: %w", id, err)
		}
		logger.InfoContext(ctx, "created a client for existing subscriptions", "client_id", id)
	}
	return nil
}

// clientlessIDs returns the client ids subscriptions name that no client
// has.
func clientlessIDs(ctx context.Context, db *sql.DB) ([]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT substr(client_key, 3) FROM subscriptions
		WHERE client_key LIKE 'c:%' AND substr(client_key, 3) NOT IN (SELECT id FROM clients)`)
	if err != nil {
		return nil, err //nolint:wrapcheck // wrapped by backfillClients
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err //nolint:wrapcheck // wrapped by backfillClients
		}
		ids = append(ids, id)
	}
	return ids, rows.Err() //nolint:wrapcheck // wrapped by backfillClients
}
