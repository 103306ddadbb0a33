-- The operational outbox (issue 32): the status events of a circuit
-- transition or an auto-disable, stored in the transaction of that write
-- and deleted by the relay once it ingested them as hooklane.* events.
-- Its rows have the shape of status_events; ids are ULIDs, so id order is
-- time order.
CREATE TABLE operational_outbox (
	id TEXT PRIMARY KEY,
	type TEXT NOT NULL,
	time INTEGER NOT NULL,
	subject TEXT NOT NULL,
	data BLOB NOT NULL
) WITHOUT ROWID;
