"""Recall engine: each strategy alone, filters (before top-k), budgets, provenance, hostile input."""

from __future__ import annotations

import hashlib
import json
import re
import threading
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime

import numpy as np
import pytest

from nexus_memory.core import db
from nexus_memory.core.config import load_settings
from nexus_memory.core.ids import now_ms, ulid
from nexus_memory.core.stores import Stores
from nexus_memory.embeddings.vectors.index import VectorIndex
from nexus_memory.embeddings.vectors.ivf import build_ivf
from nexus_memory.identity import store as identity
from nexus_memory.lifecycle import corrections
from nexus_memory.recall import RecallResponse, recall, strategies
from nexus_memory.recall.engine import BUDGETS, TOOL_PLATFORM
from nexus_memory.recall.fusion import RRF_K, STRATEGY_WEIGHTS
from nexus_memory.recall.query_entities import without_names

MAY_2023 = int(datetime(2023, 5, 10, 12, tzinfo=UTC).timestamp() * 1000)
JUNE_2023 = int(datetime(2023, 6, 20, 12, tzinfo=UTC).timestamp() * 1000)
REFERENCE = int(datetime(2024, 3, 13, 12, tzinfo=UTC).timestamp() * 1000)
DAY = 86_400_000


# --- a deterministic stand-in for the embedding model ------------------------------------------


class FakeEmbedder:
    """Bag of words hashed into 256 dims: texts sharing words are similar, others orthogonal.

    Implements the Embedder interface (model_name, dimension, encode, encode_query, encode_queries).
    """

    model_name = "fake-bow"
    dimension = 256
    _stop = frozenset(
        [
            "a",
            "an",
            "the",
            "is",
            "are",
            "was",
            "were",
            "to",
            "of",
            "in",
            "on",
            "at",
            "and",
            "or",
            "did",
            "does",
            "do",
            "what",
            "where",
            "when",
            "who",
            "how",
            "with",
            "for",
            "about",
            "by",
            "from",
            "i",
            "you",
            "he",
            "she",
            "it",
            "we",
            "they",
            "my",
        ]
    )

    def _vector(self, text: str) -> np.ndarray:
        vector = np.zeros(self.dimension, np.float32)
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            if word in self._stop:
                continue
            word = word[:-1] if word.endswith("s") and len(word) > 3 else word
            slot = int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimension
            vector[slot] += 1.0
        norm = float(np.linalg.norm(vector))
        if norm == 0:
            vector[0] = 1.0  # a constant direction for empty texts, like a real model's bias
            return vector
        return vector / norm

    def encode(self, texts: Sequence[str], *, batch_size: int = 64) -> np.ndarray:
        return np.stack([self._vector(t) for t in texts]) if texts else np.empty((0, self.dimension), np.float32)

    def encode_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.encode(texts)


# --- plain-SQL helpers to put rows in the stores -----------------------------------------------


def add_entity(stores: Stores, name: str, type: str = "person", aliases: Sequence[str] = ()) -> str:
    entity_id = identity.create_entity(stores.conn, name, type, source="inferred")
    for alias in aliases:
        identity.add_alias(stores.conn, entity_id, alias, "nickname")
    return entity_id


def add_fact(
    stores: Stores,
    text: str,
    *,
    as_of: int = MAY_2023,
    platform: str | None = "imessage",
    thread_id: str | None = "t1",
    session_id: str | None = "s1",
    entities: Sequence[str] = (),
    source_event_id: str | None = None,
    metadata: dict | None = None,
) -> str:
    fact_id = ulid()
    stores.conn.execute(
        """INSERT INTO facts (id, text, as_of, ingested_at, source_event_id, metadata, created_at,
               platform, thread_id, session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
        (
            fact_id,
            text,
            as_of,
            as_of,
            source_event_id or f"ev-{fact_id}",
            json.dumps(metadata or {}),
            now_ms(),
            platform,
            thread_id,
            session_id,
        ),
    )
    for entity_id in entities:
        stores.conn.execute(
            "INSERT INTO fact_entities (fact_id, entity_id, as_of) VALUES (?, ?, ?)", (fact_id, entity_id, as_of)
        )
    return fact_id


def add_causal(stores: Stores, cause: str, effect: str, strength: float = 0.9) -> None:
    stores.conn.execute(
        "INSERT INTO causal_links (from_fact_id, to_fact_id, strength, created_at) VALUES (?, ?, ?, ?)",
        (cause, effect, strength, now_ms()),
    )


def _episode(stores: Stores, platform: str, end_time: int) -> str:
    stores.conn.execute(
        """INSERT OR IGNORE INTO episode_definitions (id, name, strategy, params, created_at)
           VALUES ('def-test', 'test', 'consolidation', '{}', 0)"""
    )
    stores.conn.execute(
        """INSERT OR IGNORE INTO analysis_types (id, name, version, output_type, created_at)
           VALUES ('observation_v1', 'observation_v1', '1.0', 'freeform', 0)"""
    )
    episode_id = ulid()
    stores.conn.execute(
        """INSERT INTO episodes (id, definition_id, platform, thread_id, start_time, end_time, event_count,
               created_at) VALUES (?, 'def-test', ?, 't1', ?, ?, 1, 0)""",
        (episode_id, platform, end_time - DAY, end_time),
    )
    return episode_id


def add_observation(
    stores: Stores,
    text: str,
    fact_ids: Sequence[str] = (),
    *,
    platform: str = "imessage",
    end_time: int = JUNE_2023,
    is_stale: bool = False,
    parent_id: str | None = None,
) -> str:
    run_id = ulid()
    stores.conn.execute(
        """INSERT INTO analysis_runs (id, analysis_type_id, episode_id, parent_id, status, output_text,
               is_stale, created_at) VALUES (?, 'observation_v1', ?, ?, 'completed', ?, ?, ?)""",
        (run_id, _episode(stores, platform, end_time), parent_id, text, is_stale, end_time),
    )
    for fact_id in fact_ids:
        stores.conn.execute("INSERT INTO observation_facts (analysis_run_id, fact_id) VALUES (?, ?)", (run_id, fact_id))
    return run_id


def add_mental_model(
    stores: Stores,
    name: str,
    description: str,
    *,
    subtype: str | None = None,
    entity_id: str | None = None,
    parent_id: str | None = None,
    updated_at: int = JUNE_2023,
) -> str:
    model_id = ulid()
    stores.conn.execute(
        """INSERT INTO mental_models (id, name, description, subtype, entity_id, parent_id, created_at, updated_at)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
        (model_id, name, description, subtype, entity_id, parent_id, updated_at, updated_at),
    )
    return model_id


