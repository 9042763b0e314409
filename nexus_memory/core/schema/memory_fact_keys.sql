-- memory.db migration 4: keyword search over each fact with its source message (see docs/recall.md).

-- A fact's retrieval key: the fact (`text`, kept equal to facts.text by the triggers) and its source
-- message (`message`, "<sender>: <content>" as the fact's vector reads it, written by the embedding step
-- with the vector; embeddings/step.py). Recall's keyword strategy searches a query word in the facts, and
-- in their messages too when no fact holds it ("pets" finds "Nate has three turtles" through "The pets are
-- great, the three turtles love their tank"). The question the message answers, which the vector also
-- reads, is another message and stays out: forgetting a message forgets every fact of it, so a key never
-- outlives what it quotes. rowid = facts.rowid; a store made before this migration has no messages yet.
CREATE VIRTUAL TABLE fact_keys_fts USING fts5(text, message, tokenize='porter unicode61');
-- A forgotten fact's key leaves the index at once, as facts_fts does (memory_lifecycle.sql).
INSERT INTO fact_keys_fts (fact_keys_fts, rank) VALUES ('secure-delete', 1);
INSERT INTO fact_keys_fts (rowid, text, message) SELECT rowid, text, '' FROM facts;
CREATE TRIGGER fact_keys_fts_insert AFTER INSERT ON facts BEGIN
    INSERT INTO fact_keys_fts (rowid, text, message) VALUES (NEW.rowid, NEW.text, '');
END;
CREATE TRIGGER fact_keys_fts_delete AFTER DELETE ON facts BEGIN
    DELETE FROM fact_keys_fts WHERE rowid = OLD.rowid;
END;
CREATE TRIGGER fact_keys_fts_update AFTER UPDATE OF text ON facts BEGIN
    UPDATE fact_keys_fts SET text = NEW.text WHERE rowid = NEW.rowid;
END;
