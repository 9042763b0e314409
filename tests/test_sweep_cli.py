"""A command run in an environment it cannot use (a malformed setting, a data directory that is a file,
a store file that is not SQLite, a folder it cannot write, a model not on this machine): one line on
stderr saying what to fix, exit status 2, no traceback, and nothing written."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from nexus_memory.cli import main


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    _, err = capsys.readouterr()
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize(
    ("variable", "value", "reason"),
    [
        ("NEXUS_MAX_CONTENT_CHARS", "abc", "NEXUS_MAX_CONTENT_CHARS='abc' is not a whole number"),
        ("NEXUS_MAX_CONTENT_CHARS", "-5", "must be at least 1"),
        ("NEXUS_EMERGENT_MODELS", "three", "NEXUS_EMERGENT_MODELS='three' is not a whole number"),
        ("NEXUS_TORCH_THREADS", "0", "must be at least 1"),
        ("NEXUS_LLM_BUDGET_WRITER", "1e5", "not a whole number"),
        ("NEXUS_DECAY_RATE", "nan", "NEXUS_DECAY_RATE='nan' is not a number of at least 0"),
        ("NEXUS_PROGRESS_EVERY_S", "soon", "is not a number"),
        ("NEXUS_LLM_TIMEOUT_S", "-1", "is not a number of at least 0"),
    ],
)
def test_a_malformed_setting_is_one_line(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    reason: str,
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv(variable, value)
    assert main(["stats"]) == 2
    assert reason in one_error_line(capsys)
    assert not (tmp_path / "data").exists()


def test_a_data_directory_that_is_a_file_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "data").write_text("not a folder")
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    assert main(["recall", "boiler"]) == 2
    line = one_error_line(capsys)
    assert "data directory" in line and str(tmp_path / "data") in line
    assert (tmp_path / "data").read_text() == "not a folder"


@pytest.mark.parametrize("store", ["events", "memory"])
@pytest.mark.parametrize("body", [b"garbage, not SQLite", b"SQLite format 3\x00" + b"\x00" * 200])
def test_a_store_file_that_is_not_sqlite_is_one_line_and_left_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], store: str, body: bytes
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / f"{store}.db").write_bytes(body)
    monkeypatch.setenv("NEXUS_DATA_DIR", str(data))
    assert main(["stats"]) == 2
    line = one_error_line(capsys)
    assert f"{store}.db cannot be opened as a Nexus Memory store" in line
    assert (data / f"{store}.db").read_bytes() == body  # the user's file, whatever it is, is not touched


@pytest.mark.parametrize("where", ["a-file/skills", "/proc/no-such-folder/skills"])
def test_skills_export_to_a_folder_it_cannot_make_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    (tmp_path / "a-file").write_text("x")
    monkeypatch.chdir(tmp_path)
    assert main(["skills", "export", where]) == 2
    assert f"cannot write the skills folder {where}" in one_error_line(capsys)


def test_an_unknown_embedding_model_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    assert main(["rebuild-index", "--model", "no-such/model-anywhere"]) == 2
    assert "'no-such/model-anywhere' is not available offline" in one_error_line(capsys)


def test_output_cut_short_by_a_closed_pipe_is_no_traceback(tmp_path: Path) -> None:
    # `nexus-memory skills export DIR | head -1`: the reader goes after one line of six.
    env = {**os.environ, "NEXUS_DATA_DIR": str(tmp_path / "data")}
    command = [sys.executable, "-m", "nexus_memory.cli", "skills", "export", str(tmp_path / "skills")]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env) as process:
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()  # nothing will read what it prints
        err = process.stderr.read()
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err
    assert (tmp_path / "skills" / "SCHEMA.md").exists()  # the work itself was done


def test_writer_notes_from_a_file_that_is_not_utf8_names_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    notes = tmp_path / "notes.md"
    notes.write_bytes("## Known aliases\n- caf\u00e9\n".encode("latin-1"))
    assert main(["writer-notes", "edit", "--file", str(notes)]) == 2
    line = one_error_line(capsys)
    assert str(notes) in line and "not UTF-8" in line
    assert main(["writer-notes", "show"]) == 0
    assert "caf" not in capsys.readouterr().out  # nothing was saved


@pytest.mark.parametrize(
    ("arguments", "reason"),
    [
        (["locomo", "--data", "{tmp}/missing.json"], "missing.json does not exist"),
        (["extract"], "the following arguments are required: --data"),
        (["extract", "--data", "{tmp}"], "is not a file"),
        (["consolidate", "--data", "{tmp}/latin1.json"], "latin1.json is not a LoCoMo JSON file"),
        (["embed", "--data", "{tmp}/events.jsonl"], "events.jsonl is not a LoCoMo JSON file"),
        (["facts", "--data", "{tmp}/chatgpt.json"], "chatgpt.json is not a LoCoMo JSON file (a list of conversations)"),
        (["dates", "--data", "{tmp}/missing.jsonl"], "missing.jsonl does not exist"),
    ],
)
def test_a_benchmark_given_a_data_file_it_cannot_use_is_one_usage_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: list[str], reason: str
) -> None:
    (tmp_path / "latin1.json").write_bytes('[{"conversation": "caf\u00e9"}]'.encode("latin-1"))
    (tmp_path / "events.jsonl").write_text('{"a": 1}\n{"b": 2}\n')
    (tmp_path / "chatgpt.json").write_text('[{"mapping": {}}]')
    with pytest.raises(SystemExit) as exit_status:
        main(["bench", *[a.format(tmp=tmp_path) for a in arguments]])
    assert exit_status.value.code == 2
    _, err = capsys.readouterr()
    assert reason in err.splitlines()[-1] and "Traceback" not in err


@pytest.mark.parametrize("command", [["serve", "--port"], ["mcp", "--http", "--port"]])
@pytest.mark.parametrize("value", ["99999", "0", "-1"])
def test_a_port_out_of_range_is_a_usage_line_before_anything_listens(
    capsys: pytest.CaptureFixture[str], command: list[str], value: str
) -> None:
    with pytest.raises(SystemExit) as exit_status:
        main([*command, value])
    assert exit_status.value.code == 2
    _, err = capsys.readouterr()
    assert f"argument --port: must be a port from 1 to 65535, not {value}" in err.splitlines()[-1]
    assert "API on" not in err and "MCP server on" not in err


@pytest.mark.parametrize("command", [["serve", "--port"], ["mcp", "--http", "--port"]])
def test_a_port_in_use_is_one_line_before_the_banner(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    command: list[str],
) -> None:
    monkeypatch.setenv("NEXUS_DATA_DIR", str(tmp_path / "data"))
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        assert main([*command, str(port)]) == 2
    _, err = capsys.readouterr()
    assert f"error: cannot listen on 127.0.0.1:{port}" in err.splitlines()[-1] and "Traceback" not in err
    assert " on http://" not in err + caplog.text
