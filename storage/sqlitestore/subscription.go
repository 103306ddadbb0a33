package sqlitestore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/hooklane/hooklane/store"
	"github.com/hooklane/hooklane/subscription"
)

const subscriptionColumns = `secrets, doc, status_reason, version`

// subscriptionDocument is the stored form of a subscription, without the
// API's MarshalJSON. Its secrets and status reason, which have no JSON
// form, have columns of their own.
type subscriptionDocument subscription.Subscription

// subscriptionRow is a subscription encoded for its table.
type subscriptionRow struct {
	id, code, clientKey, status string
	secrets, doc                []byte
	statusReason                sql.NullString
}

// newSubscriptionRow encodes sub with its secrets sealed by the store's
// box.
func (s *Store) newSubscriptionRow(sub *subscription.Subscription) (*subscriptionRow, error) {
	sealed, err := sub.MapSecrets(s.box.Seal)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	return encodeSubscriptionRow(sealed)
}

// encodeSubscriptionRow encodes sub as it is.
func encodeSubscriptionRow(sub *subscription.Subscription) (*subscriptionRow, error) {
	c := *sub
	c.CreatedAt = msUTC(c.CreatedAt)
	c.UpdatedAt = msUTC(c.UpdatedAt)
	doc, err := json.Marshal((*subscriptionDocument)(&c))
	if err != nil {
		return nil, fmt.Errorf("encode subscription %s: %w", sub.ID, err)
	}
	secrets := slices.Clone(sub.Secrets)
	for i := range secrets {
		secrets[i].ExpiresAt = msUTCPtr(secrets[i].ExpiresAt)
	}
	sb, err := json.Marshal(secrets)
	if err != nil {
		return nil, fmt.Errorf("encode secrets of subscription %s: %w", sub.ID, err)
	}
	return &subscriptionRow{
		id: sub.ID, code: sub.Code, clientKey: clientKey(sub.ClientID), status: string(sub.Status),
		secrets: sb, doc: doc, statusReason: nullString(sub.StatusReason),
	}, nil
}

// clientKey is the unique-index form of a client id: no client is a scope
// of its own, distinct from every client id including "".
func clientKey(clientID *string) string {
	if clientID == nil {
		return ""
	}
	return "c:" + *clientID
}

// nullString is the column form of an optional string.
func nullString(s *string) sql.NullString {
	if s == nil {
		return sql.NullString{}
	}
	return sql.NullString{String: *s, Valid: true}
}

// scanSubscription reads a subscription with its secrets opened by the
// store's box.
func (s *Store) scanSubscription(r rowScanner) (*subscription.Subscription, error) {
	sub, err := scanSubscriptionSealed(r)
	if err != nil {
		return nil, err
	}
	if sub, err = sub.MapSecrets(s.box.Open); err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	return sub, nil
}

// scanSubscriptionSealed reads a subscription (subscriptionColumns) as
// stored, its secrets as they are.
func scanSubscriptionSealed(r rowScanner) (*subscription.Subscription, error) {
	var secrets, doc []byte
	var reason sql.NullString
	var version int64
	if err := r.Scan(&secrets, &doc, &reason, &version); err != nil {
		return nil, err
	}
	sub := &subscription.Subscription{}
	if err := json.Unmarshal(doc, (*subscriptionDocument)(sub)); err != nil {
		return nil, fmt.Errorf("decode subscription: %w", err)
	}
	if err := json.Unmarshal(secrets, &sub.Secrets); err != nil {
		return nil, fmt.Errorf("decode secrets of subscription %s: %w", sub.ID, err)
	}
	if reason.Valid {
		sub.StatusReason = &reason.String
	}
	sub.Version = version
	return sub, nil
}

// SubscriptionInsert stores a new subscription; store.ErrConflict when its
// (clientId, code) pair or its id exists.
func (s *Store) SubscriptionInsert(ctx context.Context, sub *subscription.Subscription) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	r, err := s.newSubscriptionRow(sub)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO subscriptions (id, code, client_key, status, secrets, doc, status_reason)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, r.id, r.code, r.clientKey, r.status, r.secrets, r.doc, r.statusReason); err != nil {
			return err
		}
		return bumpGeneration(ctx, tx, "subscriptions")
	})
	if err != nil {
		return fmt.Errorf("insert subscription %s: %w", r.code, s.translate(err))
	}
	return nil
}

