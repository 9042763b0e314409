"""Identifiers and the clock: ULIDs for rows we create, stable hashes for rows derived from content,
now, and the one place a timestamp is written as a day (timestamps are unix milliseconds everywhere)."""

from __future__ import annotations

import hashlib
import os
import time
from datetime import UTC, date, datetime

from nexus_memory.core import calendar_words

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def ulid(ms: int | None = None) -> str:
    """A 26-character ULID: sortable by creation time, random below the millisecond."""
    ms = int(time.time() * 1000) if ms is None else ms
    value = (ms << 80) | int.from_bytes(os.urandom(10), "big")
    chars = []
    for _ in range(26):
        chars.append(_CROCKFORD[value & 31])
        value >>= 5
    return "".join(reversed(chars))


def stable_id(prefix: str, *parts: object) -> str:
    """A deterministic id from parts, so re-running a step produces the same row ids."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).hexdigest()[:24]
    return f"{prefix}_{digest}"


def now_ms() -> int:
    return int(time.time() * 1000)


def utc_date(ms: int) -> date:
    """The UTC calendar day of a unix-ms timestamp."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).date()


def day_of(ms: int) -> str:
    """The UTC day of a unix-ms timestamp, 'YYYY-MM-DD' (an event's partition day)."""
    return utc_date(ms).strftime("%Y-%m-%d")


def day_or_none(ms: int | None) -> str | None:
    """day_of, or None for a row without that time."""
    return None if ms is None else day_of(ms)


def day_month_year_of(ms: int) -> str:
    """The UTC day in words, '7 May 2023': how prompts and reports write a fact's date."""
    return calendar_words.day_month_year(utc_date(ms))


def month_year_of(ms: int) -> str:
    """The UTC month in words, 'May 2023'."""
    return calendar_words.month_year(utc_date(ms))


def minute_of(ms: int) -> str:
    """The UTC minute, '2023-05-07T14:03Z'."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC).strftime("%Y-%m-%dT%H:%MZ")
