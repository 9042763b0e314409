"""Contact info said in conversation: "my email is X", "reach me at X", "Sam's number is X"."""

from __future__ import annotations

import re
from collections.abc import Sequence

from nexus_memory.writer.extractor.literals import EMAIL_RE, PHONE_RE, URL_RE
from nexus_memory.writer.extractor.results import ContactStatement
from nexus_memory.writer.extractor.words import STOPWORDS

# Contact info said about oneself or a named person: "my (new) email is X", "Sam's number is X".
CONTACT_OWNED_RE = re.compile(
    r"\b(?P<owner>[Mm]y|[A-Z][a-z]+['\u2019]s)\s+(?:new\s+|personal\s+|work\s+|other\s+|current\s+|cell\s+|"
    r"mobile\s+|private\s+)?(?P<kind>(?i:e-?mail(?:\s+address)?|phone(?:\s+number)?|number|cell|mobile|"
    r"whatsapp|discord|twitter|x handle|instagram|insta|ig|telegram|signal|snapchat|snap|tiktok|github|"
    r"reddit|skype|steam|slack|handle|username|user name|gamertag|tag)(?:\s+(?:handle|username|id|tag))?)"
    r"\s*(?:is|'s|:|=|-)\s*(?P<value>\+?\(?\d[\d\s().-]{5,}\d|[^\s,;!?]+)",
)
# Contact info offered as a way to reach the sender: "reach me at X", "text me on 555-1234".
CONTACT_REACH_RE = re.compile(
    r"\b(?:reach|contact|text|call|email|e-mail|message|dm|ping|find|add|hit)\s+me\s+(?:up\s+)?"
    r"(?:at|on|via)\s+(?:(?:discord|twitter|instagram|telegram|signal|whatsapp|steam|skype)\s+(?:at|as)\s+)?"
    r"(?P<value>\+?\(?\d[\d\s().-]{5,}\d|[^\s,;!?]+)",
    re.IGNORECASE,
)


def find_contacts(content: str, event_id: str) -> list[ContactStatement]:
    """Contact statements: 'my email is X', 'reach me at X', 'my Discord is X', "Sam's number is X"."""
    found: list[ContactStatement] = []
    for match in CONTACT_OWNED_RE.finditer(content):
        owner_word = match.group("owner")
        owner = "sender" if owner_word.lower() == "my" else re.sub(r"['\u2019]s$", "", owner_word)
        contact = _classify_contact(match.group("value"), match.group("kind").lower())
        if contact:
            found.append(ContactStatement(contact[0], contact[1], owner, event_id))
    for match in CONTACT_REACH_RE.finditer(content):
        contact = _classify_contact(match.group("value"), "")
        if contact:
            found.append(ContactStatement(contact[0], contact[1], "sender", event_id))
    unique: dict[tuple[str, str, str], ContactStatement] = {}
    for item in found:
        unique.setdefault((item.value, item.type, item.owner), item)
    return list(unique.values())


def _classify_contact(raw: str, kind: str) -> tuple[str, str] | None:
    """(value, type) for a stated contact value, or None when it does not look like one."""
    value = raw.strip().rstrip(".,;:!?)'\"")
    if email := EMAIL_RE.search(value):
        return email.group(0), "email"
    phone = PHONE_RE.search(value)
    digits = re.sub(r"\D", "", value)
    if phone or (7 <= len(digits) <= 15 and re.fullmatch(r"[+\d\s().-]+", value)):
        return (phone.group(0) if phone else value), "phone"
    if kind.startswith(("e-mail", "email", "phone", "number", "cell", "mobile")) or " " in value:
        return None
    handle = value.lstrip("@")
    if re.fullmatch(r"[A-Za-z0-9_.#-]{2,40}", handle) and handle.lower() not in STOPWORDS:
        if not kind and not (raw.startswith("@") or re.search(r"\d|_|#", handle)):
            return None  # "reach me at home" is not a handle
        return handle, "handle"
    return None


def signature_contacts(lines: Sequence[str], event_id: str) -> list[ContactStatement]:
    """The email addresses and phone numbers of a signature ("+1 555 010 2000 | ravi@x.example", "M: ..."):
    the sender's own, like "my email is X"."""
    found: list[ContactStatement] = []
    for line in lines:
        for piece in re.split(r"\s*[|,;\u00b7]\s*", line):
            value = re.sub(r"^(?:t|m|p|e|tel|phone|mobile|cell|email|e-mail)\s*[:.]\s*", "", piece, flags=re.IGNORECASE)
            contact = _classify_contact(value, "phone" if any(c.isdigit() for c in value) else "email")
            if contact:
                found.append(ContactStatement(contact[0], contact[1], "sender", event_id))
    return found


def signature_role(lines: Sequence[str]) -> str | None:
    """What a signature says its sender is ("Partner Engineering, Kestrel Systems"): its lines without the
    contact ones, or None when nothing else is there. The entity store has no role or employer field, so
    this becomes a fact about the sender that names the organisation."""
    literal = (EMAIL_RE, PHONE_RE, URL_RE)
    kept = [line.strip(" |,") for line in lines if not any(pattern.search(line) for pattern in literal)]
    kept = [line for line in kept if line]
    return ", ".join(kept) if kept else None
