"""Pointwise metrics: accuracy, macro-F1 and AUROC on hand cases, checked against scikit-learn."""

from __future__ import annotations

import numpy as np
import pytest
from metrics_tables import point_table
from sklearn.metrics import f1_score, roc_auc_score

from novelty_audit.metrics import METRICS, AUROCEstimate, Resampler, pointwise_view

P, N = "POSITIVE", "NEGATIVE"


def view(gold, pred, scores=None):
    scores = scores or [None] * len(gold)
    rows = [
        {"dataset": "ds", "judge": "j", "idea_id": f"i{k:03d}", "gold_label": g, "predicted": p, "score": s}
        for k, (g, p, s) in enumerate(zip(gold, pred, scores))
    ]
    return pointwise_view(point_table(rows))


def value(name, v):
    est = METRICS.get(name).fn(v)
    return None if est is None else est.value


def test_macro_f1_on_a_hand_case():
    # POSITIVE: tp 2, fp 1, fn 1 → F1 2/3; NEGATIVE: tp 1, fp 1, fn 1 → F1 1/2; macro = 7/12
    v = view([P, P, P, N, N], [P, P, N, P, N])
    assert value("pointwise_macro_f1", v) == pytest.approx(7 / 12)
    assert value("pointwise_accuracy", v) == pytest.approx(3 / 5)


def test_a_none_prediction_is_a_miss_for_the_gold_class_and_a_false_alarm_for_none():
    v = view([P, P, N, N], [P, "none", N, N])
    # POSITIVE: tp 1, fn 1 → 2/3; NEGATIVE: tp 2 → 1; macro 5/6
    assert value("pointwise_macro_f1", v) == pytest.approx(5 / 6)
    assert value("pointwise_accuracy", v) == pytest.approx(3 / 4)
    assert value("pointwise_coverage", v) == pytest.approx(3 / 4)


def test_macro_f1_resamples_agree_with_sklearn_on_each_resample():
    rng = np.random.default_rng(0)
    gold = [P if x else N for x in rng.integers(0, 2, 40)]
    pred = [[P, N, "none"][x] for x in rng.integers(0, 3, 40)]
    est = METRICS.get("pointwise_macro_f1").fn(view(gold, pred))
    w = rng.multinomial(40, [1 / 40] * 40, size=5).astype(np.float32)
    got = est.resample(Resampler(w))
    for b in range(5):
        idx = np.repeat(np.arange(40), w[b].astype(int))
        want = f1_score([gold[i] for i in idx], [pred[i] for i in idx], labels=[P, N], average="macro", zero_division=0)
        assert got[b] == pytest.approx(want)


def test_auroc_on_a_hand_case_with_a_tie():
    # positives 0.9, 0.5; negatives 0.5, 0.1 → pairs: (0.9>0.5) (0.9>0.1) (0.5=0.5 → ½) (0.5>0.1) → 3.5/4
    v = view([P, P, N, N], [P, P, P, N], [0.9, 0.5, 0.5, 0.1])
    assert value("pointwise_auroc", v) == pytest.approx(3.5 / 4)


def test_auroc_resampled_with_unit_weights_equals_sklearn_and_skips_unscored_ideas():
    rng = np.random.default_rng(1)
    scores = np.round(rng.random(30), 1)  # rounding makes ties
    positive = (rng.random(30) < 0.5).astype(float)
    scores[[3, 7]] = np.nan
    est = AUROCEstimate(positive, scores)
    keep = np.isfinite(scores)
    want = roc_auc_score(positive[keep], scores[keep])
    assert est.value == pytest.approx(want)
    assert est.resample(Resampler(np.ones((2, 30), dtype=np.float32))) == pytest.approx([want, want])


def test_auroc_is_left_out_for_judges_without_scores():
    assert value("pointwise_auroc", view([P, N], [P, N])) is None
    assert value("n_scored", view([P, N], [P, N])) is None
