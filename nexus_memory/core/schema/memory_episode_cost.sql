-- memory.db migration: what each writer episode cost (see docs/writer.md, "One transaction per episode").

-- The writer mode that wrote the episode's last attempt: 'offline', or the LLM writer's 'tools' or 'structured'
-- (NULL: no writer ran yet, or the row predates this migration).
ALTER TABLE episode_processing ADD COLUMN mode TEXT;
-- Wall-clock seconds the writer spent on the episode, summed over its attempts like the tokens.
ALTER TABLE episode_processing ADD COLUMN seconds REAL NOT NULL DEFAULT 0;
