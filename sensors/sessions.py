"""A new session id in the ledger ends the sessions before it: consolidate them promptly (the one session trigger)."""

import dagster as dg

from nexus_memory.lifecycle import sessions
from nexus_memory_assets.consolidation.jobs import consolidation_job
from resources import StoresResource


@dg.sensor(
    job=consolidation_job,
    minimum_interval_seconds=60,
    default_status=dg.DefaultSensorStatus.RUNNING,
    description="Requests a consolidation run when events of a session not seen before arrive.",
)
def new_session_sensor(context: dg.SensorEvaluationContext, stores: StoresResource) -> dg.SensorResult | dg.SkipReason:
    since = int(context.cursor or 0)
    with stores.open() as opened:
        new, high = sessions.new_sessions_since(opened.conn, since)
    if high is None:
        return dg.SkipReason("no new events")
    if not new:
        return dg.SensorResult(skip_reason="no new session", cursor=str(high))
    context.log.info(f"{len(new)} new sessions; the sessions before them have ended")
    return dg.SensorResult(run_requests=[dg.RunRequest(run_key=f"sessions:{high}")], cursor=str(high))
