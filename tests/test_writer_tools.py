"""The writer's tools one by one, dedup, and the per-episode runner (failure, rerun, idempotence)."""

from __future__ import annotations

import pytest

from nexus_memory.core.stores import Stores
from nexus_memory.episodes.grouping import build_episodes
from nexus_memory.events.ledger import RawRecord, ingest
from nexus_memory.facts import state
from nexus_memory.pipeline.layers import EPISODES_PER_COMMIT, _episodes_per_commit, run_layer
from nexus_memory.writer.base import EpisodeInput, WriteResult
from nexus_memory.writer.run import pending_episodes, process_partition
from nexus_memory.writer.tools import ToolError, WriterTools

T0 = 1_714_557_600


SENTENCES = [
    "Ann adopted a dog named Rex",
    "The bakery on Main Street closed in March",
    "Bob is training for the Berlin marathon",
]


def _ingest(stores: Stores, n: int = 3, thread: str = "t1", start: int = 0) -> None:
    ingest(
        stores,
        [
            RawRecord(
                "t",
                i,
                {
                    "id": f"{thread}-{i}",
                    "platform": "chat",
                    "sender_id": "ann",
                    "content": SENTENCES[i],
                    "as_of": T0 + start + i * 60,
                    "thread_id": thread,
                },
                "",
            )
            for i in range(n)
        ],
    )


def test_insert_fact_links_provenance_and_skips_near_duplicates(stores: Stores) -> None:
    _ingest(stores, 1)
    tools = WriterTools(stores, "run1")
    first = tools.insert_fact("Ann adopted a dog named Rex.", T0 * 1000, source_event_id="chat:t1-0")
    assert first["status"] == "inserted"
    row = stores.conn.execute("SELECT platform, thread_id, ingested_at FROM facts").fetchone()
    assert (row[0], row[1], row[2]) == ("chat", "t1", T0 * 1000)
    dup = tools.insert_fact("Ann adopted a dog named Rex", T0 * 1000 + 3600_000)
    assert dup == {"fact_id": first["fact_id"], "status": "duplicate"}
    later = tools.insert_fact("Ann adopted a dog named Rex", T0 * 1000 + 5 * 86400_000)
    assert later["status"] == "inserted"  # same words, another week: a new fact


