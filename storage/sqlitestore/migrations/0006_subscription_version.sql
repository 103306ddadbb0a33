-- Every write of a subscription grows its version; an update names the
-- version it read (optimistic concurrency), so an auto-disable between a
-- PATCH's read and its write is not undone by it.
ALTER TABLE subscriptions ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
