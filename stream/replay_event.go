package stream

// Replay status event types (API.md §7, §13): subject the replay id, data
// the subscription's code and the replay's counters.
const (
	TypeReplayStarted   = "replay.started"
	TypeReplayCompleted = "replay.completed"
)