def test_a_rerun_does_not_bring_back_a_fact_a_person_corrected(stores: Stores) -> None:
    tools = WriterTools(stores, "run1")
    first = tools.insert_fact("Ann adopted a dog named Rex", T0 * 1000)
    state.hide(stores.conn, [first["fact_id"]], "corrected", T0 * 1000)
    again = WriterTools(stores, "run2").insert_fact("Ann adopted a dog named Rex", T0 * 1000)
    assert again == {"fact_id": first["fact_id"], "status": "duplicate"}  # hidden facts count for the writer


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"text": "", "as_of": 1}, "non-empty"),
        ({"text": "x", "as_of": "yesterday"}, "unix milliseconds"),
        ({"text": "x", "as_of": 1, "source_event_id": "nope"}, "unknown source_event_id"),
    ],
)
def test_insert_fact_rejects_bad_arguments(stores: Stores, kwargs: dict, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        WriterTools(stores, "run1").insert_fact(**kwargs)


def test_entities_links_cooccurrence_and_causal_links(stores: Stores) -> None:
    tools = WriterTools(stores, "run1")
    fact = tools.insert_fact("Ann moved to Lisbon because of her job at Acme", T0 * 1000)["fact_id"]
    cause = tools.insert_fact("Ann got a job at Acme", T0 * 1000)["fact_id"]
    ann = tools.create_entity("Ann", "person")["entity_id"]
    assert tools.create_entity("ann", "person") == {"entity_id": ann, "status": "existing"}
    acme = tools.create_entity("Acme", "organization")["entity_id"]
    tools.link_fact_entity(fact, ann)
    tools.link_fact_entity(fact, acme)
    assert tools.link_fact_entity(fact, acme)["status"] == "already_linked"
    pair = stores.conn.execute("SELECT count FROM entity_cooccurrences").fetchall()
    assert [r[0] for r in pair] == [1]
    tools.insert_causal_link(cause, fact, 0.8)
    assert stores.conn.execute("SELECT strength FROM causal_links").fetchone()[0] == 0.8
    with pytest.raises(ToolError):
        tools.insert_causal_link(cause, fact, 1.5)
    with pytest.raises(ToolError):
        tools.link_fact_entity(fact, "missing-entity")


def test_linking_several_entities_at_once_counts_as_linking_them_one_by_one(stores: Stores) -> None:
    def tables() -> tuple[list[tuple], list[tuple], list[tuple]]:
        links = stores.conn.execute(
            "SELECT f.text, e.name FROM fact_entities fe JOIN facts f ON f.id = fe.fact_id "
            "JOIN entities e ON e.id = fe.entity_id ORDER BY 1, 2"
        ).fetchall()
        pairs = stores.conn.execute(
            "SELECT a.name, b.name, c.count, c.last_seen FROM entity_cooccurrences c"
            " JOIN entities a ON a.id = c.entity_a JOIN entities b ON b.id = c.entity_b"
        ).fetchall()
        mentions = stores.conn.execute("SELECT name, mention_count, last_seen FROM entities ORDER BY name").fetchall()
        return (
            [tuple(r) for r in links],
            sorted(tuple(sorted(r[:2])) + tuple(r[2:]) for r in pairs),
            [tuple(r) for r in mentions],
        )

    results, counted = [], []
    for batched in (False, True):
        stores.conn.execute("DELETE FROM entity_cooccurrences")
        stores.conn.execute("DELETE FROM fact_entities")
        stores.conn.execute("DELETE FROM facts")
        stores.conn.execute("DELETE FROM entities")
        tools = WriterTools(stores, "run1")
        ann, acme, bob = (
            tools.create_entity(n, t)["entity_id"]
            for n, t in (("Ann", "person"), ("Acme", "organization"), ("Bob", "person"))
        )
        first = tools.insert_fact("Ann and Bob work at Acme", T0 * 1000)["fact_id"]
        second = tools.insert_fact("Bob met Ann in Lisbon", T0 * 1000 + 5)["fact_id"]
        tools.link_fact_entity(second, bob)  # a link there before
        plan = [(first, [ann, acme, ann, bob]), (second, [ann, bob, acme])]
        if batched:
            out = [r for fact, ids in plan for r in tools.link_fact_entities(fact, ids)]
        else:
            out = [tools.link_fact_entity(fact, e) for fact, ids in plan for e in ids]
        results.append([r["status"] for r in out])
        counted.append((tables(), dict(tools.entity_mentions)))
    assert (
        results[0]
        == results[1]
        == ["linked", "linked", "already_linked", "linked", "linked", "already_linked", "linked"]
    )
    (one_by_one, mentions_1), (at_once, mentions_2) = counted
    assert [list(t) for t in one_by_one] == [list(t) for t in at_once]
    assert sorted(mentions_1.values()) == sorted(mentions_2.values()) == [2, 2, 2]
    assert [r[2] for r in one_by_one[1]] == [2, 2, 2]  # each pair is on both facts


def test_propose_merge_tool_validates(stores: Stores) -> None:
    tools = WriterTools(stores, "run1")
    a = tools.create_entity("Ann", "person")["entity_id"]
    b = tools.create_entity("ann@example.com", "email")["entity_id"]
    assert tools.propose_merge(a, b, 0.8, "she said so")["status"] == "pending"
    with pytest.raises(ToolError):
        tools.propose_merge(a, "nobody", 0.8, "x")


class ScriptedWriter:
    """A writer double that writes one fact per event, and fails on events whose content says so."""

    name = "scripted"

    def write(self, tools: WriterTools, episode: EpisodeInput) -> WriteResult:
        for event in episode.events:
            tools.insert_fact(f"{event.content} (fact)", event.as_of, source_event_id=event.id)
            if "FAIL" in event.content:
                raise RuntimeError("model returned garbage")
        return WriteResult(prompt_tokens=10, completion_tokens=5)


def _ingest_failing(stores: Stores, as_of: int) -> None:
    """One message of Bob's in thread 'bad' that ScriptedWriter fails on."""
    record = {"id": "bad-0", "platform": "chat", "sender_id": "bob", "content": "please FAIL here", "as_of": as_of}
    ingest(stores, [RawRecord("t", 9, {**record, "thread_id": "bad"}, "")])


def test_failed_episode_keeps_nothing_and_reruns_alone(stores: Stores) -> None:
    _ingest(stores, 2, thread="good")
    _ingest_failing(stores, T0 + 7200)
    build_episodes(stores, "2024-05-01", "chat")
    report = process_partition(stores, "2024-05-01", "chat", ScriptedWriter())
    assert (report.count("ok"), report.count("failed")) == (1, 1)
    failure = report.as_dict()["failures"][0]
    assert "garbage" in failure["error"]
    # Nothing of the failed episode was kept: no facts, no processing-log rows.
    assert stores.conn.execute("SELECT count(*) FROM facts WHERE source_event_id = 'chat:bad-0'").fetchone()[0] == 0
    assert stores.conn.execute("SELECT count(*) FROM memory_processing_log").fetchone()[0] == 2
    assert pending_episodes(stores, "2024-05-01", "chat", only_failed=True) == [failure["episode_id"]]

    class FixedWriter(ScriptedWriter):
        def write(self, tools: WriterTools, episode: EpisodeInput) -> WriteResult:
            assert [e.id for e in episode.events] == ["chat:bad-0"]  # only the failed episode is redone
            tools.insert_fact("Bob asked for something", episode.events[0].as_of, source_event_id="chat:bad-0")
            return WriteResult()

    rerun = process_partition(stores, "2024-05-01", "chat", FixedWriter(), only_failed=True)
    assert (rerun.count("ok"), rerun.count("failed")) == (1, 0)
    row = stores.conn.execute(
        "SELECT attempts, status FROM episode_processing WHERE episode_id = ?", (failure["episode_id"],)
    ).fetchone()
    assert tuple(row) == (2, "ok")


def test_rerunning_a_partition_adds_zero_facts(stores: Stores) -> None:
    _ingest(stores, 3)
    build_episodes(stores, "2024-05-01", "chat")
    process_partition(stores, "2024-05-01", "chat", ScriptedWriter())
    before = stores.conn.execute("SELECT count(*) FROM facts").fetchone()[0]
    stores.conn.execute("DELETE FROM episode_processing")  # force the writer to look again
    again = process_partition(stores, "2024-05-01", "chat", ScriptedWriter())
    assert again.count("skipped") == 1
    assert stores.conn.execute("SELECT count(*) FROM facts").fetchone()[0] == before == 3


def test_episodes_committed_together_stay_all_or_nothing_each(stores: Stores) -> None:
    """The pipeline writes a batch of days in one transaction: a failed episode inside it still leaves only its
    failure row, the episodes around it are kept, and a batch stopped by an error leaves nothing of itself."""
    days = 3
    for day in range(days):
        _ingest(stores, 2, thread=f"good{day}", start=day * 86400)
    _ingest_failing(stores, T0 + 86400 + 7200)
    day_names = ["2024-05-01", "2024-05-02", "2024-05-03"]
    run_layer(stores, "episodes", "chat", day_names)
    assert stores.conn.execute("SELECT count(*) FROM episodes").fetchone()[0] == days + 1 < EPISODES_PER_COMMIT
    report = run_layer(stores, "facts", "chat", day_names, writer=ScriptedWriter())
    assert (report.details["ok"], report.details["failed"]) == (days, 1)
    assert stores.conn.execute("SELECT count(*) FROM facts WHERE source_event_id = 'chat:bad-0'").fetchone()[0] == 0
    assert stores.conn.execute("SELECT count(*) FROM memory_processing_log").fetchone()[0] == 2 * days
    assert not stores.conn.in_transaction  # the batch committed

    class Interrupted(ScriptedWriter):
        def write(self, tools: WriterTools, episode: EpisodeInput) -> WriteResult:
            tools.insert_fact("Bob asked for something", episode.events[0].as_of, source_event_id="chat:bad-0")
            raise KeyboardInterrupt  # not an episode's failure: the whole batch stops

    with pytest.raises(KeyboardInterrupt):
        run_layer(stores, "facts", "chat", day_names, writer=Interrupted(), only_failed=True)
    assert not stores.conn.in_transaction
    assert stores.conn.execute("SELECT count(*) FROM facts WHERE source_event_id = 'chat:bad-0'").fetchone()[0] == 0
    assert report.failures and pending_episodes(stores, "2024-05-02", "chat", only_failed=True) == [
        report.failures[0].episode_id
    ]


def test_a_slow_writer_commits_each_episode_and_a_fast_one_several() -> None:
    assert _episodes_per_commit(0, 0.0) == 1  # nothing known yet
    assert _episodes_per_commit(10, 30.0) == 1  # the LLM writer: seconds an episode
    assert _episodes_per_commit(100, 1.0) == 10  # 10 ms an episode: 0.1 s of them
    assert _episodes_per_commit(1000, 2.5) == EPISODES_PER_COMMIT  # the offline writer: at most 32
