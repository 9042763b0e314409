"""Embedder (real default model), the embedding step, model-change detection and rebuild_index."""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest
from memory_builders import say

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings import model as embedding_model
from nexus_memory.embeddings import query_encoder, step
from nexus_memory.embeddings.model import (
    Embedder,
    get_embedder,
    native_bf16,
    padded_groups,
    resolve_precision,
    split_identity,
    vector_identity,
)
from nexus_memory.embeddings.step import (
    EmbedStats,
    StaleVectors,
    check_index_model,
    embed_pending,
    fact_embedding_text,
    rebuild_index,
    reembed,
    stale_fact_vectors,
)
from nexus_memory.embeddings.vectors.index import VectorIndex
from nexus_memory.embeddings.vectors.ivf import ann_root
from nexus_memory.embeddings.vectors.vec0 import IndexModelMismatch, index_state
from nexus_memory.events.ledger import append_event, parse_event

# What the default settings (NEXUS_EMBED_PRECISION=auto) store vectors under on this CPU.
IDENTITY = vector_identity("all-MiniLM-L6-v2", resolve_precision("auto"))
FACTS = [
    ("f1", "Alice works at Acme as a data engineer", "gmail", 1_000, "t1"),
    ("f2", "Bob went hiking in the Alps last summer", "imessage", 2_000, "t2"),
    ("f3", "The quarterly report is due on Friday", "gmail", 3_000, "t1"),
    ("f4", "Carol adopted a dog named Biscuit", "discord", 4_000, "t3"),
]


@pytest.fixture(scope="module")
def embedder():
    return get_embedder()


def _add_facts(stores: Stores, facts: list[tuple[str, str, str, int, str]]) -> None:
    with stores.transaction():
        stores.conn.executemany(
            "INSERT INTO facts(id, text, as_of, ingested_at, created_at, platform, thread_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(fid, text, as_of, as_of, as_of, platform, thread) for fid, text, platform, as_of, thread in facts],
        )


def test_encode_shape_normalised_deterministic(embedder) -> None:
    texts = ["Alice works at Acme", "Bob likes hiking", "The cat sat on the mat"]
    first = embedder.encode(texts)
    assert embedder.model_name == IDENTITY
    assert first.shape == (3, embedder.dimension) == (3, 384)
    assert first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(embedder.encode(texts), first, atol=1e-6)
    query = embedder.encode_query("where does Alice work?")
    assert query.shape == (384,) and query.dtype == np.float32
    assert abs(float(np.linalg.norm(query)) - 1.0) < 1e-5
    # Semantics, not just shapes: the matching sentence is the nearest.
    assert int(np.argmax(first @ query)) == 0
    assert get_embedder() is embedder
    assert embedder.encode([]).shape == (0, 384)


def test_model_calls_are_sized_by_padded_characters() -> None:
    lengths = [50, 10, 400, 10, 30, 5000, 20, 60]
    groups = padded_groups(lengths, 3, 200)
    assert sorted(i for group in groups for i in group) == list(range(len(lengths)))  # each text once
    assert [[lengths[i] for i in group] for group in groups] == [[10, 10, 20], [30, 50, 60], [400], [5000]]
    assert all(len(group) * max(lengths[i] for i in group) <= 200 for group in groups if len(group) > 1)
    assert [len(group) for group in padded_groups(lengths, 8, 10_000)] == [7, 1]  # the cap on texts first


def test_calls_sized_by_characters_give_each_text_its_own_vector(embedder) -> None:
    texts = [f"{name} talked about {topic} " * reps for name, topic, reps in _MIXED_TEXTS]
    whole = embedder.encode(texts, batch_chars=None)  # one call, sentence-transformers' own batches
    sized = embedder.encode(texts, batch_size=4, batch_chars=300)  # many calls of a few short or one long text
    assert float(np.min(np.sum(whole * sized, axis=1))) > 0.9999  # each row is its own text's, in the order given


_MIXED_TEXTS = [
    ("Alice", "hiking", 1),
    ("Bob", "the quarterly report", 9),
    ("Carol", "pottery", 2),
    ("Dan", "a trip to Lisbon", 14),
    ("Eve", "chess", 1),
    ("Frank", "the garden", 5),
    ("Grace", "a new job", 3),
]


