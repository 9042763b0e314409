-- memory.db lifecycle migration: what happens to facts after they are written (decay, confirmation,
-- correction, conflicts, entity enrichment), sessions waiting for consolidation, maintenance runs and
-- the log of what was forgotten. See nexus_memory/lifecycle/.

-- Facts are immutable, so whatever changes about a fact lives here, beside it: one row per fact that
-- has any state. A fact without a row has the defaults: confidence 1.0, the configured decay rate,
-- its decay clock starting at facts.created_at, visible. Current confidence is
--     confidence * exp(-decay_rate * days since coalesce(last_access_at, facts.created_at))
-- and the nightly decay hides a fact (hidden_at, reason 'decayed') once that falls below the threshold.
CREATE TABLE fact_state (
    fact_id         TEXT PRIMARY KEY REFERENCES facts(id) ON DELETE CASCADE,
    confidence      REAL NOT NULL DEFAULT 1.0 CHECK (confidence >= 0.0 AND confidence <= 1.0),
                                        -- before decay: 1.0; 0.3 once a later fact contradicts it
    decay_rate      REAL CHECK (decay_rate >= 0.0),  -- per day; NULL: the configured rate; 0: protected
    last_access_at  INTEGER,            -- last time recall returned it or a person confirmed it (unix ms)
    hidden_at       INTEGER,            -- soft-deleted: never recalled or injected, kept for audit
    hidden_reason   TEXT CHECK (hidden_reason IN ('decayed', 'corrected')),
    superseded_by   TEXT,               -- the later fact that corrects or contradicts it
    protected_at    INTEGER,            -- a person confirmed it: it no longer decays
    enriched_at     INTEGER,            -- entity enrichment has re-read it (never twice)
    updated_at      INTEGER NOT NULL
);
CREATE INDEX idx_fact_state_hidden ON fact_state(hidden_at) WHERE hidden_at IS NOT NULL;
CREATE INDEX idx_fact_state_superseded_by ON fact_state(superseded_by) WHERE superseded_by IS NOT NULL;

-- Recall adds 1 to facts.access_count for what it returns; that access restarts the fact's decay clock.
CREATE TRIGGER fact_state_access AFTER UPDATE OF access_count ON facts
WHEN NEW.access_count > OLD.access_count
BEGIN
    INSERT INTO fact_state (fact_id, last_access_at, updated_at)
    VALUES (NEW.id, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER),
            CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER))
    ON CONFLICT (fact_id) DO UPDATE SET last_access_at = excluded.last_access_at, updated_at = excluded.updated_at;
END;

-- Corrections made before this table existed (agent tools wrote metadata.supersedes) become state rows.
INSERT OR IGNORE INTO fact_state (fact_id, hidden_at, hidden_reason, superseded_by, updated_at)
SELECT json_extract(n.metadata, '$.supersedes'), n.created_at, 'corrected', n.id, n.created_at
FROM facts n
WHERE n.platform = 'memory_tool' AND json_valid(n.metadata)
  AND json_extract(n.metadata, '$.supersedes') IN (SELECT id FROM facts);

-- A later fact that contradicts an earlier one about the same entity (the earlier one keeps confidence 0.3).
CREATE TABLE fact_conflicts (
    old_fact_id  TEXT NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
    new_fact_id  TEXT NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
    entity_id    TEXT NOT NULL,          -- who both facts are about (entities.id in identity.db)
    detector     TEXT NOT NULL,          -- 'offline' (statement rule) or 'llm:<model>'
    statement    TEXT NOT NULL,          -- what kind of statement changed: 'residence', 'employer', ...
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (old_fact_id, new_fact_id)
);
CREATE INDEX idx_fact_conflicts_new ON fact_conflicts(new_fact_id);

-- One row per run of a maintenance job: when it ran, how far it read, what it changed (JSON counts).
CREATE TABLE lifecycle_runs (
    id           TEXT PRIMARY KEY,
    job          TEXT NOT NULL,          -- 'decay', 'conflicts', 'enrichment', 'reflection', 'sessions'
    started_at   INTEGER NOT NULL,
    finished_at  INTEGER NOT NULL,
    watermark    INTEGER,                -- facts.rowid up to which the job has looked (conflicts)
    stats        TEXT NOT NULL           -- JSON: counts only, never content
);
CREATE INDEX idx_lifecycle_runs_job ON lifecycle_runs(job, finished_at DESC);

-- Sessions and their consolidation: a session ends when a newer one starts on its platform, or at the
-- nightly run, and is consolidated promptly after.
CREATE TABLE sessions_consolidations (
    session_id       TEXT PRIMARY KEY,
    platform         TEXT NOT NULL,
    first_event_at   INTEGER NOT NULL,   -- as_of of its first event (unix ms)
    last_event_at    INTEGER NOT NULL,
    registered_at    INTEGER NOT NULL,
    ended_at         INTEGER,            -- NULL: still open
    ended_by         TEXT CHECK (ended_by IN ('new_session', 'nightly')),
    consolidated_at  INTEGER             -- NULL: waiting for consolidation
);
CREATE INDEX idx_sessions_consolidations_pending ON sessions_consolidations(ended_at)
    WHERE consolidated_at IS NULL;

-- What was forgotten: one row per forget request, with ids and counts and never the content.
CREATE TABLE deletion_log (
    id            TEXT PRIMARY KEY,
    target_kind   TEXT NOT NULL CHECK (target_kind IN ('event', 'fact', 'sender', 'entity')),
    target        TEXT NOT NULL,         -- event / fact / entity id; for a sender, sha256 of the handle
    requested_by  TEXT NOT NULL,
    reason        TEXT,                  -- as the person gave it
    requested_at  INTEGER NOT NULL,
    finished_at   INTEGER,
    status        TEXT NOT NULL CHECK (status IN ('deleted', 'scrubbed', 'scrub_failed')),
    counts        TEXT NOT NULL,         -- JSON: rows removed per store and table
    ids           TEXT NOT NULL,         -- JSON: ids of the events, facts and entities removed
    scrub         TEXT                   -- JSON: what the byte scrub did and what it cost
);

-- Whether every write to this file has overwritten deleted content (PRAGMA secure_delete): a file
-- that had content before that (clean_since NULL) gets one VACUUM the first time something is forgotten.
CREATE TABLE memory_scrub_state (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    clean_since  INTEGER
);
INSERT INTO memory_scrub_state (id, clean_since)
SELECT 1, CASE WHEN NOT EXISTS (SELECT 1 FROM facts) AND NOT EXISTS (SELECT 1 FROM episodes)
                    AND NOT EXISTS (SELECT 1 FROM analysis_runs) AND NOT EXISTS (SELECT 1 FROM mental_models)
               THEN CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) END;

-- Deleted facts leave the keyword index at once instead of at the next segment merge (FTS5 >= 3.44).
INSERT INTO facts_fts (facts_fts, rank) VALUES ('secure-delete', 1);
