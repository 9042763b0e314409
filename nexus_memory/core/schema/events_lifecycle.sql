-- events.db lifecycle migration: forgetting is the one path that may delete from the ledger.

-- Event ids a forget request has authorised for deletion. The forget inserts them, deletes the events and
-- removes them again inside one transaction, so at rest this table is empty and the ledger append-only.
CREATE TABLE forget_authorizations (
    event_id     TEXT PRIMARY KEY,
    request_id   TEXT NOT NULL,          -- deletion_log.id in memory.db
    created_at   INTEGER NOT NULL
);

DROP TRIGGER events_immutable_delete;
CREATE TRIGGER events_immutable_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM forget_authorizations a WHERE a.event_id = OLD.id)
BEGIN SELECT RAISE(ABORT, 'events are append-only: only a forget request deletes an event'); END;

-- As memory_scrub_state in memory.db: has every write to this file overwritten deleted content?
CREATE TABLE events_scrub_state (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    clean_since  INTEGER
);
INSERT INTO events_scrub_state (id, clean_since)
SELECT 1, CASE WHEN NOT EXISTS (SELECT 1 FROM events) AND NOT EXISTS (SELECT 1 FROM event_rejects)
               THEN CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) END;