def test_embed_pending_is_idempotent_and_searchable(stores: Stores, embedder) -> None:
    _add_facts(stores, FACTS)
    progress: list[tuple[int, int]] = []
    stats = embed_pending(stores, embedder, batch_size=3, on_progress=lambda d, t: progress.append((d, t)))
    assert isinstance(stats, EmbedStats)
    assert stats.rows == 4 and stats.by_type == {"fact": 4}
    assert progress == [(0, 4), (3, 4), (4, 4)]  # from the start, not from the first stored batch
    assert embed_pending(stores, embedder).rows == 0
    rows = stores.conn.execute("SELECT model, dimension, length(embedding) FROM embeddings").fetchall()
    assert [tuple(r) for r in rows] == [(IDENTITY, 384, 384 * 4)] * 4
    assert stores.conn.execute("SELECT count(*) FROM vec_embeddings").fetchone()[0] == 4
    assert index_state(stores.conn) == (IDENTITY, 384)

    search = VectorIndex(stores, embedder.model_name, embedder.dimension)
    hits = search.search(embedder.encode_query("Which company does Alice work for?"), 2)
    assert hits[0][0] == "f1" and hits[0][1] > hits[1][1]
    # Metadata came from the facts table: filters run inside the KNN.
    assert [h[0] for h in search.search(embedder.encode_query("dog"), 5, platform="discord")] == ["f4"]
    assert {h[0] for h in search.search(embedder.encode_query("work"), 5, thread_id="t1")} == {"f1", "f3"}
    assert {h[0] for h in search.search(embedder.encode_query("x"), 5, time_after=2_000, time_before=3_000)} == {
        "f2",
        "f3",
    }

    # The per-turn path: only the named facts.
    _add_facts(
        stores,
        [
            ("f5", "Dave moved to Lisbon", "gmail", 5_000, "t4"),
            ("f6", "Erin is learning Spanish", "gmail", 6_000, "t4"),
        ],
    )
    assert embed_pending(stores, embedder, fact_ids=["f6"]).rows == 1
    assert embed_pending(stores, embedder).rows == 1


def test_embed_pending_says_how_long_it_waited_on_the_worker_ahead(stores: Stores, embedder) -> None:
    """A drain that only waits (the worker does the embedding) is counted as waiting, and the progress
    starts before it: a layer that waited a minute does not report its vectors done 'in 1 s'."""
    _add_facts(stores, FACTS)
    heard: list[object] = []

    class SlowWorker:  # the EmbeddingAhead surface embed_pending uses; its worker takes 0.3 s, this thread idles
        def __init__(self) -> None:
            self.embedder = embedder

        def submit(self, texts: list[str]) -> None:
            heard.append(("submit", len(texts)))

        def drain(self) -> None:
            heard.append("drain")
            time.sleep(0.3)

        def vector(self, text: str) -> None:
            return None  # nothing made ahead: encoded here

        def release(self, texts: list[str]) -> None:
            pass

    stats = embed_pending(
        stores, embedder, batch_size=3, on_progress=lambda d, t: heard.append((d, t)), ahead=SlowWorker()
    )  # type: ignore[arg-type]
    assert heard == [(0, 4), ("submit", 4), "drain", (3, 4), (4, 4)]
    assert stats.rows == 4 and 0.3 <= stats.drain_s < stats.seconds
    assert 0.25 <= stats.wait_s <= stats.drain_s
    assert embed_pending(stores, embedder).wait_s == 0.0  # no worker, no wait


def test_other_target_types(stores: Stores, embedder) -> None:
    with stores.transaction():
        stores.conn.execute(
            "INSERT INTO entities(id, name, normalized, type, source, created_at, updated_at, last_seen) "
            "VALUES ('e1', 'Alice Smith', 'alice smith', 'person', 'user', 0, 0, 10)"
        )
        stores.conn.execute(
            "INSERT INTO entities(id, name, normalized, type, source, created_at, updated_at, merged_into) "
            "VALUES ('e2', 'Alice S', 'alice s', 'person', 'user', 0, 0, 'e1')"
        )
        stores.conn.execute(
            "INSERT INTO mental_models(id, name, description, created_at, updated_at) "
            "VALUES ('m1', 'Alice', 'Data engineer at Acme who likes climbing', 0, 5)"
        )
    stats = embed_pending(stores, embedder, target_types=("entity", "mental_model", "observation"))
    assert stats.by_type == {"entity": 1, "mental_model": 1, "observation": 0}
    search = VectorIndex(stores, embedder.model_name, embedder.dimension)
    assert search.search(embedder.encode_query("Alice"), 5, target_type="entity")[0][0] == "e1"
    assert search.search(embedder.encode_query("climbing"), 5, target_type="mental_model")[0][0] == "m1"
    with pytest.raises(ValueError, match="cannot embed"):
        embed_pending(stores, embedder, target_types=("nonsense",))


