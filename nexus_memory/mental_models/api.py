"""Mental models (layer 6): create from a name and a question, pin, refresh, and the emergent ones.

- `create_model(stores, "Caroline's career", "What does Caroline want to do for work?")`: a structural
  model; its entity is taken from `entity` or from the names in the name and question.
- `ensure_emergent(stores, n)`: one model per most-discussed entity (the n entities with the most
  consolidated facts), refreshed after every consolidation.
- `pin_model(stores, id)`: the model is kept and refreshed after every consolidation.
- `refresh_model(stores, id)`: rebuild the report; a new version only when the report changed.
- `refresh_due(stores)`: refresh the stale models whose refresh_trigger asks for it.
- `after_consolidation(stores, n)`: the three steps that follow a consolidation run.
Every change rewrites the model's dossier; given an `embedder`, new versions also get their vector
(otherwise the mental_models asset embeds them); given a `narrator` (the writer's LLM), the report is
a narrative citing its facts (narrative.py), else the offline structured report.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from nexus_memory.core import db
from nexus_memory.core.stores import Stores
from nexus_memory.mental_models import store
from nexus_memory.mental_models.dossiers import sync_dossiers, write_dossier
from nexus_memory.mental_models.narrative import Narrator, basis_marker
from nexus_memory.mental_models.report import Report, build_report
from nexus_memory.mental_models.store import Model
from nexus_memory.observations import store as observations
from nexus_memory.observations.subjects import NOT_SUBJECTS, load_entities


class ModelError(ValueError):
    """A mental-model request that cannot be done as asked (unknown model or entity, empty name)."""


def create_model(
    stores: Stores,
    name: str,
    question: str = "",
    *,
    entity: str | None = None,
    tags: Sequence[str] = (),
    pinned: bool = False,
    refresh_after_consolidation: bool | None = None,
    embedder: Any = None,
    narrator: Narrator | None = None,
) -> Model:
    """Create (or return, when it exists) the model for a name and a question; see module docstring."""
    name, question = " ".join(str(name).split()), " ".join(str(question).split())
    if not name:
        raise ModelError("a mental model needs a name")
    question = question or f"What do we know about {name}?"
    entity_id = _entity_for(stores.conn, name, question, entity)
    subtype = "pinned" if pinned else "structural"
    auto = pinned if refresh_after_consolidation is None else refresh_after_consolidation
    return _create(
        stores,
        name,
        question,
        entity_id,
        subtype,
        list(tags),
        auto,
        by_relevance=True,
        embedder=embedder,
        narrator=narrator,
    )


def _create(
    stores: Stores,
    name: str,
    question: str,
    entity_id: str | None,
    subtype: str,
    tags: list[str],
    auto_refresh: bool,
    *,
    by_relevance: bool,
    embedder: Any,
    narrator: Narrator | None = None,
) -> Model:
    root_id = store.root_id_for(name, question, entity_id)
    existing = store.current(stores.conn, root_id)
    if existing is not None:
        return existing
    report = build_report(stores, name, question, entity_id, by_relevance=by_relevance, embedder=embedder)
    description, sources = _description(stores, name, question, report, narrator)
    with stores.transaction():
        store.insert_version(
            stores.conn,
            root_id=root_id,
            parent=None,
            name=name,
            question=question,
            description=description,
            subtype=subtype,
            entity_id=entity_id,
            tags=[str(t).strip() for t in tags if str(t).strip()],
            refresh_trigger={"refresh_after_consolidation": auto_refresh},
            sources=sources,
        )
    _embed(stores, embedder)
    model = _require(stores, root_id)
    write_dossier(stores, model)
    return model


def _description(
    stores: Stores, name: str, question: str, report: Report, narrator: Narrator | None
) -> tuple[str, list[tuple[str, str]]]:
    """The stored text and sources: the offline report, or with a narrator its narrative and cited facts."""
    if narrator is None:
        return report.text, report.sources
    facts = list(observations.fact_rows(stores.conn, report.fact_ids).values())
    text, cited = narrator.describe(name, question, report.text, facts)
    return text, [*report.sources, *(("fact", f) for f in cited)]


def _embed(stores: Stores, embedder: Any) -> None:
    """Vectors for new model versions, so recall(scope=mental_models) finds them (skipped without a model)."""
    if embedder is not None:
        from nexus_memory.embeddings.step import embed_pending

        embed_pending(stores, embedder, target_types=("mental_model",))


def _entity_for(conn: db.Connection, name: str, question: str, entity: str | None) -> str | None:
    """The entity a model is about: the one given (must exist), else the first one its name and question name."""
    from nexus_memory.recall.engine import resolve_entity
    from nexus_memory.recall.query_entities import match_query_entities

    if entity:
        found = resolve_entity(conn, entity)
        if not found:
            raise ModelError(f"no entity named {entity!r}")
        return found[0]
    named = match_query_entities(conn, f"{name}. {question}")  # exact names first, then first-name matches
    infos = load_entities(conn, named)
    return next((e for e in named if e in infos and infos[e].type not in NOT_SUBJECTS), None)


def _require(stores: Stores, root_or_id: str) -> Model:
    model = store.current(stores.conn, root_or_id)
    if model is None:
        raise ModelError(f"no mental model {root_or_id!r}")
    return model


def get_model(stores: Stores, root_or_id: str) -> Model:
    """The current version of a model (by its root id or any version id)."""
    return _require(stores, root_or_id)


def list_models(stores: Stores) -> list[Model]:
    return store.list_current(stores.conn)


def refresh_model(
    stores: Stores, root_or_id: str, *, embedder: Any = None, narrator: Narrator | None = None
) -> tuple[Model, bool]:
    """Rebuild a model's report; (model, whether a new version was made)."""
    model = _require(stores, root_or_id)
    report = build_report(
        stores,
        model.name,
        model.question,
        model.entity_id,
        by_relevance=model.subtype != "emergent",
        embedder=embedder,
    )
    if narrator is not None and basis_marker(report.text) in model.description:
        description, sources, changed = model.description, model.sources, False  # same basis: no call
    else:
        description, sources = _description(stores, model.name, model.question, report, narrator)
        changed = description != model.description or set(sources) != set(model.sources)
    with stores.transaction():
        if changed:
            store.insert_version(
                stores.conn,
                root_id=model.root_id,
                parent=model,
                name=model.name,
                question=model.question,
                description=description,
                subtype=model.subtype,
                entity_id=model.entity_id,
                tags=model.tags,
                refresh_trigger=model.refresh_trigger,
                sources=sources,
            )
        else:
            store.mark_fresh(stores.conn, model.id)
    _embed(stores, embedder)
    fresh = _require(stores, model.root_id)
    write_dossier(stores, fresh)
    return fresh, changed


