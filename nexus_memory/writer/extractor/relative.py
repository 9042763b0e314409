"""Relative dates read as a person reads them: against the message's own day and the tense of their clause.

"Kestrel told us on Friday", sent on Monday 3 March 2025, means Friday 28 February; "we'll meet on Friday" means
Friday 7 March. Each phrase becomes a day or a span of days (`RelativeDate`). The readings, where English is
ambiguous, are the majority ones written down in docs/writer.md ("Relative dates"):

- a week runs Monday to Sunday; "last/this/next week" is the previous, current or following one, and "the weekend"
  of a week is its Saturday and Sunday;
- a bare day name ("on Friday", "Friday") is the nearest such day before the message in a past clause and the
  nearest after it otherwise, never the message day itself;
- "last Friday" is the most recent Friday before the message day; "next Friday" is the Friday of next week;
  "this Friday" is the Friday of this week, or the nearest one the tense allows when that one is on the wrong side;
- seasons are the meteorological ones of the northern hemisphere (winter: December to February).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from functools import partial

from nexus_memory.core.calendar_words import NUMBER_WORDS, WEEKDAYS, month_alternation
from nexus_memory.core.words import word_set
from nexus_memory.writer.extractor.tense import Tense, tense_at

Span = tuple[date, date]


@dataclass(frozen=True)
class RelativeDate:
    """A relative phrase at text[start:end] and the days it names, first to last (one day: first == last).

    `about` is "" for an exact reading, else the grain it is approximate at ("day", "month", "year"): "two weeks
    ago" is around a day, "two months ago" around a month. `weekday` is set where the phrase names a day of the
    week ("last Fri"): a reader may go by the day's name as much as by its date. `since` is set for a duration
    that reaches the message ("seven years now", "have been married for five years"): the span runs from its
    start, read at the grain `about` says, to the message day.
    """

    start: int
    end: int
    first: date
    last: date
    about: str = ""
    weekday: bool = False
    since: bool = False


# What a phrase names: (first day, last day, about).
Reading = tuple[date, date, str]
# A phrase kind's reader: its match, the message day and a way to ask the phrase's tense -> a reading or None.
_Resolver = Callable[[re.Match[str], date, Callable[[], Tense]], Reading | None]

_WD_FULL = "|".join(WEEKDAYS)
# Short day names as people write them ("last Fri", "next Tues"); only capitalised, since "sat", "wed" and "sun"
# are words.
_WD_SHORT = {"Mon": 0, "Tue": 1, "Tues": 1, "Wed": 2, "Thu": 3, "Thur": 3, "Thurs": 3, "Fri": 4, "Sat": 5, "Sun": 6}
_WD_SHORT_RE = r"(?-i:" + "|".join(sorted(_WD_SHORT, key=len, reverse=True)) + r")(?![\w'])"
_WD = _WD_FULL + "|" + _WD_SHORT_RE
_UNITS = {"day": 1, "week": 7, "fortnight": 14}
# Counted units ("two weeks ago", "in a fortnight").
_COUNTED = r"(?P<unit>day|week|fortnight|month|year)s?"
_SEASONS = {"spring": 3, "summer": 6, "autumn": 9, "fall": 9, "winter": 12}
# Counts: the number words (longest first, so "a couple of" wins over "a"), "several", digits.
_COUNT = (
    "(?P<n>"
    + "|".join(w.replace(" ", r"\s+") for w in sorted([*NUMBER_WORDS, "several"], key=len, reverse=True))
    + r"|\d{1,3})"
)
_PART_OF_DAY = r"(?:\s+(?:morning|afternoon|evening|night))?"

# What the words before a day name make of it: a habit ("every Friday"), a holiday ("Black Friday").
_NOT_A_DATE_BEFORE_RE = re.compile(
    r"\b(?:every|each|most|some|other|any|a|black|cyber|good|easter|ash|palm|holy|maundy|shrove|bowl|fat|giving|"
    r"whit)\s+(?:on\s+)?$",
    re.IGNORECASE,
)
# ... and after it: an explicit date that says the day itself ("Friday, 14 March", "Friday the 14th"), or a noun the
# day name only qualifies ("Sunday school", "Monday blues").
_NOT_A_DATE_AFTER_RE = re.compile(
    r"\s*,?\s*(?:the\s+)?(?:\d{1,2}(?:st|nd|rd|th)?\b|(?:" + month_alternation() + r")\b)"
    r"|\s+(?:school|roast|best|blues|papers?)\b",
    re.IGNORECASE,
)
# A range of day names ("Monday to Friday"): a routine unless the clause is past or future.
_RANGE_AFTER_RE = re.compile(r"\s*(?:to|through|thru|till|until|[-\u2013])\s*(?:" + _WD + r")\b", re.IGNORECASE)
_RANGE_BEFORE_RE = re.compile(r"\b(?:" + _WD + r")\s*(?:to|through|thru|till|until|[-\u2013])\s*$", re.IGNORECASE)
# "since Friday" looks back whatever the verb; "moved to Friday" looks ahead although the verb is past.
_SINCE_RE = re.compile(r"\bsince\s+$", re.IGNORECASE)
_RESCHEDULED_RE = re.compile(
    r"\b(?:move[sd]?|postponed?|push(?:ed|es)?|rescheduled?|delay(?:ed|s)?|shift(?:ed|s)?|bumped|slip(?:s|ped)?|"
    r"put\s+off)(?:\s+\w+){0,2}\s+(?:to|until|till|for)\s+$",
    re.IGNORECASE,
)
# Words that may follow "the 12th" when it is a day of the month ("on the 12th we met"), not an ordinal of a noun
# ("the 3rd floor").
_AFTER_ORDINAL = word_set("""
at and or but so because when if i we you he she they it my our his her their the a an to for from in on until till
by with too as then this that which is was will would instead again already after before
""")


def weekday_number(word: str) -> int | None:
    """0..6 (Monday = 0) for a day name or its short form ("Friday", "Fri.", "Tues"); None for any other word."""
    word = word.rstrip(".")
    return WEEKDAYS.get(word.lower(), _WD_SHORT.get(word))


def _count(word: str) -> tuple[int, bool]:
    """(n, vague) for a count word: "two" -> (2, False), "a few" -> (3, True)."""
    low = " ".join(word.lower().split())
    if low.isdigit():
        return int(low), False
    vague = low in ("a few", "few", "several")
    return (3 if low == "several" else NUMBER_WORDS[low]), vague


def _monday(day: date) -> date:
    return day - timedelta(days=day.weekday())


def _week(day: date, step: int) -> Span:
    """Monday to Sunday of the week `step` weeks from `day`'s."""
    monday = _monday(day) + timedelta(weeks=step)
    return monday, monday + timedelta(days=6)


