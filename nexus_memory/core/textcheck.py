"""Checks on text from outside (files, agent tool calls, API callers) before it reaches SQLite.

Python strings can hold lone surrogates ("\\ud800" in JSON, undecodable bytes in file names), which
SQLite cannot store; identifiers can hold control characters that break a one-line message; any value
can be too long or nested too deep to print. These helpers say what is wrong, so callers can reject
one record or one call with a reason instead of raising out of an import or an agent loop.
"""

from __future__ import annotations

import reprlib
import unicodedata
from typing import Any

# Bounds on a delivered identifier (an event's sender, a conversation's participant); the README states them.
MAX_PLATFORM_CHARS = 64
MAX_ID_CHARS = 256  # id, sender_id, sender_name, peer_id, thread_id, session_id

_SHOW = reprlib.Repr()
_SHOW.maxstring = 60
_SHOW.maxother = 60
_SHOW.maxlevel = 3


def surrogate_at(text: str) -> int | None:
    """Index of the first lone surrogate in `text` (not valid Unicode, cannot be UTF-8), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return exc.start
    return None


def unicode_problem(text: str) -> str | None:
    """Why `text` cannot be stored as UTF-8, or None when it can."""
    at = surrogate_at(text)
    return None if at is None else f"is not valid Unicode (lone surrogate {text[at]!r} at character {at})"


def visible(text: str) -> bool:
    """Whether `text` shows anything: a character that is not white space, a control or an invisible
    format character (zero-width space, BOM, bidi marks), so '\u200b' or '\x00' is as empty as '  '."""
    return any(not c.isspace() and unicodedata.category(c) not in ("Cc", "Cf") for c in text)


def identifier_problem(text: str, limit: int) -> str | None:
    """Why `text` is not a usable identifier (too long, not Unicode, control characters), or None."""
    if len(text) > limit:
        return f"is {len(text)} characters, over the limit of {limit}"
    problem = unicode_problem(text)
    if problem:
        return problem
    for index, char in enumerate(text):
        if unicodedata.category(char) == "Cc":
            return f"contains a control character {char!r} at character {index}"
    return None


def safe_text(text: Any, limit: int | None = None) -> str:
    """`text` as storable, printable UTF-8: lone surrogates written as backslash escapes, cut to `limit`."""
    value = text if isinstance(text, str) else str(text)
    if surrogate_at(value) is not None:
        value = value.encode("utf-8", "backslashreplace").decode("utf-8")
    if limit is not None and len(value) > limit:
        value = value[:limit] + f"... [{len(value) - limit} more characters]"
    return value


def one_line(text: Any, limit: int = 2_000) -> str:
    """`safe_text` on one line: line breaks and other control characters escaped."""
    value = safe_text(text, limit)
    return "".join(repr(c)[1:-1] if unicodedata.category(c) == "Cc" else c for c in value)


def show(value: Any) -> str:
    """A short repr of any value for an error message: bounded in length and depth, never raises."""
    try:
        return safe_text(_SHOW.repr(value), 200)
    except Exception:  # a value whose __repr__ fails must not turn an error message into a crash
        return f"<{type(value).__name__}>"


def json_type(value: Any) -> str:
    """JSON's name for a value's type ("array", "number", ...), for messages a user reads."""
    names = {list: "array", tuple: "array", dict: "object", str: "string", bool: "boolean", type(None): "null"}
    if type(value) in names:
        return names[type(value)]
    return "number" if isinstance(value, int | float) else type(value).__name__
