"""What a consolidator decides for one fact, and how a decision changes the in-memory view.

Both consolidators (offline rules, LLM) answer a fact with a `Plan`: a list of actions (create an
observation, update one, delete one), or none with the reason the fact stands alone. The run applies
plans to the view here and writes changed observations to the store at the end of each chunk.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nexus_memory.observations import store
from nexus_memory.observations.view import EntityView, FactInput, add_member


@dataclass
class Action:
    """One change to the observations of the fact's subject.

    create: a new observation of the fact (plus `with_facts`, related facts it gathers);
    update: the fact joins `observation` (an LLM may also give its new `text`);
    delete: `observation` is retired (its facts stay consolidated).
    `text` None means the offline renderer writes it from the facts.
    """

    kind: str  # 'create' | 'update' | 'delete'
    observation: store.ObservationState | None = None
    text: str | None = None
    topic: str | None = None
    with_facts: tuple[str, ...] = ()
    reason: str = ""


@dataclass
class Plan:
    """A consolidator's answer for one fact."""

    actions: list[Action] = field(default_factory=list)
    isolated: str = ""  # why no observation takes the fact (when `actions` is empty)
    prompt_tokens: int = 0
    completion_tokens: int = 0


class ConsolidationFailed(Exception):
    """A fact could not be consolidated this time (bad LLM output after retries, API failure)."""

    def __init__(self, reason: str, prompt_tokens: int = 0, completion_tokens: int = 0) -> None:
        super().__init__(reason)
        self.reason = reason
        self.prompt_tokens = prompt_tokens
        self.completion_tokens = completion_tokens


def apply(view: EntityView, fact: FactInput, plan: Plan) -> list[store.ObservationState]:
    """Apply a plan to the view; returns the observations it changed."""
    changed: list[store.ObservationState] = []
    for action in plan.actions:
        if action.kind == "create":
            changed.append(_create(view, fact, action))
        elif action.kind == "update" and action.observation is not None:
            state = action.observation
            if fact.id not in state.facts:
                add_member(view, state, fact)
            if action.text is not None:
                state.text, state.authored = action.text, True
            state.dirty = True
            changed.append(state)
        elif action.kind == "delete" and action.observation is not None:
            state = action.observation
            state.retired = f"deleted: {action.reason}" if action.reason else "deleted"
            state.dirty = True
            changed.append(state)
    return changed


def _create(view: EntityView, fact: FactInput, action: Action) -> store.ObservationState:
    members = [fact] + [view.pool[i] for i in action.with_facts if i in view.pool and i != fact.id]
    first = min(members, key=lambda f: (f.as_of, f.id))
    state = store.ObservationState(
        root_id=store.new_root_id(view.entity.id, first.id),
        entity_id=view.entity.id,
        topic=action.topic or "",
        facts={},
        text=action.text or "",
        authored=action.text is not None,
        dirty=True,
    )
    for member in members:
        add_member(view, state, member)
    view.observations.append(state)
    return state
