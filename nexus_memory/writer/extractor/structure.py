"""The parts of a message: what its sender wrote, apart from headers, quoted replies, signatures and forwards.

An email is more than its sender's sentences: header lines (Subject:, From: ...), the message it replies to
("On ... wrote:" and "> " lines), a signature (a sign-off, then name, title, company and phone lines, or
everything after "-- "), a confidentiality notice, forwarded messages. None of that is something the sender
said, so none of it becomes a fact as if they had; it all stays in the ledger and in the episode. What each
part is still gives something:

- the subject is kept apart (`MessageParts.subject`);
- the signature's lines after the name (title, company, phone) are kept apart, for the sender's role and
  contacts (`facts.py`);
- a forwarded message is read as its own author's words (`MessageParts.forwarded`);
- a letter signed by someone else (an assistant's draft of the user's email) is marked with its signer.

Hard-wrapped lines are joined back into their sentences ("We moved the\\nAtlas launch ..."), while short
lines, list items and "Key: value" lines stay lines.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

# A header line: "Subject: ...", "From: Dana <dana@x>", "Cc: ...".
HEADER_RE = re.compile(r"^(?P<key>subject|from|to|cc|bcc|date|sent|reply-to)\s*:\s*(?P<value>.*)$", re.IGNORECASE)
# Where a reply quotes the message it answers: "On Mon, 3 Mar 2025, Dana <dana@x> wrote:" (maybe wrapped),
# "-----Original Message-----", or an Outlook block ("From: ..." followed by "Sent: ..." a line or two later).
QUOTE_START_RE = re.compile(
    r"^(?:On\b[^\n]{0,200}(?:\n[^\n]{0,200})?\bwrote:[ \t]*$|-{2,}\s*Original Message\s*-{2,}[ \t]*$|"
    r"From:[^\n]*\n(?:[^\n]*\n)?(?:Sent|Date):)",
    re.IGNORECASE | re.MULTILINE,
)
# The start of a forwarded message.
FORWARD_RE = re.compile(
    r"^(?:-{2,}\s*Forwarded message\s*-{2,}|Begin forwarded message:)[ \t]*$", re.IGNORECASE | re.MULTILINE
)
# The signature separator ("-- ").
SIGNATURE_SEPARATOR_RE = re.compile(r"^--[ \t]*$", re.MULTILINE)
_SIGN_OFFS = (
    r"best|best regards|kind regards|warm regards|"
    r"regards|warmly|cheers|sincerely|yours(?: truly| sincerely)?|all the best|talk soon|take care|love|xo+"
)
# Sign-offs that take an object ("Thanks, Sam" thanks Sam): a name after one is not the signer's.
_THANKS = r"thanks(?: again| so much)?|thank you|many thanks|thx"
_SIGN_OFFS = rf"{_THANKS}|{_SIGN_OFFS}"
_NAME = r"[A-Z][\w.'-]*(?:\s+[A-Z][\w.'-]*){0,2}"
# A sign-off line that opens a signature: "Thanks,", "Best regards", "Cheers, Sam".
SIGN_OFF_RE = re.compile(rf"^(?i:(?P<word>{_SIGN_OFFS}))\s*(?:[,.!-]+\s*(?P<name>{_NAME}))?\s*[,.!]?$")
# A letter in one paragraph: "Hi Gloria, ... Let me know what you think. Best, Sam".
SALUTATION_RE = re.compile(r"^(?i:hi|hello|dear|hey)\s+[A-Z][\w'-]*\s*,")
INLINE_SIGN_OFF_RE = re.compile(rf"(?<=[.!?])\s*(?i:{_SIGN_OFFS})\s*,\s*(?P<name>{_NAME})\s*[.!]?\s*$")
# Lines a mail client adds.
CLIENT_LINE_RE = re.compile(r"^(?:sent from my\b|get outlook for\b|sent via\b)", re.IGNORECASE)
# A confidentiality notice or disclaimer paragraph.
DISCLAIMER_RE = re.compile(
    r"^\s*(?:confidentiality notice|disclaimer|privileged (?:and|&) confidential)\b|"
    r"\bconfidential\b.{0,200}\b(?:intended (?:solely )?(?:for|recipient)|recipient|privileged)\b|"
    r"\bif you (?:have received|received) this (?:e-?mail|message) in error\b",
    re.IGNORECASE | re.DOTALL,
)
# The start of a list item: "- ", "* ", "• ", "1. ", "2) ".
LIST_ITEM_RE = re.compile(r"^\s*(?:[-*\u2022]\s+|\d{1,2}[.)]\s+)")
# A line shaped like a name: one to four capitalised words or initials ("Dana", "P", "Gloria Chen").
NAME_LINE_RE = re.compile(r"^[A-Z][\w'.-]*(?:\s+[A-Z][\w'.-]*){0,3}$")
WRAP_WIDTH = 50  # a line at least this long that does not end a sentence was wrapped, not ended
SIGNATURE_MAX_LINES = 6  # lines a signature may have after its sign-off or name
SIGNATURE_LINE_MAX_WORDS = 8  # a longer line is prose, not a signature line


@dataclass(frozen=True)
class Forwarded:
    """A forwarded message inside another: its author (display name, else address) and its own parts."""

    author: str | None
    parts: MessageParts


@dataclass(frozen=True)
class MessageParts:
    """A message read by its structure: the sender's own text and the parts around it."""

    body: str  # what the sender wrote, wrapped lines joined
    subject: str | None = None
    signer: str | None = None  # the name a signature or sign-off gives ("Dana", "Gloria Chen")
    signature: tuple[str, ...] = ()  # the signature's lines after the name: title, company, phone ...
    forwarded: tuple[Forwarded, ...] = ()


