"""Both ways a forget takes a fact's terms out of the keyword indexes (FTS5 secure-delete per document, or one
rewrite of the index for a large forget; lifecycle/forget/facts.py) leave no byte of the forgotten text, keep
secure-delete on afterwards, and keep the index answering for what stays."""

from __future__ import annotations

import pytest
from lifecycle_world import files_holding
from test_forget import TARGETS, world  # noqa: F401 (the fixture)

from nexus_memory.core.stores import Stores
from nexus_memory.lifecycle.forget import Target, forget
from nexus_memory.lifecycle.forget import facts as forget_facts

WAYS = {"per_document": 10**-9, "rewrite": 10**9}  # BULK_RATIO that never / always rewrites


def _matches(stores: Stores, table: str, word: str) -> int:
    return stores.conn.execute(f"SELECT count(*) FROM {table} WHERE {table} MATCH ?", (word,)).fetchone()[0]


@pytest.mark.parametrize("way", sorted(WAYS))
@pytest.mark.parametrize("kind", sorted(TARGETS))
def test_either_way_leaves_no_trace_and_the_index_answers(
    world: Stores,  # noqa: F811
    kind: str,
    way: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(forget_facts, "BULK_RATIO", WAYS[way])
    value_of, marker = TARGETS[kind]
    lisbon = {table: _matches(world, table, "Lisbon") for table in forget_facts.KEYWORD_INDEXES}
    assert all(lisbon.values()) and _matches(world, "facts_fts", marker)

    result = forget(world, Target(kind, value_of(world)), requested_by="test")

    assert result.status == "scrubbed", result.scrub
    assert files_holding(world.data_dir, marker) == []
    for table in forget_facts.KEYWORD_INDEXES:
        assert _matches(world, table, marker) == 0
        assert _matches(world, table, "Lisbon") == lisbon[table]
        setting = world.conn.execute(f"SELECT v FROM {table}_config WHERE k = 'secure-delete'").fetchone()
        assert setting is not None and setting[0] == 1, (table, setting)
