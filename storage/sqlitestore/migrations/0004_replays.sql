-- Replays (API.md §13): durable, resumable walks of the event log.
CREATE TABLE replays (
    id               TEXT PRIMARY KEY,
    subscription_id  TEXT NOT NULL,
    status           TEXT NOT NULL,
    lease_expires_at INTEGER, -- null when no worker holds it
    version          INTEGER NOT NULL,
    doc              TEXT NOT NULL
);
CREATE INDEX replays_subscription_id ON replays (subscription_id, id);
CREATE INDEX replays_running ON replays (id) WHERE status = 'RUNNING';

-- The replay's walk of the log in (received_at, id) order.
CREATE INDEX events_received_at_id ON events (received_at, id);

-- The replay's back-pressure count of a subscription's unfinished jobs.
CREATE INDEX jobs_subscription_unfinished ON jobs (subscription_id, status)
    WHERE status IN ('PENDING', 'QUEUED', 'IN_PROGRESS');