class _FakeEmbedder:
    """Stands in for a second model: another name and dimension, deterministic vectors."""

    def __init__(self, name: str, dimension: int) -> None:
        self.model_name, self.dimension = name, dimension

    def encode(self, texts, *, batch_size: int = 64) -> np.ndarray:
        rng = np.random.default_rng(len(texts))
        out = rng.standard_normal((len(texts), self.dimension)).astype(np.float32)
        return out / np.linalg.norm(out, axis=1, keepdims=True)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode([text])[0]

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)


def test_model_change_is_detected_and_rebuild_switches(stores: Stores, embedder) -> None:
    _add_facts(stores, FACTS)
    embed_pending(stores, embedder)
    other = _FakeEmbedder("BAAI/bge-base-en-v1.5", 768)
    with pytest.raises(IndexModelMismatch) as caught:
        check_index_model(stores, other)  # type: ignore[arg-type]
    message = str(caught.value)
    assert "all-MiniLM-L6-v2" in message and "384" in message
    assert "BAAI/bge-base-en-v1.5" in message and "768" in message
    assert "nexus-memory rebuild-index" in message
    with pytest.raises(IndexModelMismatch):
        embed_pending(stores, other)  # type: ignore[arg-type]
    with pytest.raises(IndexModelMismatch):
        VectorIndex(stores, other.model_name, other.dimension)

    # Switch: the index now serves the 768-d model (empty until embedded), both models coexist.
    assert rebuild_index(stores, other.model_name, other.dimension) == 0
    assert embed_pending(stores, other).rows == 4  # type: ignore[arg-type]
    assert stores.conn.execute("SELECT count(*) FROM embeddings").fetchone()[0] == 8
    search = VectorIndex(stores, other.model_name, other.dimension)
    assert len(search.search(other.encode_query("x"), 3)) == 3
    # And back, rebuilt from the canonical rows without re-embedding.
    assert rebuild_index(stores, embedder.model_name, embedder.dimension) == 4
    check_index_model(stores, embedder)
    search = VectorIndex(stores, embedder.model_name, embedder.dimension)
    assert search.search(embedder.encode_query("Alice's employer"), 1)[0][0] == "f1"


def test_rebuild_index_builds_ann_above_threshold(stores: Stores, embedder) -> None:
    _add_facts(stores, FACTS)
    embed_pending(stores, embedder)
    assert rebuild_index(stores, embedder.model_name, embedder.dimension, ann_threshold=3) == 4
    assert (ann_root(stores.data_dir, embedder.model_name) / "fact" / "CURRENT").exists()
    search = VectorIndex(stores, embedder.model_name, embedder.dimension)
    assert search.search(embedder.encode_query("Alice's employer"), 1)[0][0] == "f1"


def test_fact_is_embedded_with_its_source_message_and_reembed_refreshes(stores: Stores, embedder) -> None:
    """An atomic fact ("It was Matt Patterson.") gets its message's context; reembed redoes old vectors."""
    event = parse_event(
        {
            "platform": "imessage",
            "sender_id": "+15550100",
            "sender_name": "Melanie",
            "content": "The concert last night was amazing! It was Matt Patterson, so talented.",
            "as_of": 1_700_000_000_000,
            "id": "m1",
        }
    )
    with stores.transaction():
        append_event(stores, event)
    _add_facts(stores, [("f1", "It was Matt Patterson.", "imessage", 1_000, "t1")])
    stores.conn.execute("UPDATE facts SET source_event_id = ? WHERE id = 'f1'", (event.id,))
    embed_pending(stores, embedder)
    stored = np.frombuffer(stores.conn.execute("SELECT embedding FROM embeddings").fetchone()[0], "<f4")
    with_context = embedder.encode([f"It was Matt Patterson.\nMelanie: {event.content}"])[0]
    np.testing.assert_allclose(stored, with_context, atol=1e-5)
    query = embedder.encode_query("Which concert did Melanie go to?")
    # An old-style vector (the bare text) is replaced by reembed, and the index follows.
    bare = embedder.encode(["It was Matt Patterson."])[0]
    assert float(stored @ query) > float(bare @ query)
    stores.conn.execute("UPDATE embeddings SET embedding = ?", (bare.tobytes(),))
    assert reembed(stores, embedder).rows == 1
    stored = np.frombuffer(stores.conn.execute("SELECT embedding FROM embeddings").fetchone()[0], "<f4")
    np.testing.assert_allclose(stored, with_context, atol=1e-5)
    search = VectorIndex(stores, embedder.model_name, embedder.dimension)
    assert search.search(query, 1)[0][0] == "f1"


