"""Judge which facts the offline writer keeps: precision and recall against hand labels, and the junk it stores.

The labelled set (`nexus_memory/sample_data/fact_labels.jsonl`, one message a line) holds every message of
the sample stream (`sample_data/events.jsonl`, what `make demo` ingests), 70 LoCoMo dev turns drawn at
random (seed 22, 14 per conversation; the text stays in the LoCoMo file, the label names the turn), and 16 more
drawn at random (seed 13) from two kinds of turn: 8 replies that open with a yes or a no to a yes/no question,
8 with a wish, offer or reaction cue ("good luck", "let me know", "must have been", "let's" ...), and 16 more
drawn at random (seed 14) from the turns with a generic-"you", guess or dropped-subject cue ("when you", "you
have to", "sounds like", "must have been", a sentence opening "Been", "Never", "Super" or "Really"), and 16
more drawn at random (seed 15) from the turns not labelled yet with a he/she/him/her/his/hers. Each
message lists the facts a careful reader would keep from it (`expected`) and the marginal ones (`acceptable`:
keeping one is no error, dropping one no miss); a message with neither has nothing worth keeping. A label is
a list of terms, the content words the fact must carry; `a|b` means either.

Matching: a term matches a fact when it occurs in the fact's text, case-insensitively and not inside a
longer word (the characters on each side are not letters or digits); a fact matches a label when every
term of the label matches. So a fact that leaves a pronoun unresolved ("she's calling tomorrow") does not
match a label that names the person ("Jess + calling").

- `precision`: the share of the facts kept from labelled messages that match a label (expected or
  acceptable) of their own message;
- `recall`: the share of expected labels that at least one fact kept from their message matches.

The writer runs as it runs for real: the sample stream goes through a fresh store (ingest, episodes, the
offline writer), LoCoMo through `extract` session by session with the earlier turns as context (as `bench
extract` does). `junk` then counts, over every fact stored from the sample stream and every fact
extracted from LoCoMo dev, the facts an independent checker (the rules below, not the writer's filters)
reads as email headers, signature lines, pleasantries, remarks (a wish for the other, an offer to help or
to be told, a call with no plan, a reaction to what was shown), or third-person pronouns (he/she/him/her/his)
with no one else named in the fact to refer to.
"""

from __future__ import annotations

import json
import random
import re
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nexus_memory.bench.extract import CONTEXT_TURNS, conversation_sessions
from nexus_memory.core.config import load_settings
from nexus_memory.core.stores import Stores
from nexus_memory.core.words import word_set
from nexus_memory.events import ledger
from nexus_memory.events.ingest import ingest_file
from nexus_memory.events.ledger import Event, row_to_event
from nexus_memory.events.partitions import ledger_days
from nexus_memory.identity import store as identity
from nexus_memory.pipeline.layers import run_layer
from nexus_memory.writer.base import EpisodeWriter
from nexus_memory.writer.extractor import extract
from nexus_memory.writer.offline_writer import OfflineWriter
from nexus_memory.writer.run import write_events

SAMPLE_DATA = Path(__file__).resolve().parent.parent / "sample_data"
LABELS = SAMPLE_DATA / "fact_labels.jsonl"
SAMPLE_EVENTS = SAMPLE_DATA / "events.jsonl"

# --- the independent junk checker -----------------------------------------------------------------

