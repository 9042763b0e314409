-- embeddings.db: canonical vectors per (target, model) and the sqlite-vec index derived from them.

-- Canonical, exact float32 vectors. Several models coexist; the search index is rebuilt from here.
CREATE TABLE embeddings (
    id           TEXT PRIMARY KEY,
    target_type  TEXT NOT NULL,             -- 'fact', 'observation', 'entity', 'episode', 'mental_model'
    target_id    TEXT NOT NULL,
    model        TEXT NOT NULL,
    embedding    BLOB NOT NULL,             -- little-endian float32, L2-normalised
    dimension    INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    UNIQUE(target_type, target_id, model)
);
-- Migration 2 (db.MIGRATIONS) adds text_hash TEXT: the hash of the text the vector was made from
-- (NULL: embedded before it was kept), so vectors of a text that has since changed can be found.
CREATE INDEX idx_embeddings_target ON embeddings(target_type, target_id);
CREATE INDEX idx_embeddings_model ON embeddings(model);

-- Which model the vector index currently serves, and its dimension: checked at every start.
CREATE TABLE vector_index_state (
    id           INTEGER PRIMARY KEY CHECK (id = 1),
    model        TEXT NOT NULL,
    dimension    INTEGER NOT NULL,
    built_at     INTEGER NOT NULL
);

-- The sqlite-vec search index, one row per embedding of the active model (docs/stores.md).
-- Deviation: rowid = embeddings.rowid, and platform/as_of/thread_id are metadata columns so
-- filters run inside the KNN instead of after it; cosine distance since vectors are normalised.
-- The dimension here is the default model's; rebuild_index recreates the table for another one.
-- Above ~20k rows of a type an IVF index (files under data/ann/, see vectors/ivf.py) answers
-- queries instead; it is derived from the `embeddings` table like this one.
CREATE VIRTUAL TABLE vec_embeddings USING vec0(
    target_type TEXT partition key,
    embedding float[384] distance_metric=cosine,
    platform TEXT,
    as_of INTEGER,
    thread_id TEXT,
    +target_id TEXT
);
