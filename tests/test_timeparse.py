"""Date expressions in queries -> inclusive time windows, relative to a reference time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from nexus_memory.recall.timeparse import parse_time_window

# Wednesday 13 March 2024, 15:00 UTC.
REF = int(datetime(2024, 3, 13, 15, tzinfo=UTC).timestamp() * 1000)


def ms(*parts: int) -> int:
    return int(datetime(*parts, tzinfo=UTC).timestamp() * 1000)


def window(start: tuple[int, ...], end: tuple[int, ...]) -> tuple[int, int]:
    """Inclusive bounds of [start, end)."""
    return ms(*start), ms(*end) - 1


@pytest.mark.parametrize(
    ("query", "expected", "cleaned"),
    [
        ("what did I do yesterday?", window((2024, 3, 12), (2024, 3, 13)), "what did I do?"),
        ("today", window((2024, 3, 13), (2024, 3, 14)), ""),
        ("last week", window((2024, 3, 4), (2024, 3, 11)), ""),
        ("this week", window((2024, 3, 11), (2024, 3, 18)), ""),
        ("dinner plans last month", window((2024, 2, 1), (2024, 3, 1)), "dinner plans"),
        ("in May 2023", window((2023, 5, 1), (2023, 6, 1)), ""),
        ("What did Caroline do in May 2023?", window((2023, 5, 1), (2023, 6, 1)), "What did Caroline do?"),
        ("May 2023", window((2023, 5, 1), (2023, 6, 1)), ""),
        ("trips in 2023", window((2023, 1, 1), (2024, 1, 1)), "trips"),
        ("2023", window((2023, 1, 1), (2024, 1, 1)), ""),
        ("on 7 May 2023", window((2023, 5, 7), (2023, 5, 8)), ""),
        ("May 7th, 2023", window((2023, 5, 7), (2023, 5, 8)), ""),
        ("2023-05-07 meeting", window((2023, 5, 7), (2023, 5, 8)), "meeting"),
        ("the 7th of May", window((2023, 5, 7), (2023, 5, 8)), ""),  # no year: the latest one not in the future
        ("last Friday", window((2024, 3, 8), (2024, 3, 9)), ""),
        ("what happened on Wednesday", window((2024, 3, 6), (2024, 3, 7)), "what happened"),
        ("this year", window((2024, 1, 1), (2025, 1, 1)), ""),
        ("last year", window((2023, 1, 1), (2024, 1, 1)), ""),
        ("in December", window((2023, 12, 1), (2024, 1, 1)), ""),
        ("3 days ago", window((2024, 3, 10), (2024, 3, 11)), ""),
        ("the past 2 weeks", window((2024, 2, 28), (2024, 3, 14)), ""),
        ("a couple of weeks ago", window((2024, 2, 26), (2024, 3, 4)), ""),
        ("between May 2023 and July 2023", window((2023, 5, 1), (2023, 8, 1)), "between and"),
    ],
)
def test_windows(query: str, expected: tuple[int, int], cleaned: str) -> None:
    assert parse_time_window(query, REF) == (*expected, cleaned)


def test_open_ended_prefixes() -> None:
    assert parse_time_window("since 2022", REF) == (ms(2022, 1, 1), None, "")
    assert parse_time_window("after 2022", REF) == (ms(2023, 1, 1), None, "")
    assert parse_time_window("before May 2023", REF) == (None, ms(2023, 5, 1) - 1, "")
    assert parse_time_window("until May 2023", REF) == (None, ms(2023, 6, 1) - 1, "")


@pytest.mark.parametrize(
    "query",
    [
        "when did Sarah move?",
        "I may 2 go",
        "March 3 miles",
        "",
        "🙂",
        "2023-13-45",
        "room 12",
        "the sun was out",
        'NEAR("*") : ^',
        "x" * 10_000,
    ],
)
def test_no_date_means_no_window(query: str) -> None:
    assert parse_time_window(query, REF) is None


def test_reference_defaults_to_now_and_timezone() -> None:
    after, before, _ = parse_time_window("today")
    assert after <= int(datetime.now(UTC).timestamp() * 1000) <= before
    plus_two = timezone(timedelta(hours=2))
    after, before, _ = parse_time_window("yesterday", REF, tz=plus_two)
    assert after == int(datetime(2024, 3, 12, tzinfo=plus_two).timestamp() * 1000)
    assert before - after == 86_400_000 - 1
