"""Forget requests filed for a run elsewhere (Dagster's `forget_job`): the run is told an opaque id, never the text.

Dagster keeps a run's config, tags and event log in its own storage under DAGSTER_HOME, outside the data
directory and outside any forget. A forget launched with the handle or name in its run config would leave
exactly that text there. So the CLI (`nexus-memory forget ... --request`) checks the target, files it here
as `<data_dir>/forget-requests/<id>.json` (readable by the owner only) and prints the id; the run config
of `forget_job` holds that id alone; the run reads the target, forgets it and deletes the file. A request
that cannot be carried out (the target is gone, or names two entities by now) fails with a message that
names the request id and the target kind only, and its file is deleted too: file a new one.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

from nexus_memory.core.ids import ulid
from nexus_memory.core.progress import Progress
from nexus_memory.core.stores import Stores
from nexus_memory.lifecycle.forget.plan import ForgetError, Target, make_plan
from nexus_memory.lifecycle.forget.run import ForgetResult, forget

REQUEST_DIR = "forget-requests"
_REQUEST_ID = re.compile(r"fr_[0-9A-Za-z]{10,40}")


def _path(data_dir: Path, request_id: str) -> Path:
    if not _REQUEST_ID.fullmatch(request_id):
        # Not echoed: whatever was typed instead of an id (a name, a handle) would land in Dagster's event log.
        raise ForgetError("not a forget request id (fr_ and 26 letters or digits: nexus-memory forget ... --request)")
    return Path(data_dir) / REQUEST_DIR / f"{request_id}.json"


def file_request(stores: Stores, target: Target, *, requested_by: str, reason: str | None = None) -> str:
    """Check that `target` can be forgotten (ForgetError if not) and file it; returns the request id."""
    make_plan(stores.conn, target)
    request_id = f"fr_{ulid()}"
    path = _path(stores.data_dir, request_id)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    body = {
        "kind": target.kind,
        "value": target.value,
        "include_candidates": target.include_candidates,
        "requested_by": requested_by,
        "reason": reason,
    }
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as out:
        json.dump(body, out)
    return request_id


def forget_request(stores: Stores, request_id: str, *, progress: Progress | None = None) -> ForgetResult:
    """Carry out a filed request (`forget`) and delete it; its errors never repeat the target's text."""
    path = _path(stores.data_dir, request_id)
    if not path.is_file():
        raise ForgetError(f"no forget request {request_id} in this data directory (carried out already?)")
    body = json.loads(path.read_text(encoding="utf-8"))
    target = Target(body["kind"], body["value"], include_candidates=body["include_candidates"])
    result: ForgetResult | None = None
    # A ForgetError's message names the target: it is swallowed here and a plain one raised below, outside any
    # except block, so no traceback or exception context carries the text into the run's event log.
    with contextlib.suppress(ForgetError):
        result = forget(stores, target, requested_by=body["requested_by"], reason=body["reason"], progress=progress)
    path.unlink()
    if result is None:
        raise ForgetError(
            f"forget request {request_id} ({target.kind}) cannot be carried out any more: the target is gone or "
            f"ambiguous now (nexus-memory forget --{target.kind} says why); the request was dropped"
        )
    return result
