-- Every record is a JSON document (doc) plus the columns its queries filter
-- and sort on. Timestamps are unix milliseconds (INTEGER), so they sort and
-- compare as numbers.

CREATE TABLE events (
    id             TEXT PRIMARY KEY,
    dedup_key      TEXT NOT NULL UNIQUE,
    type           TEXT NOT NULL,
    source         TEXT NOT NULL,
    subject        TEXT NOT NULL,
    messagegroup   TEXT NOT NULL,
    received_at    INTEGER NOT NULL,
    fanned_out_at  INTEGER,
    schema_version TEXT NOT NULL,
    doc            TEXT NOT NULL -- the CloudEvent, JSON structured mode
);
CREATE INDEX events_received_at ON events (received_at);
CREATE INDEX events_not_fanned_out ON events (received_at, id) WHERE fanned_out_at IS NULL;
CREATE INDEX events_type ON events (type, id);
CREATE INDEX events_source ON events (source, id);
CREATE INDEX events_subject ON events (subject, id);
CREATE INDEX events_messagegroup ON events (messagegroup, id);

-- The string form of each extension value, for the ext filters of EventList.
CREATE TABLE event_extensions (
    event_id TEXT NOT NULL,
    name     TEXT NOT NULL,
    value    TEXT NOT NULL,
    PRIMARY KEY (event_id, name)
) WITHOUT ROWID;
CREATE INDEX event_extensions_value ON event_extensions (name, value, event_id);

CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    status           TEXT NOT NULL,
    next_attempt_at  INTEGER,
    updated_at       INTEGER NOT NULL,
    lease_expires_at INTEGER,
    created_at       INTEGER NOT NULL,
    message_group    TEXT NOT NULL,
    subscription_id  TEXT NOT NULL,
    subscription     TEXT NOT NULL,
    event_id         TEXT NOT NULL,
    code             TEXT NOT NULL,
    order_key        TEXT NOT NULL,
    delivery         TEXT NOT NULL,
    version          INTEGER NOT NULL,
    secret           TEXT NOT NULL, -- Job.Secret has no JSON form
    doc              TEXT NOT NULL
);
CREATE INDEX jobs_status_order_key ON jobs (status, order_key, id);
CREATE INDEX jobs_group ON jobs (subscription_id, message_group, order_key, id);
CREATE INDEX jobs_event_id ON jobs (event_id);
CREATE INDEX jobs_subscription_id ON jobs (subscription_id, id);
CREATE INDEX jobs_subscription ON jobs (subscription, id);
CREATE INDEX jobs_created_at ON jobs (created_at);
CREATE INDEX jobs_finished_updated_at ON jobs (updated_at)
    WHERE status IN ('COMPLETED', 'ERROR', 'CANCELLED');

CREATE TABLE pools (
    id   TEXT PRIMARY KEY,
    code TEXT NOT NULL UNIQUE,
    doc  TEXT NOT NULL
);

CREATE TABLE subscriptions (
    id         TEXT PRIMARY KEY,
    code       TEXT NOT NULL,
    -- client_key is '' for no client and 'c:' + clientId otherwise, so that
    -- no client is one scope of its own in the unique index.
    client_key TEXT NOT NULL,
    status     TEXT NOT NULL,
    secrets    TEXT NOT NULL, -- Subscription.Secrets has no JSON form
    doc        TEXT NOT NULL,
    UNIQUE (client_key, code)
);

CREATE TABLE event_types (
    code     TEXT PRIMARY KEY,
    status   TEXT NOT NULL,
    revision INTEGER NOT NULL,
    doc      TEXT NOT NULL
);

CREATE TABLE status_events (
    id      TEXT PRIMARY KEY,
    type    TEXT NOT NULL,
    time    INTEGER NOT NULL,
    subject TEXT NOT NULL,
    data    TEXT NOT NULL
);
CREATE INDEX status_events_subject ON status_events (subject, id);
CREATE INDEX status_events_time ON status_events (time);

-- Counters that grow on every write of a kind of record.
CREATE TABLE generations (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
INSERT INTO generations (name, value) VALUES ('subscriptions', 0), ('event_types', 0);
