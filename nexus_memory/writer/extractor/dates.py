"""Dates in statements: relative phrases pinned to the event's day, explicit dates read into as_of."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, timedelta

from nexus_memory.core.calendar_words import (
    NUMBER_WORDS,
    WEEKDAYS,
    day_month_year,
    month_alternation,
    month_number,
    month_year,
)
from nexus_memory.core.ids import utc_date

_MONTH = "(?P<m>" + month_alternation() + ")"
# Explicit day-precise dates: "12 March 2024", "March 12th, 2024", "March 12", "2024-03-12".
DATE_DMY_RE = re.compile(r"\b(?P<d>\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH + r"\.?(?:,?\s+(?P<y>\d{4}))?\b")
DATE_MDY_RE = re.compile(r"\b" + _MONTH + r"\.?\s+(?P<d>\d{1,2})(?:st|nd|rd|th)?(?:,?\s+(?P<y>\d{4}))?(?![\d:])")
DATE_ISO_RE = re.compile(r"\b(?P<y>\d{4})-(?P<m>\d{2})-(?P<d>\d{2})\b")
# Month-precise dates, used only as date entities: "March 2024".
DATE_MY_RE = re.compile(r"\b(?P<m>" + month_alternation(abbreviations=False) + r")\s+(?P<y>\d{4})\b")
# Relative time phrases that can be pinned to a date from the event time.
RELATIVE_DAY_RE = re.compile(
    r"\b(?:the\s+)?day\s+before\s+yesterday\b|\byesterday\b|\btomorrow\b|"
    r"\btoday\b|\btonight\b|\bthis\s+(?:morning|afternoon|evening)\b"
    r"|\blast\s+night\b",
    re.IGNORECASE,
)
RELATIVE_PERIOD_RE = re.compile(
    r"\b(?P<which>last|next|this|past)\s+(?P<unit>week|weekend|month|year|summer|"
    r"winter|spring|fall|autumn)\b",
    re.IGNORECASE,
)
RELATIVE_WEEKDAY_RE = re.compile(
    r"\b(?P<which>last|next|this|on|past)\s+(?P<day>" + "|".join(WEEKDAYS) + r")\b",
    re.IGNORECASE,
)
RELATIVE_AGO_RE = re.compile(
    r"\b(?P<n>a|an|one|two|three|four|five|six|seven|eight|nine|ten|a few|a couple of|a couple|few|"
    r"several|\d{1,2})\s+(?P<unit>day|week|month|year)s?\s+ago\b",
    re.IGNORECASE,
)
# A date annotation this module wrote already (so re-running never doubles it).
ANNOTATION_RE = re.compile(r"\s*\((?:on|in|around|the week|the weekend|a few)[^()]*\)")


def _month(day: date, delta: int) -> date:
    """The first of the month `delta` months from `day`."""
    index = day.year * 12 + day.month - 1 + delta
    return date(index // 12, index % 12 + 1, 1)


def _relative_day(phrase: str, today: date) -> tuple[str, str]:
    """Annotation and date entity for yesterday / today / tomorrow and friends."""
    low = phrase.lower()
    offset = (
        -2 if "before" in low else -1 if ("yesterday" in low or "last night" in low) else 1 if "tomorrow" in low else 0
    )
    day = today + timedelta(days=offset)
    return f"on {day_month_year(day)}", day_month_year(day)


def _relative_period(which: str, unit: str, today: date) -> tuple[str, str]:
    """Annotation and date entity for last/next/this week, weekend, month, year or season."""
    which = "last" if which == "past" else which
    step = {"last": -1, "next": 1, "this": 0}[which]
    if unit == "week":
        label = {"last": "the week before", "next": "the week after", "this": "the week of"}[which]
        return f"{label} {day_month_year(today)}", day_month_year(today + timedelta(days=7 * step))
    if unit == "weekend":
        saturday = today + timedelta(days=(5 - today.weekday()) % 7)  # coming (or current) Saturday
        if which == "last":
            saturday -= timedelta(days=7)
            if today.weekday() == 6:  # on a Sunday, "last weekend" is the one before this
                saturday -= timedelta(days=7)
        elif which == "next" and today.weekday() >= 5:
            saturday += timedelta(days=7)
        if today.weekday() == 6 and which == "this":
            saturday = today - timedelta(days=1)
        return f"the weekend of {day_month_year(saturday)}", day_month_year(saturday)
    if unit == "month":
        first = _month(today, step)
        return f"in {month_year(first)}", month_year(first)
    if unit == "year":
        return f"in {today.year + step}", str(today.year + step)
    # seasons: say the year it refers to; the season word is already in the text
    return f"in {today.year + step}", str(today.year + step)


def _relative_weekday(which: str, day_name: str, today: date) -> tuple[str, str] | None:
    """Annotation for last/this/next/on <weekday>; 'on Friday' takes the nearest coming one."""
    target = WEEKDAYS[day_name.lower()]
    if which.lower() in ("last", "past"):
        delta = (today.weekday() - target) % 7 or 7
        day = today - timedelta(days=delta)
    else:
        delta = (target - today.weekday()) % 7
        if which.lower() == "next" and delta == 0:
            delta = 7
        if which.lower() == "on" and delta == 0:
            return None  # "on Friday" said on a Friday: ambiguous, leave it
        day = today + timedelta(days=delta)
    return f"on {day_month_year(day)}", day_month_year(day)


def _relative_ago(count: str, unit: str, today: date) -> tuple[str, str]:
    """Annotation for 'N days/weeks/months/years ago'."""
    low = count.lower()
    vague = low in ("a few", "few", "several")
    n = 3 if vague else NUMBER_WORDS.get(low) or int(low)
    unit = unit.lower()
    if unit == "day":
        day = today - timedelta(days=n)
        return (f"a few days before {day_month_year(today)}" if vague else f"on {day_month_year(day)}"), day_month_year(
            day
        )
    if unit == "week":
        day = today - timedelta(days=7 * n)
        return f"around {day_month_year(day)}", day_month_year(day)
    if unit == "month":
        first = _month(today, -n)
        return f"around {month_year(first)}", month_year(first)
    return f"around {today.year - n}", str(today.year - n)


def annotate_relative_dates(text: str, as_of_ms: int) -> tuple[str, list[str]]:
    """Append '(on 7 May 2023)'-style dates after relative time phrases; return the date mentions."""
    if ANNOTATION_RE.search(text):
        return text, []
    today = utc_date(as_of_ms)
    spans: list[tuple[int, int, str, str]] = []

    def add(match: re.Match[str], resolved: tuple[str, str] | None) -> None:
        if resolved and not any(s < match.end() and match.start() < e for s, e, _, _ in spans):
            spans.append((match.start(), match.end(), resolved[0], resolved[1]))

    for match in RELATIVE_AGO_RE.finditer(text):
        add(match, _relative_ago(match.group("n"), match.group("unit"), today))
    for match in RELATIVE_WEEKDAY_RE.finditer(text):
        add(match, _relative_weekday(match.group("which"), match.group("day"), today))
    for match in RELATIVE_PERIOD_RE.finditer(text):
        add(match, _relative_period(match.group("which").lower(), match.group("unit").lower(), today))
    for match in RELATIVE_DAY_RE.finditer(text):
        add(match, _relative_day(match.group(0), today))
    if not spans:
        return text, []
    spans.sort()
    pieces, cursor, mentions = [], 0, []
    for _start, end, label, mention in spans:
        pieces.append(text[cursor:end])
        pieces.append(f" ({label})")
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
