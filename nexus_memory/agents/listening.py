"""The listening socket of `serve` and `mcp --http`, bound before the server announces itself, so that a taken
port is one error line rather than a banner followed by uvicorn's error."""

from __future__ import annotations

import os
import socket


class CannotListen(ValueError):
    """The address cannot be listened on (the port is taken, the host is not this machine's)."""


def listen(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port) and listening, for `uvicorn.Server.run(sockets=[...])`."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        return socket.create_server((host, port), family=family)
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)  # create_server's own text repeats the address
        raise CannotListen(f"cannot listen on {host}:{port}: {reason}") from exc
