"""Dates in statements: relative phrases annotated with the days they name, and the time a fact is about.

A fact has two times (docs/stores.md): when it was said (its message's time, the fact's as_of) and the time its
text names, if any: `read_dates` gives the second as the first and last millisecond of every day, span, month or
year the text names, relative ("on Friday", read against the message day and the verb's tense) or explicit.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from nexus_memory.core.calendar_words import (
    MONTH_NAMES,
    WEEKDAY_NAMES,
    day_month_year,
    month_alternation,
    month_number,
    month_year,
)
from nexus_memory.core.ids import utc_date
from nexus_memory.writer.extractor.relative import RelativeDate, Span, resolve_relative_dates

_MONTH = "(?P<m>" + month_alternation() + ")"
# Explicit day-precise dates: "12 March 2024", "March 12th, 2024", "March 12", "2024-03-12".
DATE_DMY_RE = re.compile(r"\b(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r"\.?(?:,?\s+(?P<y>\d{4}))?\b")
DATE_MDY_RE = re.compile(r"\b" + _MONTH + r"\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<y>\d{4}))?(?![\d:])")
DATE_ISO_RE = re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b")
# Month-precise dates, used only as date entities: "March 2024".
DATE_MY_RE = re.compile(r"\b(?P<m>" + month_alternation(abbreviations=False) + r")\s+(?P<y>\d{4})\b")
# A date annotation this module wrote already (so re-running never doubles it): "(on 7 May 2023)",
# "(the week of 1 May 2023)", "(in June 2023)", "(around 2018)", "(since 2016)", "(1 – 7 May 2023)".
ANNOTATION_RE = re.compile(
    r"\s*\((?:on|in|around|since|the week|the weekend|a few|\d{1,2}(?: [A-Z][a-z]+)?(?: \d{4})? \u2013 \d)[^()]*\)"
)
_DASH = " \u2013 "
_DAY_MS = 86_400_000
_POSSESSIVE_RE = re.compile(r"['\u2019]s\b")


def _span(first: date, last: date) -> str:
    """'1 – 7 May 2023', '28 February – 2 March 2025', '30 December 2024 – 2 January 2025'."""
    if first.year != last.year:
        return day_month_year(first) + _DASH + day_month_year(last)
    if first.month != last.month:
        return f"{first.day} {MONTH_NAMES[first.month - 1]}{_DASH}{day_month_year(last)}"
    return f"{first.day}{_DASH}{day_month_year(last)}"


def _months(first: date, last: date) -> str:
    """'June 2023', 'June – August 2023', 'December 2023 – February 2024'."""
    if (first.year, first.month) == (last.year, last.month):
        return month_year(first)
    if first.year == last.year:
        return f"{MONTH_NAMES[first.month - 1]}{_DASH}{month_year(last)}"
    return month_year(first) + _DASH + month_year(last)


def render(found: RelativeDate, phrase: str = "") -> tuple[str, str]:
    """(annotation, date mention) of a resolved phrase: 'on 7 May 2023', 'the week of 1 May 2023', 'in 2022' ...

    A single day reads "on <day>" ("around <day>, <month> or <year>" when approximate); a calendar week, weekend,
    month, run of months or year is named as such; any other span is written out first to last. A day the phrase
    named by its weekday keeps the weekday's full name unless `phrase` (the words resolved) spells it already:
    "last Fri (on Friday, 14 July 2023)", but "on Friday (on 14 July 2023)".
    """
    first, last = found.first, found.last
    if found.since:  # "seven years now (since 2016)"
        start = {"year": str(first.year), "month": month_year(first)}.get(found.about, day_month_year(first))
        return f"since {'around ' if found.about == 'day' else ''}{start}", start
    if first == last:
        if found.about == "month":
            return f"around {month_year(first)}", month_year(first)
        if found.about == "year":
            return f"around {first.year}", str(first.year)
        name = WEEKDAY_NAMES[first.weekday()]
        spelled = not found.weekday or name.lower() in phrase.lower()
        day = day_month_year(first) if spelled else f"{name}, {day_month_year(first)}"
        return f"{'around' if found.about else 'on'} {day}", day_month_year(first)
    if (first.month, first.day, last.month, last.day) == (1, 1, 12, 31) and first.year == last.year:
        return f"in {first.year}", str(first.year)
    if first.day == 1 and (last + timedelta(days=1)).day == 1:
        return f"in {_months(first, last)}", _months(first, last)
    if first.weekday() == 0 and last == first + timedelta(days=6):
        return f"the week of {day_month_year(first)}", day_month_year(first)
    if first.weekday() == 5 and last == first + timedelta(days=1):
        return f"the weekend of {day_month_year(first)}", day_month_year(first)
    return _span(first, last), _span(first, last)


@dataclass(frozen=True)
class DatedText:
    """A statement with its relative dates annotated, the time it is about, and its date mentions."""

    text: str  # relative phrases annotated: "on Friday (on 28 February 2025)"
    about: tuple[int, int] | None  # first and last unix ms of all the times it names; None: it names none
    mentions: list[str]  # the dates it names, as date entity names ("28 February 2025", "March 2024")


def read_dates(text: str, said_ms: int) -> DatedText:
    """Annotate the relative dates of `text`, said at `said_ms`, and read the time it is about.

    The time it is about runs from the first to the last day of everything it names: relative phrases (each a
    day, a span, or around a month or year: that whole month or year) and explicit dates ("March 14" a day,
    "March 2024" the month). "Kestrel told us on Friday that the SDK won't be ready until March 14", said on
    Monday 3 March 2025, is about 28 February to 14 March 2025.
    """
    annotated, relative, spans = _annotate(text, said_ms)
    explicit, named = explicit_dates(annotated, said_ms)
    days = [*spans, *explicit]
    about = None
    if days:
        first, last = min(d[0] for d in days), max(d[1] for d in days)
        about = (_ms(first), _ms(last) + _DAY_MS - 1)
    return DatedText(annotated, about, _dedupe([*relative, *named]))


def names_a_date(text: str) -> bool:
    """Whether the text names a date itself: one this module annotated ("(on 7 May 2023)") or an explicit one."""
    return bool(ANNOTATION_RE.search(text) or any(p.search(text) for p in (DATE_DMY_RE, DATE_MDY_RE, DATE_ISO_RE)))


def about_label(about: tuple[int, int]) -> str:
    """A fact's about-time in words: '14 March 2025', 'March 2025', '28 February – 14 March 2025'."""
    first, last = utc_date(about[0]), utc_date(about[1])
    if first == last:
        return day_month_year(first)
    if first.day == 1 and (last + timedelta(days=1)).day == 1:
        return _months(first, last)
    return _span(first, last)