# "<Name> said " in front of a fact: the checker looks at what was said.
_SAID_RE = re.compile(r"^(?:[\w.@+#'-]+\s+){1,3}said\s+")
_HEADER_RE = re.compile(
    r"^(?:subject|from|to|cc|bcc|date|sent|reply-to|re|fwd?)\s*:|\bwrote:\s*$|forwarded message|original message",
    re.IGNORECASE,
)
_SIGNATURE_RE = re.compile(
    r"^(?:best|thanks|thank you|cheers|regards|best regards|kind regards|sincerely)\W*$|sent from my|"
    r"\bconfidential|intended recipient|\bprivileged\b|unsubscribe",
    re.IGNORECASE,
)
_PLEASANTRY_WORDS = word_set(
    """ok okay k kk thanks thank thx ty you lol lmao haha hehe great good sounds sound got it perfect nice cool
    sure yes yeah yep yup no nope worries np problem deal done will do see later soon love too welcome anytime
    awesome amazing wow congrats congratulations bye take care appreciate that that's that'd this is so really
    very much all the more merrier fine works for me noted right true agreed totally definitely absolutely
    exactly omg hi hey hello morning night have a an day fun luck fingers crossed we'll be would glad happy
    hear to sweet aww oh ah ha hah ugh yay woo brb ttyl gtg same here"""
)
_WORD_RE = re.compile(r"[A-Za-z0-9]+(?:['\u2019][A-Za-z]+)*")
_THIRD_PERSON_RE = re.compile(r"\b(?:he|she|him|her|his|hers|himself|herself)\b", re.IGNORECASE)
# Remarks that read like statements (the classes `writer/extractor/remarks.py` drops), by cues of the checker's
# own, read on the stored text where "you" is already the other's name ("Caroline hopes Melanie has fun"):
# a wish for the other, an offer to help or to be told, a call with no plan, a reaction to what was shown.
_REMARK_CUES = {
    "wish": re.compile(
        r"^(?i:good luck|best of luck|all the best|best wishes)\b|"
        r"\b[Ww]ish(?:es|ing)?\s+[A-Z]\w+\s+"
        r"(?:(?:all\s+)?the best|luck|many|a (?:happy|great|good|safe)|happy|success)\b|"
        r"\b[Hh]opes?\s+(?:that\s+)?[A-Z]\w+\s+(?:has|have|had|enjoys|gets|feels|is|does|will|can|finds)\b"
    ),
    "offer": re.compile(
        # "let me know", stored as "let Caroline know"; "John will let you know" is a promise, and stays
        r"^(?i:feel free|don't hesitate)\b|\b(?i:let)\s+(?:me|us|[A-Z]\w+)\s+know\b|"
        r"(?i:\b(?:reach(?:es)? out|call|text)\s+(?:\w+\s+)?(?:if|whenever|any ?time)\b|"
        r"\b(?:is|are|am)\s+(?:always\s+)?here\s+(?:for|if)\b)"
    ),
    "exhortation": re.compile(r"^let(?:'s|\s+us)\b(?!.*\d)", re.IGNORECASE),
    "reaction": re.compile(
        r"^(?:\w+\s+)?must(?:'ve|\s+have)\s+been\b|^(?:it\s+|that\s+)?(?:sounds|seems|looks)\s+like\b|"
        r"^(?:it|that|this|those)(?:'s|\s+is|\s+was|\s+were)\s+(?:(?:so|really|very|such|quite)\s+)?(?:an?\s+)?"
        r"(?:amazing|awesome|great|cool|close|tough|hard|fun|beautiful|incredible|inspiring|special|wonderful|"
        r"fantastic|crazy|scary|sad|exciting)$",
        re.IGNORECASE,
    ),
}
_WHEN_WORDS = word_set(
    """monday tuesday wednesday thursday friday saturday sunday today tomorrow tonight weekend week month year
    january february march april may june july august september october november december"""
)
# Capitalised words that are not people: the checker's own short list.
_NOT_PEOPLE = word_set(
    """I The A An This That These Those It Its He She His Her They We You My Our Your Their If When And But So
    Monday Tuesday Wednesday Thursday Friday Saturday Sunday January February March April May June July August
    September October November December Assistant"""
)
_FUNCTION_WORDS = word_set("at in on to for from with by of the a an and or but near")
# Words for people that a pronoun can point back to without a name ("a photo of a woman with her hands on her hips").
_KIN = re.compile(
    r"\b(?:mom|mum|mother|dad|father|sister|brother|wife|husband|daughter|son|grandma|grandpa|aunt|uncle|"
    r"cousin|friend|girlfriend|boyfriend|partner|boss|landlord|colleague|kid|kids|niece|nephew|instructor|coach|"
    r"girl|boy|woman|man|lady|guy|child|baby|person|player|bride|groom)\b",
    re.IGNORECASE,
)


