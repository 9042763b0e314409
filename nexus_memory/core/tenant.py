"""Which tenant a data directory belongs to: NEXUS_TENANT, else an id the directory keeps for itself."""

from __future__ import annotations

import os
import re
import secrets
from pathlib import Path

from nexus_memory.core.config import Settings

# The directory's own id, written the first time it is asked for and never changed after.
TENANT_ID_FILE = "tenant-id"
_VALID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,62}")


def _checked(tenant: str, where: str) -> str:
    if not _VALID.fullmatch(tenant):
        raise ValueError(
            f"tenant {tenant!r} ({where}) must be 1-63 letters, digits, '_', '.' or '-', "
            "starting with a letter or digit"
        )
    return tenant


def tenant_of(settings: Settings) -> str:
    """NEXUS_TENANT when set, else the id kept in `<data_dir>/tenant-id` (made once, `data-` and 12 hex digits)."""
    if settings.tenant:
        return _checked(settings.tenant, "NEXUS_TENANT")
    path = Path(settings.data_dir) / TENANT_ID_FILE
    try:
        return _checked(path.read_text().strip(), str(path))
    except FileNotFoundError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = f"data-{secrets.token_hex(6)}"
    draft = path.with_name(f".{TENANT_ID_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
    draft.write_text(fresh + "\n")
    try:  # written whole, then linked in: two processes asking at once both read the first one's id
        os.link(draft, path)
    except FileExistsError:
        return _checked(path.read_text().strip(), str(path))
    finally:
        draft.unlink()
    return fresh