def _ms(day: date) -> int:
    return int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp() * 1000)


def _whole(found: RelativeDate) -> Span:
    """The days a phrase names; 'around May 2023' or 'around 2018' is the whole month or year, and a span since
    either runs from that month or year to the message day."""
    if found.since:
        start = {"year": found.first.replace(month=1, day=1), "month": found.first.replace(day=1)}
        return start.get(found.about, found.first), found.last
    if found.about == "month":
        return found.first.replace(day=1), found.first.replace(
            day=calendar.monthrange(found.first.year, found.first.month)[1]
        )
    if found.about == "year":
        return date(found.first.year, 1, 1), date(found.first.year, 12, 31)
    return found.first, found.last


def annotate_relative_dates(text: str, as_of_ms: int) -> tuple[str, list[str]]:
    """Append '(on 7 May 2023)'-style dates after relative time phrases; return the date mentions.

    Each phrase is read against the message's day and the tense of its clause (`relative.py`); a phrase already
    followed by an annotation is left as it is.
    """
    annotated, mentions, _spans = _annotate(text, as_of_ms)
    return annotated, mentions


def _annotate(text: str, as_of_ms: int) -> tuple[str, list[str], list[Span]]:
    """annotate_relative_dates, and the days each phrase names (an annotated one too)."""
    pieces, cursor, mentions, spans = [], 0, [], []
    for found in resolve_relative_dates(text, utc_date(as_of_ms)):
        spans.append(_whole(found))
        possessive = _POSSESSIVE_RE.match(text, found.end)  # "Friday's game": the date goes after the 's
        end = possessive.end() if possessive else found.end
        if ANNOTATION_RE.match(text, end):
            continue
        label, mention = render(found, text[found.start : found.end])
        pieces += [text[cursor:end], f" ({label})"]
        cursor = end
        if mention not in mentions:
            mentions.append(mention)
    pieces.append(text[cursor:])
    return "".join(pieces), mentions, spans


def explicit_dates(text: str, default_ms: int) -> tuple[list[Span], list[str]]:
    """(the days each explicit date names, date mentions): "12 March 2024" one day, "March 2024" the month.

    Dates this module appended itself (inside "(...)") do not count: they annotate relative phrases.
    A date without a year takes the event's year.
    """
    bare = ANNOTATION_RE.sub("", text)
    default_year = utc_date(default_ms).year
    found: list[tuple[int, date]] = []
    for pattern in (DATE_DMY_RE, DATE_MDY_RE, DATE_ISO_RE):
        for match in pattern.finditer(bare):
            month_raw = match.group("m")
            month = int(month_raw) if month_raw.isdigit() else month_number(month_raw)
            if (
                month_raw == "May"
                and pattern is DATE_MDY_RE
                and not match.group("y")
                and re.match(r"\s+\d{1,2}\s+(?:am|pm|o'clock|minutes|hours)\b", bare[match.start() + 3 :])
            ):
                continue  # "May 5 minutes" style false positive
            year = int(match.group("y")) if match.group("y") else default_year
            try:
                found.append((match.start(), date(year, month or 0, int(match.group("d")))))
            except ValueError:
                continue
    mentions = [day_month_year(d) for _, d in sorted(found)]
    spans: list[Span] = [(d, d) for _, d in found]
    for match in DATE_MY_RE.finditer(bare):
        label = f"{match.group('m')} {match.group('y')}"
        if not any(m.endswith(label) for m in mentions):
            mentions.append(label)
            year, month = int(match.group("y")), month_number(match.group("m")) or 1
            spans.append((date(year, month, 1), date(year, month, calendar.monthrange(year, month)[1])))
    return spans, _dedupe(mentions)


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
