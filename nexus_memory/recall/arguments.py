"""Checks on recall()'s arguments, so a bad one is one clear RecallArgumentError, not a driver error.

Filter strings (platform, thread, session) must be valid Unicode (SQLite cannot bind a lone surrogate)
and bounded; times and counts must be integers SQLite can bind; budget and scope must be strings (the
engine says which names exist). The query and the entity filter are free text: the engine cleans them.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from nexus_memory.core.textcheck import json_type, show, unicode_problem

MAX_FILTER_CHARS = 1_000  # platform, thread and session filters (stored ids are at most 256)
MAX_TIME_MS = 2**53  # time filters and reference_time: unix ms of magnitude below this (≈285,000 years)
MAX_RESULTS = 10_000
MAX_TOKENS = 100_000_000


class RecallArgumentError(ValueError):
    """An argument of recall() that cannot be used; the message names it and says why."""


def check_recall_arguments(
    *,
    scope: Any,
    budget: Any,
    max_results: Any,
    max_tokens: Any,
    time_after: Any,
    time_before: Any,
    reference_time: Any,
    platform: Any,
    thread_id: Any,
    session_id: Any,
    exclude_session_id: Any,
) -> tuple[int | None, int | None, int | None, str | None]:
    """(time_after, time_before, reference_time, platform) as the engine uses them: times as plain ints
    (numpy integers bind as nothing in SQLite), the platform trimmed and lower-cased as the ledger
    stores it. Raises RecallArgumentError for the first bad argument."""
    if not isinstance(budget, str):
        raise RecallArgumentError(f"budget must be a string, got {json_type(budget)}")
    if isinstance(scope, str):
        scope = [scope]
    if not isinstance(scope, Sequence) or not all(isinstance(s, str) for s in scope):
        raise RecallArgumentError(f"scope must be a list of names, got {show(scope)}")
    _count("max_results", max_results, MAX_RESULTS)
    if max_tokens is not None:
        _count("max_tokens", max_tokens, MAX_TOKENS)
    texts = {"platform": platform, "thread_id": thread_id, "session_id": session_id}
    for name, value in {**texts, "exclude_session_id": exclude_session_id}.items():
        _check_text(name, value)
    return (
        _time("time_after", time_after),
        _time("time_before", time_before),
        _time("reference_time", reference_time),
        None if platform is None else platform.strip().lower(),
    )


def check_reference_time(value: Any) -> int | None:
    """reference_time as recall() takes it (unix ms as a plain int); RecallArgumentError for a bad one."""
    return _time("reference_time", value)


def _check_text(name: str, value: Any) -> None:
    if value is None:
        return
    if not isinstance(value, str):
        raise RecallArgumentError(f"{name} must be a string, got {json_type(value)}")
    if len(value) > MAX_FILTER_CHARS:
        raise RecallArgumentError(f"{name} is {len(value)} characters, over the limit of {MAX_FILTER_CHARS}")
    problem = unicode_problem(value)
    if problem:
        raise RecallArgumentError(f"{name} {problem}")


def _time(name: str, value: Any) -> int | None:
    if value is None:
        return None
    number = _integer(name, value)
    if abs(number) >= MAX_TIME_MS:
        raise RecallArgumentError(f"{name} must be unix milliseconds below {MAX_TIME_MS}, got {show(value)}")
    return number


def _integer(name: str, value: Any) -> int:
    if isinstance(value, bool):
        raise RecallArgumentError(f"{name} must be an integer, got a boolean")
    try:
        return operator.index(value)  # int and numpy integers; not floats, strings or NaN
    except TypeError:
        raise RecallArgumentError(f"{name} must be an integer, got {show(value)}") from None


def _count(name: str, value: Any, limit: int) -> None:
    number = _integer(name, value)
    if not 0 <= number <= limit:
        raise RecallArgumentError(f"{name} must be between 0 and {limit}, got {show(value)}")
