-- Clients (API.md §11) and the tokens issued to them. A token is stored as
-- the SHA-256 of its secret only.
CREATE TABLE clients (
    id     TEXT PRIMARY KEY,
    status TEXT NOT NULL,
    doc    TEXT NOT NULL
);

CREATE TABLE client_tokens (
    id         TEXT PRIMARY KEY,
    client_id  TEXT NOT NULL,
    hash       TEXT NOT NULL UNIQUE,
    expires_at INTEGER NOT NULL,
    doc        TEXT NOT NULL
);

CREATE INDEX client_tokens_by_client ON client_tokens (client_id, id);