def junk_kind(text: str, speaker: str) -> str | None:
    """'header', 'signature', 'pleasantry', a remark ('wish', 'offer', 'exhortation', 'reaction') or 'pronoun'
    when the fact is that kind of junk, else None.

    `speaker` is the name the fact's speaker goes by; their own name does not count as someone a pronoun
    could point to.
    """
    said = _SAID_RE.sub("", text, count=1).strip().rstrip(".!")
    if _HEADER_RE.search(said):
        return "header"
    words = _WORD_RE.findall(said)
    if _SIGNATURE_RE.search(said) or (":" not in said and _name_line(words)):
        return "signature"
    pleasant = [w for w in words if w.lower() in _PLEASANTRY_WORDS]
    if re.fullmatch(r"\w+ it is", said, re.IGNORECASE) or (
        len(pleasant) == len(words) or (pleasant and all(w in pleasant or _is_name(w) for w in words))
    ):
        return "pleasantry"
    if not _WHEN_WORDS & {w.lower() for w in words}:  # a wish or a call with a date in it is a plan
        remark = next((kind for kind, cue in _REMARK_CUES.items() if cue.search(said)), None)
        if remark:
            return remark
    if _THIRD_PERSON_RE.search(said) or _THIRD_PERSON_RE.search(text):
        own = set(speaker.split())
        named = [w for w in _WORD_RE.findall(text) if w[:1].isupper() and w not in _NOT_PEOPLE and w not in own]
        if not named and not _KIN.search(text):
            return "pronoun"
    return None


def _is_name(word: str) -> bool:
    """A capitalised word with lower-case letters after its capital ('Kestrel', not 'GO' or '6')."""
    return word[:1].isupper() and any(c.islower() for c in word[1:]) and word not in _NOT_PEOPLE


def _name_line(words: list[str]) -> bool:
    """A signature line kept as a fact: a name, or a title and company ('Partner Engineering, Kestrel Systems').

    Two to six words, every one after the first a name-like capitalised word; the first may have lost its
    capital to "X said ...", but is no function word ("at Skyline Gate" is a place, not a signature).
    """
    return (
        2 <= len(words) <= 6
        and all(_is_name(w) for w in words[1:])
        and words[0].lower() not in _FUNCTION_WORDS
        and (_is_name(words[0]) or words[0].islower())
    )


def junk_share(facts: Iterable[tuple[str, str]]) -> dict[str, Any]:
    """Counts and shares of each junk kind among (fact text, speaker) pairs."""
    kinds: Counter[str] = Counter()
    total = 0
    for text, speaker in facts:
        total += 1
        kind = junk_kind(text, speaker)
        if kind:
            kinds[kind] += 1
    junk = sum(kinds.values())
    return {
        "facts": total,
        "junk": junk,
        "junk_share": round(junk / total, 4) if total else 0.0,
        "by_kind": {k: kinds.get(k, 0) for k in ("header", "signature", "pleasantry", *_REMARK_CUES, "pronoun")},
    }


# --- matching and scoring ---------------------------------------------------------------------------


def term_matches(term: str, text: str) -> bool:
    """A label term (or one of its `|` alternatives) occurs in the text, not inside a longer word."""
    return any(
        re.search(rf"(?<![A-Za-z0-9]){re.escape(alt.strip())}(?![A-Za-z0-9])", text, re.IGNORECASE)
        for alt in term.split("|")
    )


def label_matches(label: list[str], text: str) -> bool:
    return all(term_matches(term, text) for term in label)


def score(labels: list[dict[str, Any]], kept: dict[str, list[str]]) -> dict[str, Any]:
    """Precision and recall (module docstring) of the facts `kept` per message id against `labels`."""
    facts = correct = expected = found = 0
    wrong: list[dict[str, str]] = []
    missed: list[dict[str, Any]] = []
    for record in labels:
        texts = kept.get(record["id"], [])
        every = record["expected"] + record["acceptable"]
        for text in texts:
            facts += 1
            if any(label_matches(label, text) for label in every):
                correct += 1
            else:
                wrong.append({"id": record["id"], "fact": text})
        for label in record["expected"]:
            expected += 1
            if any(label_matches(label, text) for text in texts):
                found += 1
            else:
                missed.append({"id": record["id"], "label": label, "kept": texts})
    return {
        "messages": len(labels),
        "facts_kept": facts,
        "expected_labels": expected,
        "precision": round(correct / facts, 4) if facts else 0.0,
        "recall": round(found / expected, 4) if expected else 0.0,
        "unlabelled_facts": wrong,
        "missed_labels": missed,
    }