def embed_all(stores: Stores, embedder: object) -> None:
    from nexus_memory.embeddings.step import embed_pending

    embed_pending(stores, embedder, target_types=("fact", "observation", "mental_model", "entity"))


def access_count(stores: Stores, table: str, row_id: str) -> int:
    return stores.conn.execute(f"SELECT access_count FROM {table} WHERE id = ?", (row_id,)).fetchone()[0]


def ids(response: RecallResponse) -> list[str]:
    return [r.id for r in response.results]


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture
def fake() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def world(stores: Stores) -> dict[str, str]:
    return build_world(stores)


def build_world(stores: Stores) -> dict[str, str]:
    """A small memory: people, facts on two platforms, a causal link, an observation, a model."""
    w: dict[str, str] = {}
    w["sarah"] = add_entity(stores, "Sarah Connor", aliases=["Sare"])
    w["tyler"] = add_entity(stores, "Tyler")
    w["anthropic"] = add_entity(stores, "Anthropic", "organization")
    w["job"] = add_fact(
        stores,
        "Tyler works at Anthropic as an engineer",
        entities=[w["tyler"], w["anthropic"]],
        source_event_id="ev-job",
    )
    w["lab"] = add_fact(
        stores, "He started a new position at the research lab", entities=[w["tyler"]], as_of=MAY_2023 - 30 * DAY
    )
    w["hike"] = add_fact(
        stores,
        "Sarah went hiking in the Alps with her sister",
        entities=[w["sarah"]],
        platform="discord",
        thread_id="t2",
        session_id="s2",
        as_of=JUNE_2023,
    )
    w["knee"] = add_fact(
        stores,
        "Sarah injured her knee on the trail",
        entities=[w["sarah"]],
        platform="discord",
        thread_id="t2",
        session_id="s2",
        as_of=JUNE_2023 + DAY,
    )
    w["physio"] = add_fact(
        stores,
        "Appointments with a physiotherapist were booked for rehabilitation",
        platform="discord",
        thread_id="t2",
        session_id="s3",
        as_of=JUNE_2023 + 2 * DAY,
    )
    add_causal(stores, w["knee"], w["physio"], 0.8)
    w["pasta"] = add_fact(
        stores,
        "The user likes pasta carbonara",
        platform="gmail",
        thread_id="t3",
        session_id="s4",
        as_of=MAY_2023 + DAY,
    )
    w["obs"] = add_observation(
        stores, "Sarah is an outdoor person who hikes often", [w["hike"], w["knee"]], platform="discord", is_stale=True
    )
    w["model"] = add_mental_model(
        stores, "Tyler career", "Tyler is an engineer building language models at Anthropic", entity_id=w["tyler"]
    )
    return w


@pytest.fixture
def embedded(stores: Stores, world: dict[str, str], fake: FakeEmbedder) -> dict[str, str]:
    embed_all(stores, fake)
    return world


# --- each strategy alone -------------------------------------------------------------------------


def test_semantic_alone_low_budget(stores: Stores, embedded: dict[str, str], fake: FakeEmbedder) -> None:
    response = recall(stores, "carbonara pasta", budget="low", embedder=fake, scope=["facts"])
    assert response.results[0].id == embedded["pasta"]
    assert all(set(r.ranks) == {"semantic"} for r in response.results)
    assert response.results[0].ranks == {"semantic": 1}
    # 2 shared words of 2 (query) and 4 (user, like, pasta, carbonara): 2 / sqrt(2 * 4)
    assert response.results[0].metadata["scores"]["semantic"] == pytest.approx(2 / 8**0.5, abs=1e-5)


def test_keyword_alone_without_vectors(stores: Stores, world: dict[str, str]) -> None:
    # No embeddings in the store: semantic is skipped without loading a model; no entity named.
    response = recall(stores, "carbonara", scope=["facts"])
    assert ids(response) == [world["pasta"]]
    assert response.results[0].ranks == {"keyword": 1}
    assert "semantic" not in response.timings_ms


def test_keyword_ranks_only_the_newest_matches(stores: Stores, monkeypatch: pytest.MonkeyPatch) -> None:
    """BM25 ranks the newest KEYWORD_WINDOW matching facts (hidden ones not counted); equal ranks: older first."""
    strong = add_fact(stores, "pottery pottery pottery")
    same = [add_fact(stores, "a pottery class on a rainy tuesday") for _ in range(3)]
    hidden = add_fact(stores, "pottery again")
    corrections.supersede(stores.conn, hidden, strong, now_ms())
    keyword = [r.id for r in recall(stores, "pottery", scope=["facts"], touch=False).results]
    assert keyword == [strong, *same]
    monkeypatch.setattr(strategies, "KEYWORD_WINDOW", 3)
    assert [r.id for r in recall(stores, "pottery", scope=["facts"], touch=False).results] == same


