"""The Dagster instance of `dagster_home/dagster.yaml`: Dagster's SQLite storage, with batched event writes.

A run over a range of days records, per asset and per partition, a "planned" and a "materialized"
event. Dagster's SQLite event log opens, commits and closes two SQLite connections for each of them
(the run's own log and the cross-run index), and writes each partitioned check's planned row with
the whole run's partition list serialised again per partition. On a 200-day range of one platform
that was 115 s of a 2-core machine's time against 15 s of work; a two-year history of five
platforms is ~3,650 partitions. Here the events one step emits for all its partitions go to the
storage as one batch (Dagster's own event batching, which its SQLite storage leaves unbatched) and
are written in one transaction per database, and a planned check is serialised once. What is
stored is exactly what Dagster stores: the UI, the partition status and the run logs are the same.

Only the storage's defaults change, so a dagster.yaml that names another storage (Postgres) keeps it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import dagster as dg
import yaml
from dagster._core.events import ASSET_EVENTS
from dagster._core.events.log import EventLogEntry
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.asset_check_execution_record import AssetCheckExecutionRecordStatus
from dagster._core.storage.event_log.schema import AssetCheckExecutionsTable, SqlEventLogStorageTable
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sqlalchemy_compat import db_result
from dagster._core.storage.sqlite_storage import DagsterSqliteStorage, _event_logs_directory
from dagster._serdes import ConfigurableClassData, serialize_value

from nexus_memory_assets.tenant import with_job_tenant

# Events kept in memory before a batch is written; a step's partitions are one batch below this.
EVENT_BATCH_SIZE = 10_000


class BatchedSqliteEventLogStorage(SqliteEventLogStorage):
    """Dagster's SQLite event log, writing a batch of asset events in one transaction per database."""

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        batch = [e for e in events if e.is_dagster_event and e.dagster_event_type in ASSET_EVENTS]
        for event in events:
            if event.is_dagster_event and event.dagster_event_type in ASSET_EVENTS:
                continue
            self.store_event(event)  # planned checks and anything else: Dagster's own path
        for run_id in dict.fromkeys(e.run_id for e in batch):
            self._store_asset_events([e for e in batch if e.run_id == run_id])

    def _store_asset_events(self, events: list[EventLogEntry]) -> None:
        """What `store_event` does for each asset event, in one transaction per database."""
        rows = [self._event_to_row(event) for event in events]  # serialised once, for both databases
        with self.run_connection(events[0].run_id) as conn:
            conn.execute(SqlEventLogStorageTable.insert(), rows)
        with self.index_transaction() as conn:
            event_ids = []
            for row in rows:
                with db_result(conn, SqlEventLogStorageTable.insert().values(**row)) as result:
                    event_ids.append(result.inserted_primary_key[0])
            self._store_asset_event_tags(conn, events, event_ids)
            # An asset's index row is overwritten by each event: the last of each kind gives the final row.
            last = {(e.dagster_event.asset_key, e.dagster_event_type): i for i, e in enumerate(events)}
            for i in sorted(last.values()):
                self._store_asset_event(conn, events[i], event_ids[i])

    def _store_asset_check_evaluation_planned(self, event: EventLogEntry, event_id: int | None) -> None:
        """Dagster's rows, one per partition, with the event serialised once instead of once per row."""
        planned = event.get_dagster_event().event_specific_data
        keys = planned.partitions_subset.get_partition_keys() if planned.partitions_subset else [None]
        shared = {
            "asset_key": planned.asset_key.to_string(),
            "check_name": planned.check_name,
            "run_id": event.run_id,
            "execution_status": AssetCheckExecutionRecordStatus.PLANNED.value,
            "evaluation_event": serialize_value(event),
            "evaluation_event_timestamp": self._event_insert_timestamp(event),
            "evaluation_event_storage_id": event_id,
        }
        with self.index_connection() as conn:
            conn.execute(AssetCheckExecutionsTable.insert().values([{**shared, "partition": key} for key in keys]))

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData | None, config_value: Mapping[str, Any]
    ) -> BatchedSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)


class BatchedSqliteStorage(DagsterSqliteStorage):
    """DagsterSqliteStorage (runs, event logs, schedules under DAGSTER_HOME) with the batched event log."""

    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        super().__init__(base_dir, inst_data=inst_data)
        self._event_log_storage = BatchedSqliteEventLogStorage(_event_logs_directory(base_dir))

    @classmethod
    def from_config_value(
        cls, inst_data: ConfigurableClassData, config_value: Mapping[str, Any]
    ) -> BatchedSqliteStorage:
        return cls.from_local(inst_data=inst_data, **config_value)


class NexusInstance(dg.DagsterInstance):
    """The instance `dagster_home/dagster.yaml` names: default storage batched, event batching on."""

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        return {}

    @staticmethod
    def config_defaults(base_dir: str) -> Mapping[str, ConfigurableClassData | None]:
        defaults = dict(InstanceRef.config_defaults(base_dir))
        defaults["storage"] = ConfigurableClassData(
            __name__, BatchedSqliteStorage.__name__, yaml.dump({"base_dir": base_dir}, default_flow_style=False)
        )
        return defaults

    def create_run(self, *, tags: Mapping[str, Any] | None, job_snapshot: Any, **kwargs: Any) -> dg.DagsterRun:
        # Every path that makes a run (UI, sensors, schedules, the backfill daemon) passes here before the run is
        # queued: the run takes its job's tenant (tenant.py), so the queue's per-tenant limit sees it.
        tags = with_job_tenant(tags, job_snapshot)
        return super().create_run(tags=tags, job_snapshot=job_snapshot, **kwargs)

    def _get_event_batch_size(self) -> int:
        # Dagster hands a storage batches only when this is above 0 (DAGSTER_EVENT_BATCH_SIZE, default 0).
        return int(os.environ.get("DAGSTER_EVENT_BATCH_SIZE") or EVENT_BATCH_SIZE)


def persistent_instance(home: Path) -> dg.DagsterInstance:
    """A new instance at `home` configured as `dagster_home/dagster.yaml` is: this instance class, SQLite."""
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists():
        config.write_text(
            yaml.safe_dump(
                {
                    "telemetry": {"enabled": False},
                    "instance_class": {"module": __name__, "class": NexusInstance.__name__},
                }
            )
        )
    return dg.DagsterInstance.from_config(str(home))