def test_reembed_embeds_with_the_worker_beside_this_process(
    stores: Stores, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexus_memory.embeddings import ahead

    facts = [
        (f"f{i}", f"{name} moved to {city} in spring", "imessage", 1_000 + i, "t1")
        for i, (name, city) in enumerate([("Ana", "Lisbon"), ("Ben", "Oslo"), ("Cleo", "Quito"), ("Dev", "Pune")])
    ]
    _add_facts(stores, facts)
    ahead.ahead_for(embedder).close()  # none left from an earlier test
    monkeypatch.setattr(ahead, "START_AT_TEXTS", 2)  # a worker for a handful of texts, as for a store's worth
    assert reembed(stores, embedder).rows == 4
    worker = ahead.ahead_for(embedder)._worker
    assert worker is not None and worker.poll() is None  # started by the reembed, idle now
    stored = {
        r[0]: np.frombuffer(r[1], "<f4")
        for r in stores.conn.execute("SELECT target_id, embedding FROM embeddings WHERE model = ?", (IDENTITY,))
    }
    expected = embedder.encode([text for _, text, *_ in facts])
    cosines = [float(stored[fid] @ expected[i]) for i, (fid, *_) in enumerate(facts)]
    assert min(cosines) > 0.9999
    ahead.ahead_for(embedder).close()
    assert worker.wait(timeout=60) == 0


def test_fact_embedding_text() -> None:
    assert fact_embedding_text("Nate keeps turtles.", None, None) == "Nate keeps turtles."
    assert fact_embedding_text("f", "Nate", "Yes!") == "f\nNate: Yes!"
    assert fact_embedding_text("f", None, "Yes!") == "f\nYes!"
    assert fact_embedding_text("f", "Nate", "x" * 600).endswith(": " + "x" * 500)  # FACT_CONTEXT_CHARS
    # The question: up to its last '?', at most its last 200 characters; a message without one adds nothing.
    asked = fact_embedding_text("f", "Nate", "No, not really.", "Joanna", "Nice pics! Is it hard? Tell me.")
    assert asked == "f\nNate: No, not really.\nJoanna: Nice pics! Is it hard?"
    assert fact_embedding_text("f", "Nate", "Sure.", "Joanna", "Great news.") == "f\nNate: Sure."
    long_question = fact_embedding_text("f", "Nate", "Yes.", "Joanna", "y" * 300 + "?")
    assert long_question.endswith("\nJoanna: " + "y" * 199 + "?")


def test_fact_answering_a_question_is_embedded_with_it(stores: Stores) -> None:
    """The message before a fact's message goes along when someone else asked a question in it."""

    events = [
        say(stores, "q", "Joanna", "Cute turtles! Is it hard to take care of them?", 1_000),
        say(stores, "a", "Nate", "No, not really. Just keep their area clean. Want pics?", 2_000),
        say(stores, "more", "Nate", "Also feed them properly?", 3_000),
        say(stores, "later", "Joanna", "Back from the trip.", 9_000, session="s2"),
    ]
    _add_facts(stores, [(f"f-{e}", f"fact {e}", "imessage", 1_000, "t1") for e in ("a", "more", "later")])
    for name, event_id in zip(("a", "more", "later"), events[1:], strict=True):
        stores.conn.execute("UPDATE facts SET source_event_id = ? WHERE id = ?", (event_id, f"f-{name}"))
    texts = {row[0]: row[1] for row in step._pending(stores.conn, "fact", "m", None)}
    assert texts["f-a"] == (
        "fact a\nNate: No, not really. Just keep their area clean. Want pics?\n"
        "Joanna: Cute turtles! Is it hard to take care of them?"
    )
    # The message before asks, but it is Nate's own: not a question he is answering.
    assert texts["f-more"] == "fact more\nNate: Also feed them properly?"
    # In another session the message before (though it asks) is not what this one answers.
    assert texts["f-later"] == "fact later\nJoanna: Back from the trip."


def test_vectors_of_a_changed_text_are_found_and_reembed_clears_them(stores: Stores, embedder) -> None:
    _add_facts(stores, FACTS)
    embed_pending(stores, embedder)
    model = embedder.model_name
    assert stale_fact_vectors(stores.conn, model) == StaleVectors(checked=len(FACTS), stale=0, unknown=0)
    # One vector made from another text (the recipe changed since), one from before hashes were kept.
    stores.conn.execute("UPDATE embeddings SET text_hash = 'older-recipe' WHERE target_id = 'f1'")
    stores.conn.execute("UPDATE embeddings SET text_hash = NULL WHERE target_id = 'f2'")
    assert stale_fact_vectors(stores.conn, model) == StaleVectors(checked=len(FACTS), stale=1, unknown=1)
    assert stale_fact_vectors(stores.conn, model, sample=1).checked == 1
    reembed(stores, embedder)
    assert stale_fact_vectors(stores.conn, model) == StaleVectors(checked=len(FACTS), stale=0, unknown=0)


def test_a_version_1_embeddings_store_gains_text_hash(settings) -> None:
    """Stores made before text hashes: the migration adds the column, vectors stay (hash unknown)."""
    with Stores(settings) as stores:
        _add_facts(stores, FACTS[:1])
        stores.conn.execute(
            "INSERT INTO embeddings(id, target_type, target_id, model, embedding, dimension, created_at) "
            "VALUES ('e1', 'fact', 'f1', 'm', zeroblob(8), 2, 0)"
        )
    path = settings.data_dir / "embeddings.db"
    raw = db.connect(path)
    raw.execute("ALTER TABLE embeddings DROP COLUMN text_hash")
    raw.execute("PRAGMA user_version = 1")
    raw.close()
    with Stores(settings) as stores:
        assert stores.versions["embeddings"] == 2
        assert [tuple(r) for r in stores.conn.execute("SELECT id, text_hash FROM embeddings")] == [("e1", None)]
        assert stale_fact_vectors(stores.conn, "m").unknown == 1


def test_missing_model_fails_clearly() -> None:
    with pytest.raises(RuntimeError, match="not available offline"):
        get_embedder("nexus-test/definitely-not-a-cached-model")


def test_the_recipe_is_part_of_the_vector_identity() -> None:
    assert split_identity("all-MiniLM-L6-v2+bf16") == ("all-MiniLM-L6-v2", "bf16")
    assert split_identity("sentence-transformers/all-MiniLM-L6-v2") == ("all-MiniLM-L6-v2", None)
    assert split_identity("some/model+x") == ("some/model+x", None)  # not a recipe: part of the name
    assert vector_identity("all-MiniLM-L6-v2", "fp32") == "all-MiniLM-L6-v2"  # as stored before recipes
    assert vector_identity("all-MiniLM-L6-v2", "bf16") == "all-MiniLM-L6-v2+bf16"
    assert vector_identity("all-MiniLM-L6-v2", "int8") == "all-MiniLM-L6-v2+int8"
    assert split_identity("all-MiniLM-L6-v2+int8") == ("all-MiniLM-L6-v2", "int8")
    with pytest.raises(ValueError):
        vector_identity("all-MiniLM-L6-v2", "auto")
    assert resolve_precision("auto") == ("bf16" if native_bf16() else "fp32")  # int8 only when asked for


def test_bf16_vectors_are_stored_under_their_own_identity_and_never_mixed(stores: Stores, settings, embedder) -> None:
    _add_facts(stores, FACTS[:2])
    with stores.transaction():
        stores.conn.execute(
            "INSERT INTO entities(id, name, normalized, type, source, created_at, updated_at, last_seen) "
            "VALUES ('e1', 'Alice Smith', 'alice smith', 'person', 'user', 0, 0, 10)"
        )
    fp32 = get_embedder(settings=replace(settings, embed_precision="fp32"))
    bf16 = get_embedder(settings=replace(settings, embed_precision="bf16"))
    assert (fp32.model_name, bf16.model_name) == ("all-MiniLM-L6-v2", "all-MiniLM-L6-v2+bf16")
    assert get_embedder("all-MiniLM-L6-v2+bf16") is bf16  # recall asks for the index's identity by name
    assert bf16.base_model == fp32.base_model and bf16.precision == "bf16"
    embed_pending(stores, fp32, target_types=("fact", "entity"))
    # An explicitly configured other recipe is refused, with the way to re-embed.
    configured_bf16 = Stores(replace(settings, embed_precision="bf16"))
    with configured_bf16, pytest.raises(IndexModelMismatch, match="rebuild-index --reembed"):
        embed_pending(configured_bf16, bf16)
    # auto keeps the store's recipe: new facts get fp32 vectors, whatever auto gives on this CPU.
    auto_settings = replace(settings, embed_precision="auto")
    auto = get_embedder(settings=auto_settings)
    assert auto.model_name == vector_identity("all-MiniLM-L6-v2", resolve_precision("auto"))
    _add_facts(stores, FACTS[2:3])
    with Stores(auto_settings) as auto_stores:
        assert step.embedder_for_store(auto_stores, auto) is fp32
        assert embed_pending(auto_stores, auto).rows == 1
    models = {r[0] for r in stores.conn.execute("SELECT model FROM embeddings")}
    assert models == {"all-MiniLM-L6-v2"}
    # The reembed path moves the store to bf16: every vector of the served identity is bf16, and asked for
    # facts it embeds the entities too (they had fp32 vectors, and would drop out of the index).
    assert reembed(stores, bf16).by_type == {"fact": 3, "entity": 1}
    assert index_state(stores.conn) == ("all-MiniLM-L6-v2+bf16", 384)
    rows = stores.conn.execute(
        "SELECT target_id, embedding FROM embeddings WHERE model = ? AND target_type = 'fact'", (bf16.model_name,)
    )
    vectors = {r[0]: np.frombuffer(r[1], dtype=np.float32) for r in rows}
    assert sorted(vectors) == ["f1", "f2", "f3"]
    texts = {fid: text for fid, text, *_ in FACTS}
    exact = fp32.encode([texts[fid] for fid in sorted(vectors)])
    made = np.stack([vectors[fid] for fid in sorted(vectors)])
    assert np.min(np.sum(made * exact, axis=1)) > 0.999 and not np.array_equal(made, exact)  # near fp32, not it
    with Stores(auto_settings) as auto_stores:
        assert embed_pending(auto_stores, auto).rows == 0  # auto now follows the store to bf16


def test_a_write_to_a_bf16_store_goes_through_the_export_only_where_it_matches_bf16(
    stores: Stores, embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    encoder = embedder.prepare_query_encoder()
    assert encoder is not None and encoder.recipe_parity["bf16"] >= query_encoder.PARITY_MIN_COSINE
    model = embedder.model
    bf16 = Embedder("all-MiniLM-L6-v2+bf16", model)
    _add_facts(stores, FACTS[:1])
    embed_pending(stores, bf16)  # the store is bf16 now

    def no_torch(name: str) -> None:
        raise AssertionError(f"loaded {name} for one write")

    monkeypatch.setattr(embedding_model, "_load_model", no_torch)
    fresh = Embedder("all-MiniLM-L6-v2+bf16", None, query_backend="onnx", encoder=encoder)
    _add_facts(stores, FACTS[1:2])
    assert step.embed_facts_now(stores, fresh, ["f2"]).rows == 1
    [(stored,)] = stores.conn.execute("SELECT embedding FROM embeddings WHERE target_id = 'f2'").fetchall()
    assert float(np.frombuffer(stored, dtype="<f4") @ bf16.encode([FACTS[1][1]])[0]) >= query_encoder.PARITY_MIN_COSINE
    # An export with no bf16 parity on record does not stand in for bf16: the model embeds the write.
    monkeypatch.setattr(encoder, "recipe_parity", {"fp32": 1.0})
    _add_facts(stores, FACTS[2:3])
    with pytest.raises(AssertionError, match="for one write"):
        step.embed_facts_now(stores, fresh, ["f3"])


def test_int8_vectors_are_their_texts_alone_under_their_own_identity_and_never_mixed(stores: Stores, settings) -> None:
    int8 = get_embedder(settings=replace(settings, embed_precision="int8"))
    fp32 = get_embedder(settings=replace(settings, embed_precision="fp32"))
    assert (int8.model_name, int8.precision, int8.base_model) == ("all-MiniLM-L6-v2+int8", "int8", fp32.base_model)
    assert get_embedder("all-MiniLM-L6-v2+int8") is int8  # recall asks for the index's identity by name
    texts = [f"{name} talked about {topic} " * reps for name, topic, reps in _MIXED_TEXTS]
    together = int8.encode(texts)
    # int8 activations are scaled per model call: a vector is its text's alone, whatever is embedded beside it.
    np.testing.assert_array_equal(together, np.concatenate([int8.encode([text]) for text in texts]))
    cosines = np.sum(together * fp32.encode(texts), axis=1)
    assert float(cosines.min()) > 0.97 and float(cosines.max()) < 0.9999  # near float32, not it
    np.testing.assert_allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)
    _add_facts(stores, FACTS[:2])
    embed_pending(stores, fp32)
    configured_int8 = Stores(replace(settings, embed_precision="int8"))
    with configured_int8, pytest.raises(IndexModelMismatch, match="rebuild-index --reembed"):
        embed_pending(configured_int8, int8)  # an fp32 store is not given int8 vectors
    assert reembed(stores, int8).by_type == {"fact": 2}
    assert index_state(stores.conn) == ("all-MiniLM-L6-v2+int8", 384)
    stored = stores.conn.execute(
        "SELECT embedding FROM embeddings WHERE model = ? AND target_id = 'f1'", ("all-MiniLM-L6-v2+int8",)
    )
    np.testing.assert_array_equal(np.frombuffer(stored.fetchone()[0], dtype="<f4"), int8.encode([FACTS[0][1]])[0])
    with Stores(replace(settings, embed_precision="fp32")) as configured_fp32, pytest.raises(IndexModelMismatch):
        embed_pending(configured_fp32, fp32)  # nor an int8 store float32 ones


def test_the_int8_graph_is_made_once_reproducibly_checked_and_refused_when_its_check_failed(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = "all-MiniLM-L6-v2"
    model = get_embedder(base).model
    # The process's cache holds the graph made by any earlier make (or makes it now); one made again from the
    # installed weights is the same file.
    usual = query_encoder.read_check(embedding_model._int8_dir(base, None))
    if usual is None:
        get_embedder(f"{base}+int8").prepare_documents()
        usual = query_encoder.read_check(embedding_model._int8_dir(base, None))
    made = embedding_model.int8_documents(base, lambda: model, tmp_path / "a")
    folder = embedding_model._int8_dir(base, tmp_path / "a")
    record = query_encoder.read_check(folder)
    assert record is not None and record["ok"] and record["int8_format"] == embedding_model.INT8_FORMAT
    assert embedding_model.INT8_MIN_COSINE <= record["parity_min_cosine"] < query_encoder.PARITY_MIN_COSINE
    assert record["int8_products"] == 36  # 6 layers, each with 4 attention and 2 feed-forward weight products
    assert hashlib.sha256((folder / query_encoder.WEIGHTS).read_bytes()).hexdigest() == record["weights_sha256"]
    assert (record["onnx_sha256"], record["weights_sha256"]) == (usual["onnx_sha256"], usual["weights_sha256"])

    def no_make(*args: object) -> None:
        raise AssertionError("made the int8 graph again")

    monkeypatch.setattr(embedding_model, "_make_int8", no_make)
    again = embedding_model.int8_documents(base, no_make, tmp_path / "a")  # opened from the cache, no torch
    np.testing.assert_array_equal(again.encode(["kitchen sink"]), made.encode(["kitchen sink"]))
    monkeypatch.setattr(embedding_model, "_load_model", no_make)  # an int8 store's process needs no torch
    graph_only = Embedder(f"{base}+int8", None, documents=again)
    np.testing.assert_array_equal(graph_only.encode(["kitchen sink"]), made.encode(["kitchen sink"]))
    failed = tmp_path / "b" / "onnx" / folder.name
    shutil.copytree(folder, failed)
    (failed / "check.json").write_text(json.dumps({**record, "ok": False, "parity_min_cosine": 0.5}))
    with pytest.raises(RuntimeError, match="failed its check"):
        embedding_model.int8_documents(base, no_make, tmp_path / "b")
