"""Dates in statements: relative phrases annotated with the days they name, explicit dates read into as_of."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from nexus_memory.core.calendar_words import (
    MONTH_NAMES,
    day_month_year,
    month_alternation,
    month_number,
    month_year,
)
from nexus_memory.core.ids import utc_date
from nexus_memory.writer.extractor.relative import RelativeDate, resolve_relative_dates

_MONTH = "(?P<m>" + month_alternation() + ")"
# Explicit day-precise dates: "12 March 2024", "March 12th, 2024", "March 12", "2024-03-12".
DATE_DMY_RE = re.compile(r"\b(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r"\.?(?:,?\s+(?P<y>\d{4}))?\b")
DATE_MDY_RE = re.compile(r"\b" + _MONTH + r"\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<y>\d{4}))?(?![\d:])")
DATE_ISO_RE = re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b")
# Month-precise dates, used only as date entities: "March 2024".
DATE_MY_RE = re.compile(r"\b(?P<m>" + month_alternation(abbreviations=False) + r")\s+(?P<y>\d{4})\b")
# A date annotation this module wrote already (so re-running never doubles it): "(on 7 May 2023)",
# "(the week of 1 May 2023)", "(in June 2023)", "(around 2018)", "(1 – 7 May 2023)".
ANNOTATION_RE = re.compile(
    r"\s*\((?:on|in|around|the week|the weekend|a few|\d{1,2}(?: [A-Z][a-z]+)?(?: \d{4})? \u2013 \d)[^()]*\)"
)
_DASH = " \u2013 "
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


def render(found: RelativeDate) -> tuple[str, str]:
    """(annotation, date mention) of a resolved phrase: 'on 7 May 2023', 'the week of 1 May 2023', 'in 2022' ...

    A single day reads "on <day>" ("around <day>, <month> or <year>" when approximate); a calendar week, weekend,
    month, run of months or year is named as such; any other span is written out first to last.
    """
    first, last = found.first, found.last
    if first == last:
        if found.about == "month":
            return f"around {month_year(first)}", month_year(first)
        if found.about == "year":
            return f"around {first.year}", str(first.year)
        return f"{'around' if found.about else 'on'} {day_month_year(first)}", day_month_year(first)
    if (first.month, first.day, last.month, last.day) == (1, 1, 12, 31) and first.year == last.year:
        return f"in {first.year}", str(first.year)
    if first.day == 1 and (last + timedelta(days=1)).day == 1:
        return f"in {_months(first, last)}", _months(first, last)
    if first.weekday() == 0 and last == first + timedelta(days=6):
        return f"the week of {day_month_year(first)}", day_month_year(first)
    if first.weekday() == 5 and last == first + timedelta(days=1):
        return f"the weekend of {day_month_year(first)}", day_month_year(first)
    return _span(first, last), _span(first, last)


def annotate_relative_dates(text: str, as_of_ms: int) -> tuple[str, list[str]]:
    """Append '(on 7 May 2023)'-style dates after relative time phrases; return the date mentions.

    Each phrase is read against the message's day and the tense of its clause (`relative.py`); a phrase already
    followed by an annotation is left as it is.
    """
    pieces, cursor, mentions = [], 0, []
    for found in resolve_relative_dates(text, utc_date(as_of_ms)):
        possessive = _POSSESSIVE_RE.match(text, found.end)  # "Friday's game": the date goes after the 's
        end = possessive.end() if possessive else found.end
        if ANNOTATION_RE.match(text, end):
            continue
        label, mention = render(found)
        pieces += [text[cursor:end], f" ({label})"]
        cursor = end
        if mention not in mentions:
            mentions.append(mention)
    pieces.append(text[cursor:])
    return "".join(pieces), mentions


def explicit_date(text: str, default_ms: int) -> tuple[int, list[str]]:
    """(as_of, date mentions): the first day-precise date stated in the text sets as_of (00:00 UTC).

    Dates this module appended itself (inside "(...)") do not count: they annotate relative phrases.
    A date without a year takes the event's year. Month-precise dates ("March 2024") only become
    date entities.
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
    for match in DATE_MY_RE.finditer(bare):
        label = f"{match.group('m')} {match.group('y')}"
        if not any(m.endswith(label) for m in mentions):
            mentions.append(label)
    if not found:
        return default_ms, _dedupe(mentions)
    first = min(found)[1]
    as_of = int(datetime(first.year, first.month, first.day, tzinfo=UTC).timestamp() * 1000)
    return as_of, _dedupe(mentions)


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
