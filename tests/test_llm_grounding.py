"""Grounding: what an LLM writes is kept only when its sources say it (facts/grounding.py), in the writer (both
modes), consolidation, narratives and reflection; and `auto` mode converges on a model whose tool loop never ends."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from importlib import resources
from typing import Any

import pytest

from nexus_memory.core.stores import Stores
from nexus_memory.episodes.grouping import build_episodes
from nexus_memory.facts.grounding import GROUNDED_SHARE, Source, example_text, stem, terms, ungrounded
from nexus_memory.llm.client import LLMClient
from nexus_memory.mental_models.narrative import Narrator
from nexus_memory.observations import consolidate
from nexus_memory.observations.llm import LLMConsolidator
from nexus_memory.pipeline.layers import run_layer
from nexus_memory.writer.llm import writer as llm_writer
from nexus_memory.writer.llm.episode import load_prompt
from tests.fake_openai import FakeOpenAI, Reply, content, document, sleep, tool_calls
from tests.memory_builders import current_observations, embed, fact, person
from tests.test_llm_structured import doc, fact_texts, write_direct
from tests.test_llm_structured import fact as doc_fact
from tests.test_llm_writer import ALICE, DAY, RECORDS, add_events, count, finish, make_writer, record


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def sample_records(*ids: str) -> list[dict[str, Any]]:
    """Events of the shipped sample data, by id."""
    text = (resources.files("nexus_memory") / "sample_data" / "events.jsonl").read_text(encoding="utf-8")
    rows = {row["id"]: row for row in map(json.loads, text.splitlines())}
    return [rows[i] for i in ids]


# -- the rule ------------------------------------------------------------------------------------
def test_grounding_counts_content_words_and_requires_names_and_numbers() -> None:
    assert stem("moved") == stem("moves") == stem("move") == stem("moving")
    assert stem("agrees") == stem("agree") and stem("studies") == stem("studied") == "study"
    assert stem("classes") == stem("class") == "class" and stem("goes") == "go"
    assert [t.text for t in terms("Bo paid $1,200 on 05 May [f3], said Ann.")] == [
        "bo",
        "paid",
        "1200",
        "5",
        "may",
        "ann",
    ]
    # The message, and its deliveryContext: who speaks, to whom.
    flights = Source(["I need flights from SFO to Lisbon, April 10, back April 17."], ["Sam Rivera", "Assistant"])
    assert flights.ground("Sam Rivera needs flights to Lisbon on April 10").grounded
    # One invented verb beside one place: half the words, below the threshold.
    lisbon = flights.ground("Sam Rivera moved to Lisbon.")
    assert (lisbon.grounded, lisbon.share, lisbon.missing) == (False, 0.5, ("moved",))
    assert GROUNDED_SHARE > 0.5
    # A name or number the source lacks fails however many other words match.
    assert flights.ground("Sam Rivera needs flights from SFO to Porto").missing_literals == ("porto",)
    assert flights.ground("Sam Rivera needs flights on April 11").missing_literals == ("11",)
    # Paraphrase within the tolerance: "adopted" / "adopting", and a word the source lacks.
    assert Source(["I adopted a cat named Tilly"], ["Bo"]).ground("Bo is adopting a kitten named Tilly").grounded


def test_prose_is_judged_sentence_by_sentence() -> None:
    source = Source(["Alice Chen ran 30 km on Sunday.", "Alice Chen works at Google."], ["Alice Chen"])
    text = "Alice Chen ran 30 km on Sunday. She works at Google. She won the Boston marathon."
    assert [sentence for sentence, _ in ungrounded(text, source)] == ["She won the Boston marathon."]


def test_the_examples_a_prompt_shows_are_found() -> None:
    shown = example_text(load_prompt("writer_structured"))
    assert "Jonas starts working at the harbour museum in June." in shown
    assert '"text"' not in shown.split("content:")[0]  # JSON keys are not examples
    assert "Carol moved to Berlin and works at Siemens" in example_text(load_prompt("writer_role"))


# -- the writer: examples that cannot leak -----------------------------------------------------
def prompt_example_facts() -> list[dict[str, Any]]:
    """The facts of writer_structured.md's example, as the model would copy them."""
    shown = load_prompt("writer_structured").split("## Example", 1)[1]
    return json.loads(shown[shown.index('{"facts"') :].strip())["facts"]


