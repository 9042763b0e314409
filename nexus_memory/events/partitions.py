"""Partitions of the ledger: (day, platform), and which ledger days a daily partition processes.

A ledger day is the UTC date of an event (`events.day`). The orchestrator's daily partitions run
from NEXUS_PARTITION_START to today, both included. Events outside that window are not left out:
the first partition also processes every earlier day, and today's partition every later one
(a 2015 email, a clock set to 2099). Stored keys (`episodes.partition_key`) always name the
event's own ledger day, so they do not move when "today" does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from nexus_memory.core.config import Settings
from nexus_memory.core.ids import day_of, now_ms
from nexus_memory.core.stores import Stores


def partition_key(day: str, platform: str) -> str:
    """The stored key of a (day, platform) partition: '<day>|<platform>'."""
    return f"{day}|{platform}"


def split_partition_key(key: str) -> tuple[str, str]:
    """(day, platform) of a stored key; the platform may itself contain '|' (the day never does)."""
    day, _, platform = key.partition("|")
    return day, platform


def utc_today() -> str:
    return day_of(now_ms())


@dataclass(frozen=True)
class Calendar:
    """Daily partitions from `start` to `today`; the two ends also take the days beyond them."""

    start: str
    today: str

    def __post_init__(self) -> None:
        for name in ("start", "today"):
            value = getattr(self, name)
            try:
                date.fromisoformat(value)
            except (TypeError, ValueError):
                raise ValueError(f"partition {name} {value!r} is not a YYYY-MM-DD date") from None
        if self.start > self.today:
            raise ValueError(f"NEXUS_PARTITION_START={self.start} is after today ({self.today}): no partition exists")

    @classmethod
    def from_settings(cls, settings: Settings, today: str | None = None) -> Calendar:
        return cls(settings.partition_start, today or utc_today())

    def partition_of(self, day: str) -> str:
        """The daily partition that processes a ledger day."""
        return min(max(day, self.start), self.today)

    def bounds(self, first: str, last: str) -> tuple[str | None, str | None]:
        """Ledger days covered by partitions first..last; None is an open end."""
        return (None if first <= self.start else first, None if last >= self.today else last)


def ledger_days(stores: Stores, platform: str, first: str | None = None, last: str | None = None) -> list[str]:
    """Days with events of `platform` between first and last (None: no bound), oldest first."""
    rows = stores.conn.execute(
        """SELECT DISTINCT day FROM events WHERE platform = :platform
             AND (:first IS NULL OR day >= :first) AND (:last IS NULL OR day <= :last)
           ORDER BY day""",
        {"platform": platform, "first": first, "last": last},
    ).fetchall()
    return [r[0] for r in rows]


# Every partition in a run's range costs Dagster a few event-log writes even when it has no events;
# past about a month of nothing, a second run is cheaper.
MAX_EMPTY_DAYS_IN_RUN = 31


def platform_batches(
    pairs: list[tuple[str, str]], calendar: Calendar, max_empty_days: int = MAX_EMPTY_DAYS_IN_RUN
) -> list[tuple[str, str, str]]:
    """Ledger (day, platform) pairs as ranges of daily partitions, (platform, first, last), oldest
    first per platform: one range per platform, cut where more than `max_empty_days` have nothing."""
    days_by_platform: dict[str, set[str]] = {}
    for day, platform in pairs:
        days_by_platform.setdefault(platform, set()).add(calendar.partition_of(day))
    ranges: list[tuple[str, str, str]] = []
    for platform, days in sorted(days_by_platform.items()):
        ordered = sorted(days)
        first = last = ordered[0]
        for day in ordered[1:]:
            if (date.fromisoformat(day) - date.fromisoformat(last)).days > max_empty_days + 1:
                ranges.append((platform, first, last))
                first = day
            last = day
        ranges.append((platform, first, last))
    return ranges
