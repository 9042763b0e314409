"""The LLM consolidator: one schema-constrained JSON call per fact (the observation analysis of docs/layers.md).

The model sees the new fact (with its date and subject), the subject's related observations (o1, o2, ...)
and related unassigned facts (f1, f2, ...), and answers {"actions": [...]}: create, update or delete,
each with a reason. An answer that is not valid JSON, breaks the schema, names an observation or fact
it was not shown, or writes a sentence that the facts and observations it was shown do not hold
(`facts/grounding.py`, the writer's rule) is retried (the model is told what was wrong), up to
`max_retries` times; then the fact fails with one line saying why, and nothing of it is written. A fact
with nothing related is isolated without a call, as is small talk. The call is
`LLMClient.structured_call` (busy servers are waited out; a server without json_schema gets json_object).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from nexus_memory.core.config import Settings
from nexus_memory.core.ids import day_month_year_of
from nexus_memory.facts.grounding import Source, date_words, ungrounded
from nexus_memory.llm.client import Budget, LLMClient, LLMError, Usage
from nexus_memory.observations.actions import Action, ConsolidationFailed, Plan
from nexus_memory.observations.duplicates import similar
from nexus_memory.observations.render import with_about
from nexus_memory.observations.store import ObservationState
from nexus_memory.observations.view import EntityView, FactInput

RELATED_OBSERVATION_SIM = 0.45  # centroid cosine for an observation to be shown
RELATED_FACT_SIM = 0.55  # cosine for an unassigned fact to be shown
SHOWN = 5  # observations and facts shown, each
MAX_TEXT = 4_000  # characters of one observation
# The temporal markers the prompt asks for ("used to X until May 2023; since June 2023 Y") say no new fact.
TEMPORAL_WORDS = "used formerly previously since until now currently"

SYSTEM_PROMPT = """You maintain observations: durable knowledge about one person or thing, synthesised from facts.
You get one new fact, the existing observations about its subject (o1, o2, ...) and related earlier facts
(f1, f2, ...). Answer with JSON: {"actions": [...]}, each action one of
  {"action": "create", "topic": "...", "text": "...", "fact_refs": ["f1"], "reason": "..."}
  {"action": "update", "observation": "o1", "text": "<the whole new text>", "reason": "..."}
  {"action": "delete", "observation": "o2", "reason": "..."}
Rules:
- Keep DURABLE KNOWLEDGE, not ephemeral state: "User moved to Room 203" -> "Room 203 exists", not "User is in Room 203".
- Keep the specifics: names, places, numbers, dates.
- A contradiction gets temporal markers worked out from the dates: "used to X until May 2023; since June 2023 Y".
- Never merge facts about different people, or unrelated topics, into one observation.
- Prefer updating an existing observation to creating a new one; create only for a new topic.
- Be conservative with deletes: only an observation that is wrong or entirely superseded.
- An update's text replaces the old text: keep what still holds.
- Answer {"actions": []} when the fact holds no durable knowledge or belongs nowhere."""

ACTIONS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "actions": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": ["create", "update", "delete"]},
                    "observation": {"type": "string"},
                    "topic": {"type": "string"},
                    "text": {"type": "string"},
                    "fact_refs": {"type": "array", "items": {"type": "string"}},
                    "reason": {"type": "string", "minLength": 1},
                },
                "required": ["action", "reason"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["actions"],
    "additionalProperties": False,
}


class InvalidAnswer(ValueError):
    """A schema-valid answer that still cannot be applied (unknown ref, missing text, ...)."""


@dataclass
class _Shown:
    observations: dict[str, ObservationState]
    facts: dict[str, FactInput]


class LLMConsolidator:
    """Consolidates each fact with one validated JSON call (see module docstring)."""

    def __init__(self, client: LLMClient, *, max_retries: int = 2, max_tokens: int = 1024) -> None:
        self.client = client
        self.name = f"llm:{client.model}"
        self.max_retries = max_retries
        self.budget = Budget(max_tokens)

    @classmethod
    def from_settings(cls, settings: Settings, **kwargs: Any) -> LLMConsolidator:
        """The consolidator on the consolidation LLM (`LLMClient.for_operation`)."""
        return cls(LLMClient.for_operation(settings, "consolidation"), **kwargs)

    def plan(self, fact: FactInput, view: EntityView) -> Plan:
        if not fact.durable:
            return Plan(isolated="no durable content")
        shown = related(fact, view)
        if not shown.observations and not shown.facts:
            return Plan(isolated="nothing related")
        source = grounding_source(fact, view, shown)
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": render_input(fact, view, shown)},
        ]
        usage = Usage()
        try:
            result = self.client.structured_call(
                ACTIONS_SCHEMA,
                messages,
                self.budget,
                usage,
                name="observation_actions",
                retries=self.max_retries,
                check=lambda value: to_actions(value, shown, view, source),
            )
        except LLMError as exc:
            failure = f"{self.name} gave up: {exc.reason}"
            raise ConsolidationFailed(failure, usage.prompt_tokens, usage.completion_tokens) from exc
        actions = to_actions(result.data, shown, view, source)
        isolated = "model found nothing to keep" if not actions else ""
        return Plan(actions, isolated, usage.prompt_tokens, usage.completion_tokens)


def related(fact: FactInput, view: EntityView) -> _Shown:
    """The subject's observations and unassigned facts most similar to the fact (same attribute first)."""
    observations: list[tuple[float, ObservationState]] = []
    for state in view.live():
        same = fact.slot is not None and any(m.slot and m.slot.ident == fact.slot.ident for m in state.facts.values())
        centroid = state.centroid()
        sim = float(np.dot(centroid, fact.vector)) if centroid is not None and fact.vector is not None else 0.0
        if same or sim >= RELATED_OBSERVATION_SIM:
            observations.append((2.0 if same else sim, state))
    facts: list[tuple[float, FactInput]] = []
    for other in view.pool.values():
        if other.id != fact.id and other.vector is not None and fact.vector is not None:
            sim = float(np.dot(other.vector, fact.vector))
            if sim >= RELATED_FACT_SIM:
                facts.append((sim, other))
    top_obs = sorted(observations, key=lambda x: (-x[0], x[1].root_id))[:SHOWN]
    top_facts = sorted(facts, key=lambda x: (-x[0], x[1].id))[:SHOWN]
    return _Shown(
        {f"o{i}": s for i, (_, s) in enumerate(top_obs, 1)}, {f"f{i}": f for i, (_, f) in enumerate(top_facts, 1)}
    )