def test_the_prompt_example_moved_onto_the_speaker_is_dropped_and_counted(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, sample_records("turn-s02-0055"))  # Sam Rivera: flights to Lisbon, a wedding
    # As the issue saw them: the example's text on the speaker, with the speaker as its only entity.
    speaker = [{"name": "Sam Rivera", "type": "person"}]
    copied = [
        {**f, "text": f["text"].replace("Jonas", "Sam Rivera"), "entities": speaker} for f in prompt_example_facts()
    ]
    assert [f["text"] for f in copied] == [
        "Sam Rivera moved to Porto last week.",
        "Sam Rivera starts working at the harbour museum in June.",
    ]
    kept = doc_fact("I need flights from SFO to Lisbon on April 10", "e1", ("Lisbon", "location"))
    moved = doc_fact("Sam Rivera moved to Lisbon.", "e1", ("Lisbon", "location"))  # the episode's own city
    fake.add(document(doc(*copied, moved, kept)))
    result = write_direct(stores, make_writer(fake, mode="structured"), events)

    assert result.dropped == {"fact:prompt_example": 2, "fact:not_in_source": 1}
    assert "harbour" in result.notes and "prompt's examples" in result.notes
    assert fact_texts(stores) == ["Sam Rivera needs flights from SFO to Lisbon on April 10"]


def test_the_tool_loop_is_judged_by_the_same_rules(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:2])
    fake.add(
        tool_calls(
            ("insert_fact", {"text": "Alice starts working at the harbour museum in June", "source_event_id": "e1"}),
            ("insert_fact", {"text": "Acme opened an office in Berlin", "source_event_id": "e1"}),
        ),
        finish(),
    )
    result = write_direct(stores, make_writer(fake, mode="tools"), events)
    assert (result.mode, result.dropped, result.fixed) == ("tools", {"fact:not_in_source": 1}, {"fact:recited": 1})
    [dropped, stored] = [r for r in fake.requests[1]["messages"] if r["role"] == "tool"]
    assert json.loads(dropped["content"])["reason"] == "not_in_source"  # told, so it can go on
    assert json.loads(stored["content"])["status"] == "inserted"
    # Its words are in the second message: it cites that one.
    rows = stores.conn.execute("SELECT text, source_event_id FROM facts").fetchall()
    assert [tuple(r) for r in rows] == [("Acme opened an office in Berlin", events[1].id)]


# -- the writer: provenance and the right speaker ----------------------------------------------
def test_a_fact_cites_the_event_that_says_it_and_keeps_words_with_their_speaker(
    stores: Stores, fake: FakeOpenAI
) -> None:
    # Sam: "yes, $1,200 is my cap"; the assistant: "Got it. I'll look for round trips under $1,200 ...".
    events = add_events(stores, sample_records("turn-s02-0059", "turn-s02-0060"))
    moved = "Sam Rivera got it. Sam Rivera will look for round trips under $1,200"
    fake.add(
        document(
            doc(
                doc_fact(moved, "e1", ("Sam Rivera", "person")),  # the user's turn cited, the assistant's words
                doc_fact("My cap is $1,200", "e1", ("I", "person")),
            )
        )
    )
    result = write_direct(stores, make_writer(fake, mode="structured"), events)

    assert result.dropped == {}
    assert result.fixed == {"fact:recited": 1, "fact:speaker_rewritten": 1}
    rows = {r[0]: r[1] for r in stores.conn.execute("SELECT text, source_event_id FROM facts")}
    assert rows == {
        "Assistant got it. Assistant will look for round trips under $1,200": events[1].id,
        "Sam Rivera's cap is $1,200": events[0].id,
    }
    # The rewritten fact is not linked to the participant it wrongly named.
    linked = stores.conn.execute(
        """SELECT e.name FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id JOIN entities e ON e.id = fe.entity_id
           WHERE f.text LIKE 'Assistant%'"""
    ).fetchall()
    assert "Sam Rivera" not in {r[0] for r in linked}


