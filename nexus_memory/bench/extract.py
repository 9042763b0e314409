"""Judge the offline extractor on LoCoMo: speed, coverage and overlap with the annotated observations.

LoCoMo annotates, per session and speaker, `observation` facts written by people, each pointing at the
turn(s) it came from. Two numbers say how close the offline extractor gets without an LLM:

- `observation_coverage`: the fraction of annotated (fact, dia_id) pairs whose turn produced at least
  one fact (a pair with several dia_ids counts when any of them did);
- `observation_overlap`: the mean, over annotated pairs, of the best token F1 (lower-cased, stopwords
  removed) between the annotated fact and the facts extracted from its turn(s); 0 when none.

The file is read directly (no importer, no database): each turn becomes an `Event` the way the
importer shapes it, and `extract` runs once per session with the conversation's earlier turns as
context. Only the `extract` calls are timed.

Usage: python -m nexus_memory.bench.extract PATH/locomo_dev.json
"""

from __future__ import annotations

import json
import re
import sys
import time
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from nexus_memory.core.calendar_words import MONTHS
from nexus_memory.core.words import STOPWORDS
from nexus_memory.events.ledger import Event
from nexus_memory.writer.extractor import extract

CONTEXT_TURNS = 10  # earlier turns handed to `extract` as context (who "you" is, known names)

# "1:56 pm on 8 May, 2023"
SESSION_DATE_RE = re.compile(
    r"^\s*(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+),?\s+(\d{4})", re.IGNORECASE
)
# A session list key: "session_12".
SESSION_KEY_RE = re.compile(r"^session_(\d+)$")
# One dia_id inside a possibly malformed evidence string ("D8:6; D9:17", "D:3:5").
DIA_ID_RE = re.compile(r"D:?(\d+):(\d+)")
# Tokens for the overlap F1.
TOKEN_RE = re.compile(r"[a-z0-9]+")


def parse_session_date(text: str) -> datetime | None:
    """UTC datetime of '1:56 pm on 8 May, 2023', or None."""
    match = SESSION_DATE_RE.match(text or "")
    if not match:
        return None
    hour, minute, half, day, month_name, year = match.groups()
    month = MONTHS.get(month_name.lower())
    if month is None:
        return None
    hour_24 = int(hour) % 12 + (12 if half.lower() == "p" else 0)
    return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=UTC)


def normalise_dia_ids(value: Any) -> list[str]:
    """'D8:6; D9:17' -> ['D8:6', 'D9:17']; 'D:3:5' -> ['D3:5']; lists are flattened."""
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for item in items:
        for match in DIA_ID_RE.finditer(str(item)):
            out.append(f"D{match.group(1)}:{match.group(2)}")
    return out


def turn_content(turn: dict[str, Any]) -> str:
    """The turn text as the importer stores it: a shared image becomes '[shares a photo: caption]'."""
    text = str(turn.get("text") or "")
    caption = turn.get("blip_caption")
    if isinstance(caption, str) and caption.strip():
        text = f"{text} [shares a photo: {caption.strip()}]"
    return text


def conversation_sessions(sample: dict[str, Any]) -> list[list[Event]]:
    """The events of one LoCoMo conversation, one list per session, in session order."""
    dialogue = sample["conversation"]
    sample_id = str(sample["sample_id"])
    speakers = (dialogue.get("speaker_a"), dialogue.get("speaker_b"))
    numbers = sorted(
        int(m.group(1)) for key in dialogue if (m := SESSION_KEY_RE.match(key)) and isinstance(dialogue[key], list)
    )
    sessions: list[list[Event]] = []
    for number in numbers:
        start = parse_session_date(dialogue.get(f"session_{number}_date_time", ""))
        if start is None:
            continue
        events = []
        for index, turn in enumerate(dialogue[f"session_{number}"]):
            speaker = str(turn.get("speaker"))
            peer = speakers[1] if speaker == speakers[0] else speakers[0]
            events.append(
                Event(
                    id=f"{sample_id}:{turn['dia_id']}",
                    platform="locomo",
                    sender_id=speaker,
                    sender_name=speaker,
                    content=turn_content(turn),
                    as_of=int((start + timedelta(seconds=index)).timestamp() * 1000),
                    peer_id=peer,
                    peer_kind="dm",
                    thread_id=sample_id,
                    session_id=f"{sample_id}:session_{number}",
                    metadata={"dia_id": turn["dia_id"]},
                )
            )
        sessions.append(events)
    return sessions


