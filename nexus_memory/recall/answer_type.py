"""A re-rank of what recall has already found by what the question asks for: a date, or things by name.

The **answer_type** list holds the best fused facts (the top ANSWER_TYPE_CANDIDATES of every list so far,
in fused order) that carry the kind of answer the question wants:

- a when-question ("When did Gina launch an ad campaign?", "What year ...") wants a date: the facts
  with a time they are about (`about_start`, the date the writer resolved in the text);
- a question after several things ("What video games does Nate play?", "Which cities has John been
  to?", "... both ...", "How many times ...") wants them named: the facts linked to an entity that is
  neither a date, nor a person's handle, nor one the question names itself ("Nate").

The facts that hold the answer then get a vote in RRF beside the ones that only share the question's
topic ("Playing video games is Nate's escape"). Other questions get no list. It costs one fusion of the
lists and one query over at most ANSWER_TYPE_CANDIDATES ids. Its weight (fusion.STRATEGY_WEIGHTS) was
chosen by leave-one-conversation-out on LoCoMo dev (docs/recall.md, Hard questions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from nexus_memory.core import db
from nexus_memory.recall.fusion import Ranked, fuse_strategies, split_key
from nexus_memory.recall.prompt import Prompt

ANSWER_TYPE_CANDIDATES = 100  # fused facts looked at: the answer is nearly always among them (R@50 ~0.89)
WANTS_DATE = re.compile(r"^\W*when\b|\bwhat\s+(?:year|month|day|date)\b", re.IGNORECASE)
_AUXILIARY = r"(?:is|are|was|were|do|does|did|has|have|had)"
# "What/Which <up to two words> <plural noun>", "both", "times": the question lists several things. The -s word
# may be the auxiliary after a singular noun ("What book is …", "What advice does …": 67 dev questions), which
# asks for a thing by name too; leave-one-conversation-out measured the list with those in.
WANTS_THINGS = re.compile(
    rf"^\W*(?:what|which)\s+(?!{_AUXILIARY}\b)(?:\w+\s+){{0,2}}?\w+s\b|\b(?:both|times)\b", re.IGNORECASE
)
# A person's contact points name who said it, not what was said (identity/handles.handle_type).
_NOT_A_THING = "n.type IN ('date', 'email', 'phone') OR n.type LIKE '%\\_handle' ESCAPE '\\'"


def asks_for(question: str) -> str | None:
    """'date', 'things', or None: the kind of answer `question` asks for, as far as its words say."""
    if WANTS_DATE.search(question):
        return "date"
    if WANTS_THINGS.search(question):
        return "things"
    return None


def add_answer_type_list(conn: db.Connection, prompt: Prompt, lists: dict[str, list[Ranked]]) -> None:
    """Append to lists["answer_type"] the fused facts carrying the answer the question asks for, if it asks
    for a date or for things."""
    wanted = asks_for(prompt.text)
    if wanted is None:
        return
    fused = [(key, score) for key, score in fuse_strategies(lists) if key.startswith("fact:")]
    candidates = fused[:ANSWER_TYPE_CANDIDATES]
    if candidates:
        lists["answer_type"].append(answer_type_list(conn, candidates, wanted, prompt.entities))


def answer_type_list(conn: db.Connection, candidates: Ranked, wanted: str, named: Sequence[str]) -> Ranked:
    """The facts of `candidates`, in their order, that carry a date (`wanted` 'date') or name a thing other
    than the entities in `named` ('things')."""
    ids = [split_key(key)[1] for key, _ in candidates]
    if wanted == "date":
        sql = f"SELECT id FROM facts WHERE id IN ({db.placeholders(ids)}) AND about_start IS NOT NULL"
        args: list[str] = ids
    else:
        # Without a name in the question, every thing counts (`NOT IN (NULL)` would drop them all).
        others = f"AND coalesce(n.merged_into, n.id) NOT IN ({db.placeholders(named)})" if named else ""
        sql = f"""SELECT DISTINCT fe.fact_id FROM fact_entities fe JOIN entities n ON n.id = fe.entity_id
                  WHERE fe.fact_id IN ({db.placeholders(ids)}) AND NOT ({_NOT_A_THING}) {others}"""
        args = [*ids, *named]
    carrying = {r[0] for r in conn.execute(sql, args)}
    return [(key, score) for key, score in candidates if split_key(key)[1] in carrying]
