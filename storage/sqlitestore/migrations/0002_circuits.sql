-- Endpoint health (API.md §12): the subscriptions' circuits, the reason the
-- gateway paused a subscription, and the per-minute attempt aggregates.

-- Subscription.StatusReason has no JSON form (no request may write it).
ALTER TABLE subscriptions ADD COLUMN status_reason TEXT;

CREATE TABLE circuits (
    subscription_id      TEXT PRIMARY KEY,
    state                TEXT NOT NULL,
    consecutive_failures INTEGER NOT NULL,
    opened_at            INTEGER,
    next_probe_at        INTEGER,
    cooldown_ms          INTEGER NOT NULL,
    probe_job_id         TEXT NOT NULL,
    probe_until          INTEGER,
    failing_since        INTEGER,
    updated_at           INTEGER NOT NULL,
    version              INTEGER NOT NULL
);
CREATE INDEX circuits_not_closed ON circuits (opened_at, subscription_id) WHERE state <> 'CLOSED';

-- One row per subscription and minute; latency is a JSON array of the
-- histogram's counters (health.Bounds).
CREATE TABLE health_minutes (
    subscription_id TEXT NOT NULL,
    start           INTEGER NOT NULL,
    attempts        INTEGER NOT NULL,
    succeeded       INTEGER NOT NULL,
    failed          INTEGER NOT NULL,
    answered        INTEGER NOT NULL,
    latency         TEXT NOT NULL,
    PRIMARY KEY (subscription_id, start)
) WITHOUT ROWID;
CREATE INDEX health_minutes_start ON health_minutes (start);

CREATE TABLE health_last (
    subscription_id TEXT PRIMARY KEY,
    last_success_at INTEGER,
    last_failure_at INTEGER,
    last_error      TEXT NOT NULL,
    latest_at       INTEGER NOT NULL -- the later of the two, for retention
);
CREATE INDEX health_last_latest_at ON health_last (latest_at);
