"""A participant: someone in the conversation a prompt comes from, as their platform delivers them."""

from __future__ import annotations

from dataclasses import dataclass

from nexus_memory.core.textcheck import MAX_ID_CHARS, MAX_PLATFORM_CHARS, identifier_problem, json_type


@dataclass(frozen=True)
class Participant:
    """Someone in the conversation a prompt comes from: a delivered handle, and the name shown with it."""

    platform: str
    handle: str
    name: str | None = None

    def __post_init__(self) -> None:
        """Checked as an event's sender is (one line says what is wrong), so a bad one reaches no SQL."""
        fields = (("platform", self.platform, MAX_PLATFORM_CHARS), ("handle", self.handle, MAX_ID_CHARS))
        for field, value, limit in (*fields, ("name", self.name, MAX_ID_CHARS)):
            if value is None and field == "name":
                continue
            problem = identifier_problem(value, limit) if isinstance(value, str) else f"is a {json_type(value)}"
            if problem:
                raise ValueError(f"participant {field} {problem}")


def parse_participant(text: str) -> Participant:
    """'PLATFORM:HANDLE' or 'PLATFORM:HANDLE=NAME' (the CLI's form); ValueError says what is wrong."""
    platform, colon, rest = text.partition(":")
    handle, _, name = rest.partition("=") if "=" in rest else (rest, "", "")
    if not colon or not platform.strip() or not handle.strip():
        raise ValueError(f"participant {text!r}: expected PLATFORM:HANDLE or PLATFORM:HANDLE=NAME")
    return Participant(platform.strip(), handle.strip(), name.strip() or None)