def _weekend(day: date, step: int) -> Span:
    """Saturday and Sunday of the week `step` weeks from `day`'s."""
    saturday = _monday(day) + timedelta(days=5 + 7 * step)
    return saturday, saturday + timedelta(days=1)


def _month(day: date, step: int) -> Span:
    """First to last day of the month `step` months from `day`'s."""
    index = day.year * 12 + day.month - 1 + step
    first = date(index // 12, index % 12 + 1, 1)
    after = date((index + 1) // 12, (index + 1) % 12 + 1, 1)
    return first, after - timedelta(days=1)


def _year(year: int) -> Span:
    return date(year, 1, 1), date(year, 12, 31)


def _add_months(day: date, months: int) -> date:
    """The same day `months` months on (or back), the month's last day where it has no such day."""
    first, last = _month(day, months)
    return first.replace(day=min(day.day, last.day))


def _shift(day: date, n: int, unit: str) -> date:
    """`day` moved n days, weeks, months or years (negative: back)."""
    if unit in _UNITS:
        return day + timedelta(days=n * _UNITS[unit])
    return _add_months(day, n * (12 if unit == "year" else 1))


def _before(day: date, target: int) -> date:
    """The nearest weekday `target` before `day` (a week back when `day` is one)."""
    return day - timedelta(days=(day.weekday() - target) % 7 or 7)


def _after(day: date, target: int) -> date:
    """The nearest weekday `target` after `day` (a week on when `day` is one)."""
    return day + timedelta(days=(target - day.weekday()) % 7 or 7)


def _season(name: str, year: int) -> Span:
    """The season starting in `year` (winter: December of `year` to February)."""
    first = date(year, _SEASONS[name], 1)
    return first, _month(first, 2)[1]


def _points_back(text: str, start: int, tense: Callable[[], Tense]) -> bool:
    """Whether the phrase starting at `start` names a time before the message rather than after it."""
    before = text[:start]
    if _SINCE_RE.search(before):
        return True
    if _RESCHEDULED_RE.search(before):
        return False
    return tense() == "past"


def _day(day: date) -> Reading:
    return day, day, ""


def _fixed_day(match: re.Match[str], today: date, _tense: Callable[[], Tense]) -> Reading:
    """yesterday, today, tonight, tomorrow, last night, the day before yesterday, the day after tomorrow."""
    low = match.group().lower()
    if low.startswith(("the", "day")):  # the day before yesterday / after tomorrow
        offset = -2 if "yesterday" in low else 2
    else:
        offset = -1 if low.startswith(("yesterday", "last")) else 1 if low.startswith("tomorrow") else 0
    return _day(today + timedelta(days=offset))


def _before_last(match: re.Match[str], today: date, _tense: Callable[[], Tense]) -> Reading:
    """the week/weekend/month/year/Friday before last or after next."""
    unit, step = match.group("unit").lower(), (-2 if match.group("dir").lower().startswith("before") else 2)
    target = weekday_number(match.group("unit"))
    if target is not None:
        day = _before(today, target) - timedelta(weeks=1) if step < 0 else _monday(today) + timedelta(days=14 + target)
        return _day(day)
    return (*_period(unit, today, step), "")


def _period(unit: str, today: date, step: int) -> Span:
    """The week, weekend, month or year `step` of them from the message's."""
    if unit == "week":
        return _week(today, step)
    if unit == "weekend":
        return _weekend(today, step)
    if unit == "month":
        return _month(today, step)
    return _year(today.year + step)


def _window(match: re.Match[str], today: date, _tense: Callable[[], Tense]) -> Reading:
    """the past week / the last two weeks: the days up to yesterday; the next two weeks: the days from tomorrow."""
    n = _count(match.group("n"))[0] if match.group("n") else 1
    unit = match.group("unit").lower()
    if match.group("which").lower() in ("next", "coming"):
        return today + timedelta(days=1), _shift(today, n, unit), ""
    return _shift(today, -n, unit), today - timedelta(days=1), ""


def _earlier_later(match: re.Match[str], today: date, _tense: Callable[[], Tense]) -> Reading:
    """earlier / later this week, month or year: its days before or after the message day."""
    unit = match.group("unit").lower()
    first, last = _period(unit, today, 0)
    if match.group("which").lower() == "earlier":
        return first, max(first, today - timedelta(days=1)), ""
    return min(last, today + timedelta(days=1)), last, ""


def _relative_period(match: re.Match[str], today: date, tense: Callable[[], Tense]) -> Reading | None:
    """last / next / this / this past / this coming + week, weekend, month, year, season or day name."""
    which = " ".join(match.group("which").lower().split())
    unit = match.group("unit").lower()
    back = which in ("last", "this past", "past")
    target = weekday_number(match.group("unit"))
    if target is not None:
        return _day(_weekday(which, target, today, match, tense))
    if unit in _SEASONS:
        return (*_season_of(which, unit, today, match, tense), "")
    if unit == "weekend":
        if which == "this":
            this = _weekend(today, 0)
            earlier = _points_back(match.string, match.start(), tense) and this[0] > today
            return (*(_weekend(today, -1) if earlier else this), "")
        if which in ("this coming", "coming"):
            return (*_weekend(today, 0 if today.weekday() < 5 else 1), "")
        return (*_weekend(today, -1 if back else 1), "")
    if which in ("this coming", "coming"):
        return None  # "the coming week" says the days ahead, not a calendar week
    if which == "past":  # "past week" without "this"/"the": the days up to yesterday
        return _shift(today, -1, unit), today - timedelta(days=1), ""
    return (*_period(unit, today, -1 if back else 1 if which == "next" else 0), "")


def _weekday(which: str, target: int, today: date, match: re.Match[str], tense: Callable[[], Tense]) -> date:
    """last / next / this (past, coming) Friday."""
    if which in ("last", "this past", "past"):
        return _before(today, target)
    if which == "next":
        return _monday(today) + timedelta(days=7 + target)
    if which in ("this coming", "coming"):
        return _after(today, target)
    this = _monday(today) + timedelta(days=target)
    if _points_back(match.string, match.start(), tense):
        return this if this <= today else _before(today, target)
    return this if this >= today else _after(today, target)


def _season_of(which: str, name: str, today: date, match: re.Match[str], tense: Callable[[], Tense]) -> Span:
    """last / next / this summer: the one ended before, the one starting after, the one the message is in."""
    seasons = [_season(name, year) for year in range(today.year - 2, today.year + 2)]
    ended = max(s for s in seasons if s[1] < today)
    coming = min(s for s in seasons if s[0] > today)
    if which in ("last", "this past", "past"):
        return ended
    if which in ("next", "this coming", "coming"):
        return coming
    current = [s for s in seasons if s[0] <= today <= s[1]]
    if current:
        return current[0]
    return ended if _points_back(match.string, match.start(), tense) else coming


def _the_weekend(match: re.Match[str], today: date, tense: Callable[[], Tense]) -> Reading:
    """over / on / at the weekend: the one just gone in a past clause (this one on a Sunday), else the coming one."""
    if _points_back(match.string, match.start(), tense):
        return (*_weekend(today, 0 if today.weekday() == 6 else -1), "")
    return (*_weekend(today, 1 if today.weekday() == 6 else 0), "")


def _bare_weekday(match: re.Match[str], today: date, tense: Callable[[], Tense]) -> Reading | None:
    """(on) Friday: the nearest Friday before the message in a past clause, after it otherwise."""
    text = match.string
    if _NOT_A_DATE_BEFORE_RE.search(text[: match.start("day")]) or _NOT_A_DATE_AFTER_RE.match(text, match.end("day")):
        return None
    ranged = _RANGE_AFTER_RE.match(text, match.end("day")) or _RANGE_BEFORE_RE.search(text[: match.start("day")])
    if ranged and tense() in ("present", "none"):
        return None  # "open Monday through Saturday", "I work Monday to Friday"
    target = weekday_number(match.group("day")) or 0
    return _day(_before(today, target) if _points_back(text, match.start(), tense) else _after(today, target))


def _day_of_month(match: re.Match[str], today: date, tense: Callable[[], Tense]) -> Reading | None:
    """(on) the 12th: the nearest 12th before the message in a past clause, after it otherwise."""
    text, n = match.string, int(match.group("d"))
    rest = text[match.end() :]
    next_word = re.match(r"\s*([A-Za-z]+)", rest)
    if match.group("which"):  # "the 3rd of next month"
        first, last = _month(today, {"last": -1, "this": 0, "next": 1}[match.group("which").lower()])
        return _day(first.replace(day=n)) if n <= last.day else None
    if re.match(r"\s+of\b", rest):
        return None  # "the 5th of May": an explicit date, read elsewhere
    if next_word and next_word.group(1).lower() not in _AFTER_ORDINAL:
        return None  # "the 3rd floor"
    if not match.group("prep") and next_word and not re.match(r"\s*[.,;:!?)]", rest):
        return None  # "the 2nd" with neither a preposition before it nor a clause's end after it
    back = _points_back(text, match.start(), tense)
    for step in range(13):  # this month first, then month by month the way the tense points
        first, last = _month(today, -step if back else step)
        if n <= last.day and (first.replace(day=n) < today if back else first.replace(day=n) > today):
            return _day(first.replace(day=n))
    return None


def _in_count(match: re.Match[str], today: date, tense: Callable[[], Tense]) -> Reading | None:
    """in two weeks / a fortnight / two weeks from now: that long after the message; in a past clause, a duration."""
    if match.group().lower().startswith("in") and tense() == "past":
        return None  # "I finished the report in two weeks"
    return _counted(match, today, 1)


def _ago(match: re.Match[str], today: date, _tense: Callable[[], Tense]) -> Reading:
    """two days / a week / three weekends / two Fridays ago (or "back")."""
    unit, n = match.group("unit").lower(), _count(match.group("n"))[0]
    if unit == "weekend":
        return (*_weekend(today, -n), "")
    target = weekday_number(match.group("unit"))
    if target is not None:  # one Friday ago is last Friday
        return _day(_before(today, target) - timedelta(weeks=n - 1))
    return _counted(match, today, -1)


# A perfect verb before "for <n> <units>": the span reaches the message ("I've been playing for four months",
# "she has lived here for 3 years"); "have to" is an obligation, not a perfect.
_PERFECT_BEFORE_RE = re.compile(
    r"(?:\b(?:have|has|haven't|hasn't)|['\u2019]ve)(?:\s+(?!to\b)[\w'\u2019-]+){1,6}\s+$", re.IGNORECASE
)
# A past or past-perfect verb earlier in the sentence: "by then I had been there two years already" ended before.
_PAST_BEFORE_RE = re.compile(r"\b(?:had|was|were)\b[^.!?;]*$", re.IGNORECASE)
_APPROX = r"(?:(?:about|around|almost|nearly|over|roughly|more\s+than|just\s+over)\s+)?"


def _lasting(match: re.Match[str], today: date, _tense: Callable[[], Tense]) -> Reading | None:
    """A duration up to the message: "seven years now", "5 years already", "(have been ...) for four months".

    The span starts that long before the message day and ends on it; years and months are approximate at their
    own grain (the start is "since 2016", not a day), weeks and vague counts around a day.
    """
    before = match.string[: match.start()]
    if match.group().lower().startswith("for") and not _PERFECT_BEFORE_RE.search(before):
        return None  # "we stayed for two weeks", "I'm off for a month": no span reaching the message
    if _PAST_BEFORE_RE.search(before):
        return None
    start, _, about = _counted(match, today, -1)
    return start, today, about


def _counted(match: re.Match[str], today: date, sign: int) -> Reading:
    """n units from the message day; weeks and longer, and vague counts, are approximate."""
    n, vague = _count(match.group("n"))
    unit = match.group("unit").lower()
    day = _shift(today, sign * n, unit)
    about = {"month": "month", "year": "year"}.get(unit, "" if unit == "day" and not vague else "day")
    return day, day, about


_PATTERNS: tuple[tuple[re.Pattern[str], _Resolver], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), resolve)
    for pattern, resolve in (
        (
            r"\b(?:the\s+)?day\s+(?:before\s+yesterday|after\s+tomorrow)\b"
            r"|\b(?:yesterday|today|tomorrow)" + _PART_OF_DAY + r"\b|\btonight\b"
            r"|\bthis\s+(?:morning|afternoon|evening)\b|\blast\s+night\b|\b(?:earlier|later)\s+today\b",
            _fixed_day,
        ),
        (
            r"\bthe\s+(?P<unit>week|weekend|month|year|" + _WD + r")\s+(?P<dir>before\s+last|after\s+next)\b",
            _before_last,
        ),
        (
            r"\b(?:the|this)\s+(?P<which>past|last)\s+(?:" + _COUNT + r"\s+)?(?P<unit>day|week|month|year)s?\b"
            r"(?!\s+(?:of|before|after|when)\b)",
            _window,
        ),
        (r"\bthe\s+(?P<which>next|coming)\s+" + _COUNT + r"\s+(?P<unit>day|week|month|year)s?\b", _window),
        (r"\b(?P<which>earlier|later)\s+(?:this|in\s+the)\s+(?P<unit>week|month|year)\b", _earlier_later),
        (
            r"\b(?P<which>this\s+past|this\s+coming|last|next|this|coming|past)\s+"
            r"(?P<unit>week|weekend|month|year|spring|summer|autumn|fall|winter|" + _WD + r")\b"
            r"(?:(?<=day)\s+(?:morning|afternoon|evening|night))?(?!\s+of\b)",
            _relative_period,
        ),
        (r"\b(?:(?:(?:over|on|at|during|for)\s+)?the|all)\s+weekend\b(?!\s+(?:of|before|after)\b)", _the_weekend),
        (r"\b(?:on\s+)?(?P<day>" + _WD_FULL + r")\b" + _PART_OF_DAY, _bare_weekday),
        # A short day name alone only after "on": "Sat down" and "Sun's out" name no day.
        (r"\bon\s+(?P<day>" + _WD_SHORT_RE + r")" + _PART_OF_DAY, _bare_weekday),
        (
            r"\b(?:(?P<prep>on|by|until|till|before|after|since|from|for|starting|through)\s+)?the\s+"
            r"(?P<d>[12]\d|3[01]|[1-9])(?:st|nd|rd|th)\b(?:\s+of\s+(?P<which>this|next|last)\s+month\b)?",
            _day_of_month,
        ),
        (r"\bin\s+" + _COUNT + r"\s+" + _COUNTED + r"\b(?!\s+ago\b)", _in_count),
        (r"\b(?:for\s+)?" + _APPROX + _COUNT + r"\s+" + _COUNTED + r"\s+(?:now|already)\b", _lasting),
        (
            r"\bfor\s+" + _APPROX + _COUNT + r"\s+" + _COUNTED + r"\b"
            r"(?!\s+(?:ago|back|from|before|after|later|earlier|of|to)\b)",
            _lasting,
        ),
        (r"\b" + _COUNT + r"\s+" + _COUNTED + r"\s+from\s+(?:now|today)\b", _in_count),
        (
            r"\b" + _COUNT + r"\s+(?P<unit>day|week|weekend|fortnight|month|year|" + _WD + r")s?\s+(?:ago|back)\b",
            _ago,
        ),
    )
)
# Words without which no pattern above can match: most statements have none and are passed over at once.
_TRIGGER_RE = re.compile(
    r"\b(?:yesterday|today|tomorrow|tonight|morning|afternoon|evening|night|day|week|weekend|fortnight|month|year|"
    r"spring|summer|autumn|fall|winter|" + _WD + r")s?\b|\d(?:st|nd|rd|th)\b",
    re.IGNORECASE,
)
# "the day before", "the next day", "the following week": relative to the date named just before in the text.
_ANAPHORA_RE = re.compile(
    r"\bthe\s+(?:(?P<rel>next|following|previous)\s+(?P<unit>day|week|month|year)\b"
    r"|(?P<unit2>day|week|month|year)\s+(?P<dir>before|after)\b"
    r"(?=\s*(?:[.,;:!?)]|$)|\s+(?:and|but|so|too|then|when)\b))",
    re.IGNORECASE,
)


