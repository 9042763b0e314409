"""How another process starts `nexus-memory`: the skills folder's scripts and the cold-start benchmark need it."""

from __future__ import annotations

import sys
from pathlib import Path


def installed_command() -> list[str]:
    """How to start `nexus-memory` from another process: the script beside this interpreter, else `-m`."""
    script = Path(sys.executable).with_name("nexus-memory")
    return [str(script)] if script.exists() else [sys.executable, "-m", "nexus_memory.cli"]