def test_low_budget_without_vectors_falls_back_to_keyword(stores: Stores, world: dict[str, str]) -> None:
    response = recall(stores, "carbonara", budget="low", scope=["facts"])
    assert ids(response) == [world["pasta"]]


def test_entity_alone_by_alias_and_recency(stores: Stores, world: dict[str, str]) -> None:
    # "Sare" is only an alias: no fact text contains it, so only the entity strategy can find them.
    response = recall(stores, "Sare", scope=["facts"])
    assert ids(response) == [world["knee"], world["hike"]]  # newest first
    assert [r.ranks for r in response.results] == [{"entity": 1}, {"entity": 2}]


def test_entity_ranking_prefers_facts_linking_more_query_entities(stores: Stores, world: dict[str, str]) -> None:
    # Both Tyler facts link Tyler; only the job fact also links Anthropic.
    response = recall(stores, "Tyler and Anthropic", scope=["facts"])
    assert response.results[0].id == world["job"]
    assert response.results[0].ranks["entity"] == 1
    assert response.results[0].metadata["scores"]["entity"] == 2.0


def test_busy_entity_adds_no_list_unless_asked_for(stores: Stores) -> None:
    """An entity linked to most facts (the user, a speaker) does not tell facts apart: no entity list."""
    speaker = add_entity(stores, "Caroline")
    facts = [
        add_fact(stores, f"Caroline mentioned item {i}", entities=[speaker], as_of=MAY_2023 + i * DAY)
        for i in range(60)
    ]
    research = add_fact(stores, "She is researching adoption agencies", entities=[speaker])
    response = recall(stores, "What did Caroline research?", scope=["facts"], budget="mid")
    assert all("entity" not in r.ranks for r in response.results)
    assert ids(response)[0] == research  # the keyword list alone decides
    # A query about nothing but the entity, and the caller's `entity` filter, still get its facts.
    assert all("entity" in r.ranks for r in recall(stores, "Caroline?", scope=["facts"]).results)
    filtered = recall(stores, "What did Caroline research?", scope=["facts"], entity="Caroline")
    assert {r.id for r in filtered.results if "entity" in r.ranks} >= {research, *facts[-5:]}


class RecordingEmbedder(FakeEmbedder):
    """Remembers the query texts it was asked to embed together."""

    def __init__(self) -> None:
        self.query_batches: list[list[str]] = []

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.query_batches.append(list(texts))
        return super().encode_queries(texts)


def test_busy_name_is_averaged_out_of_the_query_embedding(stores: Stores) -> None:
    """A busy speaker's name in every fact would pull the query toward whatever repeats it most."""
    speaker = add_entity(stores, "Caroline Smith")
    noise = [
        add_fact(
            stores,
            f"Caroline told Caroline's friend Caroline felt fine on day {i}",
            entities=[speaker],
            as_of=MAY_2023 + i * DAY,
        )
        for i in range(60)
    ]
    agencies = add_fact(stores, "Caroline is researching adoption agencies", entities=[speaker])
    embedder = RecordingEmbedder()
    embed_all(stores, embedder)
    response = recall(stores, "Caroline's adoption research?", scope=["facts"], budget="low", embedder=embedder)
    # Embedded with and without the name (a person's first name counts, possessive included).
    assert embedder.query_batches[-1] == ["Caroline's adoption research?", "adoption research?"]
    assert ids(response)[0] == agencies
    # One vector, the normalised mean of the two: the fact's score shows it.
    with_name, without = embedder.encode(["Caroline's adoption research?", "adoption research?"])
    mean = (with_name + without) / np.linalg.norm(with_name + without)
    expected = float(mean @ embedder.encode(["Caroline is researching adoption agencies"])[0])
    assert response.results[0].metadata["scores"]["semantic"] == pytest.approx(expected, abs=1e-5)
    assert len(noise) == 60
    # Nothing but the name, or a name that is not busy: the query is embedded as it is.
    recall(stores, "Caroline?", scope=["facts"], budget="low", embedder=embedder)
    assert embedder.query_batches[-1] == ["Caroline?"]
    other = add_entity(stores, "Melanie")
    add_fact(stores, "Melanie paints", entities=[other])
    recall(stores, "What does Melanie paint?", scope=["facts"], budget="low", embedder=embedder)
    assert embedder.query_batches[-1] == ["What does Melanie paint?"]


class ThreadedEmbedder(FakeEmbedder):
    """Says its query model releases the GIL, as the ONNX one does, and records the thread each query ran on."""

    queries_release_gil = True

    def __init__(self) -> None:
        self.threads: list[int] = []

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        self.threads.append(threading.get_ident())
        return super().encode_queries(texts)


def test_query_embedded_beside_the_sql_strategies_changes_no_result(
    stores: Stores, embedded: dict[str, str], fake: FakeEmbedder
) -> None:
    """The model runs in a worker thread while keyword and entity search run; the answer is the same."""
    threaded = ThreadedEmbedder()
    cases = [("Sarah knee", "mid"), ("What did Sarah do in June 2023?", "high"), ("Sarah knee", "low")]
    for query, budget in cases:
        inline, beside = (
            recall(stores, query, budget=budget, embedder=model, touch=False, reference_time=REFERENCE)
            for model in (fake, threaded)
        )
        assert beside.results and "semantic" in beside.timings_ms
        assert [(r.id, r.score, r.ranks, r.metadata) for r in beside.results] == [
            (r.id, r.score, r.ranks, r.metadata) for r in inline.results
        ]
    caller = threading.get_ident()
    # A low budget has nothing to run meanwhile: its query is embedded on the caller's thread.
    assert [thread == caller for thread in threaded.threads] == [False, False, True]


