"""Every `nexus-memory` command and subcommand answers `--help` with what it does, and README.md lists it."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from nexus_memory.cli import build_parser, main

README = Path(__file__).resolve().parent.parent / "README.md"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's subcommands by name (none for a leaf command)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    """Every command under `parser`, itself included: (its words after `nexus-memory`, its description)."""
    found = [(path, parser.description or "")]
    for name, sub in _subcommands(parser).items():
        found += _walk(sub, (*path, name))
    return found


COMMANDS = _walk(build_parser())
TOP_LEVEL = sorted(_subcommands(build_parser()))
BENCHMARKS = sorted(_subcommands(_subcommands(build_parser())["bench"]))


def _section(title: str) -> str:
    """The README's text under `## title`, up to the next section of that level."""
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _named_in_command_table() -> set[tuple[str, ...]]:
    """The commands the README's command table has a row for: `nexus-memory a\\|b …` names a and b;
    `nexus-memory bench x …` names bench and bench x."""
    named: set[tuple[str, ...]] = set()
    for line in _section("Command line").splitlines():
        row = re.match(r"\| `nexus-memory ([^`]+)`", line)
        if not row:
            continue
        first, *rest = row.group(1).split()
        for name in first.split("\\|"):
            named.add((name,))
            if rest and name == "bench":
                named.update((name, sub) for sub in rest[0].split("\\|"))
    return named


def test_the_walk_finds_every_command() -> None:
    """The tree really is walked: the commands and the bench subcommands the README documents are there."""
    assert {"ingest", "pipeline", "recall", "context", "forget", "mcp", "serve", "bench"} <= set(TOP_LEVEL)
    every_benchmark = {
        "extract",
        "locomo",
        "recall",
        "analytics",
        "forget",
        "coldstart",
        "consolidate",
        "backfill",
        "embed",
        "dates",
        "facts",
        "freshness",
        "tenants",
    }
    assert set(BENCHMARKS) == every_benchmark


@pytest.mark.parametrize(("words", "description"), COMMANDS, ids=[" ".join(w) or "nexus-memory" for w, _ in COMMANDS])
def test_every_command_answers_help(
    words: tuple[str, ...], description: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert description.strip(), f"`nexus-memory {' '.join(words)}` has no description"
    with pytest.raises(SystemExit) as exited:
        main([*words, "--help"])
    assert exited.value.code == 0
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps the description
    assert shown.startswith(f"usage: nexus-memory {' '.join(words)}".rstrip())
    assert " ".join(description.split()) in shown


@pytest.mark.parametrize("name", TOP_LEVEL)
def test_every_command_has_a_row_in_the_readme(name: str) -> None:
    assert (name,) in _named_in_command_table(), f"README.md's command table has no row for `nexus-memory {name}`"


@pytest.mark.parametrize("name", BENCHMARKS)
def test_every_benchmark_is_in_the_readme(name: str) -> None:
    assert ("bench", name) in _named_in_command_table(), f"no command-table row for `nexus-memory bench {name}`"
    assert f"nexus-memory bench {name} " in _section("Benchmarks"), f"the Benchmarks section never runs {name}"
