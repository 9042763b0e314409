"""Why-questions: the writer links a reason to what it explains (across sentences, after a colon or a dash),
and recall of a why-question brings the cause of its top effect among the first results."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from nexus_memory.cli import main
from nexus_memory.core.stores import Stores
from nexus_memory.episodes.grouping import build_episodes
from nexus_memory.events.ledger import Event, RawRecord, ingest
from nexus_memory.recall import recall
from nexus_memory.writer.extractor import Extraction, extract
from nexus_memory.writer.offline_writer import OfflineWriter
from nexus_memory.writer.run import process_partition

# Monday 3 March 2025, 15:52 UTC
MARCH_3 = int(datetime(2025, 3, 3, 15, 52, tzinfo=UTC).timestamp() * 1000)


def event(content: str, event_id: str = "e1") -> Event:
    return Event(
        id=event_id,
        platform="test",
        sender_id="dana",
        content=content,
        as_of=MARCH_3,
        sender_name="Dana Whitfield",
        peer_id="sam",
        peer_kind="dm",
    )


def pairs(result: Extraction) -> list[tuple[str, str]]:
    """(cause text, effect text) of every causal pair."""
    return [(result.facts[p.cause].text, result.facts[p.effect].text) for p in result.causal]


@pytest.mark.parametrize(
    ("text", "cause_word", "effect_word"),
    [
        ("We moved the launch to March 25. That's because the vendor slipped.", "vendor", "launch"),
        ("We moved the launch to March 25. The reason is that the vendor slipped.", "vendor", "launch"),
        ("We cancelled the offsite. Because the budget was cut in January.", "budget", "offsite"),
        ("We moved the launch to March 25: the vendor slipped.", "vendor", "launch"),
        ("We postponed the review \u2014 the auditors were still on site.", "auditors", "review"),
        ("The vendor slipped. That's why we moved the launch to March 25.", "vendor", "launch"),
    ],
)
def test_reason_linked_to_what_it_explains(text: str, cause_word: str, effect_word: str) -> None:
    found = pairs(extract([event(text)]))
    assert len(found) == 1, found
    cause, effect = found[0]
    assert cause_word in cause and effect_word not in cause
    assert effect_word in effect and cause_word not in effect


@pytest.mark.parametrize(
    "text",
    [
        "New dates: code freeze March 19, go/no-go March 21, launch March 25.",  # a list, not a reason
        "I love this place: the food is great.",  # no change or decision before the colon
        "We moved the launch to March 25. The venue is lovely.",  # no cue: not linked
        "We moved the launch. Is it because the vendor slipped?",  # a question gives no reason
        "We moved the launch. That's because of the vendor.",  # no clause after the cue
    ],
)
def test_no_link_without_a_cue_and_two_clauses(text: str) -> None:
    assert extract([event(text)]).causal == []


# --- recall of a why-question -------------------------------------------------------------------

MESSAGES = [
    ("dana", "Dana Whitfield", "We moved the Atlas launch from March 18 to March 25. "
     "That's because the vendor slipped: shipping on the old SDK would mean a second migration in April."),
    ("sam", "Sam Rivera", "The Atlas launch checklist is in the shared drive, next to the launch runbook."),
    ("raj", "Raj Patel", "Atlas launch night on-call: Sam is primary for the launch and I am secondary."),
    ("priya", "Priya Kapoor", "The Atlas launch party will be at the office after the launch."),
    ("dana", "Dana Whitfield", "Marketing moved the Atlas launch blog post to launch day."),
]  # fmt: skip


@pytest.fixture
def launch_store(stores: Stores) -> Stores:
    """The writer's facts of a few messages about a launch, one of them saying why it moved."""
    records = []
    for number, (sender, name, content) in enumerate(MESSAGES, start=1):
        record = {"id": f"m{number}", "platform": "gmail", "sender_id": f"{sender}@atlas.example",
                  "sender_name": name, "thread_id": f"t{number}", "content": content,
                  "as_of": f"2025-03-03T0{number}:00:00Z"}  # fmt: skip
        records.append(RawRecord("test", number, record, json.dumps(record)))
    ingest(stores, records)
    build_episodes(stores, "2025-03-03", "gmail")
    process_partition(stores, "2025-03-03", "gmail", OfflineWriter())
    return stores


def test_why_question_returns_the_cause_in_the_top_three(launch_store: Stores) -> None:
    assert launch_store.counts()["causal_links"] >= 1
    why = recall(launch_store, "Why did the Atlas launch move?", max_results=3, touch=False).results
    assert any("vendor slipped" in r.text for r in why), [r.text for r in why]
    # The cause shares no word with the question: asked otherwise, it is not among the first three.
    when = recall(launch_store, "When did the Atlas launch move?", max_results=3, touch=False).results
    assert not any("vendor slipped" in r.text for r in when), [r.text for r in when]


@pytest.mark.parametrize(
    "question",
    ["Why did the Atlas launch move?", "What caused the launch to move?", "Who is on call for the Atlas launch?"],
)
def test_scores_do_not_rise_down_the_list(launch_store: Stores, question: str) -> None:
    results = recall(launch_store, question, max_results=10, touch=False).results
    scores = [r.score for r in results]
    assert len(scores) >= 3
    assert scores == sorted(scores, reverse=True)
    assert all("rrf" in r.metadata["scores"] for r in results if r.type == "fact")


def test_printed_scores_are_in_printed_order(
    launch_store: Stores, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(launch_store.settings.data_dir))
    assert main(["recall", "Why did the Atlas launch move?", "--max-results", "5"]) == 0
    printed = [float(line.split()[0]) for line in capsys.readouterr().out.splitlines() if line[:1].isdigit()]
    assert len(printed) >= 3
    assert printed == sorted(printed, reverse=True)
