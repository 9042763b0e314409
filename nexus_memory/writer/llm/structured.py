"""The LLM writer's structured mode: one JSON-schema call per episode, applied through the writer tools.

The model answers one document: facts (each citing its event's ref, with typed entities), causal
links between those facts, and identity claims. Servers that compile the schema into a grammar
cannot return malformed output; others are checked and retried (`LLMClient.structured_call`).
The document is then judged against the episode (`validation`) and what survives is written with
`ModelTools`, the tool loop's own tools: one implementation of dedup, entity resolution, merge
rules and the per-episode transaction for both modes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nexus_memory.core.tooling import ToolError
from nexus_memory.facts.about import MAX_ABOUT_CHARS
from nexus_memory.identity import store as identity
from nexus_memory.llm.client import Budget, LLMClient, Usage
from nexus_memory.writer.base import EpisodeInput
from nexus_memory.writer.extractor import split_sentences
from nexus_memory.writer.extractor.facts import answer_statement
from nexus_memory.writer.extractor.names import NameBook
from nexus_memory.writer.extractor.sentences import clean_sentence, is_answer, is_courtesy, is_informative
from nexus_memory.writer.extractor.structure import read_message
from nexus_memory.writer.llm.episode import event_refs, render_episode, system_prompt
from nexus_memory.writer.llm.model_tools import ModelTools
from nexus_memory.writer.llm.validation import CLAIM_TYPES, ENTITY_TYPES, EpisodeView, Plan, PlannedFact, validate
from nexus_memory.writer.tools import WriterTools

SCHEMA_NAME = "episode_memory"
# Bounds of the sent schema: under a grammar they also stop a small model that repeats itself.
MAX_FACTS = 12  # per episode: max(MIN_FACTS, FACTS_PER_EVENT * events), at most this
MIN_FACTS = 4
FACTS_PER_EVENT = 2
MAX_ENTITIES = 3
MAX_LINKS = 3
MAX_CLAIMS = 2
MAX_TEXT = 200  # characters of a fact; a string that runs on is cut by the grammar, not by max_tokens
MAX_NAME = 60
CLAIM_CONFIDENCE = 0.9  # below auto-merge: a claim waits for a person to accept it
CLOSING = "Answer with the JSON document for the new events."
CLAIM_ENTITY_TYPE = {"name": "person", "email": "email", "phone": "phone", "handle": "handle"}


def _object(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


def _array(items: dict[str, Any], max_items: int | None) -> dict[str, Any]:
    return {"type": "array", "items": items} | ({"maxItems": max_items} if max_items else {})


def extraction_schema(refs: Sequence[str] | None = None) -> dict[str, Any]:
    """The document's schema. With `refs` it is the one sent: refs and types are enums and sizes are
    bounded, which steers grammar-constrained decoding and stops a looping model at the bounds.

    Without refs it is the shape answers are checked against: a wrong ref, type or number is then
    a dropped item (`validation`), not a rejected document.
    """
    sent = bool(refs)

    def string(values: Sequence[str] = (), max_length: int = 0) -> dict[str, Any]:
        if sent and values:
            return {"type": "string", "enum": list(values)}
        return {"type": "string", "maxLength": max_length} if sent and max_length else {"type": "string"}

    ref = string(list(refs or ()))
    number: dict[str, Any] = {"type": "integer", "minimum": 1, "maximum": MAX_FACTS} if sent else {"type": "integer"}
    strength: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1} if sent else {"type": "number"}
    entity = _object({"name": string(max_length=MAX_NAME), "type": string(ENTITY_TYPES)})
    fact = _object(
        {
            "text": string(max_length=MAX_TEXT),
            "source_ref": ref,
            "entities": _array(entity, MAX_ENTITIES if sent else None),
            "about": string(max_length=MAX_ABOUT_CHARS),
        }
    )
    if not sent:
        fact["required"].remove("about")  # a document without it is read as naming no time (`validation.read_about`)
    link = _object({"cause": number, "effect": number, "strength": strength})
    claim = _object({"source_ref": ref, "type": string(CLAIM_TYPES), "value": string(max_length=MAX_NAME)})
    max_facts = min(MAX_FACTS, max(MIN_FACTS, FACTS_PER_EVENT * len(refs))) if refs else None
    return _object(
        {
            "facts": _array(fact, max_facts),
            "causal_links": _array(link, MAX_LINKS if sent else None),
            "identity_claims": _array(claim, MAX_CLAIMS if sent else None),
        }
    )


CHECK_SCHEMA = extraction_schema()


@dataclass
class StructuredOutcome:
    """What one structured episode wrote and dropped."""

    facts_kept: int = 0
    tool_calls: int = 0
    attempts: int = 0
    dropped: Counter[str] = field(default_factory=Counter)
    fixed: Counter[str] = field(default_factory=Counter)
    notes: list[str] = field(default_factory=list)


class StructuredExtractor:
    """One validated JSON-schema call per episode, then the writes through `ModelTools`."""

    mode = "structured"

    def __init__(
        self, client: LLMClient, budget: Budget, prompt: str, *, retries: int = 2, temperature: float = 0.0
    ) -> None:
        self.client = client
        self.budget = budget
        self.prompt = prompt
        self.retries = retries
        self.temperature = temperature

    def ask(self, episode: EpisodeInput, view: EpisodeView) -> tuple[dict[str, Any], dict[str, Any], str]:
        """The schema sent, the schema answers are checked against, and the closing of the episode message."""
        return extraction_schema(event_refs(episode)), CHECK_SCHEMA, CLOSING

    def document(
        self, answer: dict[str, Any], episode: EpisodeInput, view: EpisodeView
    ) -> tuple[dict[str, Any], Counter[str]]:
        """The answer as a document of facts, links and claims for `validate`, and what was dropped on the way."""
        return answer, Counter()

    def run(self, tools: WriterTools, episode: EpisodeInput, usage: Usage) -> StructuredOutcome:
        """Ask, validate, write; LLMError when no valid document came back (then nothing is written)."""
        model_tools = ModelTools(tools, episode)
        view = EpisodeView(model_tools, episode, self.prompt)
        schema, check_schema, closing = self.ask(episode, view)
        messages = [
            {"role": "system", "content": system_prompt(self.prompt, tools)},
            {"role": "user", "content": render_episode(tools, episode, closing)},
        ]
        result = self.client.structured_call(
            schema,
            messages,
            self.budget,
            usage,
            name=SCHEMA_NAME,
            retries=self.retries,
            temperature=self.temperature,
            check_schema=check_schema,
            strict=True,  # every object of the sent schema requires all its properties (`_object`)
        )
        document, dropped = self.document(result.data, episode, view)
        plan = validate(document, view, max_facts=MAX_FACTS)
        plan.dropped.update(dropped)
        outcome = StructuredOutcome(attempts=result.attempts, notes=[*result.failures])
        _Applier(model_tools, plan, outcome, self.mode).apply()
        outcome.dropped.update(plan.dropped)
        outcome.fixed.update(plan.fixed)
        outcome.notes += plan.drop_notes
        return outcome


# -- quote mode: the model picks sentences, it does not write them -----------------------------------
QUOTE_CLOSING = "Answer with the JSON document: the sentences of the new events worth remembering, copied exactly."
MIN_QUOTE_WORDS = 3  # "Thanks so much!" is no candidate
MAX_CANDIDATES = 40  # sentences offered per episode: the grammar of a longer enum costs more than it gives


def quote_candidates(
    episode: EpisodeInput, asked: Mapping[str, str] | None = None, speakers: Mapping[str, str] | None = None
) -> list[tuple[str, str]]:
    """(ref, sentence) of the new events a fact may be: statements of a few words of what the sender wrote
    (not an email's headers, quoted reply or signature: `read_message`), each offered once. What the offline
    writer would not keep either (a question, a pleasantry, thanks, a request of the moment) is not offered.

    `asked` (event id -> the question put to its sender, `questions_put`): a reply whose first word on the
    matter says nothing alone ("Luna and Oliver!") is offered as the offline writer keeps it, with the question
    ('Asked "What are Melanie's pets' names?", I answered: Luna and Oliver.'); courtesy or a name alone is not
    (`is_answer`, with the participants' names of `speakers`, sender_id -> name)."""
    asked = asked or {}
    names = NameBook(speakers or {})
    for event in [*episode.context, *episode.events]:
        names.learn_event(event)
    found: dict[str, str] = {}
    for ref, event in zip(event_refs(episode), episode.events, strict=True):
        question = asked.get(event.id, "")
        for sentence in split_sentences(read_message(event.content).body):
            sentence = " ".join(sentence.split())
            statement, _called = clean_sentence(sentence, names)
            if sentence.endswith("?") or not statement:
                continue
            # Thanks as written too: cleaning leaves "So much." of "Thanks so much!", which reads as an answer.
            courtesy = is_courtesy(sentence, names) or is_courtesy(statement, names)
            if is_informative(statement, names):
                if len(sentence.split()) >= MIN_QUOTE_WORDS:
                    found.setdefault(sentence, ref)
            elif question and not courtesy and is_answer(statement, names, question):
                found.setdefault(answer_statement(question, statement), ref)
            if not courtesy:
                question = ""  # only the reply's first word on the matter answers the question, as offline
    return [(ref, sentence) for sentence, ref in found.items()][:MAX_CANDIDATES]


def quote_schema(sentences: Sequence[str] | None = None) -> dict[str, Any]:
    """`{"facts": [{"sentence": ..., "about": ...}]}`: with `sentences` (the one sent) each is one of them, so a
    grammar-constrained model can only copy what an event says; without, the shape answers are checked against
    (`about` may then be missing)."""
    sentence: dict[str, Any] = {"type": "string"}
    about: dict[str, Any] = {"type": "string"}
    if sentences:
        sentence = {"type": "string", "enum": list(sentences)}
        about["maxLength"] = MAX_ABOUT_CHARS
    item = _object({"sentence": sentence, "about": about})
    if not sentences:
        item["required"].remove("about")
    limit = {"maxItems": min(MAX_FACTS, len(sentences))} if sentences else {}
    return _object({"facts": {"type": "array", "items": item} | limit})


class QuoteExtractor(StructuredExtractor):
    """Quote mode, for models too small to write a fact (SmolLM2-135M copies the prompt's example onto the
    speaker): the model only picks sentences of the new events; each becomes a fact in the third person
    (`validation.attribute`: "I" is the sender) and is judged by the same validation. A fact is then said by
    construction, and a model that picks badly costs precision, never a fabricated fact."""

    mode = "quote"

    def offered(self, episode: EpisodeInput, view: EpisodeView) -> list[tuple[str, str]]:
        """The candidates of `quote_candidates`, short replies read with the questions validation grounds them on."""
        return quote_candidates(episode, view.asked, view.speakers)

    def ask(self, episode: EpisodeInput, view: EpisodeView) -> tuple[dict[str, Any], dict[str, Any], str]:
        offered = self.offered(episode, view)
        listed = "\n".join(f"- {sentence}" for _ref, sentence in offered) or "(none)"
        closing = f"Sentences you may pick:\n{listed}\n\n{QUOTE_CLOSING}"
        return quote_schema([sentence for _ref, sentence in offered] or [""]), quote_schema(), closing

    def document(
        self, answer: dict[str, Any], episode: EpisodeInput, view: EpisodeView
    ) -> tuple[dict[str, Any], Counter[str]]:
        offered = {sentence: ref for ref, sentence in self.offered(episode, view)}
        facts: list[dict[str, Any]] = []
        dropped: Counter[str] = Counter()
        for item in answer.get("facts", []):
            sentence = " ".join(str(item.get("sentence", "")).split())
            if sentence not in offered:
                dropped["fact:not_a_sentence"] += 1  # a server that does not enforce the enum
            elif any(f["text"] == sentence for f in facts):
                dropped["fact:picked_twice"] += 1
            else:
                facts.append(
                    {"text": sentence, "source_ref": offered[sentence], "entities": [], "about": item.get("about", "")}
                )
        return {"facts": facts, "causal_links": [], "identity_claims": []}, dropped


class _Applier:
    """Writes a validated plan with the tool loop's tools; a tool refusing an item drops that item."""

    def __init__(self, model_tools: ModelTools, plan: Plan, outcome: StructuredOutcome, mode: str) -> None:
        self.mode = mode
        self.model_tools = model_tools
        self.conn = model_tools.tools.conn
        self.plan = plan
        self.outcome = outcome
        self.senders: dict[str, str] = {}

    def call(self, name: str, args: dict[str, Any]) -> Any:
        self.outcome.tool_calls += 1
        return self.model_tools.call(name, args)

    def apply(self) -> None:
        written_before = len(self.model_tools.tools.facts_written)
        fact_ids: dict[int, str] = {}
        for fact in self.plan.facts:
            try:
                fact_ids[fact.number] = self.fact(fact)
            except ToolError as exc:
                self.plan.drop("fact", "tool_refused", f"#{fact.number} {fact.text!r}: {exc}")
        self.outcome.facts_kept = len(self.model_tools.tools.facts_written) - written_before  # new, not duplicates
        for link in self.plan.links:
            if link.cause in fact_ids and link.effect in fact_ids and fact_ids[link.cause] != fact_ids[link.effect]:
                args = {"from_fact_id": fact_ids[link.cause], "to_fact_id": fact_ids[link.effect]}
                self.call("insert_causal_link", {**args, "strength": link.strength})
            else:
                self.plan.drop("link", "fact_not_written", f"{link.cause} -> {link.effect}")
        for claim in self.plan.claims:
            try:
                self.claim(claim.event, claim.type, claim.value)
            except ToolError as exc:
                self.plan.drop("claim", "tool_refused", f"{claim.type}={claim.value!r}: {exc}")

    def sender(self, event: Any) -> str:
        """The speaker's own entity: the delivery entity of the handle (as the offline writer uses)."""
        if event.sender_id not in self.senders:
            self.senders[event.sender_id] = identity.register_delivery(self.conn, event)
        return self.senders[event.sender_id]

    def fact(self, fact: PlannedFact) -> str:
        result = self.call(
            "insert_fact",
            {
                "text": fact.text,
                "source_event_id": fact.event.id,
                "as_of": fact.as_of,
                "metadata": {"mode": self.mode},
                **({"about_start": fact.about[0], "about_end": fact.about[1]} if fact.about else {}),
            },
        )
        fact_id: str = result["fact_id"]
        if result["status"] != "inserted":
            return fact_id  # a duplicate already has its links
        for entity in fact.entities:
            if entity.speaker is not None:
                entity_id = self.sender(entity.speaker)
            else:
                entity_id = self.call("create_entity", {"name": entity.name, "type": entity.type})["entity_id"]
            self.call("link_fact_entity", {"fact_id": fact_id, "entity_id": entity_id})
        return fact_id

    def claim(self, event: Any, kind: str, value: str) -> None:
        """A claimed name or contact: an entity and a merge proposal with the handle, for a person to accept."""
        handle_id = self.sender(event)
        claimed_id = self.call("create_entity", {"name": value, "type": CLAIM_ENTITY_TYPE[kind]})["entity_id"]
        if identity.canonical_id(self.conn, claimed_id) == identity.canonical_id(self.conn, handle_id):
            return
        reason = f"{event.sender_id} claimed {kind} {value} in event {event.id} (LLM writer, structured)"
        # A name is the person the handle would merge into; a contact merges into the handle's owner.
        a, b = (claimed_id, handle_id) if kind == "name" else (handle_id, claimed_id)
        self.call(
            "propose_merge", {"entity_a_id": a, "entity_b_id": b, "confidence": CLAIM_CONFIDENCE, "reason": reason}
        )