# --- running the writer -------------------------------------------------------------------------------


def sample_store_facts(events_path: Path) -> list[tuple[str, str, str]]:
    """(source event id, fact text, speaker name) of every fact the offline writer stores from the stream."""
    with tempfile.TemporaryDirectory(prefix="nexus-bench-facts-") as tmp, Stores(load_settings(data_dir=tmp)) as stores:
        ingest_file(stores, events_path, "jsonl")
        writer = OfflineWriter()
        for (platform,) in stores.conn.execute("SELECT DISTINCT platform FROM events ORDER BY platform").fetchall():
            days = ledger_days(stores, platform)
            run_layer(stores, "episodes", platform, days)
            run_layer(stores, "facts", platform, days, writer=writer)
        rows = stores.conn.execute(
            "SELECT f.text, e.* FROM facts f JOIN events e ON e.id = f.source_event_id ORDER BY f.as_of, f.id"
        ).fetchall()
        speakers: dict[str, str] = {}
        out = []
        for row in rows:
            event = row_to_event(row)
            if event.id not in speakers:
                speakers[event.id] = identity.speaker_name(stores.conn, event)
            out.append((event.id, row["text"], speakers[event.id]))
        return out


def locomo_facts(path: Path) -> list[tuple[str, str, str]]:
    """(turn id 'conv-26:D1:3', fact text, speaker) of every fact `extract` takes from LoCoMo, session by session."""
    out: list[tuple[str, str, str]] = []
    for sample in json.loads(path.read_text()):
        history: list[Event] = []
        for events in conversation_sessions(sample):
            speakers = {e.id: e.sender_id for e in events}
            for fact in extract(events, context=history[-CONTEXT_TURNS:]).facts:
                out.append((fact.source_event_id, fact.text, speakers[fact.source_event_id]))
            history.extend(events)
    return out


def load_labels(path: Path = LABELS) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _by_message(facts: list[tuple[str, str, str]], prefix: str = "") -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for message, text, _ in facts:
        out[prefix + message].append(text)
    return out


# --- the LLM writer on the labelled set ------------------------------------------------------------------
LLM_SEED = 27  # which labelled messages the LLM writer reads when it reads only some


def llm_kept(
    records: list[dict[str, Any]], writer: EpisodeWriter, locomo: Path | None, max_seconds: float = 0.0
) -> tuple[dict[str, list[str]], list[dict[str, Any]]]:
    """The facts `writer` keeps from each labelled message, read as a one-message episode with the label's
    context (the turns before it, or its thread's earlier messages) as read-only context, through the real
    runner on a throwaway store; and one row per message (status, mode, seconds, facts). `max_seconds`: start
    no message after this long (the rows say which ran)."""
    kept: dict[str, list[str]] = defaultdict(list)
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="nexus-bench-facts-llm-") as tmp,
        Stores(load_settings(data_dir=tmp)) as stores,
    ):
        ingest_file(stores, SAMPLE_EVENTS, "jsonl")  # the sample stream's senders, as the offline run has them
        turns: dict[str, Event] = {}
        if locomo is not None:
            for sample in json.loads(locomo.read_text()):
                for session in conversation_sessions(sample):
                    turns.update((f"locomo:{e.id}", e) for e in session)
            with stores.transaction():
                for record in records:
                    for event_id in _with_context(record):
                        if event_id in turns:
                            ledger.append_event(stores, turns[event_id])
        started = time.perf_counter()
        for record in records:
            if max_seconds and rows and time.perf_counter() - started > max_seconds:
                break
            events = _events(stores, turns, _with_context(record))
            if not events or events[-1].id != record["id"].removeprefix("locomo:"):
                continue  # a LoCoMo label without the LoCoMo file
            # A sample message gets its thread's earlier messages from the store, as the pipeline gives them.
            context = events[:-1] if record["source"] == "locomo" else None
            outcome = write_events(stores, events[-1:], writer, context=context)
            texts = [
                r[0] for r in stores.conn.execute("SELECT text FROM facts WHERE source_event_id = ?", (events[-1].id,))
            ]
            kept[record["id"]] = texts
            rows.append(
                {
                    "id": record["id"],
                    "status": outcome.status,
                    "mode": outcome.mode,
                    "seconds": round(outcome.seconds, 1),
                }
                | {"facts": texts, "error": (outcome.error or "")[:200]}
            )
            print(f"[{len(rows)}/{len(records)}] {record['id'][:60]}: {outcome.status} {len(texts)}", file=sys.stderr)
    return kept, rows