def tokens(text: str) -> Counter[str]:
    """Lower-cased content tokens of a text (stopwords removed)."""
    return Counter(t for t in TOKEN_RE.findall(text.lower()) if t not in STOPWORDS)


def token_f1(gold: Counter[str], predicted: Counter[str]) -> float:
    """Token-level F1 between two bags of words."""
    common = sum((gold & predicted).values())
    if not common:
        return 0.0
    precision = common / sum(predicted.values())
    recall = common / sum(gold.values())
    return 2 * precision * recall / (precision + recall)


def observation_scores(
    data: list[dict[str, Any]], facts_by_turn: dict[str, list[str]], turns: set[str] | None = None
) -> dict[str, Any]:
    """Coverage and overlap (see the module docstring) of facts by event id against `observation`.

    With `turns` (event ids), only annotated pairs citing one of those turns count: a subset's score.
    """
    pairs = covered = 0
    f1_total = 0.0
    for sample in data:
        sample_id = str(sample["sample_id"])
        for session in (sample.get("observation") or {}).values():
            for annotated in session.values():
                for text, dia in annotated:
                    ids = [f"{sample_id}:{i}" for i in normalise_dia_ids(dia)]
                    if turns is not None and not any(i in turns for i in ids):
                        continue
                    extracted = [f for i in ids for f in facts_by_turn.get(i, [])]
                    pairs += 1
                    covered += bool(extracted)
                    gold = tokens(text)
                    f1_total += max((token_f1(gold, tokens(f)) for f in extracted), default=0.0)
    return {
        "observation_pairs": pairs,
        "observation_coverage": round(covered / pairs, 4) if pairs else 0.0,
        "observation_overlap": round(f1_total / pairs, 4) if pairs else 0.0,
    }


def run(path: Path, *, conversations: int = 0) -> dict[str, Any]:
    """Run the extractor over every session in the LoCoMo file (its first `conversations`, when not 0) and score
    it against `observation`."""
    data = json.loads(Path(path).read_text())[: conversations or None]
    facts_by_turn: dict[str, list[str]] = defaultdict(list)
    turns = facts = skipped = 0
    kinds: Counter[str] = Counter()
    causal = contacts = 0
    elapsed = 0.0
    for sample in data:
        history: list[Event] = []
        for events in conversation_sessions(sample):
            started = time.perf_counter()
            result = extract(events, context=history[-CONTEXT_TURNS:])
            elapsed += time.perf_counter() - started
            turns += len(events)
            facts += len(result.facts)
            skipped += len(result.skipped_events)
            causal += len(result.causal)
            contacts += len(result.contacts)
            for fact in result.facts:
                facts_by_turn[fact.source_event_id].append(fact.text)
                kinds[fact.kind] += 1
            history.extend(events)

    scores = observation_scores(data, facts_by_turn)
    return {
        "conversations": len(data),
        "turns": turns,
        "facts": facts,
        "skipped": skipped,
        "facts_per_turn": round(facts / turns, 3) if turns else 0.0,
        "events_per_s": round(turns / elapsed, 1) if elapsed else 0.0,
        **scores,
        "causal_pairs": causal,
        "contacts": contacts,
        "kinds": dict(sorted(kinds.items())),
    }


def main(argv: list[str] | None = None) -> int:
    """CLI: print the bench JSON for the LoCoMo file given as the only argument."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m nexus_memory.bench.extract PATH/locomo_dev.json", file=sys.stderr)
        return 2
    print(json.dumps(run(Path(args[0])), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
