"""Bad calls from an agent or an API caller: a clear error the caller can act on, never an exception
out of call_tool, never an 'internal error' for bad input, and nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nexus_memory.agents.tools import call_tool
from nexus_memory.cli import main
from nexus_memory.core.stores import Stores
from nexus_memory.recall import RecallArgumentError, recall

DEEP_JSON = '{"query": ' + "[" * 10_000 + "]" * 10_000 + "}"


def fact_count(stores: Stores) -> int:
    return stores.conn.execute("SELECT count(*) FROM facts").fetchone()[0]


@pytest.fixture
def fact_id(stores: Stores) -> str:
    made = call_tool(stores, "remember_fact", {"text": "Priya moved to Lisbon", "entities": ["Priya"]})
    return made["fact_id"]


BAD_CALLS: list[tuple[Any, Any, str]] = [
    (["recall"], {"query": "x"}, "tool name of type list"),
    ({"name": "recall"}, {"query": "x"}, "tool name of type dict"),
    (None, {"query": "x"}, "tool name of type NoneType"),
    (7, {"query": "x"}, "tool name of type int"),
    ("forget_everything", {}, "unknown tool 'forget_everything'"),
    ("x" * 100_000, {}, "unknown tool"),
    ("recall", "{not json", "not valid JSON"),
    ("recall", DEEP_JSON, "nested too deeply"),
    ("recall", '{"query": "x", "time_after": ' + "9" * 5000 + "}", "not valid JSON"),
    ("recall", {"query": json.loads("[" * 500 + "]" * 500)}, "query must be a string"),
    ("recall", [1, 2], "arguments must be an object"),
    ("recall", 42, "arguments must be an object"),
    ("recall", {"query": 5}, "query must be a string"),
    ("recall", {"query": "x", "time_after": 2**63}, "time_after must be <="),
    ("recall", {"query": "x", "time_before": -(2**70)}, "time_before must be >="),
    ("recall", '{"query": "x", "time_after": NaN}', "time_after must be an integer"),
    ("recall", {"query": "x", "time_after": "yesterday"}, "time_after must be an integer"),
    ("recall", {"query": "x", "platform": "\ud800"}, "not valid Unicode"),
    ("recall", {"query": "x", "platform": "p" * 10_000}, "longer than"),
    ("recall", {"query": "x", "scope": ["facts"] * 50}, "more than 5 items"),
    ("recall", {"query": "x", "budget": ["high"]}, "budget must be a string"),
    ("recall", {"query": "x", "max_results": 10**30}, "max_results must be <="),
    ("search_memory", {"query": "x" * 20_000}, "longer than"),
    ("search_memory", {"query": "x", "entity": "\udcff"}, "not valid Unicode"),
    ("remember_fact", {"text": "Ann likes \ud800 tea"}, "text is not valid Unicode"),
    ("remember_fact", '{"text": "Ann likes \\udfff tea"}', "text is not valid Unicode"),
    ("remember_fact", {"text": "ok", "entities": ["\ud800"]}, "entities[0] is not valid Unicode"),
    ("remember_fact", {"text": "ok", "entities": ["n" * 1_000]}, "longer than"),
    ("remember_fact", {"text": "ok", "entities": [str(i) for i in range(500)]}, "more than 50 items"),
    ("remember_fact", {"text": "t" * 5_000}, "fact text is 5000 characters; keep facts atomic (< 2000)"),
    ("remember_fact", {"text": "   "}, "must not be empty"),
    ("remember_fact", {"text": "ok", "extra": 1}, "unknown argument 'extra'"),
    ("correct_fact", {"fact_id": "F", "new_text": "bad \ud800"}, "new_text is not valid Unicode"),
    ("correct_fact", {"fact_id": "F", "new_text": "fine", "reason": "\udc00"}, "reason is not valid Unicode"),
    ("correct_fact", {"fact_id": "no-such-fact", "new_text": "fine"}, "no fact with id"),
    ("correct_fact", {"fact_id": "F" * 10_000, "new_text": "fine"}, "longer than"),
    ("confirm_fact", {"fact_id": ["F"]}, "fact_id must be a string"),
    ("get_entity_info", {"entity": "\ud800"}, "not valid Unicode"),
    ("memory_stats", {"anything": 1}, "unknown argument"),
    ("get_context", {}, "missing required argument 'message'"),
    ("get_context", {"message": "x", "participants": [{"platform": "chat"}]}, "missing required argument 'handle'"),
    ("get_context", {"message": "x", "participants": [{"platform": "c", "handle": "h", "x": 1}]}, "unknown argument"),
    ("get_context", {"message": "x", "participants": [{"platform": "c", "handle": "\ud800"}]}, "not valid Unicode"),
    ("get_context", {"message": "x", "participants": [{"platform": "c", "handle": "a\x00b"}]}, "control character"),
    ("get_context", {"message": "x", "participants": "chat:u1"}, "participants must be an array"),
    ("get_context", {"message": "x", "max_tokens": 10}, "max_tokens must be >="),
]


@pytest.mark.parametrize(("name", "arguments", "expected"), BAD_CALLS, ids=range(len(BAD_CALLS)))
def test_bad_calls_return_a_clear_error_and_write_nothing(
    stores: Stores, fact_id: str, name: Any, arguments: Any, expected: str
) -> None:
    if isinstance(arguments, dict) and arguments.get("fact_id") == "F":
        arguments = {**arguments, "fact_id": fact_id}
    before = fact_count(stores)

    result = call_tool(stores, name, arguments)

    assert set(result) == {"error"}, result
    assert expected in result["error"]
    assert "internal error" not in result["error"]
    assert len(result["error"]) < 2_000
    json.dumps(result).encode("utf-8")  # what the model is shown is valid, printable JSON
    assert fact_count(stores) == before


def test_good_calls_still_work_after_the_checks(stores: Stores, fact_id: str) -> None:
    found = call_tool(stores, "recall", {"query": "Lisbon", "time_after": 0, "platform": " Memory_Tool "})
    assert "error" not in found
    fixed = call_tool(stores, "correct_fact", {"fact_id": fact_id, "new_text": "Priya moved to Porto \ufffd"})
    assert fixed["supersedes"] == fact_id


# --- recall() from Python and the CLI ---------------------------------------------------------------

BAD_FILTERS: list[tuple[dict[str, Any], str]] = [
    ({"platform": "\ud800"}, "platform is not valid Unicode"),
    ({"thread_id": "t\udcff"}, "thread_id is not valid Unicode"),
    ({"session_id": 12}, "session_id must be a string"),
    ({"platform": "x" * 5_000}, "platform is 5000 characters"),
    ({"time_after": 2**63}, "time_after must be unix milliseconds below"),
    ({"time_before": -(2**63)}, "time_before must be unix milliseconds below"),
    ({"time_after": float("nan")}, "time_after must be an integer"),
    ({"time_after": True}, "time_after must be an integer"),
    ({"reference_time": "now"}, "reference_time must be an integer"),
    ({"max_results": -1}, "max_results must be between 0"),
    ({"max_results": 2**63}, "max_results must be between 0"),
    ({"max_results": float("nan")}, "max_results must be an integer"),
    ({"max_tokens": -5}, "max_tokens must be between 0"),
    ({"budget": float("nan")}, "budget must be a string"),
    ({"budget": ["mid"]}, "budget must be a string"),
    ({"budget": "extreme"}, "budget must be one of"),
    ({"scope": 5}, "scope must be a list"),
    ({"scope": ["facts", "dreams"]}, "unknown scope"),
]


@pytest.mark.parametrize(("filters", "expected"), BAD_FILTERS, ids=range(len(BAD_FILTERS)))
def test_recall_bad_filters_raise_one_clear_value_error(stores: Stores, filters: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValueError) as caught:
        recall(stores, "where does Priya live", **filters)
    assert expected in str(caught.value)
    if "must be one of" not in expected and "unknown scope" not in expected:
        assert isinstance(caught.value, RecallArgumentError)


def test_recall_platform_filter_is_normalised(stores: Stores, fact_id: str) -> None:
    import numpy as np

    hits = recall(stores, "Lisbon", platform="  MEMORY_TOOL ", time_after=np.int64(0), touch=False)
    assert [r.id for r in hits.results] == [fact_id]


def test_cli_recall_with_a_bad_platform_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    status = main(["recall", "--platform", "\udcff", "anything"])  # what `--platform $'\xff'` reaches us as
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert err.splitlines() == ["error: platform is not valid Unicode (lone surrogate '\\udcff' at character 0)"]


@pytest.mark.parametrize(
    ("participant", "expected"),
    [
        ("imessage", "expected PLATFORM:HANDLE or PLATFORM:HANDLE=NAME"),
        ("imessage:\udcff", "participant handle is not valid Unicode (lone surrogate '\\udcff' at character 0)"),
        ("imessage:" + "9" * 300, "participant handle is 300 characters, over the limit of 256"),
        ("imessage:+15550111=Jo\x07hn", "participant name contains a control character '\\x07' at character 2"),
    ],
)
def test_cli_context_with_a_bad_participant_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], participant: str, expected: str
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    status = main(["context", "What does John like?", "--participant", participant])
    out, err = capsys.readouterr()
    assert status == 2 and out == ""
    assert len(err.splitlines()) == 1 and expected in err


def test_cli_context_with_participants_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    args = ["context", "What does John like?", "--participant", "chat:u1=John", "--participant", "chat:u2"]
    assert main(args) == 0
    assert capsys.readouterr().out.strip() == ""  # an empty memory injects nothing


def test_cli_recall_shows_a_report_by_its_first_line() -> None:
    """A mental model's dossier is dozens of lines: the text listing shows its first line and a count."""
    from nexus_memory.cli.memory import headline

    assert headline("Priya moved to Lisbon") == "Priya moved to Lisbon"
    assert headline("Dana: # Dana\n\nQuestion: who?\n- one\n") == "Dana: # Dana … (+2 lines; --json for all)"