// SubscriptionGetByID returns one subscription.
func (s *Store) SubscriptionGetByID(ctx context.Context, id string) (*subscription.Subscription, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	sub, err := s.scanSubscription(s.queryRow(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions WHERE id = ?`, id))
	if err != nil {
		return nil, fmt.Errorf("get subscription %s: %w", id, s.translate(err))
	}
	return sub, nil
}

// SubscriptionList returns one page of subscriptions, highest id first.
func (s *Store) SubscriptionList(ctx context.Context, p *subscription.ListParams) (*subscription.Page, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	var w where
	if p.Status != "" {
		w.add("status = ?", string(p.Status))
	}
	if p.ClientID != nil {
		if *p.ClientID == "" {
			w.add("client_key = ''")
		} else {
			w.add("client_key = ?", clientKey(p.ClientID))
		}
	}
	if p.EventType != "" {
		w.add(`EXISTS (SELECT 1 FROM json_each(subscriptions.doc, '$.eventTypes') b
			WHERE json_extract(b.value, '$.eventTypeCode') = ?)`, p.EventType)
	}
	if p.Cursor != "" {
		w.add("id < ?", p.Cursor)
	}
	limit := pageLimit(p.Limit)
	subs, err := s.querySubscriptions(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions`+w.sql()+
		` ORDER BY id DESC LIMIT ?`, append(w.args, limit+1)...)
	if err != nil {
		return nil, fmt.Errorf("list subscriptions: %w", err)
	}
	page := &subscription.Page{Subscriptions: subs}
	if len(subs) > limit {
		page.Subscriptions = subs[:limit]
		page.NextCursor = subs[limit-1].ID
	}
	return page, nil
}

// SubscriptionListAll returns every subscription.
func (s *Store) SubscriptionListAll(ctx context.Context) ([]*subscription.Subscription, error) {
	if err := s.checkOpen(); err != nil {
		return nil, err
	}
	subs, err := s.querySubscriptions(ctx, `SELECT `+subscriptionColumns+` FROM subscriptions ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("list all subscriptions: %w", err)
	}
	return subs, nil
}

// SubscriptionUpdate replaces a stored subscription; store.ErrConflict when
// its (clientId, code) pair now clashes.
func (s *Store) SubscriptionUpdate(ctx context.Context, sub *subscription.Subscription) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	r, err := s.newSubscriptionRow(sub)
	if err != nil {
		return err
	}
	err = s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		err := execOne(ctx, tx, `UPDATE subscriptions SET code = ?, client_key = ?, status = ?, secrets = ?,
			doc = ?, status_reason = ?, version = version + 1 WHERE id = ? AND version = ?`,
			r.code, r.clientKey, r.status, r.secrets, r.doc, r.statusReason, r.id, sub.Version)
		if errors.Is(err, store.ErrNotFound) {
			return missingOr(ctx, tx, "subscriptions", "id", r.id, store.ErrStale)
		}
		if err != nil {
			return err
		}
		return bumpGeneration(ctx, tx, "subscriptions")
	})
	if err != nil {
		return fmt.Errorf("update subscription %s: %w", r.id, s.translate(err))
	}
	sub.Version++
	return nil
}

// SubscriptionDelete removes a subscription.
func (s *Store) SubscriptionDelete(ctx context.Context, id string) error {
	if err := s.checkOpen(); err != nil {
		return err
	}
	err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
		if err := execOne(ctx, tx, `DELETE FROM subscriptions WHERE id = ?`, id); err != nil {
			return err
		}
		return bumpGeneration(ctx, tx, "subscriptions")
	})
	if err != nil {
		return fmt.Errorf("delete subscription %s: %w", id, s.translate(err))
	}
	return nil
}

// SubscriptionGeneration returns a counter that grows on every write of a
// subscription.
func (s *Store) SubscriptionGeneration(ctx context.Context) (int64, error) {
	return s.generation(ctx, "subscriptions")
}

func (s *Store) querySubscriptions(ctx context.Context, query string, args ...any) ([]*subscription.Subscription, error) {
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	var subs []*subscription.Subscription
	for rows.Next() {
		sub, err := s.scanSubscription(rows)
		if err != nil {
			return nil, s.translate(err)
		}
		subs = append(subs, sub)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return subs, nil
}
