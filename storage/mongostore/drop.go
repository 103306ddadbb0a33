package mongostore

import (
	"context"
	"fmt"
)

// Drop deletes the store's database with everything in it. It exists for
// tests outside this package that open a database of their own on a shared
// server (one per test) and must remove it when they end; the gateway never
// calls it. The store stays open: Close it after.
func (s *Store) Drop(ctx context.Context) error {
	if err := s.check(); err != nil {
		return err
	}
	if err := s.db.Drop(ctx); err != nil {
		return fmt.Errorf("drop database %s: %w", s.db.Name(), translate(ctx, err))
	}
	return nil
}
