package sqlitestore

import (
	"context"
	"fmt"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/secretbox"
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

func (s *Store) sealSubscriptions(ctx context.Context, c *secretbox.Census, up func(string) (string, error)) error {
	after := ""
	for {
		rows, err := s.rdb.QueryContext(ctx, `SELECT id, `+subscriptionColumns+` FROM subscriptions WHERE id > ? ORDER BY id LIMIT ?`, after, secretPage)
		if err != nil {
			return fmt.Errorf("seal secrets: list subscriptions: %w", s.translate(err))
		}
		type rewrite struct {
			id, oldSecrets, oldDoc []byte
			row                    *subscriptionRow
		}
		var rewrites []rewrite
		n := 0
		for rows.Next() {
			n++
			var id, secrets, doc []byte
			if err := rows.Scan(&id, &secrets, &doc); err != nil {
				rows.Close()
				return fmt.Errorf("seal secrets: read subscription: %w", s.translate(err))
			}
			after = string(id)
			sub, err := scanSubscriptionSealed(bytesRow{secrets, doc})
			if err != nil {
				rows.Close()
				return fmt.Errorf("seal secrets: %w", err)
			}
			plain := c.Plain
			mapped, err := sub.MapSecrets(up)
			if err != nil {
				rows.Close()
				return fmt.Errorf("seal secrets: %w", err)
			}
			if c.Plain == plain || s.box == nil {
				continue
			}
			r, err := encodeSubscriptionRow(mapped)
			if err != nil {
				rows.Close()
				return fmt.Errorf("seal secrets: %w", err)
			}
			rewrites = append(rewrites, rewrite{id: id, oldSecrets: secrets, oldDoc: doc, row: r})
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return fmt.Errorf("seal secrets: list subscriptions: %w", s.translate(err))
		}
		if len(rewrites) > 0 {
			err := s.write(ctx, func(ctx context.Context, tx *writeTx) error {
				for _, rw := range rewrites {
					// Unchanged since read, or left to the writer that
					// changed it (which sealed what it wrote).
					if _, err := tx.ExecContext(ctx, `UPDATE subscriptions SET secrets = ?, doc = ?
						WHERE id = ? AND secrets = ? AND doc = ?`, rw.row.secrets, rw.row.doc, string(rw.id), rw.oldSecrets, rw.oldDoc); err != nil {
						return err //nolint:wrapcheck // wrapped below
					}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("seal secrets: rewrite subscriptions: %w", s.translate(err))
			}
		}
		if n < secretPage {
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
						return err //nolint:wrapcheck // wrapped below
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
// subscription.
type bytesRow struct{ secrets, doc []byte }

// Scan copies the two columns into dest.
func (r bytesRow) Scan(dest ...any) error {
	*dest[0].(*[]byte) = r.secrets //nolint:forcetypeassert // only scanSubscriptionSealed calls it
	*dest[1].(*[]byte) = r.doc     //nolint:forcetypeassert // only scanSubscriptionSealed calls it
	return nil
}
