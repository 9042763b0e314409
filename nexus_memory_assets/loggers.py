"""A terse logger for runs in a terminal: what the assets say, warnings and errors; no engine events."""

from __future__ import annotations

import logging
import sys

import dagster as dg


class _Terse(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, "dagster_meta", None) or {}
        if meta.get("dagster_event") is not None and record.levelno < logging.ERROR:
            return  # STEP_START, ASSET_MATERIALIZATION, ...: the stored run log keeps them
        message = str(meta.get("orig_message") or record.getMessage()).strip().splitlines()
        prefix = "" if record.levelno < logging.WARNING else f"{record.levelname.lower()}: "
        print(f"  {prefix}{message[0] if message else ''}", file=sys.stderr, flush=True)


@dg.logger(
    config_schema={"log_level": dg.Field(str, default_value="INFO", description="INFO, WARNING, ERROR or CRITICAL")},
    description="One line per message the assets log, plus warnings and errors (nexus-memory pipeline).",
)
def terse_logger(init_context: dg.InitLoggerContext) -> logging.Logger:
    logger = logging.Logger("nexus_memory.run", level=init_context.logger_config["log_level"])
    logger.addHandler(_Terse())
    return logger
