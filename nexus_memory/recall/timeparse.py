"""Explicit date expressions in a query -> a time window, relative to a reference time.

`parse_time_window("what did Sarah say last week", ref)` -> (start_ms, end_ms, "what did Sarah say").
Bounds are inclusive unix milliseconds (time_after <= as_of <= time_before), calendar-aligned in
`tz` (UTC by default): "May 2023" is 2023-05-01T00:00:00.000 .. 2023-05-31T23:59:59.999.
Only explicit expressions count: "when did Sarah move?" has no date and returns None, so it never
filters. Recognised (case-insensitive):

- today, tonight, this morning/afternoon/evening, yesterday, last night
- this/last week (Monday-based calendar weeks), this/last month, this/last year
- past/last N days|weeks|months|years, N days|weeks|months|years ago
- last/on/this <weekday> (the most recent such day before the reference day)
- 2023-05-07, 7 May 2023, 7th of May 2023, May 7 2023, May 7th, 2023, on 7 May (reference year)
- May 2023, in/during May (the most recent May not after the reference month)
- 2023 (a year between 1900 and 2100)
- prefixes: since/after/from X -> only time_after; before/until/by X -> only time_before

Several expressions combine to their envelope ("between May 2023 and July 2023" -> May..July).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta, tzinfo

from nexus_memory.core.calendar_words import MONTH_ABBREVIATIONS, MONTHS, NUMBER_WORDS, WEEKDAYS, month_number

# Month words that are also common English words: without a year or a prefix they are not dates
# ("I may 2 ...", "march 3 miles").
AMBIGUOUS_MONTHS = {"may", "mar", "march", "jan", "sep"}


def _alternation(words: dict[str, int]) -> str:
    return "|".join(sorted(words, key=len, reverse=True))


_MONTH = r"(?P<month>" + _alternation(MONTHS | MONTH_ABBREVIATIONS) + r")\.?"
_FULL_MONTH = r"(?P<month>" + _alternation(MONTHS) + r")"
# Weekdays by full name only: "sun", "sat", "wed" are too often ordinary words.
_WEEKDAY = r"(?P<weekday>" + _alternation(WEEKDAYS) + r")"
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>(?:19|20)\d\d|2100)"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_N = r"(?P<n>\d{1,4}|" + _alternation(NUMBER_WORDS) + ")"

# Words before an expression that belong to it (removed from the cleaned query) or bound it.
_PREFIX = r"(?:(?P<prefix>since|after|from|before|until|till|by|in|on|during)\s+)?"
# prefix -> (time_after from, time_before from): which edge of the window each bound takes.
_BOUNDS = {
    "since": ("start", None),
    "from": ("start", None),
    "after": ("end", None),
    "before": (None, "start"),
    "until": (None, "end"),
    "till": (None, "end"),
    "by": (None, "end"),
}


@dataclass(frozen=True)
class _Window:
    start: datetime
    end: datetime


_Builder = Callable[[re.Match[str], datetime], _Window]


def parse_time_window(
    query: str, reference_ms: int | None = None, *, tz: tzinfo = UTC
) -> tuple[int | None, int | None, str] | None:
    """(time_after, time_before, cleaned_query) for the date expressions in `query`, or None."""
    reference = datetime.now(tz) if reference_ms is None else datetime.fromtimestamp(reference_ms / 1000, tz)
    taken = [False] * len(query)
    afters: list[datetime] = []
    befores: list[datetime] = []
    spans: list[tuple[int, int]] = []
    for pattern, build in _RULES:
        for match in pattern.finditer(query):
            start, end = match.span()
            if any(taken[start:end]):
                continue  # an earlier, more specific rule already read this text
            window = _safe_build(build, match, reference)
            if window is None:
                continue
            for i in range(start, end):
                taken[i] = True
            spans.append((start, end))
            after_edge, before_edge = _BOUNDS.get((match.group("prefix") or "").lower(), ("start", "end"))
            if after_edge:
                afters.append(getattr(window, after_edge))
            if before_edge:
                befores.append(getattr(window, before_edge))
    if not spans:
        return None
    time_after = _ms(min(afters)) if afters else None
    # Window ends are exclusive; recall's bounds are inclusive (as VectorIndex's), hence - 1.
    time_before = _ms(max(befores)) - 1 if befores else None
    return time_after, time_before, _remove_spans(query, spans)


def _safe_build(build: _Builder, match: re.Match[str], reference: datetime) -> _Window | None:
    try:
        return build(match, reference)
    except (ValueError, OverflowError):
        return None  # "31 February", a year out of range: not a date after all


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def _remove_spans(query: str, spans: list[tuple[int, int]]) -> str:
    pieces, cursor = [], 0
    for start, end in sorted(spans):
        pieces.append(query[cursor:start])
        cursor = end
    pieces.append(query[cursor:])
    cleaned = " ".join("".join(pieces).split())
    return re.sub(r"\s+([?.!,;:])", r"\1", cleaned).strip(" ,;:")


# -- window builders -------------------------------------------------------------------------------


def _day_start(day: date, reference: datetime) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=reference.tzinfo)


def _days(first: date, count: int, reference: datetime) -> _Window:
    start = _day_start(first, reference)
    return _Window(start, _day_start(first + timedelta(days=count), reference))


def _month(year: int, month: int, reference: datetime, count: int = 1) -> _Window:
    start = datetime(year, month, 1, tzinfo=reference.tzinfo)
    end_year, end_month = divmod(month - 1 + count, 12)
    return _Window(start, datetime(year + end_year, end_month + 1, 1, tzinfo=reference.tzinfo))


def _year(year: int, reference: datetime, count: int = 1) -> _Window:
    return _Window(datetime(year, 1, 1, tzinfo=reference.tzinfo), datetime(year + count, 1, 1, tzinfo=reference.tzinfo))


def _shift_months(year: int, month: int, delta: int) -> tuple[int, int]:
    years, month0 = divmod(month - 1 + delta, 12)
    return year + years, month0 + 1


def _named_day(match: re.Match[str], reference: datetime) -> _Window:
    word = match.group("word").lower()
    today = reference.date()
    if word in ("yesterday", "last night"):
        return _days(today - timedelta(days=1), 1, reference)
    return _days(today, 1, reference)


def _relative_period(match: re.Match[str], reference: datetime) -> _Window:
    which, unit = match.group("which").lower(), match.group("unit").lower()
    today = reference.date()
    offset = -1 if which in ("last", "previous") else 0
    if unit == "week":
        monday = today - timedelta(days=today.weekday()) + timedelta(weeks=offset)
        return _days(monday, 7, reference)
    if unit == "month":
        year, month = _shift_months(today.year, today.month, offset)
        return _month(year, month, reference)
    return _year(today.year + offset, reference)


def _last_n(match: re.Match[str], reference: datetime) -> _Window:
    """past/last N units (N = 1 when omitted): from N units ago up to the end of today."""
    n = _number(match.group("n")) if "n" in match.groupdict() and match.group("n") else 1
    unit = match.group("unit").lower()
    end = _day_start(reference.date() + timedelta(days=1), reference)
    return _Window(_back(reference, n, unit), end)


def _ago(match: re.Match[str], reference: datetime) -> _Window:
    """N units ago: that day, or that calendar week/month/year."""
    n, unit = _number(match.group("n")), match.group("unit").lower()
    moment = _back(reference, n, unit)
    if unit == "day":
        return _days(moment.date(), 1, reference)
    if unit == "week":
        return _days(moment.date() - timedelta(days=moment.weekday()), 7, reference)
    if unit == "month":
        return _month(moment.year, moment.month, reference)
    return _year(moment.year, reference)


def _back(reference: datetime, n: int, unit: str) -> datetime:
    if unit == "day":
        return _day_start(reference.date() - timedelta(days=n), reference)
    if unit == "week":
        return _day_start(reference.date() - timedelta(weeks=n), reference)
    if unit == "month":
        year, month = _shift_months(reference.year, reference.month, -n)
        day = min(reference.day, calendar.monthrange(year, month)[1])
        return _day_start(date(year, month, day), reference)
    year = reference.year - n
    day = min(reference.day, calendar.monthrange(year, reference.month)[1])
    return _day_start(date(year, reference.month, day), reference)


def _number(text: str) -> int:
    text = " ".join(text.lower().split())
    value = NUMBER_WORDS.get(text) or int(text)
    if value > 10_000:
        raise ValueError("too far back")
    return value


def _weekday(match: re.Match[str], reference: datetime) -> _Window:
    """The most recent such weekday strictly before the reference day."""
    target = WEEKDAYS[match.group("weekday").lower()]
    today = reference.date()
    back = (today.weekday() - target) % 7 or 7
    return _days(today - timedelta(days=back), 1, reference)


def _iso_date(match: re.Match[str], reference: datetime) -> _Window:
    day = date(int(match.group("year")), int(match.group("m")), int(match.group("day")))
    return _days(day, 1, reference)


def _day_month_year(match: re.Match[str], reference: datetime) -> _Window:
    """A calendar day; without a year, the most recent such day not after the reference day."""
    word = match.group("month").lower()
    explicit = (
        match.group("year") or match.group("prefix") or re.search(r"\d(st|nd|rd|th)|\bof\b", match.group(0), re.I)
    )
    if word in AMBIGUOUS_MONTHS and not explicit:
        raise ValueError("'2 may', 'march 3': a verb, not a month")
    month, number = _month_number(word), int(match.group("day"))
    if match.group("year"):
        return _days(date(int(match.group("year")), month, number), 1, reference)
    day = date(reference.year, month, number)
    if day > reference.date():
        day = date(reference.year - 1, month, number)
    return _days(day, 1, reference)


def _month_number(word: str) -> int:
    number = month_number(word)
    if number is None:
        raise ValueError(f"not a month: {word!r}")
    return number


def _month_year(match: re.Match[str], reference: datetime) -> _Window:
    return _month(int(match.group("year")), _month_number(match.group("month")), reference)


def _bare_month(match: re.Match[str], reference: datetime) -> _Window:
    """'in May': the most recent May that is not after the reference month."""
    month = _month_number(match.group("month"))
    year = reference.year if month <= reference.month else reference.year - 1
    return _month(year, month, reference)


def _bare_year(match: re.Match[str], reference: datetime) -> _Window:
    return _year(int(match.group("year")), reference)


def _rule(pattern: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w-])" + _PREFIX + pattern + r"(?![\w-])", re.IGNORECASE)


# Most specific first: text read by one rule is not read again by a later one.
_RULES = [
    (_rule(r"(?:the\s+)?" + _YEAR + r"-(?P<m>[01]?\d)-" + r"(?P<day>[0-3]?\d)"), _iso_date),
    (_rule(r"(?:the\s+)?" + _DAY + r"(?:\s+of)?\s+" + _MONTH + r"(?:,?\s+" + _YEAR + r")?"), _day_month_year),
    (_rule(_MONTH + r"\s+" + _DAY + r"(?:,?\s+" + _YEAR + r")?"), _day_month_year),
    (_rule(_MONTH + r",?\s+(?:of\s+)?" + _YEAR), _month_year),
    (_rule(r"(?:the\s+)?(?:past|last)\s+" + _N + r"\s+" + _UNIT), _last_n),
    (_rule(r"(?:the\s+)?past\s+" + _UNIT), _last_n),
    (_rule(_N + r"\s+" + _UNIT + r"\s+ago"), _ago),
    (_rule(r"(?P<which>this|last|previous)\s+(?P<unit>week|month|year)"), _relative_period),
    (_rule(r"(?P<word>today|tonight|yesterday|last\s+night|this\s+(?:morning|afternoon|evening))"), _named_day),
    (_rule(r"(?:last|this|past)\s+" + _WEEKDAY), _weekday),
    (
        re.compile(r"(?<![\w-])(?P<prefix>on|since|after|before|until|by)\s+" + _WEEKDAY + r"(?![\w-])", re.IGNORECASE),
        _weekday,
    ),
    (
        re.compile(
            r"(?<![\w-])(?P<prefix>in|during|since|after|before|until|by)\s+" + _FULL_MONTH + r"(?![\w-])",
            re.IGNORECASE,
        ),
        _bare_month,
    ),
    (_rule(_YEAR), _bare_year),
]
