"""Mental models: create from a name and a question (API, agent tool, CLI), emergent and pinned models,
versioned refresh, staleness when an observation gets a new version, dossiers written and regenerated."""

from __future__ import annotations

import json

import pytest

from nexus_memory import cli
from nexus_memory.agents.tools import call_tool
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.mental_models import (
    ModelError,
    after_consolidation,
    create_model,
    ensure_emergent,
    get_model,
    list_models,
    pin_model,
    refresh_model,
)
from nexus_memory.mental_models.dossiers import dossier_path
from nexus_memory.observations import consolidate
from tests.memory_builders import count, current_observations, embed, fact, person

MARATHON = [
    ("Alice Chen is training for the Berlin marathon in September.", "2023-05-02"),
    ("Alice Chen ran 30 km on Sunday for her Berlin marathon training.", "2023-06-04"),
]
WORK = [
    ("Alice Chen works at Google as a data engineer.", "2023-05-05"),
    ("Alice Chen's manager at Google promoted her to senior data engineer.", "2023-05-06"),
]


@pytest.fixture
def alice(stores: Stores) -> str:
    alice = person(stores, "Alice Chen", handle="alice@example.com")
    for text, day in [*MARATHON, *WORK]:
        fact(stores, text, day, alice)
    with stores.transaction():
        stores.conn.execute(
            """INSERT INTO derived_events (id, type, content, source_event_id, entity_id, as_of, created_at)
               SELECT 'dev1', 'commitment', 'Alice Chen will send the race photos by Friday.', source_event_id, ?,
                      as_of, as_of FROM facts LIMIT 1""",
            (alice,),
        )
    embed(stores)
    consolidate(stores)
    return alice


def test_create_from_a_name_and_a_question(stores: Stores, alice: str) -> None:
    model = create_model(stores, "Alice's running", "How is Alice's marathon training going?")
    assert model.entity_id == alice and model.subtype == "structural" and model.version == 1
    assert model.root_id.startswith("mm-alices-running-")
    report = model.description
    for section in ("# Alice's running", "## Who", "## What we know, by topic", "## Open commitments", "## Sources"):
        assert section in report
    assert "Contact handles: alice@example.com (email)" in report
    assert "Berlin marathon" in report
    assert "Alice Chen will send the race photos by Friday." in report
    marathon = next(o["id"] for o in current_observations(stores) if "marathon" in o["output_text"])
    assert ("observation", marathon) in model.sources
    # The same name and question give the same model, not a second one.
    assert create_model(stores, "Alice's running", "How is Alice's marathon training going?").id == model.id
    assert count(stores, "mental_models") == 1
    with pytest.raises(ModelError, match="no entity named"):
        create_model(stores, "Nobody", "?", entity="Zebulon")


def test_refresh_versions_only_when_the_report_changes(stores: Stores, alice: str) -> None:
    model = create_model(stores, "Alice", "What do we know about Alice?", pinned=True)
    same, changed = refresh_model(stores, model.root_id)
    assert not changed and same.id == model.id and count(stores, "mental_models") == 1
    # A new fact joins an observation: the observation gets a version, the model goes stale.
    fact(stores, "Alice Chen finished the Berlin marathon in 3 hours 50 minutes.", "2023-09-24", alice)
    embed(stores)
    report = consolidate(stores)
    assert report.observations_versioned == 1
    assert get_model(stores, model.root_id).is_stale
    # after_consolidation refreshes it (pinned models ask for that): a new version, parent_id to the old.
    outcome = after_consolidation(stores, emergent=0)
    assert outcome["models_refreshed"] == [model.root_id]
    fresh = get_model(stores, model.root_id)
    assert fresh.version == 2 and not fresh.is_stale and "3 hours 50 minutes" in fresh.description
    parent = stores.conn.execute("SELECT parent_id FROM mental_models WHERE id = ?", (fresh.id,)).fetchone()[0]
    assert parent == model.id and count(stores, "mental_models") == 2
    assert [m.id for m in list_models(stores)] == [fresh.id]


def test_structural_models_wait_for_a_refresh_on_demand(stores: Stores, alice: str) -> None:
    model = create_model(stores, "Alice", "What do we know about Alice?")
    fact(stores, "Alice Chen finished the Berlin marathon in 3 hours 50 minutes.", "2023-09-24", alice)
    embed(stores)
    consolidate(stores)
    assert after_consolidation(stores, emergent=0)["models_refreshed"] == []
    assert get_model(stores, model.id).is_stale
    assert refresh_model(stores, model.id)[1] is True
    assert pin_model(stores, model.id).subtype == "pinned"


def test_emergent_models_for_the_most_discussed_entities(stores: Stores, alice: str) -> None:
    bob = person(stores, "Bob Stone")
    fact(stores, "Bob Stone is learning to sail on the bay.", "2023-05-02", bob)
    fact(stores, "Bob Stone bought a small sailboat to sail on the bay.", "2023-05-09", bob)
    embed(stores)
    consolidate(stores)
    created = ensure_emergent(stores, 1)
    assert [(m.entity_id, m.subtype, m.refresh_after_consolidation) for m in created] == [(alice, "emergent", True)]
    assert ensure_emergent(stores, 1) == []  # one per entity, not one per run
    assert {m.entity_id for m in ensure_emergent(stores, 5)} == {bob}


