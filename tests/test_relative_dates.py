"""Relative dates read against the message day and the tense of their clause: the cases, rendering, the writer."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path

import pytest

from nexus_memory.bench import dates as bench_dates
from nexus_memory.events.ledger import Event
from nexus_memory.writer.extractor import annotate_relative_dates, extract, read_dates
from nexus_memory.writer.extractor.relative import resolve_relative_dates
from nexus_memory.writer.extractor.tense import tense_at

CASES = bench_dates.load_cases(bench_dates.DEFAULT_DATA)
KINDS = {
    "weekday",
    "last_weekday",
    "next_weekday",
    "this_weekday",
    "week",
    "weekend",
    "month",
    "year",
    "season",
    "day",
    "day_of_month",
    "in_n",
    "ago",
    "before_after",
    "earlier_later",
    "short_weekday",
    "since",
}
# Monday 3 March 2025, 09:15 UTC: the email.
MARCH_3 = int(datetime(2025, 3, 3, 9, 15, tzinfo=UTC).timestamp() * 1000)


def test_the_written_cases_are_well_formed() -> None:
    """At least 200 cases; each names its message's real weekday, holds its phrase and a day, span or null."""
    assert len(CASES) >= 200
    for case in CASES:
        where = f"line {case['line']}"
        assert datetime.fromisoformat(case["sent"]).strftime("%A") == case["weekday"], where
        assert case["phrase"] in case["text"], where
        assert case["kind"] in KINDS and case["tense"] in {"past", "present", "future", "none"}, where
        span = bench_dates.expected(case)
        assert span is None or span[0] <= span[1], where


def test_the_cases_cover_every_kind_in_more_than_one_tense() -> None:
    for kind in KINDS:
        tenses = {c["tense"] for c in CASES if c["kind"] == kind}
        assert "past" in tenses and tenses & {"present", "future"}, kind
    sent = [datetime.fromisoformat(c["sent"]).date() for c in CASES]
    assert date(2024, 2, 28) in sent and date(2024, 12, 31) in sent  # a leap February, a year's end
    same_day = [c for c in CASES if c["kind"] == "weekday" and c["weekday"].lower() in c["phrase"].lower()]
    assert {c["tense"] for c in same_day} >= {"past", "future"}  # "on Monday" said on a Monday, both ways


def test_the_resolver_reads_at_least_95_percent_of_the_cases() -> None:
    """A quality gate on the written cases (bench dates); the misses are listed when it fails."""
    result = bench_dates.run()
    assert result["cases"] == len(CASES)
    assert result["accuracy"] >= 0.95, json.dumps(result["misses"], indent=1)


