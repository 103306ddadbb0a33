package sqlitestore

import (
	"context"
	"fmt"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/storage/secretbox"
	"github.com/hooklane/hooklane/subscription"
)

// secretPage is how many records SecretSealAll reads at a time.
const secretPage = 500

// SecretSealAll checks every stored secret against the store's box and
// seals those still in plain text: the migration run when a gateway starts
// (API.md §14). It walks every subscription and every job holding a
// signing secret (TASK jobs: the only jobs with secrets of their own). A
// sealed value is opened to check the key: one that cannot be (sealed with
// another key, or with a key while the store has none) stops the walk
// with an error wrapping secretbox.ErrWrongKey or secretbox.ErrNoKey. A
// plain value is counted and, when the store has a box, sealed: the record
// is rewritten when it has not changed since it was read (a job's version
// is kept, its secrets are the same secrets). It returns what it found.
func (s *Store) SecretSealAll(ctx context.Context) (secretbox.Census, error) {
	var c secretbox.Census
	if err := s.checkOpen(); err != nil {
		return c, err
	}
	up := s.box.Upgrade(&c)
	if err := s.sealSubscriptions(ctx, &c, up); err != nil {
		return c, err
	}
	if err := s.sealJobs(ctx, &c, up); err != nil {
		return c, err
	}
	return c, nil
}

// storedSubscription is a subscription row as read: its secrets and doc
// columns byte for byte, and the subscription they hold, secrets as
// stored.
type storedSubscription struct {
	secrets, doc []byte
	sub          *subscription.Subscription
}

// listSubscriptionsSealed returns up to secretPage subscriptions with ids
// after after, in id order, as stored.
func (s *Store) listSubscriptionsSealed(ctx context.Context, after string) ([]storedSubscription, error) {
	rows, err := s.rdb.QueryContext(ctx, `SELECT secrets, doc FROM subscriptions WHERE id > ? ORDER BY id LIMIT ?`, after, secretPage)
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	var out []storedSubscription
	for rows.Next() {
		var r storedSubscription
		if err := rows.Scan(&r.secrets, &r.doc); err != nil {
			return nil, s.translate(err)
		}
		if r.sub, err = scanSubscriptionSealed(bytesRow{r.secrets, r.doc}); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return out, nil
}

func (s *Store) sealSubscriptions(ctx context.Context, c *secretbox.Census, up func(string) (string, error)) error {
	after := ""
	for {
		page, err := s.listSubscriptionsSealed(ctx, after)
		if err != nil {
			return fmt.Errorf("seal secrets: list subscriptions: %w", err)
		}
		type rewrite struct {
			old storedSubscription
			row *subscriptionRow
		}
		var rewrites []rewrite
		for _, r := range page {
			after = r.sub.ID
			plain := c.Plain
			mapped, err := r.sub.MapSecrets(up)
			if err != nil {
				return fmt.Errorf("seal secrets: %w", err)
			}
			if c.Plain == plain || s.box == nil {
				continue
			}
			row, err := encodeSubscriptionRow(mapped)
			if err != nil {
				return fmt.Errorf("seal secrets: %w", err)
			}
			rewrites = append(rewrites, rewrite{old: r, row: row})
		}
		if len(rewrites) > 0 {
			err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
				for _, rw := range rewrites {
					// Only when unchanged since read; else the writer that
					// changed it sealed what it wrote.
					if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET secrets = ?, doc = ?
						WHERE id = ? AND secrets = ? AND doc = ?`, rw.row.secrets, rw.row.doc, rw.row.id, rw.old.secrets, rw.old.doc); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("seal secrets: rewrite subscriptions: %w", s.translate(err))
			}
		}
		if len(page) < secretPage {
			return nil
		}
	}
}

func (s *Store) sealJobs(ctx context.Context, c *secretbox.Census, up func(string) (string, error)) error {
	after := ""
	for {
		jobs, err := s.queryJobsSealed(ctx, `SELECT `+jobColumns+` FROM jobs WHERE secret != '' AND id > ? ORDER BY id LIMIT ?`, after, secretPage)
		if err != nil {
			return fmt.Errorf("seal secrets: list jobs: %w", err)
		}
		var rewrites []*jobRow
		for _, j := range jobs {
			after = j.ID
			plain := c.Plain
			mapped, err := j.MapSecrets(up)
			if err != nil {
				return fmt.Errorf("seal secrets: %w", err)
			}
			if c.Plain == plain || s.box == nil {
				continue
			}
			r, err := s.newJobRow(mapped) // sealed already: Seal keeps values of this key
			if err != nil {
				return fmt.Errorf("seal secrets: %w", err)
			}
			rewrites = append(rewrites, r)
		}
		if len(rewrites) > 0 {
			err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
				for _, r := range rewrites {
					// The version is kept: only the secrets' form changes.
					if _, err := tx.ExecContext(ctx, `UPDATE jobs SET secret = ?, doc = ? WHERE id = ? AND version = ?`,
						r.cols[12], r.cols[13], r.id, r.version); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("seal secrets: rewrite jobs: %w", s.translate(err))
			}
		}
		if len(jobs) < secretPage {
			return nil
		}
	}
}

// queryJobsSealed runs a query of jobColumns, returning jobs as stored.
func (s *Store) queryJobsSealed(ctx context.Context, query string, args ...any) ([]*dispatch.Job, error) {
	rows, err := s.rdb.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, s.translate(err)
	}
	defer rows.Close()
	var jobs []*dispatch.Job
	for rows.Next() {
		j, err := scanJobSealed(rows)
		if err != nil {
			return nil, s.translate(err)
		}
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return nil, s.translate(err)
	}
	return jobs, nil
}

// bytesRow is a row already read: the secrets and doc columns of a
// subscription, for scanSubscriptionSealed (its status_reason is left
// unset: sealing rewrites the secrets and doc columns only).
type bytesRow struct{ secrets, doc []byte }

// Scan copies the two columns into dest.
func (r bytesRow) Scan(dest ...any) error {
	*dest[0].(*[]byte) = r.secrets //nolint:forcetypeassert // only scanSubscriptionSealed calls it
	*dest[1].(*[]byte) = r.doc     //nolint:forcetypeassert // only scanSubscriptionSealed calls it
	return nil
}
