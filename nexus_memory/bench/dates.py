"""Judge the relative-date resolver on written cases: accuracy overall, per phrase kind and per tense, and the misses.

Each case (one JSON object a line) gives the message time (`sent`, with its `weekday` for the reader), a sentence
(`text`), the relative phrase in it (`phrase`), its `kind` and the `tense` of its clause, and the expected reading
(`expect`): a day ("2025-02-28"), a span (["2025-02-24", "2025-03-02"]) or null where the phrase names no date
("on Fridays", "the 3rd floor"). The resolver's reading of a phrase is the first one it found overlapping it.

Usage: python -m nexus_memory.bench.dates [PATH]
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from datetime import date, datetime
from pathlib import Path
from typing import Any

from nexus_memory.writer.extractor.relative import resolve_relative_dates

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "relative_dates.jsonl"


def load_cases(path: Path) -> list[dict[str, Any]]:
    """The cases of a JSONL file, each with its line number as `line`."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return [{**json.loads(text), "line": n} for n, text in enumerate(lines, start=1) if text.strip()]


def expected(case: dict[str, Any]) -> tuple[date, date] | None:
    """A case's expected (first, last) day, or None."""
    value = case["expect"]
    if value is None:
        return None
    first, last = (value, value) if isinstance(value, str) else value
    return date.fromisoformat(first), date.fromisoformat(last)


def reading(case: dict[str, Any]) -> tuple[date, date] | None:
    """What the resolver makes of the case's phrase: (first, last) of the first reading overlapping it, or None."""
    text, phrase = case["text"], case["phrase"]
    start = text.index(phrase)
    end = start + len(phrase)
    today = datetime.fromisoformat(case["sent"]).date()
    for found in resolve_relative_dates(text, today):
        if found.start < end and start < found.end:
            return found.first, found.last
    return None


def _show(span: tuple[date, date] | None) -> str | list[str] | None:
    if span is None:
        return None
    return span[0].isoformat() if span[0] == span[1] else [span[0].isoformat(), span[1].isoformat()]


def _accuracy(hits: list[bool]) -> float:
    return round(sum(hits) / len(hits), 4) if hits else 0.0


def run(path: Path = DEFAULT_DATA) -> dict[str, Any]:
    """Accuracy of the resolver on the cases at `path`, overall, per kind and per tense, with every miss."""
    cases = load_cases(path)
    hits: list[bool] = []
    by_kind: dict[str, list[bool]] = defaultdict(list)
    by_tense: dict[str, list[bool]] = defaultdict(list)
    misses: list[dict[str, Any]] = []
    for case in cases:
        want, got = expected(case), reading(case)
        hit = want == got
        hits.append(hit)
        by_kind[case["kind"]].append(hit)
        by_tense[case["tense"]].append(hit)
        if not hit:
            misses.append(
                {
                    "line": case["line"],
                    "sent": f"{case['sent']} ({case['weekday']})",
                    "text": case["text"],
                    "phrase": case["phrase"],
                    "expect": _show(want),
                    "got": _show(got),
                }
            )
    return {
        "data": str(path),
        "cases": len(cases),
        "accuracy": _accuracy(hits),
        "by_kind": {k: {"cases": len(v), "accuracy": _accuracy(v)} for k, v in sorted(by_kind.items())},
        "by_tense": {k: {"cases": len(v), "accuracy": _accuracy(v)} for k, v in sorted(by_tense.items())},
        "misses": misses,
    }


if __name__ == "__main__":
    print(json.dumps(run(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_DATA), indent=1))