def _anaphora(match: re.Match[str], anchor: RelativeDate) -> Reading:
    """The day, week, month or year before or after the anchor's."""
    unit = (match.group("unit") or match.group("unit2")).lower()
    word = (match.group("rel") or match.group("dir")).lower()
    step = -1 if word in ("previous", "before") else 1
    edge = anchor.first if step < 0 else anchor.last
    if unit == "day":
        return _day(edge + timedelta(days=step))
    return (*_period(unit, edge, step), "")


def resolve_relative_dates(text: str, today: date) -> list[RelativeDate]:
    """Every relative date phrase in `text` said on `today`, in text order; phrases with no reading are left out."""
    if not _TRIGGER_RE.search(text):
        return []
    candidates: list[tuple[int, int, re.Match[str], _Resolver | None]] = []
    for pattern, resolve in _PATTERNS:
        candidates += [(m.start(), m.end(), m, resolve) for m in pattern.finditer(text)]
    candidates += [(m.start(), m.end(), m, None) for m in _ANAPHORA_RE.finditer(text)]
    taken: list[tuple[int, int, re.Match[str], _Resolver | None]] = []
    for candidate in sorted(candidates, key=lambda c: (c[0], c[0] - c[1])):
        if all(candidate[0] >= end or candidate[1] <= start for start, end, _, _ in taken):
            taken.append(candidate)
    found: list[RelativeDate] = []
    for start, end, match, resolve in sorted(taken, key=lambda c: c[0]):
        if resolve is None:
            reading = _anaphora(match, found[-1]) if found else None
        else:
            reading = resolve(match, today, partial(tense_at, text, start, end))
        if reading:
            named = any(weekday_number(w) is not None for w in re.findall(r"[A-Za-z]+", match.group()))
            found.append(RelativeDate(start, end, *reading, weekday=named, since=resolve is _lasting))
    return found
