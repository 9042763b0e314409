"""One calendar table: the extractor, query date parsing and the LoCoMo importer read month and number words alike."""

from __future__ import annotations

from datetime import UTC, datetime

from nexus_memory.core.calendar_words import month_number
from nexus_memory.events.importers.locomo import parse_session_date
from nexus_memory.recall.timeparse import parse_time_window
from nexus_memory.writer.extractor import annotate_relative_dates, explicit_dates

MAY_8 = int(datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp() * 1000)


def test_month_number_reads_full_and_short_names_in_any_case() -> None:
    assert [month_number(w) for w in ("January", "sept.", "SEP", "May", "dec")] == [1, 9, 9, 5, 12]
    assert month_number("Mayday") is None and month_number("") is None


def test_every_reader_agrees_on_a_short_month_name() -> None:
    assert explicit_dates("The party is on 3 Sept 2023.", MAY_8)[1] == ["3 September 2023"]
    assert parse_session_date("1:56 pm on 3 Sept, 2023") == datetime(2023, 9, 3, 13, 56, tzinfo=UTC)
    window = parse_time_window("what happened on 3 sept 2023", MAY_8)
    assert window is not None
    assert datetime.fromtimestamp(window[0] / 1000, tz=UTC) == datetime(2023, 9, 3, tzinfo=UTC)


def test_a_couple_counts_two_in_the_extractor_and_in_queries() -> None:
    text, mentions = annotate_relative_dates("We met a couple weeks ago.", MAY_8)
    assert text == "We met a couple weeks ago (around 24 April 2023)." and mentions == ["24 April 2023"]
    window = parse_time_window("what did we do a couple weeks ago", MAY_8)
    assert window is not None
    assert datetime.fromtimestamp(window[0] / 1000, tz=UTC) == datetime(2023, 4, 24, tzinfo=UTC)
