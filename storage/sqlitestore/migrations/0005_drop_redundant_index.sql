-- events_received_at (received_at) is a prefix of events_received_at_id
-- (received_at, id), which serves every query by reception time (lists,
-- retention, the fan-out poller's order, replays): the narrower index only
-- cost a b-tree page written per ingest commit.
DROP INDEX IF EXISTS events_received_at;
