-- identity.db: the unified entity store, plus the session aliases that merges propagate to (docs/stores.md).

-- People, handles, organisations, places, projects, contact info: everything facts can be about.
CREATE TABLE entities (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL,          -- display name or raw handle
    normalized   TEXT NOT NULL,          -- lower-cased, whitespace-folded name used for lookups
    type         TEXT NOT NULL,          -- 'person', 'organization', 'location', 'project', 'concept',
                                         -- 'email', 'phone', 'url', '<platform>_handle', 'date', ...
    source       TEXT NOT NULL CHECK (source IN ('delivery', 'inferred', 'user', 'import')),
    merged_into  TEXT REFERENCES entities(id),  -- set when this entity was merged into another
    is_user      BOOLEAN NOT NULL DEFAULT FALSE, -- the owner of this memory
    mention_count INTEGER NOT NULL DEFAULT 0,
    first_seen   INTEGER,
    last_seen    INTEGER,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL
);
CREATE INDEX idx_entities_normalized ON entities(normalized);
CREATE INDEX idx_entities_type ON entities(type);
CREATE INDEX idx_entities_merged ON entities(merged_into);

-- Other names an entity is known by: handles, nicknames, emails after a merge.
CREATE TABLE aliases (
    entity_id    TEXT NOT NULL REFERENCES entities(id),
    alias        TEXT NOT NULL,
    normalized   TEXT NOT NULL,
    alias_type   TEXT NOT NULL,          -- 'name', 'handle', 'email', 'phone', 'nickname'
    platform     TEXT,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (entity_id, normalized)
);
CREATE INDEX idx_aliases_normalized ON aliases(normalized);

-- Free-form labels on entities ('family', 'coworker', 'vip').
CREATE TABLE entity_tags (
    entity_id    TEXT NOT NULL REFERENCES entities(id),
    tag          TEXT NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (entity_id, tag)
);

-- How often two entities appear in the same fact; a signal for resolution. entity_a < entity_b.
CREATE TABLE entity_cooccurrences (
    entity_a     TEXT NOT NULL,
    entity_b     TEXT NOT NULL,
    count        INTEGER NOT NULL DEFAULT 1,
    last_seen    INTEGER NOT NULL,
    PRIMARY KEY (entity_a, entity_b),
    CHECK (entity_a < entity_b)
);
CREATE INDEX idx_cooccurrences_b ON entity_cooccurrences(entity_b);

-- Proposed merges waiting for a person (or auto-applied when exact email/phone, > 0.99).
CREATE TABLE merge_candidates (
    id             TEXT PRIMARY KEY,
    entity_a_id    TEXT NOT NULL REFERENCES entities(id),  -- the one that would survive
    entity_b_id    TEXT NOT NULL REFERENCES entities(id),  -- the one that would be merged into a
    confidence     REAL NOT NULL CHECK (confidence >= 0.0 AND confidence <= 1.0),
    reason         TEXT NOT NULL,
    auto_eligible  BOOLEAN NOT NULL DEFAULT FALSE,
    status         TEXT NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending', 'accepted', 'rejected', 'auto_merged')),
    created_at     INTEGER NOT NULL,
    resolved_at    INTEGER,
    UNIQUE (entity_a_id, entity_b_id)
);
CREATE INDEX idx_merge_candidates_status ON merge_candidates(status);

-- Routable contacts: created only by real deliveries, never by conversation (docs/writer.md).
CREATE TABLE contacts (
    platform     TEXT NOT NULL,
    handle       TEXT NOT NULL,
    entity_id    TEXT NOT NULL REFERENCES entities(id),
    first_seen   INTEGER NOT NULL,
    PRIMARY KEY (platform, handle)
);

-- Sessions keyed by the entity they talk to (the routing side of agents.db, which we own here).
CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    entity_id    TEXT NOT NULL,
    platform     TEXT,
    created_at   INTEGER NOT NULL
);
CREATE INDEX idx_sessions_entity ON sessions(entity_id);

-- propagateMergeToSessions(): after a merge, the loser's sessions are reachable through the winner.
-- Deviation: lives in identity.db so the merge and the alias update share one transaction.
CREATE TABLE session_aliases (
    session_id   TEXT NOT NULL REFERENCES sessions(id),
    entity_id    TEXT NOT NULL,          -- the entity that can now reach this session
    via_merge_of TEXT NOT NULL,          -- the merged-away entity it came from
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (session_id, entity_id)
);
CREATE INDEX idx_session_aliases_entity ON session_aliases(entity_id);
