-- memory.db migration 2: what consolidation (Layer 3) and mental models (Layer 4) need beyond migration 1 (see docs/layers.md).

-- An observation's version chain (root_id: the id of its first run), the entity it is about and
-- its topic label, so "current observations of entity X" is one index range.
ALTER TABLE analysis_runs ADD COLUMN root_id TEXT;
ALTER TABLE analysis_runs ADD COLUMN entity_id TEXT;
ALTER TABLE analysis_runs ADD COLUMN topic TEXT;
CREATE INDEX idx_analysis_runs_entity ON analysis_runs(entity_id, is_stale);
CREATE INDEX idx_analysis_runs_root ON analysis_runs(root_id);

-- New facts that share an entity with a current observation make it stale until consolidation has
-- looked at them (set when new facts arrive that affect the observation; docs/layers.md).
-- A trigger, so every write path (offline writer, LLM writer, agent tools, entity merges) does it.
CREATE TRIGGER fact_entities_stale_observations AFTER INSERT ON fact_entities BEGIN
    UPDATE analysis_runs SET is_stale = 1
    WHERE entity_id = NEW.entity_id AND is_stale = 0 AND analysis_type_id = 'observation_v1'
      AND NOT EXISTS (SELECT 1 FROM analysis_runs c WHERE c.parent_id = analysis_runs.id);
END;

-- Consolidation outcome of a fact that could not be consolidated (the LLM gave no valid answer):
-- the fact stays unconsolidated, so the next run retries it; the row says why it failed.
CREATE TABLE fact_consolidation_failures (
    fact_id       TEXT PRIMARY KEY REFERENCES facts(id) ON DELETE CASCADE,
    consolidator  TEXT NOT NULL,          -- 'offline' or 'llm:<model>'
    attempts      INTEGER NOT NULL DEFAULT 1,
    error         TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    updated_at    INTEGER NOT NULL
);

-- A mental model's version chain (root_id: its first version's id, the Dagster partition key) and
-- the question it answers.
ALTER TABLE mental_models ADD COLUMN root_id TEXT;
ALTER TABLE mental_models ADD COLUMN question TEXT;
CREATE INDEX idx_mental_models_root ON mental_models(root_id);

-- What a mental model version was built from: observations, facts, derived events, episodes.
-- Provenance for its report, and how a new observation version finds the models it makes stale.
CREATE TABLE mental_model_sources (
    mental_model_id TEXT NOT NULL REFERENCES mental_models(id) ON DELETE CASCADE,
    source_type     TEXT NOT NULL CHECK (source_type IN ('observation', 'fact', 'derived_event', 'episode')),
    source_id       TEXT NOT NULL,
    PRIMARY KEY (mental_model_id, source_type, source_id)
);
CREATE INDEX idx_mental_model_sources_source ON mental_model_sources(source_type, source_id);
