"""A terse logger for runs in a terminal: what the assets say, warnings and errors, no engine events; and the
progress of a long step, logged with its numbers so the terse logger shows it as a bar (core/progress.py)."""

from __future__ import annotations

import logging
import time

import dagster as dg

from nexus_memory.core.config import load_settings
from nexus_memory.core.progress import Progress, ProgressReporter

PROGRESS_RECORD = "nexus_progress"  # log record attribute: (label, done, total, unit)
PROGRESS_EVERY_S = 10.0  # a long step logs its progress at most this often (each line is a row in the run log)


def progress_log(context: dg.OpExecutionContext, label: str) -> Progress:
    """A step's progress as a run log line every PROGRESS_EVERY_S seconds and at its end, carrying the numbers."""
    last = [time.monotonic()]
    started = [False]

    def log(done: int, total: int, unit: str) -> None:
        # The first report too: the terse logger times the step from it, not from the step's last report.
        if not started[0] or done >= total or time.monotonic() - last[0] >= PROGRESS_EVERY_S:
            started[0] = True
            last[0] = time.monotonic()
            context.log.info(f"{label}: {done}/{total} {unit}", extra={PROGRESS_RECORD: (label, done, total, unit)})

    return log


class _Terse(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.progress = ProgressReporter("", every_s=load_settings().progress_every_s)

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        if meta.get("dagster_event") is not None and record.levelno < logging.ERROR:
            return  # STEP_START, ASSET_MATERIALIZATION, ...: the stored run log keeps them
        report = getattr(record, PROGRESS_RECORD, None)
        if report is not None:
            label, done, total, unit = report
            self.progress.label = f"  {label}"  # indented like the other lines of the run
            self.progress(done, total, unit)
            return
        message = str(meta.get("orig_message") or record.getMessage()).strip().splitlines()
        prefix = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        self.progress.write(f"  {prefix}{message[0] if message else ''}")


@dg.logger(
    config_schema={"log_level": dg.Field(str, default_value="INFO", description="INFO, WARNING, ERROR or CRITICAL")},
    description="One line per message the assets log, plus warnings and errors (nexus-memory pipeline).",
)
def terse_logger(init_context: dg.InitLoggerContext) -> logging.Logger:
    logger = logging.Logger("nexus_memory.run", level=init_context.logger_config["log_level"])
    logger.addHandler(_Terse())
    return logger
