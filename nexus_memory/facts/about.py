"""The time a fact is about, as a model or a person writes it (ISO 8601), read into the span a fact stores.

"2025-03-14" is that day, "2025-03" that month, "2025" that year, "2025-03-14T09:30:00Z" that moment; a span
runs from the first millisecond of its start to the last of its end, given as two values or as ISO 8601's
interval "2025-03-18/2025-03-25". The result is what `insert_fact(about=...)` stores as about_start/about_end
(docs/stores.md, "A fact's two times"); ToolError says what is wrong with a value it cannot store.
"""

from __future__ import annotations

import calendar
import re
from datetime import UTC, date, datetime, timedelta

from nexus_memory.core.tooling import ToolError
from nexus_memory.facts.insert import MAX_AS_OF

MAX_ABOUT_CHARS = 21  # "2025-03-18/2025-03-25"; a date-time span is given as two values
_YEAR = re.compile(r"\d{4}")
_MONTH = re.compile(r"(\d{4})-(\d{2})")
_DAY_MS = 86_400_000


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def time_range(text: str) -> tuple[int, int]:
    """The first and last ms of one ISO 8601 year, month, day or moment; ValueError when it is none of these."""
    text = text.strip()
    if _YEAR.fullmatch(text):
        year = int(text)
        return _ms(datetime(year, 1, 1, tzinfo=UTC)), _ms(datetime(year + 1, 1, 1, tzinfo=UTC)) - 1
    if month := _MONTH.fullmatch(text):
        year, number = int(month[1]), int(month[2])
        first = datetime(year, number, 1, tzinfo=UTC)
        return _ms(first), _ms(first + timedelta(days=calendar.monthrange(year, number)[1])) - 1
    if len(text) == 10:  # a day: "2025-03-14"
        day = date.fromisoformat(text)
        start = _ms(datetime(day.year, day.month, day.day, tzinfo=UTC))
        return start, start + _DAY_MS - 1
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    moment = moment if moment.tzinfo else moment.replace(tzinfo=UTC)  # no zone: UTC, as the ledger reads times
    return _ms(moment), _ms(moment)


def about_span(start: str, end: str | None = None) -> tuple[int, int]:
    """(first ms, last ms) of the time from `start` to `end` (default: `start` alone, or its "A/B" interval).

    ToolError when a value is not an ISO year, month, day or moment, when the span ends before it starts, or when
    it falls outside what a fact can store (1970 to 2100).
    """
    if end is None and "/" in start:
        start, end = start.split("/", 1)
    try:
        first, last = time_range(start)[0], time_range(end if end is not None else start)[1]
    except (ValueError, OverflowError):
        shown = start if end is None else f"{start} .. {end}"
        raise ToolError(
            f"about time {shown!r} is not an ISO date (2025-03-14), month (2025-03), year (2025) or date-time"
        ) from None
    if last < first:
        raise ToolError(f"about time ends ({end}) before it starts ({start})")
    if not 0 <= first <= last < MAX_AS_OF:
        raise ToolError("about time must fall between 1970 and 2100")
    return first, last
