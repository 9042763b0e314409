"""`bench embed`: the recipes timed on the same texts, their parity, and the quality gate's verdict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nexus_memory.bench import embed
from nexus_memory.cli import main


def _locomo_file(tmp_path: Path) -> Path:
    turns = [
        {"speaker": "Caroline" if i % 2 else "Melanie", "dia_id": f"D1:{i}", "text": f"turn {i} about pottery class"}
        for i in range(1, 13)
    ]
    conversation = {
        "sample_id": "c1",
        "conversation": {"speaker_a": "Caroline", "session_2": turns[6:], "session_1": turns[:6]},
    }
    path = tmp_path / "locomo.json"
    path.write_text(json.dumps([conversation]))
    return path


def test_turns_are_read_in_session_order(tmp_path: Path) -> None:
    texts = embed.locomo_turns(_locomo_file(tmp_path), 8)
    assert texts[0] == "Caroline: turn 1 about pottery class" and texts[1] == "Melanie: turn 2 about pottery class"
    assert texts[6] == "Caroline: turn 7 about pottery class"  # session_2 after session_1, whatever the key order
    assert len(texts) == 8


def test_bench_embed_times_both_recipes_and_their_parity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["bench", "embed", "--data", str(_locomo_file(tmp_path)), "--texts", "10", "--rounds", "2", "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    speed = result["speed"]
    assert speed["texts"] == 10
    assert set(speed["texts_per_s_one_core"]) == {"fp32_64", "bf16_64", "fp32", "bf16", "int8"}
    assert all(len(rounds) == 2 for rounds in speed["seconds_per_round"].values())
    assert set(speed["cpu_texts_per_s_one_core"]) == set(speed["texts_per_s_one_core"])
    assert all(value > 0 for value in speed["cpu_texts_per_s_one_core"].values())
    assert 0.999 < speed["cosine_bf16_to_fp32"]["min"] <= speed["cosine_bf16_to_fp32"]["mean"] < 1.0
    assert 0.97 < speed["cosine_int8_to_fp32"]["min"] <= speed["cosine_int8_to_fp32"]["mean"] < 0.9999
    machine = speed["texts_per_s_machine"]  # two processes: this one and the embedding-ahead worker
    assert machine["processes"] == 2 and len(machine["rounds"]) == 2 and machine["median"] > 0
    assert machine["recipe"] == result["auto_recipe"]
    assert 0.999 < speed["cosine_onnx_fp32_to_bf16"]["min"] < 1.0
    assert 0.97 < speed["cosine_onnx_fp32_to_int8"]["min"] < 0.9999
    assert result["auto_recipe"] == ("bf16" if result["cpu_native_bf16"] else "fp32")  # int8 only when asked for
    assert isinstance(result["cpu_native_int8"], bool)
    assert "gate" not in result


def test_the_gate_fails_on_either_limit() -> None:
    base = {"recall_at_10": 0.80, "per_category_r10": {"multi_hop": 0.56, "temporal": 0.88}}
    close = {"recall_at_10": 0.7975, "per_category_r10": {"multi_hop": 0.551, "temporal": 0.88}}
    assert embed._verdict(base, close)["passes"]
    overall = {"recall_at_10": 0.796, "per_category_r10": {"multi_hop": 0.56, "temporal": 0.88}}
    assert not embed._verdict(base, overall)["passes"]
    one_category = {"recall_at_10": 0.80, "per_category_r10": {"multi_hop": 0.548, "temporal": 0.89}}
    verdict = embed._verdict(base, one_category)
    assert not verdict["passes"] and verdict["category_r10_delta"]["multi_hop"] == -0.012
