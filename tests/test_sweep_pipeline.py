"""`nexus-memory pipeline --only-failed` where nothing failed but events wait (a pipeline killed before it
reached them, or never run): it says there is nothing to rerun, and how to build the waiting events,
never that every event is processed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexus_memory.cli import main


def test_only_failed_with_nothing_failed_says_how_to_build_what_waits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # a throwaway instance
    events = tmp_path / "events.jsonl"
    event = {
        "platform": "sms",
        "sender_id": "+15550100111",
        "content": "I adopted a dog named Rex.",
        "as_of": 1741017600,
    }
    events.write_text(json.dumps(event) + "\n")
    assert main(["ingest", str(events)]) == 0
    capsys.readouterr()

    main(["pipeline", "--only-failed"])

    out = capsys.readouterr().out
    assert "every event is processed" not in out
    assert "nothing to rerun: no episode's writer run failed" in out
    assert "events with work left after this pipeline: sms 1 (never started: `nexus-memory pipeline` without" in out


@pytest.mark.parametrize(
    ("home", "reason"),
    [
        ("a-file", "File exists"),
        ("relative", "must be an absolute path"),
        ("broken-yaml", 'in "{home}/dagster.yaml", line 2'),
    ],
)
def test_a_dagster_home_that_cannot_hold_runs_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], home: str, reason: str
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a-file").write_text("x")
    (tmp_path / "broken-yaml").mkdir()
    (tmp_path / "broken-yaml" / "dagster.yaml").write_text("run_storage: [\n")
    value = home if home == "relative" else str(tmp_path / home)
    monkeypatch.setenv("DAGSTER_HOME", value)

    assert main(["pipeline"]) == 2

    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "Traceback" not in err
    assert err.startswith(f"error: DAGSTER_HOME={value} cannot hold the run records")
    assert reason.format(home=value) in err
