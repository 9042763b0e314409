"""The writer's own notes: disambiguation rules and false-positive patterns it keeps across runs.

One mental model (subtype 'writer_notes') in markdown. Reviews of merge candidates add a line to it
(`record_review`), a person reads and edits it (`nexus-memory writer-notes show|edit`, or `current` /
`save` here), and the LLM writer reads it in its system prompt (`for_prompt`). Like every mental model
it is versioned: each change is a new row whose parent_id is the version it replaces, so nothing a
person wrote is lost, and an edit based on a version that has been replaced since is refused.
"""

from __future__ import annotations

from dataclasses import dataclass

from nexus_memory.core import db
from nexus_memory.core.ids import day_of, now_ms, ulid
from nexus_memory.core.textcheck import one_line, unicode_problem
from nexus_memory.identity.entity import Entity

SUBTYPE = "writer_notes"
NAME = "Writer notes"
MAX_NOTES_CHARS = 20_000  # what a person may save; the notes are read in every LLM writer prompt
MAX_PROMPT_CHARS = 6_000  # what of them goes into a prompt
MAX_NAME_CHARS = 80  # an entity name or reason quoted in a note line
RULES = "Disambiguation rules"
ALIASES = "Known aliases"
FALSE_POSITIVES = "False-positive patterns"
TEMPLATE = f"""# {NAME}

## {RULES}

## {ALIASES}

## {FALSE_POSITIVES}
"""


class NotesError(ValueError):
    """Notes that cannot be saved: bad text, or an edit of a version that was replaced meanwhile."""


@dataclass(frozen=True)
class Notes:
    """One version of the notes; id None when there are none yet (text is then the empty template)."""

    id: str | None
    text: str
    updated_at: int | None


def current(conn: db.Connection) -> Notes:
    """The newest version of the notes (the template when none was written yet)."""
    row = conn.execute(
        """SELECT m.id, m.description, m.updated_at FROM mental_models m
           WHERE m.subtype = ? AND NOT EXISTS (SELECT 1 FROM mental_models c WHERE c.parent_id = m.id)
           ORDER BY m.updated_at DESC, m.id DESC LIMIT 1""",
        (SUBTYPE,),
    ).fetchone()
    return Notes(row[0], row[1], row[2]) if row else Notes(None, TEMPLATE, None)


def save(conn: db.Connection, text: str, *, based_on: str | None) -> Notes:
    """Store `text` as the new version of the notes, replacing version `based_on` (None: there was none).

    Raises NotesError when the text is not storable or too long, or when `based_on` is no longer the
    newest version (someone or a review changed the notes meanwhile: read them again and redo the edit).
    """
    if not isinstance(text, str):
        raise NotesError(f"notes must be text, not {type(text).__name__}")
    problem = unicode_problem(text)
    if problem:
        raise NotesError(f"the notes text {problem}")
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "")
    if len(text) > MAX_NOTES_CHARS:
        raise NotesError(f"the notes are {len(text)} characters, over the limit of {MAX_NOTES_CHARS}")
    with db.transaction(conn):
        head = current(conn)
        if head.id != based_on:
            raise NotesError(
                f"the notes changed since version {based_on or '(none)'}: the newest is {head.id}; "
                "read them again and redo the edit"
            )
        if head.id is not None and head.text == text:
            return head  # nothing changed: no new version
        now = max(now_ms(), (head.updated_at or 0) + 1)  # versions stay ordered even within a millisecond
        notes_id = ulid(now)
        conn.execute(
            """INSERT INTO mental_models (id, name, description, subtype, parent_id, last_refreshed,
                   created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
            (notes_id, NAME, text, SUBTYPE, head.id, now, now, now),
        )
    return Notes(notes_id, text, now)


def add_line(conn: db.Connection, section: str, line: str) -> Notes:
    """Append `- line` at the end of `## section` (made when missing); a line already there is not repeated."""
    with db.transaction(conn):  # read and write as one step: no edit can slip in between
        head = current(conn)
        bullet = f"- {one_line(line, MAX_NOTES_CHARS // 10)}"
        lines = head.text.rstrip("\n").split("\n")
        if bullet in lines:
            return head
        heading = f"## {section}"
        if heading not in lines:
            lines += ["", heading]
        end = lines.index(heading) + 1
        while end < len(lines) and not lines[end].startswith("#"):
            end += 1
        while end > 0 and not lines[end - 1].strip():
            end -= 1  # after the section's last line, before the blank lines that end it
        lines.insert(end, bullet)
        text = "\n".join(lines) + "\n"
        if len(text) > MAX_NOTES_CHARS:
            return head  # full: a person has to tidy them; a review still works without its note
        return save(conn, text, based_on=head.id)


def record_review(conn: db.Connection, a: Entity | None, b: Entity | None, status: str, reason: str) -> None:
    """The line a person's review of "b is a" leaves: a rule not to merge them, or an alias to use."""
    if a is None or b is None:
        return
    day = day_of(now_ms())
    who, whom = _named(b), _named(a)
    why = one_line(reason, MAX_NAME_CHARS)
    if status == "rejected":
        add_line(
            conn,
            RULES,
            f"{who} is not {whom}: a person rejected this merge on {day} (it was proposed because: {why}). "
            "Do not propose it again, nor link facts about one to the other.",
        )
    elif status == "accepted":
        add_line(conn, ALIASES, f"{who} is {whom}: a person accepted this merge on {day}; use {a.id} for both.")


def _named(entity: Entity) -> str:
    return f'"{one_line(entity.name, MAX_NAME_CHARS)}" ({entity.type}, {entity.id})'


def for_prompt(conn: db.Connection) -> str:
    """The notes as a system-prompt section, or "" when they hold nothing but headings."""
    text = current(conn).text.strip()
    if not any(line.strip() and not line.lstrip().startswith("#") for line in text.split("\n")):
        return ""
    if len(text) > MAX_PROMPT_CHARS:
        text = text[:MAX_PROMPT_CHARS] + f"\n[... {len(text) - MAX_PROMPT_CHARS} more characters of notes]"
    return (
        "## Your notes from earlier runs and reviews\n"
        "Rules you and the people reviewing your work have written down. Follow them; a person may have "
        "edited them.\n\n" + text
    )
