-- memory.db migration 5: two times on every fact (see docs/stores.md, "A fact's two times").

-- facts.as_of is when the fact was said (its source event's time): it orders facts, decays them and
-- answers "what changed since". The time the fact is about, when its text names one ("until March 14",
-- "on Friday (on 28 February 2025)"), is its own pair: the first and the last millisecond it covers
-- (a day is 00:00:00.000 to 23:59:59.999 UTC; a span runs from its first day to its last). NULL: the text
-- names no time. Recall's date windows ("in May 2023", "last week") match the about-time, else as_of.
ALTER TABLE facts ADD COLUMN about_start INTEGER;  -- first ms of the time the fact is about, NULL if none named
ALTER TABLE facts ADD COLUMN about_end INTEGER;    -- last ms of it (>= about_start)
-- A window query reads facts whose about-time starts before its end; only dated facts are in the index.
CREATE INDEX idx_facts_about ON facts(about_start, about_end) WHERE about_start IS NOT NULL;

-- Upgrade: before this migration a writer put the first date a fact named into as_of (00:00 UTC of that
-- day), so a fact of a message whose as_of differs from the message's time (ingested_at, the event time for
-- every fact with a source event) was dated by what it mentions. That day becomes its about-time and as_of
-- goes back to when it was said. Facts without a source event (the agents' remember_fact) keep as_of as given.
UPDATE facts
SET about_start = as_of,
    about_end = CASE WHEN as_of % 86400000 = 0 THEN as_of + 86399999 ELSE as_of END,
    as_of = ingested_at
WHERE source_event_id IS NOT NULL AND as_of != ingested_at;
UPDATE fact_entities
SET as_of = (SELECT f.as_of FROM facts f WHERE f.id = fact_entities.fact_id)
WHERE as_of != (SELECT f.as_of FROM facts f WHERE f.id = fact_entities.fact_id);
