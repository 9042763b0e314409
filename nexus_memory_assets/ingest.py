"""The inbox job: one run imports one file the new-events sensor found, so a big file never runs inside a tick."""

from pathlib import Path

import dagster as dg

from nexus_memory.events.inbox import import_inbox_file
from nexus_memory_assets.common import SQLITE_POOL
from nexus_memory_assets.runs import claim_run
from nexus_memory_assets.tenant import tenant_tags
from resources import StoresResource


class InboxFileConfig(dg.Config):
    """The inbox file to import."""

    path: str


@dg.op(pool=SQLITE_POOL)
def import_file(context: dg.OpExecutionContext, config: InboxFileConfig, stores: StoresResource) -> None:
    """Import the file and move it to done/; a file that cannot be imported goes to rejected/ with its reason."""
    claim_run(context, tenant_tags(stores.settings()))
    with stores.open() as opened:
        outcome = import_inbox_file(opened, Path(config.path))
    if outcome.status == "rejected":
        raise dg.Failure(description=outcome.line(), metadata={"reason": outcome.reason or ""})
    context.log.info(outcome.line())


@dg.job(
    name="ingest_inbox_file",
    description="Import one inbox file into events.db (launched by new_events_sensor); a bad file is set aside.",
)
def ingest_inbox_job() -> None:
    import_file()


defs = dg.Definitions(jobs=[ingest_inbox_job])