def _with_context(record: dict[str, Any]) -> list[str]:
    """A LoCoMo label's context turns, then its own turn; a sample message alone (the runner reads its thread)."""
    if record["source"] == "locomo":
        return [f"locomo:{record['sample_id']}:{dia}" for dia in record.get("context", [])] + [record["id"]]
    return [record["id"]]


def _events(stores: Stores, turns: dict[str, Event], ids: list[str]) -> list[Event]:
    found = []
    for event_id in ids:
        if event_id in turns:
            found.append(turns[event_id])
        elif row := stores.conn.execute("SELECT * FROM events WHERE id = ?", (event_id,)).fetchone():
            found.append(row_to_event(row))
    return found


def run_llm(
    writer: EpisodeWriter, locomo: Path | None = None, *, messages: int = 20, max_seconds: float = 0.0
) -> dict[str, Any]:
    """The LLM writer and the offline writer on the same labelled messages (`messages` of them, drawn at
    random with LLM_SEED; 0: all): precision and recall of each, and the LLM writer's row per message."""
    labels = [r for r in load_labels() if locomo is not None or r["source"] != "locomo"]
    chosen = random.Random(LLM_SEED).sample(labels, messages) if 0 < messages < len(labels) else labels
    llm, rows = llm_kept(chosen, writer, locomo, max_seconds)
    ran = [r for r in chosen if r["id"] in llm]
    offline = _by_message(sample_store_facts(SAMPLE_EVENTS))
    if locomo is not None:
        offline.update(_by_message(locomo_facts(locomo), "locomo:"))
    scores = {"llm": score(ran, llm), "offline": score(ran, offline)}
    for part in scores.values():
        del part["missed_labels"]
    return {
        "messages": len(ran),
        "writer": writer.name,
        "mode": getattr(writer, "mode", ""),
        "ok": sum(1 for r in rows if r["status"] == "ok"),
        "seconds_per_message": round(sum(r["seconds"] for r in rows) / len(rows), 1) if rows else 0.0,
        **scores,
        "per_message": rows,
    }


def run(locomo: Path | None = None, *, labels_path: Path = LABELS, details: bool = False) -> dict[str, Any]:
    """The labelled-set scores (sample stream, and LoCoMo turns when the file is given) and the junk shares."""
    started = time.perf_counter()
    labels = load_labels(labels_path)
    sample = sample_store_facts(SAMPLE_EVENTS)
    kept = _by_message(sample)
    stores = {"sample": junk_share((text, speaker) for _, text, speaker in sample)}
    sources = ["sample"]
    if locomo is not None:
        extracted = locomo_facts(locomo)
        kept.update(_by_message(extracted, "locomo:"))
        stores["locomo_dev"] = junk_share((text, speaker) for _, text, speaker in extracted)
        sources.append("locomo")
    scored = {source: score([r for r in labels if r["source"] == source], kept) for source in sources}
    overall = score([r for r in labels if r["source"] in sources], kept)
    for part in (overall, *scored.values()):
        if not details:
            del part["unlabelled_facts"], part["missed_labels"]
    return {
        "labelled": {**overall, "by_source": scored},
        "junk": stores,
        "seconds": round(time.perf_counter() - started, 2),
    }
