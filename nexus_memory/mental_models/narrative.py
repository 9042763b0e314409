"""With an LLM configured, a mental model is a narrative that cites its facts (one validated JSON call).

The model gets the question, the offline structured report and the facts behind it as [f1], [f2], ...;
it answers {"narrative": "...", "cited": ["f1", ...]} (`LLMClient.structured_call`: busy servers are
waited out; a server without json_schema gets json_object). A narrative citing a fact it was not given,
citing nothing while facts exist, or with a sentence that the facts it cites (the report and all facts,
for a sentence citing none) do not hold (`facts/grounding.py`, the writer's rule) is retried with the
reason; a model that still fails leaves the offline report in place (the failure is logged), so a
refresh never ends with no report.

The stored description ends with `<!-- basis: <hash> -->`, the hash of the offline report it was
written from: a refresh whose offline report has not changed makes no call and no version.
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import Any

from nexus_memory.core.config import Settings
from nexus_memory.facts.grounding import Source, date_words, sentences
from nexus_memory.llm.client import Budget, LLMClient, LLMError, Usage
from nexus_memory.observations.render import about_of, dated_text

log = logging.getLogger(__name__)

MAX_FACTS = 60  # newest facts given to the model
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "narrative": {"type": "string", "minLength": 1},
        "cited": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["narrative", "cited"],
    "additionalProperties": False,
}
SYSTEM_PROMPT = """You write a mental model: a short report in prose that answers a standing question from memory.
You get the question, a structured report and the facts behind it, numbered [f1], [f2], ...
Write a few paragraphs that answer the question. Keep names, places, numbers and dates. Say how things
changed over time when they did. Cite the facts each statement rests on, as [f3], right after it. Cite only
the numbers given. Answer with JSON: {"narrative": "...", "cited": ["f3", ...]}."""
_REF = re.compile(r"\[(f\d+)\]")


def configured_narrator(settings: Settings, *, offline: bool = False) -> Narrator | None:
    """A narrator on the reflection LLM when one is configured (and not `offline`); else None (no narrative)."""
    if offline or not settings.llm_enabled:
        return None
    return Narrator(LLMClient.for_operation(settings, "reflection"))


def basis_marker(report_text: str) -> str:
    return f"<!-- basis: {hashlib.sha256(report_text.encode()).hexdigest()[:16]} -->"


class Narrator:
    """Writes a model's narrative with the reflection LLM (see module docstring)."""

    def __init__(self, client: LLMClient, *, max_retries: int = 1) -> None:
        self.client = client
        self.max_retries = max_retries
        self.usage = Usage()  # every narrative this narrator asked for

    @property
    def prompt_tokens(self) -> int:
        return self.usage.prompt_tokens

    @property
    def completion_tokens(self) -> int:
        return self.usage.completion_tokens

    def describe(
        self, name: str, question: str, report_text: str, facts: list[dict[str, Any]]
    ) -> tuple[str, list[str]]:
        """(description, cited fact ids): the narrative, or the offline report when the model fails."""
        facts = sorted(facts, key=lambda f: (f["as_of"], f["id"]))[-MAX_FACTS:]
        refs = {f"f{i}": fact for i, fact in enumerate(facts, 1)}
        listing = "\n".join(f"[{ref}] {dated_text(f['text'], f['as_of'], about_of(f))}" for ref, f in refs.items())
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": f"Question: {question}\n\nReport:\n{report_text}\n\nFacts:\n{listing or '(none)'}",
            },
        ]
        # The model's name, its question and its facts' dates are words a narrative may use.
        times = [t for f in facts for t in (f["as_of"], *(about_of(f) or ()))]
        context = [name, question, *(date_words(t) for t in times)]
        try:
            result = self.client.structured_call(
                SCHEMA,
                messages,
                Budget(),
                self.usage,
                name="mental_model",
                retries=self.max_retries,
                check=lambda answer: _judge(answer, refs, report_text, context),
            )
        except LLMError as exc:
            log.warning("mental model %r: narrative failed (%s); keeping the structured report", name, exc.reason)
            return report_text, []
        narrative = result.data["narrative"].strip()
        cited = _citations(result.data, refs)
        description = _render(name, question, narrative, [refs[r] for r in cited], cited, report_text)
        return description, [refs[r]["id"] for r in cited]


def _citations(answer: dict[str, Any], refs: dict[str, dict[str, Any]]) -> list[str]:
    """The refs a narrative cites (its list and its text); ValueError when it cites one it was not given,
    or none while there are facts."""
    cited = sorted({*answer["cited"], *_REF.findall(answer["narrative"])})
    unknown = [ref for ref in cited if ref not in refs]
    if unknown:
        raise ValueError(f"it cites facts it was not given: {unknown}")
    if refs and not cited:
        raise ValueError("it cites no fact")
    return cited


def _judge(answer: dict[str, Any], refs: dict[str, dict[str, Any]], report_text: str, context: list[str]) -> None:
    """ValueError when a narrative cites wrongly (`_citations`) or says what the facts it rests on do not."""
    _citations(answer, refs)
    everything = [report_text, *(fact["text"] for fact in refs.values())]
    for sentence in sentences(answer["narrative"]):
        cited = [refs[ref]["text"] for ref in _REF.findall(sentence) if ref in refs]
        found = Source(cited or everything, context).ground(sentence)
        if not found.grounded:
            raise ValueError(f"{sentence!r} is not in the facts it rests on ({found.why()})")


def _render(
    name: str, question: str, narrative: str, facts: list[dict[str, Any]], refs: list[str], report_text: str
) -> str:
    lines = [f"# {name}", f"Question: {question}", "", narrative, ""]
    if facts:
        lines.append("## Cited facts")
        for ref, fact in zip(refs, facts, strict=True):
            event = f" ({fact['source_event_id']})" if fact.get("source_event_id") else ""
            lines.append(f"- [{ref}] {dated_text(fact['text'], fact['as_of'], about_of(fact))}{event}")
    lines.append(basis_marker(report_text))
    return "\n".join(lines) + "\n"