def test_a_fact_naming_a_participant_its_message_does_not_speak_of_is_dropped(stores: Stores, fake: FakeOpenAI) -> None:
    bob = {"platform": "imessage", "sender_id": "bob@example.com", "sender_name": "Bob", "peer_kind": "dm"}
    events = add_events(
        stores,
        [
            RECORDS[0],
            record({**bob, "peer_id": ALICE["sender_id"]}, "m5", "t1", f"{DAY}T09:05:00Z", "Acme sounds great."),
        ],
    )
    fake.add(document(doc(doc_fact("Alice thinks Acme sounds great", "e2", ("Alice", "person")))))
    result = write_direct(stores, make_writer(fake, mode="structured"), events)
    assert result.dropped == {"fact:wrong_speaker": 1} and count(stores, "facts") == 0


# -- auto converges ------------------------------------------------------------------------------
def never_finishing_model(request: dict[str, Any]) -> Reply:
    """A model that calls tools forever in the tool loop and answers structured requests well."""
    if "tools" in request:
        return tool_calls(("recall", {"query": "running"}))
    km = re.search(r"content: I ran (\d+) km", request["messages"][1]["content"])
    assert km is not None
    return document(doc(doc_fact(f"I ran {km.group(1)} km on Sunday", "e1", ("I", "person"))))


def add_runner_episodes(stores: Stores, tail: str = "") -> None:
    """Ten episodes of one message each, from ten senders: "I ran N km on Sunday{tail}."."""
    senders = [{**ALICE, "sender_id": f"+1555000{i:04d}", "sender_name": f"Runner{i}"} for i in range(10)]
    add_events(
        stores,
        [
            record(s, f"r{i}", f"t{i}", f"{DAY}T1{i}:00:00Z", f"I ran {i + 3} km on Sunday{tail}.")
            for i, s in enumerate(senders)
        ],
    )
    build_episodes(stores, DAY, "imessage")


def test_auto_converges_when_the_tool_loop_never_finishes(stores: Stores, fake: FakeOpenAI) -> None:
    add_runner_episodes(stores)
    fake.add(*[never_finishing_model] * 60)
    writer = make_writer(fake, mode="auto", max_steps=12)
    report = run_layer(stores, "facts", "imessage", [DAY], writer=writer)

    ok_with_facts = stores.conn.execute(
        "SELECT count(*) FROM episode_processing WHERE status = 'ok' AND facts_written > 0"
    ).fetchone()[0]
    assert ok_with_facts >= 9 and report.details["ok"] == 10  # >= 90%: here every one
    # Two episodes tried the tool loop to its step limit (one attempt each, no retries); then it was off.
    assert writer.tools_off and len(fake.requests) == 2 * (12 + 1) + 8
    assert report.details["episodes_structured"] == 10
    assert report.details["cost_by_mode"].startswith("structured: 10 episodes, ")
    assert sorted(fact_texts(stores))[0].startswith("Runner0 ran 3 km on Sunday")


def test_auto_switches_at_half_the_token_budget(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:1])
    fake.add(*[tool_calls(("recall", {"query": "Acme"}), usage=(100, 20))] * 3)
    fake.add(document(doc(doc_fact("I started at Acme", "e1"))))
    result = write_direct(stores, make_writer(fake, mode="auto", token_budget=600), events)
    assert result.mode == "structured" and "token budget half spent: 360" in result.fallback
    assert count(stores, "facts") == 1 and len(fake.requests) == 4


