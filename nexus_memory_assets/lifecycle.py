"""Memory lifecycle jobs and their schedules (Automation page), thin glue over nexus_memory/lifecycle.

  nightly_enrichment   02:00  entity enrichment, then conflict detection (before consolidation)
  (03:00: sessions end and are consolidated by `nightly_consolidation`, nexus_memory_assets/consolidation/jobs.py)
  nightly_decay        04:00  decay, soft-deleting facts below the threshold
  weekly_reflection    Sun 03:00  the weekly reflection (at most one per 6 days, 3 facts needed)
  forget                on demand  forget an event / fact / sender / entity (a filed request; run config: its id)

Each op's output metadata says what changed; the same counts are in lifecycle_runs / deletion_log.
"""

from collections.abc import Callable
from typing import Any

import dagster as dg

from nexus_memory.core.stores import Stores
from nexus_memory.lifecycle import conflicts, decay, enrichment, reflection
from nexus_memory.lifecycle.forget import ForgetError, forget_request
from nexus_memory_assets.common import SQLITE_POOL
from resources import StoresResource


def metadata(values: dict[str, Any]) -> dict[str, Any]:
    """Counts as numbers, structures as JSON; None and empty values left out."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if value is None or value == [] or value == {}:
            continue
        out[key] = dg.MetadataValue.json(value) if isinstance(value, dict | list) else value
    return out


def run(stores: StoresResource, job: Callable[[Stores], Any]) -> Any:
    """One lifecycle call on freshly opened stores; returns its report."""
    with stores.open() as opened:
        return job(opened)


def output(value: Any, report: Any) -> dg.Output:
    return dg.Output(value, metadata=metadata(report.as_dict()))


@dg.op(pool=SQLITE_POOL)
def enrich_entities(context: dg.OpExecutionContext, stores: StoresResource) -> dg.Output[int]:
    """Re-read facts with few entity links with every known person in mind; each fact once."""
    report = run(stores, enrichment.enrich)
    context.log.info(f"enrichment: {report.facts_read} facts read, {report.links_added} links added")
    return output(report.links_added, report)


@dg.op(pool=SQLITE_POOL, ins={"after": dg.In(dg.Nothing)})
def detect_conflicts(context: dg.OpExecutionContext, stores: StoresResource) -> dg.Output[int]:
    """Facts written since the last run that contradict earlier ones about the same entity."""
    report = run(stores, conflicts.detect_conflicts)
    for failure in report.failures[:20]:
        context.log.warning(f"conflict check failed (retried next run): {failure}")
    return output(report.conflicts_found, report)


@dg.job(description="Entity enrichment, then conflict detection (nexus-memory enrich / conflicts).")
def nightly_enrichment() -> None:
    detect_conflicts(after=enrich_entities())


def one_op_job(
    job_name: str, op_name: str, description: str, call: Callable[[Stores], Any], value: Callable[[Any], Any]
) -> dg.JobDefinition:
    """A job of one op that runs one lifecycle call: output `value(report)`, metadata the whole report."""

    @dg.op(name=op_name, pool=SQLITE_POOL, description=description)
    def the_op(context: dg.OpExecutionContext, stores: StoresResource) -> dg.Output:
        report = run(stores, call)
        context.log.info(f"{op_name}: {value(report)}")
        return output(value(report), report)

    @dg.job(name=job_name, description=description)
    def the_job() -> None:
        the_op()

    return the_job


nightly_decay = one_op_job(
    "nightly_decay",
    "apply_decay",
    "Decay every fact's confidence; soft-delete those below the threshold (nexus-memory decay).",
    decay.run_decay,
    lambda report: report.soft_deleted,
)
weekly_reflection = one_op_job(
    "weekly_reflection",
    "write_reflection",
    "The weekly reflection, get_context's 'Weekly insight', or why it was skipped (nexus-memory reflect).",
    reflection.reflect,
    lambda report: report.status,
)


class ForgetConfig(dg.Config):
    """Which filed forget request to carry out: the id `nexus-memory forget ... --request` printed. The run config
    never holds what is forgotten, because Dagster keeps it (lifecycle/forget/requests.py)."""

    request: str


@dg.op(pool=SQLITE_POOL)
def forget_target(context: dg.OpExecutionContext, config: ForgetConfig, stores: StoresResource) -> dg.Output[str]:
    """Forget it everywhere, leaving no trace in the bytes; metadata: rows removed per store."""
    try:
        result = run(stores, lambda opened: forget_request(opened, config.request))
    except ForgetError as exc:  # its message names the request and the kind only
        raise dg.Failure(description=str(exc), allow_retries=False) from None
    if result.status != "scrubbed":
        context.log.warning(f"rows removed, but the byte scrub did not finish: {result.scrub}")
    return dg.Output(
        result.request_id,
        metadata=metadata(
            {
                **{f"removed_{k}": v for k, v in result.removed.items()},
                **result.derived,
                "status": result.status,
                "seconds": result.seconds,
                "scrub": result.scrub,
            }
        ),
    )


@dg.job(
    description="Forget an event, a fact, a sender or an entity everywhere: a request filed by "
    "`nexus-memory forget ... --request`, named by its id (run config: ops.forget_target.config.request)."
)
def forget_job() -> None:
    forget_target()


RUNNING = dg.DefaultScheduleStatus.RUNNING
schedules = [
    dg.ScheduleDefinition(
        name="nightly_enrichment_schedule", job=nightly_enrichment, cron_schedule="0 2 * * *", default_status=RUNNING
    ),
    dg.ScheduleDefinition(
        name="nightly_decay_schedule", job=nightly_decay, cron_schedule="0 4 * * *", default_status=RUNNING
    ),
    dg.ScheduleDefinition(
        name="weekly_reflection_schedule", job=weekly_reflection, cron_schedule="0 3 * * 0", default_status=RUNNING
    ),
]
jobs = [nightly_enrichment, nightly_decay, weekly_reflection, forget_job]

defs = dg.Definitions(jobs=jobs, schedules=schedules)
