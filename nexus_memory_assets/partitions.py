"""Partitions: one per (day, platform).

- A backfill of a date range for one platform is a selection in the UI's partition grid.
- Platforms are a dynamic dimension: a new platform becomes partitions when its first events
  arrive (the sensor and `nexus-memory pipeline` register it), with no code change.
- Runs carry the tag `dagster/partition/platform`; dagster.yaml limits runs to one per platform,
  so a platform's history is processed in time order while platforms run in parallel.
- A failed episode fails only its partition's `facts` step; rerunning the partition redoes only
  the episodes without a successful outcome.
"""

from __future__ import annotations

import dagster as dg

from nexus_memory.config import load_settings

platform_partitions = dg.DynamicPartitionsDefinition(name="platform")

day_partitions = dg.DailyPartitionsDefinition(start_date=load_settings().partition_start)

day_platform_partitions = dg.MultiPartitionsDefinition({"day": day_partitions, "platform": platform_partitions})


def split_key(context: dg.AssetExecutionContext) -> tuple[str, str]:
    """(day, platform) of the partition being materialised."""
    keys = context.partition_key.keys_by_dimension  # type: ignore[attr-defined]
    return keys["day"], keys["platform"]


def partition_key(day: str, platform: str) -> dg.MultiPartitionKey:
    return dg.MultiPartitionKey({"day": day, "platform": platform})