def test_dossiers_are_written_marked_stale_and_regenerated(stores: Stores, alice: str) -> None:
    model = create_model(stores, "Alice", "What do we know about Alice?")
    path = dossier_path(stores, model)
    assert path.parent == stores.settings.data_dir / "dossiers"
    first = path.read_text()
    assert first.startswith("<!-- Generated by nexus-memory") and "## Sources" in first and "Stale" not in first
    fact(stores, "Alice Chen finished the Berlin marathon in 3 hours 50 minutes.", "2023-09-24", alice)
    embed(stores)
    consolidate(stores)
    after_consolidation(stores, emergent=0)
    assert "> **Stale**" in path.read_text()  # the memory moved on; the file says so
    refresh_model(stores, model.id)
    regenerated = path.read_text()
    assert "Stale" not in regenerated and "3 hours 50 minutes" in regenerated and "Version 2" in regenerated


def test_agent_tools_create_show_refresh(stores: Stores, alice: str) -> None:
    created = call_tool(stores, "create_mental_model", {"name": "Alice's work", "question": "Where does Alice work?"})
    assert "Google" in created["text"] and created["entity_id"] == alice and created["previous_version"] is None
    assert call_tool(stores, "show_mental_model", {"id": created["id"]})["text"] == created["text"]
    assert call_tool(stores, "refresh_mental_model", {"id": created["id"]})["changed"] is False
    assert [m["id"] for m in call_tool(stores, "list_mental_models", {})["mental_models"]] == [created["id"]]
    assert "error" in call_tool(stores, "show_mental_model", {"id": "mm-nothing"})
    assert "error" in call_tool(stores, "refresh_mental_model", {"id": "mm-nothing"})
    assert "error" in call_tool(stores, "create_mental_model", {"name": "x", "bogus": 1})


def test_cli_models(stores: Stores, alice: str, settings: Settings, monkeypatch, capsys) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(settings.data_dir))
    args = ["models", "create", "Alice's work", "--question", "Where does Alice work?", "--tag", "work", "--json"]
    assert cli.main(args) == 0
    created = json.loads(capsys.readouterr().out)
    assert created["tags"] == ["work"]
    assert cli.main(["models", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)["mental_models"]
    assert listed["id"] == created["id"]
    assert cli.main(["models", "refresh", created["id"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["changed"] is False
    assert cli.main(["models", "mm-missing"]) == 2


def test_with_an_llm_a_model_is_a_narrative_citing_its_facts(stores: Stores, alice: str) -> None:
    from nexus_memory.llm.client import LLMClient
    from nexus_memory.mental_models.narrative import Narrator
    from tests.fake_openai import FakeOpenAI, content

    narrative = "Alice is training for the Berlin marathon [f1] and ran 30 km in June [f4]."
    good = content(json.dumps({"narrative": narrative, "cited": ["f1", "f4"]}), (300, 60))
    with FakeOpenAI([content(json.dumps({"narrative": "Alice runs [f9].", "cited": ["f9"]})), good]) as server:
        narrator = Narrator(LLMClient(server.base_url, "fake-model", timeout_s=5))
        model = create_model(stores, "Alice's running", "How is Alice's marathon training going?", narrator=narrator)
        assert "not given" in server.requests[1]["messages"][-1]["content"]  # the bad citation was sent back
        assert narrative in model.description and "## Cited facts" in model.description
        assert "[f1] 2 May 2023: Alice Chen is training" in server.requests[0]["messages"][1]["content"]
        assert "- [f1] 2 May 2023: Alice Chen is training for the Berlin marathon" in model.description
        assert sum(1 for t, _ in model.sources if t == "fact") == 2
        assert (narrator.prompt_tokens, narrator.completion_tokens) == (100 + 300, 20 + 60)
        # Nothing changed underneath: a refresh makes no call and no version.
        same, changed = refresh_model(stores, model.id, narrator=narrator)
        assert not changed and len(server.requests) == 2 and same.id == model.id
        # A model that keeps failing leaves the structured report in place.
        server.add(content("nope"), content("still nope"))
        failing = create_model(stores, "Alice's work", "Where does Alice work?", narrator=narrator)
        assert failing.description.startswith("# Alice's work\nQuestion: Where does Alice work?\n\n## Who")


def test_a_narrative_waits_out_a_busy_server_and_falls_back_to_json_object(stores: Stores, alice: str) -> None:
    from nexus_memory.llm.client import LLMClient
    from nexus_memory.mental_models.narrative import Narrator
    from tests.fake_openai import FakeOpenAI, content, http_error

    narrative = "Alice is training for the Berlin marathon [f1] and ran 30 km in June [f4]."
    waits: list[float] = []
    with FakeOpenAI(
        [
            http_error(429, "slow down", {"Retry-After": "2"}),
            http_error(400, "response_format json_schema is not supported by this server"),
            content(json.dumps({"narrative": narrative, "cited": ["f1", "f4"]})),
        ]
    ) as server:
        narrator = Narrator(LLMClient(server.base_url, "fake-model", timeout_s=5, sleep=waits.append), max_retries=0)
        model = create_model(stores, "Alice's running", "How is Alice's marathon training going?", narrator=narrator)
    assert waits == [2.0] and narrative in model.description
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_schema", "json_object"]
