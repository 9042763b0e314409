"""The lifecycle from the command line and as agent tools: one implementation behind both."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lifecycle_world import add_mental_model, add_observation, build, facts_with, files_holding, message

from nexus_memory import cli
from nexus_memory.agents.tools import call_tool
from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.identity import store as identity


@pytest.fixture
def data_dir(settings: Settings, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(settings.data_dir))
    with Stores(settings) as stores:
        build(
            stores,
            [
                message(1, "ben@example.com", "I moved to Lisbon last month.", sender_name="Ben"),
                message(2, "ben@example.com", "The alarm code is zzqkvv.", sender_name="Ben"),
                message(3, "dana@example.com", "I adopted a cat named Miso.", sender_name="Dana"),
            ],
        )
        lisbon = facts_with(stores, "Lisbon")[0]
        add_observation(stores, [lisbon], "Ben lives in Lisbon")
        add_mental_model(stores, "Ben", "Ben moved to Lisbon", subtype="entity")
    return settings.data_dir


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict]:
    code = cli.main([*argv, "--json"])
    out = capsys.readouterr().out
    return code, json.loads(out) if out.strip() else {}


def test_maintenance_commands_report_as_json(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, decay = run(capsys, "decay")
    assert code == 0 and decay["checked"] == 3 and decay["soft_deleted"] == 0
    assert run(capsys, "decay", "--rate", "0.5", "--threshold", "0.5")[1]["soft_deleted"] == 0  # facts are new
    assert run(capsys, "conflicts")[1]["facts_checked"] == 3
    assert run(capsys, "enrich")[1]["facts_read"] >= 1
    assert run(capsys, "reflect")[1]["status"] == "written"
    assert run(capsys, "sessions", "--nightly")[1]["ended"] == 1
    assert cli.main(["decay", "--rate", "-1"]) == 2  # one clear line, nothing done


def test_forget_and_consolidate_show_progress_on_stderr(
    data_dir: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NEXUS_PROGRESS_EVERY_S", "0")  # a line per report (off a terminal: one a minute)
    assert cli.main(["consolidate", "--offline"]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"consolidate: \d+ facts in \d+ s.*", lines[-1]), lines
    assert cli.main(["forget", "--sender", "dana@example.com", "--yes"]) == 0
    lines = capsys.readouterr().err.splitlines()
    steps = [line for line in lines if line.startswith("forget: ")]
    assert steps[0].startswith("forget: 1/5 steps (20 %)") and re.fullmatch(r"forget: 5 steps in \d+ s.*", steps[-1])


def test_forget_previews_then_forgets(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, preview = run(capsys, "forget", "--sender", "ben@example.com")
    assert code == 0 and preview["forgotten"] is False and preview["would_remove"]["events"] == 2
    assert files_holding(data_dir, "zzqkvv")
    code, done = run(capsys, "forget", "--sender", "ben@example.com", "--yes", "--reason", "left the company")
    assert code == 0 and done["forgotten"] is True and done["status"] == "scrubbed"
    assert files_holding(data_dir, "zzqkvv") == []
    assert cli.main(["forget", "--entity", "Nobody Here", "--yes"]) == 2
    assert run(capsys, "forget", "--scrub")[1]["complete"] is True


def test_remember_correct_confirm_entity_observations_models(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, remembered = run(capsys, "remember", "Ben's sister is called Ines", "--entity", "Ines")
    assert code == 0 and "Ines" in remembered["entities"]
    code, again = run(capsys, "remember", "Ben's sister is called Ines")  # stored once: the answer is that fact
    assert code == 0 and again["duplicate"] is True and again["fact_id"] == remembered["fact_id"]
    code, corrected = run(capsys, "correct", remembered["fact_id"], "Ben's sister is called Ines Silva")
    assert corrected["supersedes"] == remembered["fact_id"]
    assert run(capsys, "confirm", corrected["fact_id"])[1]["decay_rate"] == 0.0
    assert cli.main(["confirm", remembered["fact_id"]]) == 2  # a corrected fact cannot be confirmed
    capsys.readouterr()
    info = run(capsys, "entity", "ben@example.com")[1]
    assert any("Lisbon" in f["text"] for f in info["facts"])
    listed = run(capsys, "observations")[1]["observations"]
    assert [o["text"] for o in listed] == ["Ben lives in Lisbon"]
    shown = run(capsys, "observations", listed[0]["id"])[1]
    assert shown["current_version"] == listed[0]["id"] and len(shown["facts"]) == 1
    models = run(capsys, "models")[1]["mental_models"]
    assert run(capsys, "models", models[0]["id"])[1]["text"] == "Ben moved to Lisbon"


def test_remember_and_correct_take_the_time_a_fact_is_about(
    data_dir: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    code, remembered = run(capsys, "remember", "The Atlas launch moved", "--about", "2025-03-18/2025-03-25")
    assert code == 0
    code, corrected = run(
        capsys, "correct", remembered["fact_id"], "The Atlas launch is on 25 March", "--about", "2025-03-25"
    )
    assert code == 0
    assert cli.main(["remember", "Ben flies out", "--about-end", "2025-04"]) == 2  # an end needs a start
    assert cli.main(["remember", "Ben flies out", "--about", "next spring"]) == 2  # not a time it can read
    with Stores(settings) as stores:
        spans = {
            fact_id: stores.conn.execute("SELECT about_start, about_end FROM facts WHERE id = ?", (fact_id,)).fetchone()
            for fact_id in (remembered["fact_id"], corrected["fact_id"])
        }
    day = 86_400_000
    moved, launch = spans[remembered["fact_id"]], spans[corrected["fact_id"]]
    assert moved[1] - moved[0] >= 7 * day and launch[1] - launch[0] < day + 1
    assert launch[0] >= moved[0] and launch[1] <= moved[1]


def test_candidates_unmerge_from_the_cli(
    data_dir: Path, settings: Settings, capsys: pytest.CaptureFixture[str]
) -> None:
    with Stores(settings) as stores:
        ben, dana = (
            stores.conn.execute("SELECT entity_id FROM contacts WHERE handle = ?", (h,)).fetchone()[0]
            for h in ("ben@example.com", "dana@example.com")
        )
        proposed = identity.propose_merge(stores.conn, ben, dana, 0.7, "test")
        identity.resolve_candidate(stores.conn, proposed["candidate_id"], accept=True)
    code, result = run(capsys, "candidates", "unmerge", proposed["candidate_id"])
    assert code == 0 and result["entity"] == dana
    assert cli.main(["candidates", "unmerge", proposed["candidate_id"]]) == 2


def test_forget_tool_needs_confirmation(data_dir: Path, settings: Settings) -> None:
    with Stores(settings) as stores:
        fact_id = facts_with(stores, "zzqkvv")[0]
        preview = call_tool(stores, "forget", {"target": "fact", "value": fact_id})
        assert preview["forgotten"] is False and preview["would_remove"]["facts"] == 1
        assert facts_with(stores, "zzqkvv") == [fact_id]
        done = call_tool(stores, "forget", {"target": "fact", "value": fact_id, "confirm": True}, session_id="s9")
        assert done["forgotten"] is True and facts_with(stores, "zzqkvv") == []
        log = stores.conn.execute("SELECT requested_by FROM deletion_log").fetchone()[0]
        assert log == "agent:s9"
        assert "invalid arguments" in call_tool(stores, "forget", {"target": "planet", "value": "x"})["error"]
        assert "no fact" in call_tool(stores, "forget", {"target": "fact", "value": "nope"})["error"]
        shown = call_tool(stores, "forget", {"target": "entity", "value": "Ben", "include_candidates": True})
        assert shown["forgotten"] is False and shown["candidates"] == []  # Ben has one handle
        wrong = {"target": "sender", "value": "ben@example.com", "include_candidates": True}
        assert "goes with an entity" in call_tool(stores, "forget", wrong)["error"]
        assert "no observation" in call_tool(stores, "show_observation", {"id": "nope"})["error"]
        assert call_tool(stores, "list_mental_models", {"subtype": "reflection"}) == {"mental_models": []}