def grounding_source(fact: FactInput, view: EntityView, shown: _Shown) -> Source:
    """What an observation may say: the new fact, the facts and observations shown (with their facts); their
    subject, dates and the temporal markers are words it may use."""
    texts, times = [fact.text], [fact.as_of, *(fact.about or ())]
    for other in shown.facts.values():
        texts.append(other.text)
        times += [other.as_of, *(other.about or ())]
    for state in shown.observations.values():
        texts += [state.text, *(member.text for member in state.facts.values())]
        times += [t for member in state.facts.values() for t in (member.as_of, *(member.about or ()))]
    return Source(texts, [view.entity.display, TEMPORAL_WORDS, *(date_words(t) for t in times)])


def render_input(fact: FactInput, view: EntityView, shown: _Shown) -> str:
    lines = [
        f"Subject: {view.entity.display} ({view.entity.type}, id {view.entity.id})",
        f"New fact ({day_month_year_of(fact.as_of)}): {with_about(fact.text, fact.about)}",
        "",
        "Existing observations about the subject:",
    ]
    lines += [f"[{ref}] {state.text}" for ref, state in shown.observations.items()] or ["(none)"]
    lines += ["", "Related earlier facts not in any observation:"]
    lines += [
        f"[{ref}] ({day_month_year_of(f.as_of)}) {with_about(f.text, f.about)}" for ref, f in shown.facts.items()
    ] or ["(none)"]
    return "\n".join(lines)


def to_actions(value: dict[str, Any], shown: _Shown, view: EntityView, source: Source) -> list[Action]:
    """Schema-valid JSON -> actions, or InvalidAnswer naming what cannot be applied (or is not in `source`)."""
    actions: list[Action] = []
    used: set[str] = set()
    for i, item in enumerate(value["actions"], 1):
        kind, reason = item["action"], item["reason"].strip()
        text = (item.get("text") or "").strip()
        if kind in ("create", "update") and not text:
            raise InvalidAnswer(f"action {i} ({kind}) needs a non-empty text")
        if len(text) > MAX_TEXT:
            raise InvalidAnswer(f"action {i} text is longer than {MAX_TEXT} characters")
        if kind in ("create", "update") and (unsaid := ungrounded(text, source)):
            sentence, found = unsaid[0]
            raise InvalidAnswer(f"action {i} says what the facts shown do not: {sentence!r} ({found.why()})")
        if kind == "create":
            refs = item.get("fact_refs") or []
            unknown = [r for r in refs if r not in shown.facts]
            if unknown:
                raise InvalidAnswer(f"action {i} names facts it was not shown: {unknown}")
            duplicate = _near_duplicate(text, view)
            if duplicate is not None:  # an update of that one, not a second copy
                actions.append(Action("update", duplicate, text=text, reason=reason))
                continue
            topic = (item.get("topic") or "").strip()[:80] or None
            with_facts = tuple(shown.facts[r].id for r in refs)
            actions.append(Action("create", text=text, topic=topic, with_facts=with_facts, reason=reason))
            continue
        ref = item.get("observation") or ""
        if ref not in shown.observations:
            raise InvalidAnswer(
                f"action {i} ({kind}) names observation {ref!r}; it must be one of {list(shown.observations)}"
            )
        if ref in used:
            raise InvalidAnswer(f"observation {ref} appears in two actions")
        used.add(ref)
        actions.append(Action(kind, shown.observations[ref], text=text if kind == "update" else None, reason=reason))
    return actions


def _near_duplicate(text: str, view: EntityView) -> ObservationState | None:
    for state in view.live():
        if similar(text, set(), state.text, set()):
            return state
    return None
