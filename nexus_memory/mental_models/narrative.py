"""With an LLM configured, a mental model is a narrative that cites its facts (one validated JSON call).

The model gets the question, the offline structured report and the facts behind it as [f1], [f2], ...;
it answers {"narrative": "...", "cited": ["f1", ...]}. A narrative citing a fact it was not given, or
citing nothing while facts exist, is retried with the reason; a model that still fails leaves the
offline report in place (the failure is logged), so a refresh never ends with no report.

The stored description ends with `<!-- basis: <hash> -->`, the hash of the offline report it was
written from: a refresh whose offline report has not changed makes no call and no version.
"""

from __future__ import annotations

import hashlib
import logging
import re
from typing import TYPE_CHECKING, Any

from nexus_memory.core.config import Settings
from nexus_memory.llm.json_call import JsonCaller, JsonCallError, json_call
from nexus_memory.observations.slots import day_month_year

if TYPE_CHECKING:
    pass

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
    """The writer's LLM as the narrator when one is configured (and not `offline`); else None (no narrative)."""
    return Narrator.from_settings(settings) if settings.llm_enabled and not offline else None


def basis_marker(report_text: str) -> str:
    return f"<!-- basis: {hashlib.sha256(report_text.encode()).hexdigest()[:16]} -->"


class Narrator(JsonCaller):
    """Writes a model's narrative with the writer's LLM (see module docstring)."""

    role = "the mental-model narrator"
    operation = "reflection"

    def __init__(self, base_url: str, model: str, api_key: str = "not-needed", **kwargs: Any) -> None:
        super().__init__(base_url, model, api_key, **kwargs)
        self.prompt_tokens = self.completion_tokens = 0

    def describe(
        self, name: str, question: str, report_text: str, facts: list[dict[str, Any]]
    ) -> tuple[str, list[str]]:
        """(description, cited fact ids): the narrative, or the offline report when the model fails."""
        facts = sorted(facts, key=lambda f: (f["as_of"], f["id"]))[-MAX_FACTS:]
        refs = {f"f{i}": fact for i, fact in enumerate(facts, 1)}
        listing = "\n".join(f"[{ref}] {day_month_year(f['as_of'])}: {f['text']}" for ref, f in refs.items())
        messages = [
            {"role": "system", "content": SYSTEM_PROMPT},
            {
                "role": "user",
                "content": f"Question: {question}\n\nReport:\n{report_text}\n\nFacts:\n{listing or '(none)'}",
            },
        ]
        failures: list[str] = []
        for _attempt in range(self.max_retries + 1):
            try:
                answer = json_call(self.client, self.model, messages, "mental_model", SCHEMA, timeout_s=self.timeout_s)
            except JsonCallError as exc:
                self.prompt_tokens += exc.prompt_tokens
                self.completion_tokens += exc.completion_tokens
                failures.append(exc.reason)
                if exc.fatal:
                    break
                continue
            self.prompt_tokens += answer.prompt_tokens
            self.completion_tokens += answer.completion_tokens
            narrative = answer.value["narrative"].strip()
            cited = sorted({*answer.value["cited"], *_REF.findall(narrative)})
            unknown = [ref for ref in cited if ref not in refs]
            problem = (
                f"it cites facts it was not given: {unknown}"
                if unknown
                else "it cites no fact"
                if refs and not cited
                else ""
            )
            if problem:
                failures.append(problem)
                messages = [*messages[:2], {"role": "user", "content": f"Your answer was invalid: {problem}. Again."}]
                continue
            return _render(name, question, narrative, [refs[r] for r in cited], cited, report_text), [
                refs[r]["id"] for r in cited
            ]
        log.warning("mental model %r: narrative failed (%s); keeping the structured report", name, " | ".join(failures))
        return report_text, []


def _render(
    name: str, question: str, narrative: str, facts: list[dict[str, Any]], refs: list[str], report_text: str
) -> str:
    lines = [f"# {name}", f"Question: {question}", "", narrative, ""]
    if facts:
        lines.append("## Cited facts")
        for ref, fact in zip(refs, facts, strict=True):
            event = f" ({fact['source_event_id']})" if fact.get("source_event_id") else ""
            lines.append(f"- [{ref}] {day_month_year(fact['as_of'])}: {fact['text']}{event}")
    lines.append(basis_marker(report_text))
    return "\n".join(lines) + "\n"
