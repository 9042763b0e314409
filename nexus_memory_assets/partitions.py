"""Partitions: one per (day, platform), read from Settings when the definitions load.

- Days run from NEXUS_PARTITION_START to today (`end_offset=1`), so today's events have a partition
  the moment they arrive. The first partition also processes every earlier day and today's every
  later one (`nexus_memory.events.partitions.Calendar`), so no accepted event falls outside.
- Platforms are a dynamic dimension: a new platform becomes partitions when its first events
  arrive (the sensor and `nexus-memory pipeline` register it), with no code change. A partition key
  cannot hold '|' (the separator of the two dimensions), '...' or control characters, so the
  platform is percent-encoded where it has to be (`encode_platform`); 'gmail' stays 'gmail'.
- A run covers a range of days of one platform (BackfillPolicy.single_run), layer after layer,
  days oldest first.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from urllib.parse import unquote

import dagster as dg
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.events.partitions import Calendar, ledger_days, utc_today

PLATFORM_DIMENSION = "platform"
PLATFORM_TAG = "nexus/platform"
platform_partitions = dg.DynamicPartitionsDefinition(name=PLATFORM_DIMENSION)


def day_platform_partitions(settings: Settings) -> dg.MultiPartitionsDefinition:
    """Daily partitions from settings.partition_start through today, times the dynamic platforms."""
    Calendar.from_settings(settings)  # a bad or future start fails here, with a message
    days = dg.DailyPartitionsDefinition(start_date=settings.partition_start, end_offset=1)
    return dg.MultiPartitionsDefinition({"day": days, PLATFORM_DIMENSION: platform_partitions})


def _escape(char: str) -> str:
    return "".join(f"%{b:02X}" for b in char.encode("utf-8", "surrogatepass"))


def encode_platform(platform: str) -> str:
    """The platform as a partition key: '%', '|', ',', '[', ']', unprintable characters and runs of
    dots percent-encoded, everything else as it is. `decode_platform` reverses it."""
    out: list[str] = []
    for i, char in enumerate(platform):
        in_dot_run = char == "." and "." in (platform[i - 1 : i] + platform[i + 1 : i + 2])
        out.append(_escape(char) if char in "%|,[]" or not char.isprintable() or in_dot_run else char)
    return "".join(out)


def decode_platform(key: str) -> str:
    return unquote(key, errors="surrogatepass")


def dagster_key(day: str, platform: str) -> dg.MultiPartitionKey:
    """The Dagster partition key of a daily partition and a (raw) platform."""
    return dg.MultiPartitionKey({"day": day, PLATFORM_DIMENSION: encode_platform(platform)})


PIPELINE_RUN_TAG_KEYS = (ASSET_PARTITION_RANGE_START_TAG, ASSET_PARTITION_RANGE_END_TAG, PLATFORM_TAG)


def pipeline_run_tags(platform: str, first: str, last: str) -> dict[str, str]:
    """Tags of a run over daily partitions first..last of a platform: the range, and the platform
    (dagster.yaml lets one run per `nexus/platform` value run at a time)."""
    return {
        ASSET_PARTITION_RANGE_START_TAG: str(dagster_key(first, platform)),
        ASSET_PARTITION_RANGE_END_TAG: str(dagster_key(last, platform)),
        PLATFORM_TAG: encode_platform(platform),
    }


@dataclass(frozen=True)
class Batch:
    """The daily partitions first..last of one platform that a run (or one step of it) processes."""

    platform: str
    first: str
    last: str


def batches(context: dg.OpExecutionContext, partitions_def: dg.MultiPartitionsDefinition) -> list[Batch]:
    """The run's partitions as one batch per platform (a range run may span several platforms)."""
    days_by_platform: dict[str, list[str]] = defaultdict(list)
    for key in context.partition_keys:
        dims = partitions_def.get_partition_key_from_str(key).keys_by_dimension
        days_by_platform[dims[PLATFORM_DIMENSION]].append(dims["day"])
    return [
        Batch(decode_platform(platform), min(days), max(days)) for platform, days in sorted(days_by_platform.items())
    ]


def run_days(
    context: dg.OpExecutionContext, partitions_def: dg.MultiPartitionsDefinition, stores: Stores
) -> list[tuple[str, list[str]]]:
    """(platform, ledger days with events) for each platform of the run, the range's ends stretched
    to every earlier or later day when they are the first or today's partition."""
    dates = calendar(partitions_def)
    return [
        (batch.platform, ledger_days(stores, batch.platform, *dates.bounds(batch.first, batch.last)))
        for batch in batches(context, partitions_def)
    ]


def calendar(partitions_def: dg.MultiPartitionsDefinition) -> Calendar:
    """Which ledger days the daily partitions stand for, with today taken now."""
    days = partitions_def.get_partitions_def_for_dimension("day")
    if not isinstance(days, dg.TimeWindowPartitionsDefinition):
        raise TypeError("the day dimension must be daily partitions")
    return Calendar(days.start.strftime("%Y-%m-%d"), utc_today())