# A writer reads each episode with up to 20 earlier events of its thread, so one message is read many times;
# the parts depend on the text alone and are immutable. Bounded: a message may be a long email.
@functools.lru_cache(maxsize=1024)
def read_message(content: str) -> MessageParts:
    """Split a message into the sender's text, its subject, signature and forwarded messages (module doc)."""
    text = content.replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    subject = None
    while lines and (header := HEADER_RE.match(lines[0].strip())):
        if header.group("key").lower() == "subject":
            subject = header.group("value").strip() or None
        lines.pop(0)
    text = "\n".join(lines)
    forwarded: list[Forwarded] = []
    if forward := FORWARD_RE.search(text):
        forwarded.append(_forwarded(text[forward.end() :]))
        text = text[: forward.start()]
    if quote := QUOTE_START_RE.search(text):
        text = text[: quote.start()]
    lines = [line for line in text.split("\n") if not line.lstrip().startswith(">") and not CLIENT_LINE_RE.match(line)]
    paragraphs = [p for p in _paragraphs(lines) if not DISCLAIMER_RE.search(" ".join(p))]
    paragraphs, signer, signature = _signature(paragraphs)
    body = "\n\n".join("\n".join(_unwrap(p)) for p in paragraphs).strip()
    inline = INLINE_SIGN_OFF_RE.search(body) if signer is None and SALUTATION_RE.match(body) else None
    if inline and "\n" not in body[inline.start() :]:
        signer, body = inline.group("name"), body[: inline.start()].rstrip()
    return MessageParts(body, subject, signer, tuple(signature), tuple(forwarded))


def _forwarded(text: str) -> Forwarded:
    """The forwarded message after its marker: its header lines name the author."""
    lines = text.strip("\n").split("\n")
    author = None
    while lines and (header := HEADER_RE.match(lines[0].strip())):
        if header.group("key").lower() == "from":
            value = header.group("value").strip()
            named = re.match(r"^\"?(?P<name>[^\"<]+?)\"?\s*<(?P<address>[^>]+)>", value)
            author = (named.group("name").strip() if named else value.strip("<> ")) or None
        lines.pop(0)
    return Forwarded(author, read_message("\n".join(lines)))


def _paragraphs(lines: list[str]) -> list[list[str]]:
    """Lines grouped into paragraphs at blank lines, each line stripped."""
    paragraphs: list[list[str]] = [[]]
    for line in lines:
        if line.strip():
            paragraphs[-1].append(line.strip())
        elif paragraphs[-1]:
            paragraphs.append([])
    return [p for p in paragraphs if p]


def _signature(paragraphs: list[list[str]]) -> tuple[list[list[str]], str | None, list[str]]:
    """The paragraphs without the signature, the signer's name, and the signature's lines after it.

    A signature starts at "-- ", or at a sign-off line ("Thanks,") followed by at most a few short lines,
    or is a last paragraph that opens with a name line and has only short lines ("Ravi Menon / Partner
    Engineering, Kestrel Systems"). A message of one paragraph has no such paragraph to lose.
    """
    flat = [(i, j, line) for i, p in enumerate(paragraphs) for j, line in enumerate(p)]
    for index, (i, j, line) in enumerate(flat):
        if SIGNATURE_SEPARATOR_RE.match(line):
            tail = [rest for _, _, rest in flat[index + 1 :]]
            return _cut(paragraphs, i, j), _name_of(tail[:1]), tail[1:]
    for index in range(max(0, len(flat) - SIGNATURE_MAX_LINES - 1), len(flat)):
        i, j, line = flat[index]
        sign_off = SIGN_OFF_RE.match(line)
        tail = [rest for _, _, rest in flat[index + 1 :]]
        if sign_off and (index or len(paragraphs) > 1) and all(_signature_line(rest) for rest in tail):
            if sign_off.group("name"):
                thanked = re.fullmatch(_THANKS, sign_off.group("word"), re.IGNORECASE)
                return _cut(paragraphs, i, j), None if thanked else sign_off.group("name"), tail
            return _cut(paragraphs, i, j), _name_of(tail[:1]), tail[1:]
    last = paragraphs[-1] if len(paragraphs) > 1 else []
    short = last and NAME_LINE_RE.match(last[0]) and len(last) <= SIGNATURE_MAX_LINES + 1
    if short and all(_signature_line(line) for line in last):
        return paragraphs[:-1], last[0], last[1:]
    return paragraphs, None, []


def _cut(paragraphs: list[list[str]], i: int, j: int) -> list[list[str]]:
    """The paragraphs before line j of paragraph i."""
    kept = [*paragraphs[:i], paragraphs[i][:j]]
    return [p for p in kept if p]


def _name_of(lines: list[str]) -> str | None:
    return lines[0] if lines and NAME_LINE_RE.match(lines[0]) else None


def _signature_line(line: str) -> bool:
    """A short line that does not read as a sentence: a name, a title, a company, a phone number."""
    return len(line.split()) <= SIGNATURE_LINE_MAX_WORDS and not re.search(r"[.!?]$", line.rstrip(")"))


def _unwrap(lines: list[str]) -> list[str]:
    """Join hard-wrapped lines: a long line that does not end a sentence goes on on the next one."""
    out: list[str] = []
    for line in lines:
        previous = out[-1] if out else ""
        if len(previous) >= WRAP_WIDTH and not re.search(r"[.!?:]$", previous) and not LIST_ITEM_RE.match(line):
            out[-1] = f"{previous} {line}"
        else:
            out.append(line)
    return out
