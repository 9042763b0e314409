-- memory.db: episodes, facts, observations and mental models (see docs/layers.md, docs/stores.md).

-- Atomic, immutable pieces of knowledge extracted from events.
CREATE TABLE facts (
    id              TEXT PRIMARY KEY,       -- ULID
    text            TEXT NOT NULL,          -- "Tyler works at Anthropic"
    context         TEXT,                   -- "career discussion with Sarah"
    as_of           INTEGER NOT NULL,       -- when the thing happened (unix ms)
    ingested_at     INTEGER NOT NULL,       -- when it could have been known (original event time for backfill)
    source_event_id TEXT,                   -- events.id in events.db
    is_consolidated BOOLEAN DEFAULT FALSE,
    access_count    INTEGER DEFAULT 0,      -- incremented when recall returns the fact
    metadata        TEXT,                   -- JSON: {platform, direction, thread_id, session_id, episode_id, ...}
    created_at      INTEGER NOT NULL,
    -- Deviation: denormalised from metadata so recall filters are indexed WHERE clauses.
    platform        TEXT,
    thread_id       TEXT,
    session_id      TEXT
);
CREATE INDEX idx_facts_as_of ON facts(as_of DESC);
CREATE INDEX idx_facts_ingested_at ON facts(ingested_at DESC);
CREATE INDEX idx_facts_source_event ON facts(source_event_id);
CREATE INDEX idx_facts_unconsolidated ON facts(is_consolidated) WHERE is_consolidated = FALSE;
CREATE INDEX idx_facts_access ON facts(access_count DESC);
CREATE INDEX idx_facts_platform ON facts(platform, as_of);
CREATE INDEX idx_facts_thread ON facts(thread_id, as_of);

-- Keyword index over fact text (BM25), kept in sync by triggers.
CREATE VIRTUAL TABLE facts_fts USING fts5(text, content='facts', content_rowid='rowid', tokenize='porter unicode61');
CREATE TRIGGER facts_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO facts_fts(rowid, text) VALUES (NEW.rowid, NEW.text);
END;
CREATE TRIGGER facts_fts_delete AFTER DELETE ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, text) VALUES ('delete', OLD.rowid, OLD.text);
END;
CREATE TRIGGER facts_fts_update AFTER UPDATE OF text ON facts BEGIN
    INSERT INTO facts_fts(facts_fts, rowid, text) VALUES ('delete', OLD.rowid, OLD.text);
    INSERT INTO facts_fts(rowid, text) VALUES (NEW.rowid, NEW.text);
END;

-- The knowledge graph: which entities a fact mentions.
-- Deviation: carries the fact's as_of so "latest facts about X" is one index range scan
-- on (entity_id, as_of, fact_id) (0.1 ms vs 148 ms at 2.5M links; see docs/stores.md).
CREATE TABLE fact_entities (
    fact_id     TEXT NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
    entity_id   TEXT NOT NULL,              -- entities.id in identity.db by convention
    as_of       INTEGER NOT NULL,
    PRIMARY KEY (fact_id, entity_id)
);
CREATE INDEX idx_fact_entities_entity ON fact_entities(entity_id, as_of DESC, fact_id);

-- Cause -> effect between facts, the only link stored at write time.
CREATE TABLE causal_links (
    from_fact_id TEXT NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
    to_fact_id   TEXT NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
    strength     REAL NOT NULL CHECK (strength >= 0.0 AND strength <= 1.0),
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (from_fact_id, to_fact_id)
);
CREATE INDEX idx_causal_links_to ON causal_links(to_fact_id);

-- Which events the writer has already processed (both trigger paths check it).
CREATE TABLE memory_processing_log (
    event_id        TEXT PRIMARY KEY,
    processed_at    INTEGER NOT NULL,
    writer_run_id   TEXT,
    created_at      INTEGER NOT NULL
);
CREATE INDEX idx_memory_processing_log_processed ON memory_processing_log(processed_at DESC);

-- How events are grouped into episodes: time gap in a thread, per session, token budget.
CREATE TABLE episode_definitions (
    id           TEXT PRIMARY KEY,
    name         TEXT NOT NULL UNIQUE,
    strategy     TEXT NOT NULL CHECK (strategy IN ('time_gap', 'session', 'token_budget', 'consolidation')),
    params       TEXT NOT NULL,          -- JSON: {gap_minutes, max_tokens, ...}
    description  TEXT,
    created_at   INTEGER NOT NULL
);