def test_the_facts_ivf_scan_runs_beside_the_sql_strategies_and_changes_no_result(
    stores: Stores, embedded: dict[str, str], fake: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With an IVF index, the thread that embeds the query also scans the facts' lists; the search after the
    SQL strategies only names what it found, and the answer is the same."""
    build_ivf(stores.conn, stores.data_dir, fake.model_name, "fact", fake.dimension, nlist=2)
    scanned_on: list[int] = []
    scan = VectorIndex._scan

    def recording(self: VectorIndex, *args: object) -> object:
        scanned_on.append(threading.get_ident())
        return scan(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(VectorIndex, "_scan", recording)
    caller = threading.get_ident()
    # get_context excludes its own session: the first scan runs ahead too; in a store this small the excluded
    # session leaves it short, and the over-fetch after it scans on the caller's thread either way.
    for session, scans in ((None, 1), ("elsewhere", 2)):
        answers, threads = [], []
        for model in (fake, ThreadedEmbedder()):
            options = {"exclude_session_id": session, "touch": False, "reference_time": REFERENCE}
            answers.append(recall(stores, "Sarah knee", embedder=model, **options))
            threads.append([t == caller for t in scanned_on])
            scanned_on.clear()
        inline, beside = answers
        assert beside.results and [(r.id, r.score, r.ranks, r.metadata) for r in beside.results] == [
            (r.id, r.score, r.ranks, r.metadata) for r in inline.results
        ]
        # The worker's first scan is used, not repeated on the caller's thread.
        assert threads == [[True] * scans, [False] + [True] * (scans - 1)]


def test_the_facts_bm25_and_entity_list_run_beside_on_a_reading_handle_and_change_no_result(
    stores: Stores, embedded: dict[str, str], fake: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past KEYWORD_BESIDE_MIN_FACTS the facts' BM25 and the entity list run in a worker thread on a second,
    read-only handle; the answer is the same. Inside a transaction (uncommitted writes only the caller's
    connection sees), in a small store, and while another recall holds the reader, they run inline on the
    caller's connection."""
    ran_on: list[tuple[str, int, bool]] = []
    fts, entity_facts = strategies._fts_facts, strategies._entity_facts

    def recording_fts(ctx: strategies.QueryContext, conn: object = None) -> object:
        ran_on.append(("bm25", threading.get_ident(), conn is not None and conn is not stores.conn))
        return fts(ctx, conn)  # type: ignore[arg-type]

    def recording_entities(ctx: strategies.QueryContext, entity_ids: list[str], conn: object = None) -> object:
        ran_on.append(("entity", threading.get_ident(), conn is not None and conn is not stores.conn))
        return entity_facts(ctx, entity_ids, conn)  # type: ignore[arg-type]

    monkeypatch.setattr(strategies, "_fts_facts", recording_fts)
    monkeypatch.setattr(strategies, "_entity_facts", recording_entities)
    caller = threading.get_ident()
    options = {"embedder": fake, "touch": False, "reference_time": REFERENCE, "scope": ["facts"]}
    inline = recall(stores, "Sarah knee trail", **options)
    assert ran_on == [("bm25", caller, False), ("entity", caller, False)]  # six facts: inline
    monkeypatch.setattr(strategies, "KEYWORD_BESIDE_MIN_FACTS", 0)
    ran_on.clear()
    beside = recall(stores, "Sarah knee trail", **options)
    assert [(name, t == caller, other) for name, t, other in ran_on] == [("bm25", False, True), ("entity", False, True)]
    assert beside.results and [(r.id, r.score, r.ranks, r.metadata) for r in beside.results] == [
        (r.id, r.score, r.ranks, r.metadata) for r in inline.results
    ]
    # The entity list alone (no query term besides the name) and the `entity` filter run beside too, alike.
    for query, extra in (("Sarah", {}), ("knee", {"entity": embedded["sarah"]})):
        monkeypatch.setattr(strategies, "KEYWORD_BESIDE_MIN_FACTS", 10**9)
        alone_inline = recall(stores, query, **options, **extra)
        monkeypatch.setattr(strategies, "KEYWORD_BESIDE_MIN_FACTS", 0)
        ran_on.clear()
        alone_beside = recall(stores, query, **options, **extra)
        assert ("entity", False, True) in [(name, t == caller, other) for name, t, other in ran_on]
        assert alone_beside.results and [(r.id, r.score, r.ranks) for r in alone_beside.results] == [
            (r.id, r.score, r.ranks) for r in alone_inline.results
        ]
    # A failure on the worker reaches the caller, and the reader is free again afterwards.
    monkeypatch.setattr(strategies, "_entity_facts", lambda *args: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        recall(stores, "Sarah knee trail", **options)
    monkeypatch.setattr(strategies, "_entity_facts", recording_entities)
    # The reader is held by another recall: this one does not wait for it.
    reader = strategies._reader(stores)
    assert reader is not None and reader[1].acquire()
    ran_on.clear()
    recall(stores, "Sarah knee trail", **options)
    reader[1].release()
    assert ran_on == [("bm25", caller, False), ("entity", caller, False)]
    # A fact written in an open transaction is found: the keyword search reads through the caller's connection.
    ran_on.clear()
    with stores.transaction():
        uncommitted = add_fact(stores, "Sarah bought new trail shoes for her knee")
        found = [r.id for r in recall(stores, "trail shoes", **options).results]
    assert [(name, t == caller, other) for name, t, other in ran_on] == [("bm25", True, False)] and uncommitted in found


def test_busy_entities_follow_every_write_to_the_store(stores: Stores) -> None:
    """Busy is read once per state of the store: a link written by this connection, committed by another
    (another process's writer) or left uncommitted in a transaction is seen by the next prompt."""
    from nexus_memory.recall.query_entities import BUSY_ENTITY_MIN, busy_entities

    quiet, other = add_entity(stores, "Quinn"), add_entity(stores, "Orla")
    facts = [add_fact(stores, f"Quinn note {n}") for n in range(BUSY_ENTITY_MIN)]
    assert busy_entities(stores.conn, [quiet, other]) == set()
    assert busy_entities(stores.conn, [quiet, other]) == set()  # unchanged store: the links read before
    link = "INSERT INTO fact_entities (fact_id, entity_id, as_of) VALUES (?, ?, ?)"
    stores.conn.executemany(link, [(f, quiet, MAY_2023) for f in facts])  # this connection's write
    assert busy_entities(stores.conn, [quiet, other]) == {quiet}
    with Stores(stores.settings) as elsewhere:  # another connection's commit
        elsewhere.conn.executemany(link, [(f, other, MAY_2023) for f in facts])
    assert busy_entities(stores.conn, [quiet, other]) == {quiet, other}
    try:  # inside a transaction that rolls back: seen while open, gone after
        with stores.transaction():
            stores.conn.execute("DELETE FROM fact_entities WHERE entity_id = ?", (quiet,))
            assert busy_entities(stores.conn, [quiet, other]) == {other}
            raise RuntimeError("roll back")
    except RuntimeError:
        pass
    assert busy_entities(stores.conn, [quiet, other]) == {quiet, other}
    # Recall's access counts (a write that links nothing) keep what was read; a link written after is seen.
    from nexus_memory.recall import query_entities
    from nexus_memory.recall.results import RecallResult, touch_results

    touch_results(stores, [RecallResult(facts[0], "fact", "", 1.0, None, [], [], {}, None, None, None)])
    assert stores.conn.execute("SELECT access_count FROM facts WHERE id = ?", (facts[0],)).fetchone()[0] == 1
    assert query_entities._NEWEST_LINKS[id(stores.conn)][1] == db.store_state(stores.conn)
    stores.conn.execute("DELETE FROM fact_entities WHERE entity_id = ?", (other,))
    assert busy_entities(stores.conn, [quiet, other]) == {quiet}


def test_stems_shared_counts_as_the_tokens_do() -> None:
    """The entity list's count of query stems in a fact (one pattern over an ASCII text) equals cutting every
    token of the text to 5 characters, on random short texts and terms (non-ASCII, digits, underscores)."""
    rng = np.random.default_rng(5)
    letters = list("abcde12 _-'.,\u00c9\u00e9\u0130\u0131\u00df\u00fc\u00a0xAB")
    for _ in range(3000):
        terms = ["".join(rng.choice(list("abcde\u00e91"), size=rng.integers(1, 9))) for _ in range(rng.integers(0, 5))]
        stems = frozenset(t[:5] for t in terms)
        text = "".join(rng.choice(letters, size=rng.integers(0, 60)))
        texts = [text, text[::-1], "", text.upper()]
        expected = [len(stems & {t[:5] for t in strategies.keyword.tokenize(one)}) for one in texts]
        assert strategies._stems_shared(stems)(texts) == expected, (terms, text)
    shared = strategies._stems_shared(frozenset({"hikin", "alps"}))
    assert shared(["Hiking in the ALPS, alpsy hikin_g", "alp", "", "\u00e9 alps"]) == [2, 0, 0, 1]


def test_without_names(stores: Stores) -> None:
    person = add_entity(stores, "Sarah Connor", aliases=["Sare", "Sarah from work"])
    concept = add_entity(stores, "machine learning", "concept")
    assert without_names(stores.conn, "Where does Sarah Connor live?", [person]) == "Where does live?"
    assert without_names(stores.conn, "SARAH CONNOR'S and sare's plans", [person]) == "and plans"
    # A part of a person's name goes only capitalised, as the query matcher finds it; an alias only whole.
    assert without_names(stores.conn, "Sarah's and sarah's work plans", [person]) == "and sarah's work plans"
    assert without_names(stores.conn, "Sarah from work called", [person]) == "called"
    assert without_names(stores.conn, "Sarahs plans", [person]) is None  # a whole word only
    assert without_names(stores.conn, "Sarah Connor?", [person]) is None  # nothing left to search
    assert without_names(stores.conn, "machine learning course", [concept]) == "course"
    assert without_names(stores.conn, "a learning machine", [concept]) is None  # concepts go only whole


def test_causal_alone_only_in_high_budget(stores: Stores, world: dict[str, str]) -> None:
    mid = recall(stores, "knee trail", scope=["facts"], budget="mid")
    assert world["physio"] not in ids(mid)
    high = recall(stores, "knee trail", scope=["facts"], budget="high")
    physio = next(r for r in high.results if r.id == world["physio"])
    assert physio.ranks == {"causal": 1}
    assert high.results[0].id == world["knee"]
    assert "causal" in high.timings_ms


# --- budgets ------------------------------------------------------------------------------------


def test_budgets_choose_strategies_and_limits(stores: Stores, embedded: dict[str, str], fake: FakeEmbedder) -> None:
    assert [BUDGETS[b].limit for b in ("low", "mid", "high")] == [50, 100, 200]
    low = recall(stores, "Sarah knee", budget="low", embedder=fake)
    assert {s for r in low.results for s in r.ranks} == {"semantic"}
    mid = recall(stores, "Sarah knee", budget="mid", embedder=fake)
    assert {s for r in mid.results for s in r.ranks} == {"semantic", "keyword", "entity"}
    high = recall(stores, "Sarah knee", budget="high", embedder=fake)
    assert {s for r in high.results for s in r.ranks} == {"semantic", "keyword", "entity", "causal"}
    assert {"read_prompt", "embed", "semantic", "keyword", "entity", "causal", "total"} <= set(high.timings_ms)
    with pytest.raises(ValueError):
        recall(stores, "x", budget="extreme")
    with pytest.raises(ValueError):
        recall(stores, "x", scope=["memes"])


# --- filters -----------------------------------------------------------------------------------


def test_platform_thread_session_filters(stores: Stores, embedded: dict[str, str], fake: FakeEmbedder) -> None:
    for kwargs, allowed in (
        ({"platform": "discord"}, {embedded["hike"], embedded["knee"], embedded["physio"]}),
        ({"thread_id": "t1"}, {embedded["job"], embedded["lab"]}),
        ({"session_id": "s2"}, {embedded["hike"], embedded["knee"]}),
    ):
        response = recall(
            stores, "Sarah Tyler knee engineer pasta hiking", scope=["facts"], embedder=fake, budget="high", **kwargs
        )
        assert response.results, kwargs
        assert set(ids(response)) <= allowed, kwargs
    response = recall(stores, "Sarah hiking knee", scope=["facts"], embedder=fake, exclude_session_id="s2")
    assert all(r.session_id != "s2" for r in response.results)


def test_time_filters_explicit_and_parsed(stores: Stores, embedded: dict[str, str], fake: FakeEmbedder) -> None:
    june = recall(stores, "Sarah", scope=["facts"], embedder=fake, time_after=JUNE_2023 - DAY)
    assert set(ids(june)) == {embedded["hike"], embedded["knee"], embedded["physio"]} & set(ids(june))
    assert all(r.as_of >= JUNE_2023 - DAY for r in june.results)
    parsed = recall(stores, "what did Tyler do in May 2023?", embedder=fake, reference_time=REFERENCE)
    assert parsed.time_after == int(datetime(2023, 5, 1, tzinfo=UTC).timestamp() * 1000)
    assert parsed.time_before == int(datetime(2023, 6, 1, tzinfo=UTC).timestamp() * 1000) - 1
    assert embedded["job"] in ids(parsed)
    assert embedded["lab"] not in ids(parsed)  # April
    assert all(r.type != "mental_model" for r in parsed.results)  # updated in June
    # "when did ..." has no date expression: no time filter.
    when = recall(stores, "when did Sarah go hiking", embedder=fake, reference_time=REFERENCE)
    assert when.time_after is None and when.time_before is None
    assert embedded["hike"] in ids(when)
    off = recall(stores, "Tyler in May 2023", embedder=fake, parse_dates=False)
    assert off.time_after is None


def test_parsed_date_boosts_facts_explicit_window_filters(stores: Stores) -> None:
    """A date in the query ranks facts in its window first but keeps a near miss; explicit bounds filter."""
    cake = add_fact(stores, "Tyler baked a lemon cake", as_of=MAY_2023)
    bread = add_fact(stores, "Tyler baked sourdough bread", as_of=JUNE_2023)
    parsed = recall(stores, "What did Tyler bake in May 2023?", scope=["facts"], reference_time=REFERENCE)
    assert ids(parsed) == [cake, bread]
    assert parsed.time_after == int(datetime(2023, 5, 1, tzinfo=UTC).timestamp() * 1000)
    may_start, june_start = parsed.time_after, parsed.time_before + 1
    explicit = recall(stores, "What did Tyler bake?", scope=["facts"], time_after=may_start, time_before=june_start - 1)
    assert ids(explicit) == [cake]
    # A date-only query is its window: nothing from outside it.
    assert ids(recall(stores, "May 2023", scope=["facts"], reference_time=REFERENCE)) == [cake]


def test_entity_filter_by_name_alias_id_and_unknown(
    stores: Stores, embedded: dict[str, str], fake: FakeEmbedder
) -> None:
    for value in ("Sarah Connor", "sare", embedded["sarah"]):
        response = recall(stores, "knee hiking engineer pasta", embedder=fake, entity=value, scope=["facts"])
        assert set(ids(response)) == {embedded["hike"], embedded["knee"]}, value
    assert recall(stores, "knee", embedder=fake, entity="Nobody Known").results == []


def test_entity_filter_follows_merges(stores: Stores, embedded: dict[str, str], fake: FakeEmbedder) -> None:
    loser = add_entity(stores, "Sally")
    add_fact(stores, "Sally bought a red bicycle", entities=[loser])
    identity.merge_entities(stores.conn, embedded["sarah"], loser)
    embed_all(stores, fake)
    response = recall(stores, "bicycle", entity="Sally", scope=["facts"], embedder=fake)
    # Sally is Sarah now: the filter covers all of Sarah's facts; the keyword hit leads.
    assert response.results[0].text == "Sally bought a red bicycle"
    assert set(ids(response)[1:]) == {embedded["hike"], embedded["knee"]}
    assert all(e["id"] == embedded["sarah"] for r in response.results for e in r.entities)


def test_filters_apply_before_top_k(stores: Stores, fake: FakeEmbedder) -> None:
    # 120 strong matches elsewhere would fill every strategy's limit (low 50, mid 100) if filters
    # ran after the cut; the one weak match that passes the filter must still be found.
    for i in range(120):
        add_fact(stores, f"quarterly budget review meeting number {i}", platform="slack", session_id="busy")
    weak = add_fact(stores, "budget for the trip was small", platform="gmail", session_id="quiet")
    embed_all(stores, fake)
    for kwargs in (
        {"platform": "gmail"},
        {"session_id": "quiet"},
        {"exclude_session_id": "busy"},
        {"thread_id": "t1", "platform": "gmail"},
    ):
        semantic = recall(stores, "quarterly budget review", budget="low", embedder=fake, scope=["facts"], **kwargs)
        assert ids(semantic) == [weak], kwargs
        assert semantic.results[0].ranks == {"semantic": 1}
    keyword = recall(stores, "quarterly budget review", scope=["facts"], platform="gmail", embedder=fake)
    assert ids(keyword) == [weak] and keyword.results[0].ranks["keyword"] == 1


def test_date_only_query_returns_latest_in_window(stores: Stores, world: dict[str, str]) -> None:
    response = recall(stores, "last week", reference_time=JUNE_2023 + 7 * DAY, scope=["facts"])
    assert ids(response) == [world["physio"], world["knee"], world["hike"]]
    assert response.results[0].ranks == {"recency": 1}


# --- hierarchy, provenance, staleness ----------------------------------------------------------


def test_higher_layers_first_when_they_match(stores: Stores, embedded: dict[str, str], fake: FakeEmbedder) -> None:
    response = recall(stores, "Tyler engineer Anthropic language models", embedder=fake)
    assert response.results[0].type == "mental_model"
    assert response.results[0].id == embedded["model"]
    assert response.results[0].text.startswith("Tyler career: ")
    assert response.results[0].entities == [{"id": embedded["tyler"], "name": "Tyler", "type": "person"}]
    hikes = recall(stores, "outdoor person hikes", embedder=fake)
    assert hikes.results[0].type == "observation"
    assert hikes.results[0].is_stale is True
    # An unrelated query does not pull them forward.
    pasta = recall(stores, "pasta carbonara", embedder=fake)
    assert pasta.results[0].id == embedded["pasta"]


def test_a_type_without_vectors_is_not_searched(
    stores: Stores, embedded: dict[str, str], fake: FakeEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Semantic recall searches each type that has a vector stored, and no other (nothing to find there)."""
    from nexus_memory.lifecycle.forget.vectors import delete_vectors

    searched: list[str] = []
    search = VectorIndex.search

    def recording(self: VectorIndex, query: np.ndarray, k: int, **options: object) -> list[tuple[str, float]]:
        searched.append(str(options["target_type"]))
        return search(self, query, k, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(VectorIndex, "search", recording)
    query = "Tyler engineer Anthropic language models"
    assert recall(stores, query, embedder=fake).results[0].id == embedded["model"]
    assert set(searched) == {"fact", "observation", "mental_model"}
    delete_vectors(stores.conn, {"mental_model": [embedded["model"]]})
    searched.clear()
    without = recall(stores, query, embedder=fake)
    assert set(searched) == {"fact", "observation"}
    assert without.results and all(r.type != "mental_model" or "semantic" not in r.ranks for r in without.results)


def test_only_latest_version_of_observations_and_models(stores: Stores, world: dict[str, str]) -> None:
    newer = add_observation(stores, "Sarah is an outdoor person, recovering from a knee injury", parent_id=world["obs"])
    model_v2 = add_mental_model(stores, "Tyler career", "Tyler leads a team at Anthropic", parent_id=world["model"])
    response = recall(stores, "outdoor person Tyler career Anthropic")
    found = ids(response)
    assert newer in found and world["obs"] not in found
    assert model_v2 in found and world["model"] not in found


def test_provenance_fields(stores: Stores, embedded: dict[str, str], fake: FakeEmbedder) -> None:
    response = recall(stores, "Tyler works at Anthropic", embedder=fake, scope=["facts"])
    job = next(r for r in response.results if r.id == embedded["job"])
    assert job.source_event_ids == ["ev-job"]
    assert sorted(e["name"] for e in job.entities) == ["Anthropic", "Tyler"]
    assert (job.platform, job.thread_id, job.session_id, job.as_of) == ("imessage", "t1", "s1", MAY_2023)
    assert set(job.ranks) == {"semantic", "keyword", "entity"}
    rrf = sum(STRATEGY_WEIGHTS.get(s, 1.0) / (RRF_K + r) for s, r in job.ranks.items())
    assert job.metadata["scores"]["rrf"] == pytest.approx(rrf, abs=1e-6)
    obs = recall(stores, "outdoor person hikes", embedder=fake, scope=["observations"]).results[0]
    assert obs.id == embedded["obs"]
    assert set(obs.source_event_ids) == {f"ev-{embedded['hike']}", f"ev-{embedded['knee']}"}
    assert [e["name"] for e in obs.entities] == ["Sarah Connor"]
    assert (obs.platform, obs.as_of) == ("discord", JUNE_2023)


def test_entities_scope(stores: Stores, embedded: dict[str, str], fake: FakeEmbedder) -> None:
    response = recall(stores, "what about Sare?", scope=["entities"], embedder=fake)
    assert response.results[0].type == "entity"
    assert response.results[0].id == embedded["sarah"]
    assert response.results[0].ranks["entity"] == 1


def test_superseded_facts_are_dropped(stores: Stores, world: dict[str, str]) -> None:
    new = add_fact(stores, "Tyler works at OpenAI now", platform=TOOL_PLATFORM, metadata={"supersedes": world["job"]})
    with stores.transaction():
        corrections.supersede(stores.conn, world["job"], new, now_ms())
    response = recall(stores, "Tyler works", scope=["facts"])
    assert world["job"] not in ids(response)
    assert "Tyler works at OpenAI now" in [r.text for r in response.results]


# --- packing, access counts --------------------------------------------------------------------


def test_max_results_and_max_tokens(stores: Stores, world: dict[str, str]) -> None:
    everything = recall(stores, "Sarah Tyler knee pasta engineer", scope=["facts"], touch=False)
    assert len(everything.results) >= 4
    assert len(recall(stores, "Sarah Tyler knee pasta engineer", scope=["facts"], max_results=2).results) == 2
    budget = sum(max(1, len(r.text) // 4) for r in everything.results[:2])
    packed = recall(stores, "Sarah Tyler knee pasta engineer", scope=["facts"], max_tokens=budget)
    assert sum(max(1, len(r.text) // 4) for r in packed.results) <= budget
    assert ids(packed)[:2] == ids(everything)[:2]


def test_access_counts(stores: Stores, embedded: dict[str, str], fake: FakeEmbedder) -> None:
    recall(stores, "outdoor person hikes knee", embedder=fake, touch=False)
    assert access_count(stores, "facts", embedded["knee"]) == 0
    response = recall(stores, "outdoor person hikes knee", embedder=fake)
    assert access_count(stores, "facts", embedded["knee"]) == 1
    assert access_count(stores, "analysis_runs", embedded["obs"]) == 1
    returned = set(ids(response))
    assert embedded["pasta"] not in returned or access_count(stores, "facts", embedded["pasta"]) == 1
    untouched = stores.conn.execute("SELECT count(*) FROM facts WHERE access_count > 0").fetchone()[0]
    assert untouched == sum(1 for r in response.results if r.type == "fact")


# --- hostile input -----------------------------------------------------------------------------

HOSTILE = [
    "",
    " ",
    '"',
    "'",
    '"""',
    "*",
    "a*",
    "NEAR(a b)",
    "NEAR",
    "AND",
    "OR NOT",
    "a AND OR b",
    "(",
    ")",
    "col:value",
    "text:Sarah",
    "^start",
    "-minus",
    "a - b",
    'Tyler\'s "job"',
    'x" OR 1=1 --',
    "'; DROP TABLE facts; --",
    "%",
    "_",
    "\\",
    "100%_sure\\",
    "🙂🙃🔥",
    "Сара ходила в горы",
    "莎拉去爬山了",
    "سارة",
    "\x00nul",
    "\ud800 lone",
    "the of and to a in",
    "a" * 10_000,
    "Sarah " * 2_000,
    'NEAR/3 "x" * ^ : ( ) {} [] ~',
    "in May 2023 2023-13-45 last Friday yesterday",
    "🙂 Sarah 🙂",
]


@pytest.fixture(scope="module")
def shared_stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stores]:
    """One embedded world for the many read-only hostile-query cases (built once: keeps them fast)."""
    path = tmp_path_factory.mktemp("hostile")
    with Stores(load_settings(data_dir=path / "data", inbox_dir=path / "inbox")) as opened:
        build_world(opened)
        embed_all(opened, FakeEmbedder())
        yield opened


@pytest.mark.parametrize("query", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_queries_never_raise(shared_stores: Stores, query: str) -> None:
    fake = FakeEmbedder()
    for budget in ("low", "mid", "high"):
        response = recall(
            shared_stores,
            query,
            budget=budget,
            embedder=fake,
            scope=["facts", "observations", "mental_models", "entities"],
            reference_time=REFERENCE,
        )
        assert isinstance(response.results, list)
    assert recall(shared_stores, query, entity=query, embedder=fake).results is not None


def test_long_query_stays_fast(stores: Stores, embedded: dict[str, str], fake: FakeEmbedder) -> None:
    words = " ".join(f"word{i}" for i in range(2_000)) + " carbonara"
    response = recall(stores, words, embedder=fake, scope=["facts"])
    assert response.timings_ms["total"] < 2_000


# --- the real model ------------------------------------------------------------------------------


def test_real_embedder_paraphrase(stores: Stores, world: dict[str, str]) -> None:
    from nexus_memory.embeddings import model, step

    embedder = model.get_embedder()  # the bundled model is a dependency: missing it is a failure
    step.embed_pending(stores, embedder, target_types=("fact", "observation", "mental_model"))
    response = recall(stores, "Who is Tyler's employer?", scope=["facts"], budget="low")  # default embedder
    assert response.results[0].id == world["job"]
    hurt = recall(stores, "leg injury while walking in the mountains", scope=["facts"], budget="low", embedder=embedder)
    assert hurt.results[0].id == world["knee"]
    assert hurt.results[0].metadata["scores"]["semantic"] > 0.3


def test_recall_with_a_model_of_another_size_before_any_vector_is_stored(stores: Stores) -> None:
    """No vector stored yet: the semantic strategy has nothing to search, whatever the model's size
    (the empty index has a default dimension a 256-dimension query would not match)."""
    fact = add_fact(stores, "Sarah took a pottery class")
    response = recall(stores, "pottery", embedder=FakeEmbedder())
    assert [r.id for r in response.results] == [fact]
    assert "semantic" not in response.results[0].ranks