def test_the_benchmark_reports_kinds_tenses_and_misses(tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    rows = [
        {"sent": "2025-03-03T09:15", "weekday": "Monday", "text": "We met last Friday.", "phrase": "last Friday",
         "kind": "last_weekday", "tense": "past", "expect": "2025-02-28"},
        {"sent": "2025-03-03T09:15", "weekday": "Monday", "text": "We met last Friday.", "phrase": "last Friday",
         "kind": "last_weekday", "tense": "past", "expect": "2025-03-07"},
    ]  # fmt: skip
    cases.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    result = bench_dates.run(cases)
    assert result["accuracy"] == 0.5
    assert result["by_kind"] == {"last_weekday": {"cases": 2, "accuracy": 0.5}}
    assert result["by_tense"] == {"past": {"cases": 2, "accuracy": 0.5}}
    assert result["misses"] == [
        {
            "line": 2,
            "sent": "2025-03-03T09:15 (Monday)",
            "text": "We met last Friday.",
            "phrase": "last Friday",
            "expect": "2025-03-07",
            "got": "2025-02-28",
        }
    ]


@pytest.mark.parametrize(
    ("text", "tense"),
    [
        ("Kestrel told us on Friday that their SDK won't be ready until March 14.", "past"),
        ("We'll review the draft on Friday.", "future"),
        ("I'm meeting her on Friday.", "present"),
        ("I've got a meeting on Friday.", "present"),
        ("Have you been to the lake on Friday?", "past"),
        ("I'm so excited for Friday!", "present"),
        ("Dinner on Friday?", "none"),
        ("I celebrated with cake. Any plans for Friday?", "none"),
    ],
)
def test_the_tense_is_the_nearest_cue_in_the_phrase_clause(text: str, tense: str) -> None:
    start = text.index("Friday")
    assert tense_at(text, start, start + len("Friday")) == tense


@pytest.mark.parametrize(
    ("text", "annotated"),
    [
        ("I moved last week.", "I moved last week (the week of 24 February 2025)."),
        ("We went skiing over the weekend.", "We went skiing over the weekend (the weekend of 1 March 2025)."),
        ("We start next month.", "We start next month (in April 2025)."),
        ("She moved last year.", "She moved last year (in 2024)."),
        ("We went to the coast last summer.", "We went to the coast last summer (in June \u2013 August 2024)."),
        ("It snowed this winter.", "It snowed this winter (in December 2024 \u2013 February 2025)."),
        ("I'm off later this week.", "I'm off later this week (4 \u2013 9 March 2025)."),
        ("It was busy the past week.", "It was busy the past week (the week of 24 February 2025)."),  # a Monday
        ("We met two weeks ago.", "We met two weeks ago (around 17 February 2025)."),
        ("We met two months ago.", "We met two months ago (around January 2025)."),
        ("We met five years ago.", "We met five years ago (around 2020)."),
        ("Friday's game was great.", "Friday's (on 28 February 2025) game was great."),
        ("I go swimming on Fridays.", "I go swimming on Fridays."),
        # A day named short keeps its weekday's name in the date; one spelled out already does not repeat it.
        (
            "Last Fri I took the kids to a pottery workshop.",
            "Last Fri (on Friday, 28 February 2025) I took the kids to a pottery workshop.",
        ),
        ("We met on Tues.", "We met on Tues (on Tuesday, 25 February 2025)."),
        # A duration up to the message: since when, at the duration's grain.
        ("Seven years now, and I've found my muses.", "Seven years now (since 2018), and I've found my muses."),
        (
            "I've been playing for about four months now.",
            "I've been playing for about four months now (since November 2024).",
        ),
        ("I've known Jess for two weeks.", "I've known Jess for two weeks (since around 17 February 2025)."),
        ("We stayed in Rome for two weeks.", "We stayed in Rome for two weeks."),
    ],
)
def test_days_and_spans_are_rendered_after_the_phrase(text: str, annotated: str) -> None:
    assert annotate_relative_dates(text, MARCH_3)[0] == annotated


def test_a_span_across_years_and_its_mention() -> None:
    new_year = int(datetime(2025, 1, 2, 10, tzinfo=UTC).timestamp() * 1000)
    text, mentions = annotate_relative_dates("Earlier this week we were snowed in.", new_year)
    assert text == "Earlier this week (30 December 2024 \u2013 1 January 2025) we were snowed in."
    assert mentions == ["30 December 2024 \u2013 1 January 2025"]


def test_annotating_twice_changes_nothing() -> None:
    once, _ = annotate_relative_dates("Kestrel said on Friday they can't make it on Wednesday or next week.", MARCH_3)
    assert once == (
        "Kestrel said on Friday (on 28 February 2025) they can't make it on Wednesday (on 5 March 2025) "
        "or next week (the week of 10 March 2025)."
    )
    assert annotate_relative_dates(once, MARCH_3) == (once, [])


def test_a_span_since_is_the_time_a_fact_is_about_and_is_not_annotated_twice() -> None:
    dated = read_dates("We've been married 5 years already.", MARCH_3)
    assert dated.text == "We've been married 5 years already (since 2020)."
    first, last = (datetime.fromtimestamp(ms / 1000, UTC).date() for ms in dated.about or (0, 0))
    assert (first, last) == (date(2020, 1, 1), date(2025, 3, 3))
    assert read_dates(dated.text, MARCH_3).text == dated.text


def test_an_anaphoric_phrase_needs_a_date_before_it() -> None:
    found = resolve_relative_dates("We met on Friday and she called me the day after.", date(2025, 3, 3))
    assert [(f.first, f.last) for f in found] == [(date(2025, 2, 28),) * 2, (date(2025, 3, 1),) * 2]
    assert resolve_relative_dates("I had seen him the week before.", date(2025, 3, 3)) == []


def test_the_offline_writer_reads_the_tense_of_each_statement() -> None:
    """The issue's email: the Friday Kestrel spoke on is 28 February; the Friday of the review is 7 March."""
    email = Event(
        id="e1",
        platform="email",
        sender_id="sam@example.com",
        sender_name="Sam Rivera",
        content="Kestrel told us on Friday that their SDK won't be ready until March 14. "
        "We'll review the draft on Friday.",
        as_of=MARCH_3,
        peer_id="team@example.com",
        peer_kind="dm",
    )
    facts = extract([email]).facts
    told = next(f for f in facts if "told us" in f.text)
    review = next(f for f in facts if "review" in f.text)
    assert "told us on Friday (on 28 February 2025) that" in told.text
    assert "on Friday (on 7 March 2025)" in review.text
    assert review.as_of == MARCH_3
    assert any(e.name == "28 February 2025" and e.type == "date" for e in told.entities)