@pytest.mark.parametrize("answer_s", [0.4, 2.0], ids=["slow answer", "timed out"])
def test_auto_prefers_structured_when_the_server_is_too_slow_for_the_tool_loop(
    stores: Stores, fake: FakeOpenAI, monkeypatch: pytest.MonkeyPatch, answer_s: float
) -> None:
    monkeypatch.setattr(llm_writer, "TOOL_EPISODE_REQUESTS", 2)
    events = add_events(stores, RECORDS)
    # The first request takes 0.4 s (or times out after 1 s): a tool-loop episode of 2 requests would take
    # longer than 0.5 s.
    fake.add(sleep(answer_s, then=tool_calls(("recall", {"query": "Acme"}))), document(doc()))
    writer = make_writer(fake, mode="auto", tool_episode_s=0.5, timeout_s=1)
    first = write_direct(stores, writer, events[:2])
    assert first.mode == "structured" and "too slow for the tool loop" in first.fallback
    fake.add(document(doc()))
    second = write_direct(stores, writer, events[2:])
    assert second.mode == "structured" and second.fallback.startswith("the tool loop is off for this run: too slow")
    assert ["tools" in r for r in fake.requests] == [True, False, False]


def test_a_fast_server_keeps_the_tool_loop(stores: Stores, fake: FakeOpenAI) -> None:
    events = add_events(stores, RECORDS[:1])
    fake.add(tool_calls(("insert_fact", {"text": "Alice started at Acme", "source_event_id": "e1"})), finish())
    result = write_direct(stores, make_writer(fake, mode="auto", tool_episode_s=60), events)
    assert result.mode == "tools" and count(stores, "facts") == 1


# -- consolidation, narratives, reflection -------------------------------------------------------
def test_an_observation_the_facts_do_not_hold_is_retried_with_the_reason(stores: Stores, fake: FakeOpenAI) -> None:
    alice = person(stores, "Alice Chen")
    fact(stores, "Alice Chen is training for the Berlin marathon in September.", "2023-05-02", alice)
    fact(stores, "Alice Chen ran 30 km on Sunday for her Berlin marathon training.", "2023-06-04", alice)
    embed(stores)

    def create(text: str) -> Reply:
        action = {"action": "create", "topic": "marathon", "text": text, "fact_refs": ["f1"], "reason": "same race"}
        return content(json.dumps({"actions": [action]}))

    invented = "Alice Chen is training for the Berlin marathon. She won the Boston marathon in 2019."
    grounded = "Alice Chen is training for the Berlin marathon (September 2023); ran 30 km on 4 June 2023."
    fake.add(create(invented), create(grounded))
    consolidate(stores, LLMConsolidator(LLMClient(fake.base_url, "fake-model", timeout_s=5)))

    retry = fake.requests[1]["messages"][-1]["content"]
    assert "She won the Boston marathon in 2019." in retry and "boston" in retry
    assert [o["output_text"] for o in current_observations(stores)] == [grounded]


def test_a_narrative_sentence_its_facts_do_not_hold_is_retried(fake: FakeOpenAI) -> None:
    facts = [
        {"id": "a", "text": "Alice Chen ran 30 km on Sunday.", "as_of": 1_685_836_800_000, "source_event_id": None},
        {"id": "b", "text": "Alice Chen works at Google.", "as_of": 1_685_923_200_000, "source_event_id": None},
    ]
    invented = {"narrative": "Alice Chen ran 30 km [f1]. She works at Microsoft [f2].", "cited": ["f1", "f2"]}
    good = {"narrative": "Alice Chen ran 30 km [f1] and works at Google [f2].", "cited": ["f1", "f2"]}
    fake.add(content(json.dumps(invented)), content(json.dumps(good)))
    narrator = Narrator(LLMClient(fake.base_url, "fake-model", timeout_s=5))
    description, cited = narrator.describe("Alice", "What is Alice up to?", "Alice Chen: 2 facts", facts)
    assert "microsoft not in the source" in fake.requests[1]["messages"][-1]["content"]
    assert good["narrative"] in description and cited == ["a", "b"]