def pin_model(stores: Stores, root_or_id: str) -> Model:
    """Pin a model: it is refreshed after every consolidation from now on."""
    model = _require(stores, root_or_id)
    with stores.transaction():
        store.set_pinned(stores.conn, model.id)
    pinned = _require(stores, model.root_id)
    write_dossier(stores, pinned)
    return pinned


def most_discussed(conn: db.Connection, n: int) -> list[str]:
    """The n entities with the most facts in current observations (ties: more observations, then id)."""
    if n <= 0:
        return []
    rows = conn.execute(
        f"""SELECT r.entity_id, count(o.fact_id) AS facts, count(DISTINCT r.id) AS obs
            FROM analysis_runs r JOIN observation_facts o ON o.analysis_run_id = r.id
            JOIN entities e ON e.id = r.entity_id AND e.merged_into IS NULL
            WHERE {observations.CURRENT_SQL} GROUP BY r.entity_id ORDER BY facts DESC, obs DESC, r.entity_id LIMIT ?""",
        (n,),
    ).fetchall()
    return [r[0] for r in rows]


def ensure_emergent(stores: Stores, n: int, *, embedder: Any = None, narrator: Narrator | None = None) -> list[Model]:
    """An emergent model for each of the n most-discussed entities that has none yet; returns new ones."""
    created: list[Model] = []
    entity_ids = most_discussed(stores.conn, n)
    infos = load_entities(stores.conn, entity_ids)
    for entity_id in entity_ids:
        info = infos.get(entity_id)
        if info is None:
            continue
        question = f"Who is {info.display}, and what do we know about them?"
        if store.current(stores.conn, store.root_id_for(info.display, question, entity_id)) is not None:
            continue
        model = _create(
            stores,
            info.display,
            question,
            entity_id,
            "emergent",
            [],
            True,
            by_relevance=False,
            embedder=embedder,
            narrator=narrator,
        )
        created.append(model)
    return created


def refresh_due(stores: Stores, *, embedder: Any = None, narrator: Narrator | None = None) -> list[str]:
    """Refresh every stale model whose refresh_trigger asks for it; returns the ids refreshed."""
    done = []
    for model in store.due(stores.conn):
        refresh_model(stores, model.root_id, embedder=embedder, narrator=narrator)
        done.append(model.root_id)
    return done


def after_consolidation(
    stores: Stores, emergent: int, *, refresh: bool = True, embedder: Any = None, narrator: Narrator | None = None
) -> dict[str, Any]:
    """What follows a consolidation: new emergent models, due refreshes (unless a scheduler does them),
    dossiers brought up to date (stale banners included)."""
    created = ensure_emergent(stores, emergent, embedder=embedder, narrator=narrator)
    refreshed = refresh_due(stores, embedder=embedder, narrator=narrator) if refresh else []
    return {
        "models_created": [m.root_id for m in created],
        "models_refreshed": refreshed,
        "dossiers_written": sync_dossiers(stores),
    }


def models_to_materialize(stores: Stores, materialized: Sequence[str]) -> list[str]:
    """Root ids of current models that are due (stale, refresh after consolidation) or never materialised
    (by the scheduler that refreshes them: Dagster's mental_models partitions)."""
    done = set(materialized)
    due = {m.root_id for m in store.due(stores.conn)}
    return sorted({m.root_id for m in store.list_current(stores.conn) if m.root_id not in done} | due)
