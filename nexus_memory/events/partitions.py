"""Partitions of the ledger: (day, platform), and which ledger days a day partition processes.

A ledger day is the UTC date of an event (`events.day`). The orchestrator's day partitions are the
days that hold events, not every day of a calendar: a day becomes a partition when its first events
arrive (docs/layers.md, "Partitions"). Days before NEXUS_PARTITION_START are processed by the start
day's partition (a 2015 mailbox need not add a partition per day of 2015); every later day is its own
partition, a 2099 clock included. Stored keys (`episodes.partition_key`) always name the event's own
ledger day.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
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
    """Which day partition processes a ledger day: its own, or `start`'s for the days before it."""

    start: str

    def __post_init__(self) -> None:
        try:
            date.fromisoformat(self.start)
        except (TypeError, ValueError):
            raise ValueError(f"partition start {self.start!r} is not a YYYY-MM-DD date") from None

    @classmethod
    def from_settings(cls, settings: Settings, today: str | None = None) -> Calendar:
        """The settings' calendar; a start after today is refused (it would fold every event into one day)."""
        today = today or utc_today()
        if settings.partition_start > today:
            raise ValueError(f"NEXUS_PARTITION_START={settings.partition_start} is after today ({today})")
        return cls(settings.partition_start)

    def partition_of(self, day: str) -> str:
        """The day partition that processes a ledger day."""
        return max(day, self.start)

    def partition_days(self, pairs: Iterable[tuple[str, str]]) -> list[str]:
        """The day partitions of ledger (day, platform) pairs, oldest first."""
        return sorted({self.partition_of(day) for day, _ in pairs})


def ledger_partitions(stores: Stores) -> list[tuple[str, str]]:
    """Every ledger (day, platform) pair that holds events, oldest first."""
    rows = stores.conn.execute("SELECT DISTINCT day, platform FROM events ORDER BY day, platform").fetchall()
    return [(r[0], r[1]) for r in rows]


def ledger_days(stores: Stores, platform: str, first: str | None = None, last: str | None = None) -> list[str]:
    """Days with events of `platform` between first and last (None: no bound), oldest first."""
    rows = stores.conn.execute(
        """SELECT DISTINCT day FROM events WHERE platform = :platform
             AND (:first IS NULL OR day >= :first) AND (:last IS NULL OR day <= :last)
           ORDER BY day""",
        {"platform": platform, "first": first, "last": last},
    ).fetchall()
    return [r[0] for r in rows]


def days_of_partitions(stores: Stores, platform: str, partitions: Iterable[str], calendar: Calendar) -> list[str]:
    """Ledger days with events of `platform` that these day partitions process, oldest first."""
    wanted = set(partitions)
    if not wanted:
        return []
    lower = None if min(wanted) <= calendar.start else min(wanted)
    days = ledger_days(stores, platform, lower, max(wanted))
    return [day for day in days if calendar.partition_of(day) in wanted]


def extend_days(known: Sequence[str], days: Iterable[str]) -> list[str]:
    """The day partitions in the orchestrator's order after adding `days`: the known ones as they are,
    then the new ones oldest first (a dynamic partition set keeps the order keys were added in)."""
    seen = set(known)
    return [*known, *sorted(set(days) - seen)]


# Every partition in a run's range costs Dagster a few event-log writes even when the platform has no
# events that day (a day partition is shared by every platform); past about a month of those, a
# second run is cheaper.
MAX_EMPTY_DAYS_IN_RUN = 31


def platform_batches(
    pairs: list[tuple[str, str]],
    calendar: Calendar,
    order: Sequence[str],
    max_empty_days: int = MAX_EMPTY_DAYS_IN_RUN,
) -> list[tuple[str, str, str]]:
    """Ledger (day, platform) pairs as ranges of day partitions, (platform, first, last): ranges of
    `order` (the day partitions as the orchestrator lists them, which holds every pair's partition),
    one per platform, cut where more than `max_empty_days` partitions in a row hold none of its pairs."""
    position = {day: i for i, day in enumerate(order)}
    indexes_by_platform: dict[str, set[int]] = {}
    for day, platform in pairs:
        indexes_by_platform.setdefault(platform, set()).add(position[calendar.partition_of(day)])
    ranges: list[tuple[str, str, str]] = []
    for platform, indexes in sorted(indexes_by_platform.items()):
        ordered = sorted(indexes)
        first = last = ordered[0]
        for index in ordered[1:]:
            if index - last > max_empty_days + 1:
                ranges.append((platform, order[first], order[last]))
                first = index
            last = index
        ranges.append((platform, order[first], order[last]))
    return ranges
