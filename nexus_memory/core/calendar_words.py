"""English month, weekday and number words: the one table the extractor, query dates and importers share.

Written out by hand rather than taken from `calendar.month_name`, which follows the process locale.
"""

from __future__ import annotations

from datetime import date

MONTH_NAMES = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
# Full month name, lower case -> 1..12.
MONTHS = {name.lower(): number for number, name in enumerate(MONTH_NAMES, start=1)}
# Short forms, lower case -> 1..12 ("sept" too; May is its own short form).
MONTH_ABBREVIATIONS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}

WEEKDAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
# Weekday name, lower case -> 0..6 with Monday = 0, as `date.weekday()` counts.
WEEKDAYS = {name.lower(): number for number, name in enumerate(WEEKDAY_NAMES)}

# Counts written as words, as in "two weeks ago" or "a couple of days ago"; "few" is taken as 3.
NUMBER_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "a couple of": 2,
    "a couple": 2,
    "couple of": 2,
    "few": 3,
    "a few": 3,
}


def month_number(word: str) -> int | None:
    """1..12 for a full or short month name in any case, with or without a trailing '.'; else None."""
    low = word.lower().rstrip(".")
    return MONTHS.get(low) or MONTH_ABBREVIATIONS.get(low)


def month_alternation(*, capitalised: bool = True, abbreviations: bool = True) -> str:
    """Month names as a regex alternation: full names in calendar order, then the short forms."""
    words = [name.lower() for name in MONTH_NAMES] + (list(MONTH_ABBREVIATIONS) if abbreviations else [])
    return "|".join(word.capitalize() if capitalised else word for word in words)


def month_year(day: date) -> str:
    """'May 2023'."""
    return f"{MONTH_NAMES[day.month - 1]} {day.year}"


def day_month_year(day: date) -> str:
    """'7 May 2023'."""
    return f"{day.day} {MONTH_NAMES[day.month - 1]} {day.year}"
