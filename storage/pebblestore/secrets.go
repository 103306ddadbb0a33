package pebblestore

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hooklane/hooklane/dispatch"
	"github.com/hooklane/hooklane/storage/secretbox"
)

// secretPage is how many jobs SecretSealAll reads at a time.
const secretPage = 500

// SecretSealAll checks the secrets of every job holding a signing secret
// (TASK jobs: the only jobs with secrets of their own) against the store's
// box and seals those still in plain text, as sqlitestore's SecretSealAll
// does for its jobs: a sealed value is opened to check the key (one that
// cannot be stops the walk with an error wrapping secretbox.ErrWrongKey or
// secretbox.ErrNoKey); a plain value is counted and, with a box, sealed —
// the job is rewritten, its version kept, when its version is still the
// one read. It returns what it found.
func (s *Store) SecretSealAll(ctx context.Context) (secretbox.Census, error) {
	var c secretbox.Census
	if err := s.checkOpen(); err != nil {
		return c, err
	}
	up := s.box.Upgrade(&c)
	after := []byte{pfxJob}
	for {
		var page []*dispatch.Job
		err := s.read(func(db *pebble.DB) error {
			return scan(db, after, []byte{pfxJob + 1}, false, func(k, v []byte) (bool, error) {
				after = append(append([]byte(nil), k...), 0)
				r, err := parseJobRecord(string(k[1:]), v)
				if err != nil {
					return false, err
				}
				if r.secret == "" {
					return true, nil
				}
				j, err := r.jobSealed()
				if err != nil {
					return false, err
				}
				page = append(page, j)
				return len(page) < secretPage, nil
			})
		})
		if err != nil {
			return c, fmt.Errorf("seal secrets: list jobs: %w", err)
		}
		var rewrites []*jobRecord
		for _, j := range page {
			plain := c.Plain
			mapped, err := j.MapSecrets(up)
			if err != nil {
				return c, fmt.Errorf("seal secrets: %w", err)
			}
			if c.Plain == plain || s.box == nil {
				continue
			}
			r, err := s.newJobRecord(mapped, j.Version) // sealed already: Seal keeps values of this key
			if err != nil {
				return c, fmt.Errorf("seal secrets: %w", err)
			}
			rewrites = append(rewrites, r)
		}
		if len(rewrites) > 0 {
			if err := s.rewriteSealed(ctx, rewrites); err != nil {
				return c, err
			}
		}
		if len(page) < secretPage {
			return c, nil
		}
	}
}

// rewriteSealed writes the jobs whose stored version is still theirs; the
// version is kept: only the secrets' form changes.
func (s *Store) rewriteSealed(ctx context.Context, recs []*jobRecord) error {
	err := s.write(ctx, func(tx *writeTx) error {
		var olds []*jobRecord
		var keep []*jobRecord
		for _, r := range recs {
			old, err := getJobRecord(tx.b, r.id)
			if err != nil {
				return err
			}
			if old != nil && old.version == r.version {
				olds, keep = append(olds, old), append(keep, r)
			}
		}
		for i, r := range keep {
			if err := putJob(tx, r, olds[i]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("seal secrets: rewrite jobs: %w", err)
	}
	return nil
}