-- Groups of events; immutable, extended by a new version pointing at its parent.
CREATE TABLE episodes (
    id              TEXT PRIMARY KEY,
    definition_id   TEXT NOT NULL REFERENCES episode_definitions(id),
    platform        TEXT,
    thread_id       TEXT,
    start_time      INTEGER NOT NULL,
    end_time        INTEGER NOT NULL,
    event_count     INTEGER NOT NULL,
    first_event_id  TEXT,
    last_event_id   TEXT,
    parent_id       TEXT REFERENCES episodes(id),
    created_at      INTEGER NOT NULL,
    -- Deviation: the Dagster partition ('<day>|<platform>') whose run created this version,
    -- so a partition's writer run finds exactly its episodes.
    partition_key   TEXT,
    -- Deviation: what the definition grouped by (thread id, session id), so a later run can find
    -- the episode that new events extend.
    group_key       TEXT,
    token_estimate  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX idx_episodes_definition ON episodes(definition_id);
CREATE INDEX idx_episodes_platform ON episodes(platform);
CREATE INDEX idx_episodes_thread ON episodes(thread_id);
CREATE INDEX idx_episodes_time ON episodes(start_time, end_time);
CREATE INDEX idx_episodes_parent ON episodes(parent_id);
CREATE INDEX idx_episodes_partition ON episodes(partition_key);
CREATE INDEX idx_episodes_group ON episodes(definition_id, group_key, end_time);

-- Membership of events in episodes, in order.
CREATE TABLE episode_events (
    episode_id   TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    event_id     TEXT NOT NULL,
    position     INTEGER NOT NULL,
    PRIMARY KEY (episode_id, event_id)
);
CREATE INDEX idx_episode_events_event ON episode_events(event_id);

-- Entities mentioned in an episode (filled by the writer).
CREATE TABLE episode_entity_mentions (
    episode_id    TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    entity_id     TEXT NOT NULL,
    mention_count INTEGER NOT NULL DEFAULT 1,
    PRIMARY KEY (episode_id, entity_id)
);

-- Writer outcome per episode: what makes "rerun only the failed episodes" possible.
-- Deviation: new; the design records processed events only (memory_processing_log). See docs/stores.md.
CREATE TABLE episode_processing (
    episode_id     TEXT PRIMARY KEY REFERENCES episodes(id) ON DELETE CASCADE,
    status         TEXT NOT NULL CHECK (status IN ('ok', 'skipped', 'failed')),
    writer         TEXT NOT NULL,          -- 'offline' or 'llm:<model>'
    attempts       INTEGER NOT NULL DEFAULT 1,
    facts_written  INTEGER NOT NULL DEFAULT 0,
    prompt_tokens  INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    error          TEXT,
    updated_at     INTEGER NOT NULL
);
CREATE INDEX idx_episode_processing_status ON episode_processing(status);

-- Turn labels for agent turns. Deviation: keyed by event id; there is no agent_turns table (docs/stores.md).
CREATE TABLE turn_labels (
    event_id     TEXT PRIMARY KEY,
    label        TEXT NOT NULL,
    summary      TEXT NOT NULL,
    topics       TEXT NOT NULL,           -- JSON array
    entity_ids   TEXT NOT NULL,           -- JSON array
    created_at   INTEGER NOT NULL
);

-- Kinds of analysis that run over episodes ('observation_v1', summaries, ...).
CREATE TABLE analysis_types (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    version         TEXT NOT NULL,
    output_type     TEXT NOT NULL,
    prompt_template TEXT,
    created_at      INTEGER NOT NULL
);

-- One analysis of one episode; observations are analysis runs (Layer 3).
CREATE TABLE analysis_runs (
    id               TEXT PRIMARY KEY,
    analysis_type_id TEXT NOT NULL REFERENCES analysis_types(id),
    episode_id       TEXT NOT NULL REFERENCES episodes(id),
    parent_id        TEXT REFERENCES analysis_runs(id),
    status           TEXT NOT NULL,
    started_at       INTEGER,
    completed_at     INTEGER,
    output_text      TEXT,
    error_message    TEXT,
    blocked_reason   TEXT,
    retry_count      INTEGER DEFAULT 0,
    access_count     INTEGER DEFAULT 0,
    is_stale         BOOLEAN DEFAULT FALSE,
    created_at       INTEGER NOT NULL,
    UNIQUE(analysis_type_id, episode_id)
);
CREATE INDEX idx_analysis_runs_type ON analysis_runs(analysis_type_id);
CREATE INDEX idx_analysis_runs_episode ON analysis_runs(episode_id);
CREATE INDEX idx_analysis_runs_status ON analysis_runs(status);
CREATE INDEX idx_analysis_runs_parent ON analysis_runs(parent_id);
CREATE INDEX idx_analysis_runs_stale ON analysis_runs(is_stale) WHERE is_stale = TRUE;

-- Which facts support which observation.
CREATE TABLE observation_facts (
    analysis_run_id TEXT NOT NULL REFERENCES analysis_runs(id) ON DELETE CASCADE,
    fact_id         TEXT NOT NULL REFERENCES facts(id) ON DELETE CASCADE,
    PRIMARY KEY (analysis_run_id, fact_id)
);
CREATE INDEX idx_observation_facts_fact ON observation_facts(fact_id);
CREATE INDEX idx_observation_facts_run ON observation_facts(analysis_run_id);

-- Structured outputs of non-observation analyses.
CREATE TABLE facets (
    id              TEXT PRIMARY KEY,
    analysis_run_id TEXT NOT NULL REFERENCES analysis_runs(id) ON DELETE CASCADE,
    episode_id      TEXT NOT NULL REFERENCES episodes(id) ON DELETE CASCADE,
    facet_type      TEXT NOT NULL,
    value           TEXT NOT NULL,
    entity_id       TEXT,
    confidence      REAL,
    metadata_json   TEXT,
    created_at      INTEGER NOT NULL
);

-- High-level, refreshable reports (Layer 4), versioned by parent_id.
CREATE TABLE mental_models (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL,
    description     TEXT NOT NULL,
    subtype         TEXT,
    entity_id       TEXT,
    tags            TEXT,
    parent_id       TEXT REFERENCES mental_models(id),
    is_stale        BOOLEAN DEFAULT FALSE,
    refresh_trigger TEXT,
    last_refreshed  INTEGER,
    access_count    INTEGER DEFAULT 0,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
);
CREATE INDEX idx_mental_models_entity ON mental_models(entity_id);
CREATE INDEX idx_mental_models_parent ON mental_models(parent_id);
CREATE INDEX idx_mental_models_stale ON mental_models(is_stale) WHERE is_stale = TRUE;
