"""Side effects of fact writes through the agent tools (any caller of call_tool): co-occurrences, merge
candidates, the vector (through the checked ONNX export when there is one), a failed embedding kept pending."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from nexus_memory.agents.tools import call_tool
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.core.tooling import ToolError
from nexus_memory.embeddings import model as embedding_model
from nexus_memory.embeddings import step
from nexus_memory.embeddings.model import DEFAULT_MODEL, Embedder, get_embedder
from nexus_memory.embeddings.query_encoder import PARITY_MIN_COSINE
from nexus_memory.embeddings.step import rebuild_index
from nexus_memory.embeddings.vectors.vec0 import IndexModelMismatch
from nexus_memory.identity import store as identity
from nexus_memory.pipeline.layers import run_layer
from nexus_memory.recall import keyword
from nexus_memory.writer.tools import WriterTools
from tests.test_recall import FakeEmbedder


@pytest.fixture
def people(stores: Stores) -> dict[str, str]:
    with stores.transaction():
        ids = {name: identity.create_entity(stores.conn, name, "person") for name in ("Sarah Chen", "Tom Baker")}
        identity.add_alias(stores.conn, ids["Tom Baker"], "Tommy B", "nickname")
    return ids


def _pairs(stores: Stores) -> dict[tuple[str, str], int]:
    return {
        (r[0], r[1]): r[2] for r in stores.conn.execute("SELECT entity_a, entity_b, count FROM entity_cooccurrences")
    }


def test_remember_counts_cooccurrences_and_embeds(stores: Stores, people: dict[str, str]) -> None:
    fake = FakeEmbedder()
    result = call_tool(
        stores, "remember_fact", {"text": "Sarah Chen and Tom Baker run the Berlin office"}, embedder=fake
    )
    assert result["side_effects"] == {"cooccurrences": 1, "merge_candidates": [], "embedded": 1}
    pair = tuple(sorted(people.values()))
    assert _pairs(stores) == {pair: 1}
    call_tool(stores, "remember_fact", {"text": "Sarah Chen thanked Tom Baker"}, embedder=fake)
    assert _pairs(stores) == {pair: 2}
    found = call_tool(stores, "search_memory", {"query": "Berlin office"}, embedder=fake)
    assert found["results"][0]["id"] == result["fact_id"]
    assert "side_effects" not in found  # reads set nothing off


def test_a_new_name_inside_a_known_one_is_a_candidate_never_a_merge(stores: Stores, people: dict[str, str]) -> None:
    fake = FakeEmbedder()
    result = call_tool(stores, "remember_fact", {"text": "Sarah likes tea", "entities": ["Sarah"]}, embedder=fake)
    [candidate] = result["side_effects"]["merge_candidates"]
    assert candidate["entity"] == "Sarah" and candidate["similar_to"] == "Sarah Chen"
    [row] = identity.list_candidates(stores.conn)
    assert row["a_name"] == "Sarah Chen" and row["b_name"] == "Sarah" and row["confidence"] < 0.99
    assert stores.conn.execute("SELECT count(*) FROM entities WHERE merged_into IS NOT NULL").fetchone()[0] == 0
    # Through an alias too, and the other way round: a longer new name containing a known one.
    alias = call_tool(stores, "remember_fact", {"text": "x", "entities": ["Tommy"]}, embedder=fake)
    assert [c["similar_to"] for c in alias["side_effects"]["merge_candidates"]] == ["Tommy B"]
    longer = call_tool(stores, "remember_fact", {"text": "y", "entities": ["Sarah Chen Li"]}, embedder=fake)
    assert {c["similar_to"] for c in longer["side_effects"]["merge_candidates"]} == {"Sarah Chen", "Sarah"}
    # A known name creates nothing, so it proposes nothing.
    known = call_tool(stores, "remember_fact", {"text": "z", "entities": ["Tom Baker"]}, embedder=fake)
    assert known["side_effects"]["merge_candidates"] == []


def test_failed_side_effect_keeps_the_write(stores: Stores, monkeypatch: pytest.MonkeyPatch) -> None:
    rebuild_index(stores, "some-other-model", 8)  # the index serves another model than the embedder
    result = call_tool(stores, "remember_fact", {"text": "The car is blue"}, embedder=FakeEmbedder())
    assert result["side_effects"]["embedded"] == 0
    assert IndexModelMismatch.__name__ in result["side_effects"]["embedding_error"]
    assert stores.conn.execute("SELECT text FROM facts WHERE id = ?", (result["fact_id"],)).fetchone()[0]


def test_errors_set_nothing_off(stores: Stores) -> None:
    assert "text" in call_tool(stores, "remember_fact", {"text": ""})["error"]
    assert "error" in call_tool(stores, "correct_fact", {"fact_id": "missing", "new_text": "x"})
    assert stores.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == 0


# --- one insert path with the writer (facts.insert): its checks, its messages, its duplicate rule ----


def _fact_count(stores: Stores) -> int:
    return stores.conn.execute("SELECT count(*) FROM facts").fetchone()[0]


def test_a_fact_remembered_twice_is_stored_once(stores: Stores, people: dict[str, str]) -> None:
    fake = FakeEmbedder()
    first = call_tool(stores, "remember_fact", {"text": "Sarah Chen's birthday is on 4 July"}, embedder=fake)
    assert "duplicate" not in first and first["entities"] == ["Sarah Chen"]
    again = call_tool(
        stores,
        "remember_fact",
        {"text": "  sarah chen's birthday is on\n4 July.", "entities": ["Tom Baker", "Jo"]},
        embedder=fake,
    )
    # The stored fact as it is: nothing written, linked, created or set off.
    assert again == {"fact_id": first["fact_id"], "text": first["text"], "entities": ["Sarah Chen"], "duplicate": True}
    assert _fact_count(stores) == 1
    assert stores.conn.execute("SELECT count(*) FROM fact_entities").fetchone()[0] == 1
    assert identity.find_entities(stores.conn, "Jo") == []
    assert _pairs(stores) == {}


def test_a_correction_is_always_written_and_a_corrected_fact_can_be_said_again(stores: Stores) -> None:
    fake = FakeEmbedder()
    phone = call_tool(stores, "remember_fact", {"text": "Ann's phone number is 555 0101 1234"}, embedder=fake)
    # One digit apart: a near-duplicate by the words (Jaccard 0.75), written all the same as its correction.
    fixed = call_tool(
        stores,
        "correct_fact",
        {"fact_id": phone["fact_id"], "new_text": "Ann's phone number is 555 0101 1235"},
        embedder=fake,
    )
    assert fixed["fact_id"] != phone["fact_id"] and fixed["supersedes"] == phone["fact_id"]
    car = call_tool(stores, "remember_fact", {"text": "The car is blue"}, embedder=fake)
    call_tool(stores, "correct_fact", {"fact_id": car["fact_id"], "new_text": "The car is green"}, embedder=fake)
    # A corrected fact is hidden: it does not keep the same words out when a person says them again.
    back = call_tool(stores, "remember_fact", {"text": "The car is blue"}, embedder=fake)
    assert "duplicate" not in back and back["fact_id"] != car["fact_id"]
    assert _fact_count(stores) == 5


def test_an_invalid_fact_is_refused_with_the_writers_message(stores: Stores) -> None:
    too_long = "Ann " + "really " * 400 + "likes tea"
    with pytest.raises(ToolError) as refused:
        WriterTools(stores, "run1").insert_fact(too_long, 1_700_000_000_000)
    assert "keep facts atomic" in str(refused.value)
    kept = call_tool(stores, "remember_fact", {"text": "Ann likes tea"}, embedder=FakeEmbedder())
    for name, arguments in (
        ("remember_fact", {"text": too_long}),
        ("correct_fact", {"fact_id": kept["fact_id"], "new_text": too_long}),
    ):
        assert call_tool(stores, name, arguments) == {"error": str(refused.value)}
    assert _fact_count(stores) == 1


# --- the vector: at once, by meaning; through the checked ONNX export; kept pending on failure -------


def _stored_vector(stores: Stores, fact_id: str) -> np.ndarray | None:
    row = stores.conn.execute(
        "SELECT embedding FROM embeddings WHERE target_type = 'fact' AND target_id = ?", (fact_id,)
    ).fetchone()
    return None if row is None else np.frombuffer(row[0], dtype="<f4")


def test_a_fact_remembered_through_call_tool_is_recalled_by_meaning_at_once(stores: Stores) -> None:
    """The plain call an OpenAI tool loop makes (no embedder given: the configured model claims the index)."""
    for text in (
        "The team moved the quarterly review to Thursday",
        "Dana's laptop needs a new battery",
        "Priya booked flights to Lisbon for the conference",
    ):
        call_tool(stores, "remember_fact", {"text": text})
    text, query = "Maya starts violin lessons in April", "which instrument is the child learning?"
    assert not set(keyword.tokenize(text)) & set(keyword.tokenize(query))  # found by meaning or not at all
    made = call_tool(stores, "remember_fact", {"text": text})
    assert made["side_effects"]["embedded"] == 1
    found = call_tool(stores, "recall", {"query": query, "scope": ["facts"]})
    assert found["results"][0]["id"] == made["fact_id"]
    corrected = call_tool(stores, "correct_fact", {"fact_id": made["fact_id"], "new_text": "Maya starts cello in May"})
    assert corrected["side_effects"]["embedded"] == 1
    assert call_tool(stores, "recall", {"query": query, "scope": ["facts"]})["results"][0]["id"] == corrected["fact_id"]


def test_a_failed_embedding_keeps_the_fact_pending_for_the_pipeline(
    stores: Stores, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object) -> None:
        raise RuntimeError("model files unreadable\n(disk error)")

    monkeypatch.setattr(step, "embed_facts_now", broken)
    fake = FakeEmbedder()
    made = call_tool(stores, "remember_fact", {"text": "The spare key is under the blue flowerpot"}, embedder=fake)
    effects = made["side_effects"]
    assert effects["embedded"] == 0 and "RuntimeError: model files unreadable" in effects["embedding_error"]
    assert "\n" not in effects["embedding_error"] and "the fact is stored" in effects["embedding_error"]
    assert stores.conn.execute("SELECT text FROM facts WHERE id = ?", (made["fact_id"],)).fetchone()
    assert _stored_vector(stores, made["fact_id"]) is None
    found = call_tool(stores, "search_memory", {"query": "spare key"})
    assert [r["id"] for r in found["results"]] == [made["fact_id"]]  # by keyword meanwhile
    # The pipeline's embeddings layer takes the agent tools' facts along with any partition's.
    report = run_layer(stores, "embeddings", "imessage", [], embedder=fake)  # type: ignore[arg-type]
    assert report.details["tool_facts_pending"] == 1 and report.rows == 1
    assert _stored_vector(stores, made["fact_id"]) is not None
    assert run_layer(stores, "embeddings", "imessage", [], embedder=fake).rows == 0  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def checked_export() -> Embedder:
    """The bundled model, loaded, with its checked ONNX export (made now when there is none)."""
    embedder = get_embedder()
    assert embedder.prepare_query_encoder() is not None
    assert embedder.model is not None
    return embedder


WRITES = [
    "Sarah's birthday is on 4 July",
    "🙂 Jürgen übernimmt ab März die Leitung des Teams in Zürich",
    "The offsite agenda: " + "planning, budget review and a long walk by the lake. " * 35,  # past 256 tokens
]


def test_a_write_is_stored_through_the_checked_export_with_the_pipelines_vector(
    stores: Stores, checked_export: Embedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What a fresh process has once the export is checked: the encoder, no model.
    fresh = Embedder(DEFAULT_MODEL, None, query_backend="onnx", encoder=checked_export.prepare_query_encoder())

    def no_torch(name: str) -> None:
        raise AssertionError(f"loaded {name} with torch for a single write")

    monkeypatch.setattr(embedding_model, "_load_model", no_torch)
    pipeline = Embedder(DEFAULT_MODEL, checked_export.model, query_backend="torch")
    for text in WRITES:
        made = call_tool(stores, "remember_fact", {"text": text}, embedder=fresh)
        assert made["side_effects"]["embedded"] == 1
        stored = _stored_vector(stores, made["fact_id"])
        assert stored is not None
        assert float(stored @ pipeline.encode([text])[0]) >= PARITY_MIN_COSINE, text[:40]


def test_a_fresh_process_writes_without_torch(checked_export: Embedder, tmp_path: Path) -> None:
    script = (
        "import json, sys\n"
        "from nexus_memory.agents.tools import call_tool\n"
        "from nexus_memory.core.config import load_settings\n"
        "from nexus_memory.core.stores import Stores\n"
        "with Stores(load_settings()) as stores:\n"
        "    made = call_tool(stores, 'remember_fact', {'text': 'Maya starts violin lessons in April'})\n"
        "heavy = [m for m in ('torch', 'sentence_transformers', 'transformers') if m in sys.modules]\n"
        "print(json.dumps({'heavy': heavy, 'side_effects': made['side_effects']}))\n"
    )
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "HF_HUB_OFFLINE": "1",
        "NEXUS_DATA_DIR": str(tmp_path / "data"),
        "NEXUS_MODEL_CACHE": str(checked_export.model_cache_dir or load_settings().model_cache_dir),
        "NEXUS_QUERY_BACKEND": "onnx",
    }
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    result = json.loads(out.stdout.splitlines()[-1])
    assert result == {"heavy": [], "side_effects": {"cooccurrences": 0, "merge_candidates": [], "embedded": 1}}
