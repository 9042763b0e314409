"""Partitions: one per (day, platform) where the ledger holds events.

- Both dimensions are dynamic: a day becomes a partition when its first events arrive, and so does a
  platform (the new-events sensor and `nexus-memory pipeline` register them, `register_partitions`).
  The partition view lists the days that hold events, not every day since NEXUS_PARTITION_START, and
  "Materialize missing" on a fresh install launches runs over those days only (docs/layers.md says
  why this and not a daily calendar). Days before NEXUS_PARTITION_START are processed by the start
  day's partition (`nexus_memory.events.partitions.Calendar`).
- A dynamic set keeps the order its keys were added in; days are added oldest first, so the list
  reads in time order unless an older day arrives after newer ones (it is then listed last).
- A partition key cannot hold '|' (the separator of the two dimensions), '...' or control characters,
  so the platform is percent-encoded where it has to be (`encode_platform`); 'gmail' stays 'gmail'.
- A run covers a range of days of one platform (BackfillPolicy.single_run), layer after layer,
  days oldest first.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from urllib.parse import unquote

import dagster as dg
import sqlalchemy.exc
from dagster._core.storage.tags import ASSET_PARTITION_RANGE_END_TAG, ASSET_PARTITION_RANGE_START_TAG

from nexus_memory.core.config import Settings
from nexus_memory.core.stores import Stores
from nexus_memory.events.partitions import Calendar, days_of_partitions, extend_days

DAY_DIMENSION = "day"
PLATFORM_DIMENSION = "platform"
PLATFORM_TAG = "nexus/platform"
day_partitions = dg.DynamicPartitionsDefinition(name=DAY_DIMENSION)
platform_partitions = dg.DynamicPartitionsDefinition(name=PLATFORM_DIMENSION)


def day_platform_partitions(settings: Settings) -> dg.MultiPartitionsDefinition:
    """The days that hold events times the platforms that do, both registered as events arrive."""
    Calendar.from_settings(settings)  # a bad or future start fails here, with a message
    return dg.MultiPartitionsDefinition({DAY_DIMENSION: day_partitions, PLATFORM_DIMENSION: platform_partitions})


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
    """The Dagster partition key of a day and a (raw) platform."""
    return dg.MultiPartitionKey({DAY_DIMENSION: day, PLATFORM_DIMENSION: encode_platform(platform)})


PIPELINE_RUN_TAG_KEYS = (ASSET_PARTITION_RANGE_START_TAG, ASSET_PARTITION_RANGE_END_TAG, PLATFORM_TAG)


def pipeline_run_tags(platform: str, first: str, last: str) -> dict[str, str]:
    """Tags of a run over daily partitions first..last of a platform: the range, and the platform
    (dagster.yaml lets one run per `nexus/platform` value run at a time)."""
    return {
        ASSET_PARTITION_RANGE_START_TAG: str(dagster_key(first, platform)),
        ASSET_PARTITION_RANGE_END_TAG: str(dagster_key(last, platform)),
        PLATFORM_TAG: encode_platform(platform),
    }


def known_days(instance: dg.DagsterInstance) -> list[str]:
    """The day partitions the instance holds, in its order."""
    return list(instance.get_dynamic_partitions(DAY_DIMENSION))


def partition_requests(
    instance: dg.DagsterInstance, pairs: Iterable[tuple[str, str]], calendar: Calendar
) -> tuple[list[dg.AddDynamicPartitionsRequest], list[str]]:
    """What adds the days and platforms of ledger (day, platform) pairs that the instance lacks, and the
    day partitions in order once they are added (new days oldest first, after the known ones)."""
    pairs = list(pairs)
    known = known_days(instance)
    order = extend_days(known, calendar.partition_days(pairs))
    platforms = {encode_platform(platform) for _, platform in pairs}
    new_platforms = sorted(platforms - set(instance.get_dynamic_partitions(PLATFORM_DIMENSION)))
    requests = []
    if len(order) > len(known):
        requests.append(day_partitions.build_add_request(order[len(known) :]))
    if new_platforms:
        requests.append(platform_partitions.build_add_request(new_platforms))
    return requests, order


def register_partitions(
    instance: dg.DagsterInstance, pairs: Iterable[tuple[str, str]], calendar: Calendar
) -> list[str]:
    """Add the days and platforms of these pairs that the instance lacks; the day partitions in order."""
    pairs = list(pairs)
    for _ in range(2):
        requests, _ = partition_requests(instance, pairs, calendar)
        try:
            for request in requests:
                instance.add_dynamic_partitions(request.partitions_def_name, list(request.partition_keys))
            break
        except sqlalchemy.exc.IntegrityError:  # the sensor, or another pipeline, added some of them just now
            continue
    return known_days(instance)


def batches(
    context: dg.OpExecutionContext, partitions_def: dg.MultiPartitionsDefinition
) -> list[tuple[str, list[str]]]:
    """The run's partitions as (platform, day partitions) per platform (a range may span several)."""
    days_by_platform: dict[str, list[str]] = defaultdict(list)
    for key in context.partition_keys:
        dims = partitions_def.get_partition_key_from_str(key).keys_by_dimension
        days_by_platform[dims[PLATFORM_DIMENSION]].append(dims[DAY_DIMENSION])
    return [(decode_platform(platform), sorted(days)) for platform, days in sorted(days_by_platform.items())]


def run_days(
    context: dg.OpExecutionContext, partitions_def: dg.MultiPartitionsDefinition, stores: Stores
) -> list[tuple[str, list[str]]]:
    """(platform, ledger days with events) for each platform of the run: the days its day partitions
    stand for (the start day's partition also takes every earlier day)."""
    calendar = Calendar(stores.settings.partition_start)
    return [
        (platform, days_of_partitions(stores, platform, days, calendar))
        for platform, days in batches(context, partitions_def)
    ]
