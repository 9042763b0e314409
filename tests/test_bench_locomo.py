"""`bench locomo` on three small hand-written conversations: recall@k and the injection noise figures."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nexus_memory.bench.locomo import noise_figures, run, shared_speakers


def _conversation(sample_id: str, a: str, b: str, sessions: list[tuple[str, list[str]]], qa: list[Any]) -> dict:
    dialogue: dict[str, Any] = {"speaker_a": a, "speaker_b": b}
    for number, (when, turns) in enumerate(sessions, start=1):
        dialogue[f"session_{number}_date_time"] = when
        dialogue[f"session_{number}"] = [
            {"speaker": text.split(": ", 1)[0], "dia_id": f"D{number}:{i}", "text": text.split(": ", 1)[1]}
            for i, text in enumerate(turns, start=1)
        ]
    questions = [{"question": q, "answer": "", "evidence": [e], "category": 4} for q, e in qa]
    return {"sample_id": sample_id, "conversation": dialogue, "qa": questions}


CONVERSATIONS = [
    _conversation(
        "pottery",
        "Priya",
        "Tomas",
        [
            (
                "2:00 pm on 3 March, 2023",
                [
                    "Priya: Guess what, I signed up for a pottery class at the community studio!",
                    "Tomas: That's awesome! What made you pick pottery?",
                    "Priya: I wanted something calm after work. My first bowl came out lopsided but I love it.",
                    "Tomas: Ha, nice. I started a new job at the harbour museum.",
                    "Priya: The harbour museum? Do you give tours?",
                    "Tomas: Yes, I lead the maritime history tours on weekends.",
                ],
            ),
            (
                "10:15 am on 20 April, 2023",
                [
                    "Tomas: We adopted a rescue dog last week, his name is Biscuit.",
                    "Priya: Biscuit! What breed is he?",
                    "Tomas: He's a beagle mix and he loves chasing seagulls on the beach.",
                    "Priya: I am moving to Lisbon in June for a design job.",
                    "Tomas: Lisbon is beautiful, you will love the tiles there.",
                ],
            ),
        ],
        [
            ("What class did Priya sign up for?", "D1:1"),
            ("Where does Tomas work?", "D1:4"),
            ("What tours does Tomas lead?", "D1:6"),
            ("What is the name of the dog Tomas adopted?", "D2:1"),
            ("What breed is Biscuit?", "D2:3"),
            ("Where is Priya moving?", "D2:4"),
        ],
    ),
    _conversation(
        "bakery",
        "Marcus",
        "Lena",
        [
            (
                "9:00 am on 5 January, 2023",
                [
                    "Marcus: I'm training for the Berlin marathon in September.",
                    "Lena: Wow, how many kilometres are you running each week?",
                    "Marcus: About sixty kilometres, mostly along the river at dawn.",
                    "Lena: I opened my own bakery downtown, it's called Crumb and Co.",
                    "Marcus: Congrats! What do you bake?",
                    "Lena: Sourdough loaves and cardamom buns, the buns sell out every morning.",
                ],
            ),
            (
                "6:30 pm on 12 February, 2023",
                [
                    "Lena: My sister Hanna is visiting from Oslo next month.",
                    "Marcus: Nice, are you showing her around?",
                    "Lena: We plan to go skiing in the Alps together.",
                    "Marcus: I injured my knee during a long run, so I'm seeing a physiotherapist.",
                ],
            ),
        ],
        [
            ("Which marathon is Marcus training for?", "D1:1"),
            ("How far does Marcus run each week?", "D1:3"),
            ("What is the name of Lena's bakery?", "D1:4"),
            ("What does Lena bake?", "D1:6"),
            ("Who is visiting Lena from Oslo?", "D2:1"),
            ("Why is Marcus seeing a physiotherapist?", "D2:4"),
        ],
    ),
    _conversation(
        "cello",
        "Aiko",
        "Dev",
        [
            (
                "4:45 pm on 8 May, 2023",
                [
                    "Aiko: I started learning the cello this spring.",
                    "Dev: The cello! Are you taking lessons?",
                    "Aiko: Yes, every Thursday with a teacher from the conservatory.",
                    "Dev: I just got back from a trip to Iceland, we saw the northern lights.",
                    "Aiko: That must have been magical. Did you drive the ring road?",
                    "Dev: We drove half of it and camped near a glacier.",
                ],
            ),
            (
                "11:00 am on 2 June, 2023",
                [
                    "Dev: I'm building a vegetable garden on my balcony, tomatoes and basil so far.",
                    "Aiko: I volunteer at the animal shelter on Saturdays now.",
                    "Dev: That's kind of you. Do you want to adopt a cat?",
                    "Aiko: Maybe, there is a grey kitten called Mochi that I adore.",
                ],
            ),
        ],
        [
            ("What instrument is Aiko learning?", "D1:1"),
            ("Where did Dev travel?", "D1:4"),
            ("What did Dev see in Iceland?", "D1:4"),
            ("What is Dev growing on his balcony?", "D2:1"),
            ("Where does Aiko volunteer?", "D2:2"),
            ("What is the name of the kitten Aiko adores?", "D2:4"),
        ],
    ),
]


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("locomo") / "small.json"
    path.write_text(json.dumps(CONVERSATIONS))
    return run(path)


def test_noise_figures_per_conversation_and_overall(result: dict[str, Any]) -> None:
    noise = result["noise"]
    per = noise["per_conversation"]
    assert list(per) == ["pottery", "bakery", "cello"]
    for sample_id, figures in per.items():
        assert figures["own_questions"] == figures["foreign_prompts"] == 6, sample_id
        assert figures["silent_on_foreign"] >= 5 / 6, (sample_id, figures)
        assert figures["own_hit_rate"] >= 4 / 6, (sample_id, figures)
    assert noise["silent_on_foreign"] >= 0.9
    assert noise["silent_on_foreign_other_prompts"] == noise["silent_on_foreign"]  # no speaker name is shared
    assert noise["own_hit_rate"] >= 0.8
    # Overall is the share over all prompts, not a mean of means.
    silent = sum(f["silent_on_foreign"] * f["foreign_prompts"] for f in per.values())
    assert noise["silent_on_foreign"] == pytest.approx(silent / 18, abs=1e-3)
    assert result["questions"] == 18 and result["recall_at_10"] > 0.8
    # The same figures asked by names only (no participants): no name is shared here, so no difference.
    names_only = noise["names_only"]
    assert set(names_only) == set(noise) - {"names_only"}
    assert names_only["silent_on_foreign"] == noise["silent_on_foreign"]


def test_noise_figures_arithmetic() -> None:
    own = {
        "a": [{"category": 4, "context_hit": True}, {"category": 1, "context_hit": False}],
        "b": [{"category": 5, "context_hit": False}, {"category": 2, "context_hit": True}],
    }
    silent = {"a": [("Did John call?", True), ("Is Johnny ok?", True), ("John's dog?", False)], "b": [("x", True)]}
    figures = noise_figures(own, silent, {"a": ["John"], "b": []})
    assert figures["own_hit_rate"] == pytest.approx(2 / 3, abs=1e-4)  # category 5 is not scored
    assert figures["silent_on_foreign"] == 0.75
    assert figures["silent_on_foreign_other_prompts"] == 1.0  # "Johnny" is not "John"
    assert figures["per_conversation"]["a"] == {
        "own_hit_rate": 0.5,
        "own_questions": 2,
        "silent_on_foreign": 0.6667,
        "foreign_prompts": 3,
        "shared_speaker_names": ["John"],
        "silent_on_foreign_other_prompts": 1.0,
        "other_prompts": 1,
    }
    assert noise_figures({"a": []}, {})["per_conversation"]["a"]["silent_on_foreign"] is None


def test_shared_speakers() -> None:
    def conversation(sample_id: str, a: str, b: str) -> dict[str, Any]:
        return {"sample_id": sample_id, "conversation": {"speaker_a": a, "speaker_b": b}}

    found = shared_speakers(
        [conversation("x", "John", "Maria"), conversation("y", "Tim", "John"), conversation("z", "A", "B")]
    )
    assert found == {"x": ["John"], "y": ["John"], "z": []}


def test_bench_consolidate_runs_on_the_small_conversations(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`bench consolidate` end to end on the same three conversations: keys present, second run unchanged."""
    from nexus_memory.bench.consolidate import run as run_consolidate

    path = tmp_path_factory.mktemp("consolidate") / "small.json"
    path.write_text(json.dumps(CONVERSATIONS))
    report = run_consolidate(path, conversations=1)
    assert set(report["context_recall"]) == {"400", "800", "1600"}
    assert all(0.0 <= figures[mode] <= 1.0 for figures in report["context_recall"].values() for mode in figures)
    assert report["facts"] > 0
    assert report["second_run_identical"] is True
