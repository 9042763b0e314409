-- events.db: the immutable, append-only ledger of everything that happened (Layer 1).

-- One row per message, email, agent turn: who, where (the delivery context), session, direction, time.
CREATE TABLE events (
    id            TEXT PRIMARY KEY,      -- '<platform>:<source id>' or 'h:<content hash>' when the source has none
    platform      TEXT NOT NULL,         -- 'imessage', 'gmail', 'discord', 'agent', 'locomo', ...
    sender_id     TEXT NOT NULL,         -- raw handle: '+15551234567', 'alice@example.com', 'tyler#1234'
    sender_name   TEXT,                  -- display name when the platform gives one
    peer_id       TEXT,                  -- who/where the message went: 'server/channel', a handle
    peer_kind     TEXT,                  -- 'dm' | 'group' | 'channel'
    thread_id     TEXT,                  -- conversation thread
    session_id    TEXT,                  -- agent/chat session
    direction     TEXT NOT NULL CHECK (direction IN ('inbound', 'outbound', 'internal')),
    content       TEXT NOT NULL,
    content_hash  TEXT NOT NULL,         -- sha256 of the identifying fields, for idempotent ingest
    as_of         INTEGER NOT NULL,      -- when it happened (unix ms)
    ingested_at   INTEGER NOT NULL,      -- when it entered the ledger (unix ms)
    day           TEXT NOT NULL,         -- UTC date of as_of, 'YYYY-MM-DD': the Dagster time partition
    metadata      TEXT,                  -- JSON: importer extras (dia_id, subject, ...)
    source        TEXT                   -- where it came from: importer and file
);
CREATE INDEX idx_events_platform_day ON events(platform, day, as_of);
CREATE INDEX idx_events_thread ON events(thread_id, as_of);
CREATE INDEX idx_events_session ON events(session_id);
CREATE INDEX idx_events_hash ON events(content_hash);
CREATE INDEX idx_events_ingested ON events(ingested_at);

-- Immutability is enforced by the store, not by convention. The one exception, forgetting, is
-- authorised row by row (events_lifecycle.sql).
CREATE TRIGGER events_immutable_update BEFORE UPDATE ON events
BEGIN SELECT RAISE(ABORT, 'events are immutable'); END;
CREATE TRIGGER events_immutable_delete BEFORE DELETE ON events
BEGIN SELECT RAISE(ABORT, 'events are append-only'); END;

-- Records an importer could not accept, kept verbatim for repair and re-ingest.
CREATE TABLE event_rejects (
    id           INTEGER PRIMARY KEY,
    source       TEXT NOT NULL,          -- file path or caller
    line         INTEGER,                -- 1-based line or record number
    reason       TEXT NOT NULL,
    raw          TEXT,                   -- the record as read (lossy-decoded when it was not UTF-8)
    rejected_at  INTEGER NOT NULL,
    resolved_at  INTEGER                 -- set when a repaired copy was ingested
);
CREATE INDEX idx_event_rejects_source ON event_rejects(source);

-- Derived events (decision, action_item, commitment, preference_stated, correction); see docs/writer.md.
-- Deviation: a table beside `events`, not rows in it, so the raw ledger stays exactly what arrived.
CREATE TABLE derived_events (
    id                 TEXT PRIMARY KEY,
    type               TEXT NOT NULL CHECK (type IN
                       ('decision', 'action_item', 'commitment', 'preference_stated', 'correction')),
    content            TEXT NOT NULL,
    source_event_id    TEXT NOT NULL REFERENCES events(id),
    source_episode_id  TEXT,             -- episodes.id in memory.db, by convention
    entity_id          TEXT,             -- who stated it (entities.id in identity.db)
    as_of              INTEGER NOT NULL,
    created_at         INTEGER NOT NULL
);
CREATE INDEX idx_derived_events_episode ON derived_events(source_episode_id);
CREATE INDEX idx_derived_events_type ON derived_events(type, as_of);

-- Files the inbox sensor has already ingested (by content hash), so a tick never imports twice.
CREATE TABLE ingested_files (
    sha256       TEXT PRIMARY KEY,
    path         TEXT NOT NULL,
    format       TEXT NOT NULL,
    summary      TEXT NOT NULL,          -- JSON IngestSummary
    ingested_at  INTEGER NOT NULL
);
