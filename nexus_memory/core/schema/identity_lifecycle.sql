-- identity.db lifecycle migration: merges are journaled so a person can undo one (nexus-memory candidates
-- unmerge), and the scrub state used by forgetting.

-- One row per merge of `loser_id` into `winner_id`, written inside the merge's transaction.
CREATE TABLE merge_journal (
    id              TEXT PRIMARY KEY,
    winner_id       TEXT NOT NULL,
    loser_id        TEXT NOT NULL,
    mention_count   INTEGER NOT NULL,    -- what the loser added to the winner's mention_count
    merged_at       INTEGER NOT NULL,
    undone_at       INTEGER              -- set by an unmerge
);
CREATE INDEX idx_merge_journal_pair ON merge_journal(loser_id, winner_id);

-- What one merge moved to the winner: the loser's fact links ('fact': fact id; detail 'shared' when the
-- winner already had the link), aliases the winner gained ('alias': normalized form), contacts it took
-- over ('contact': platform and handle, tab-separated), session aliases it gained ('session': session id).
CREATE TABLE merge_journal_items (
    journal_id   TEXT NOT NULL REFERENCES merge_journal(id) ON DELETE CASCADE,
    kind         TEXT NOT NULL CHECK (kind IN ('fact', 'alias', 'contact', 'session')),
    item         TEXT NOT NULL,
    detail       TEXT,
    PRIMARY KEY (journal_id, kind, item)
);
CREATE INDEX idx_merge_journal_items_item ON merge_journal_items(kind, item);

-- As memory_scrub_state in memory.db: has every write to this file overwritten deleted content?
CREATE TABLE identity_scrub_state (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    clean_since  INTEGER
);
INSERT INTO identity_scrub_state (id, clean_since)
SELECT 1, CASE WHEN NOT EXISTS (SELECT 1 FROM entities)
               THEN CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER) END;