def test_a_reflection_the_digest_does_not_hold_falls_back_to_the_digest(stores: Stores, fake: FakeOpenAI) -> None:
    from nexus_memory.core.config import load_settings
    from nexus_memory.lifecycle import reflection
    from tests.lifecycle_world import build, message

    build(
        stores,
        [
            message(1, "ben@example.com", "I moved to Lisbon last month.", sender_name="Ben"),
            message(2, "ben@example.com", "I will send the report to Ana by Friday.", sender_name="Ben"),
            message(3, "dana@example.com", "Ben plays the cello on Sundays.", sender_name="Dana"),
        ],
    )
    fake.add(content(json.dumps({"insight": "Ben settled into Lisbon. Ben bought a sailboat in Porto."})))
    object.__setattr__(
        stores, "settings", load_settings(data_dir=stores.data_dir, llm_base_url=fake.base_url, llm_model="m")
    )
    report = reflection.reflect(stores)
    assert report.writer == "offline" and "sailboat" in report.failures[0]
    text = stores.conn.execute("SELECT description FROM mental_models WHERE id = ?", (report.mental_model_id,))
    assert "sailboat" not in text.fetchone()[0]


def test_bench_reports_the_grounded_share_per_mode(tmp_path: Any, settings: Any, fake: FakeOpenAI) -> None:
    from dataclasses import replace

    from nexus_memory.bench.extract_llm import run_llm

    session = [
        {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat named Tilly last week."},
        {"speaker": "Bo", "dia_id": "D1:2", "text": "So cute! I have a dog called Rex."},
    ]
    sample = {
        "sample_id": "conv-g",
        "conversation": {"speaker_a": "Ann", "speaker_b": "Bo", "session_1_date_time": "1:56 pm on 8 May, 2023"}
        | {"session_1": session},
        "observation": {"session_1_observation": {"Ann": [["Ann adopted a cat named Tilly.", "D1:1"]]}},
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([sample]))
    fake.add(
        document(
            doc(
                doc_fact("I adopted a cat named Tilly last week", "e1", ("Tilly", "pet")),
                doc_fact("Bo has a dog called Rex", "e1", ("Rex", "pet")),  # Bo's words, cited on Ann's turn
                doc_fact("Ann moved to a new house", "e1", ("Ann", "person")),
            )
        )
    )
    configured = replace(settings, llm_base_url=fake.base_url, llm_model="fake-model", llm_timeout_s=5)
    report = run_llm(path, settings=configured, mode="structured")

    llm = report["llm"]
    assert (llm["facts"], llm["grounded_share"], report["offline"]["grounded_share"]) == (2, 1.0, 1.0)
    structured = llm["by_mode"]["structured"]
    assert (structured["ok"], structured["facts"], structured["grounded_share"]) == (1, 2, 1.0)
    assert structured["dropped"] == {"fact:not_in_source": 1} and structured["fixed"] == {"fact:recited": 1}
    assert report["per_episode"][0]["fixed"] == {"fact:recited": 1}


def test_the_threshold_calibration_separates_said_from_not_said(tmp_path: Any) -> None:
    from nexus_memory.bench.extract_llm import calibrate_grounding

    def sample(sample_id: str, a: str, b: str, lines: list[str], observed: str) -> dict[str, Any]:
        turns = [{"speaker": (a, b)[i % 2], "dia_id": f"D1:{i + 1}", "text": t} for i, t in enumerate(lines)]
        return {
            "sample_id": sample_id,
            "conversation": {"speaker_a": a, "speaker_b": b, "session_1_date_time": "1:56 pm on 8 May, 2023"}
            | {"session_1": turns},
            "observation": {"session_1_observation": {a: [[observed, "D1:1"]]}},  # a paraphrase of the first turn
        }

    data = [
        sample(
            "c1",
            "Ann",
            "Bo",
            ["I adopted a cat named Tilly last week.", "I sold my bike to Carla for $200."],
            "Ann adopted a kitten named Tilly.",
        ),
        sample(
            "c2",
            "Dee",
            "Eli",
            ["I started a pottery class in Leeds.", "My brother works at a bakery in York."],
            "Dee is taking pottery classes in Leeds.",
        ),
    ]
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps(data))
    report = calibrate_grounding(path)
    at = {name: figures["passing_at"][str(GROUNDED_SHARE)] for name, figures in report.items()}
    assert at["offline writer"] == at["LoCoMo observations"] == 1.0
    assert at["prompt example on the speaker"] == at["another conversation's fact"] == 0.0
    assert report["offline writer"]["facts"] >= 4
