"""A synthetic study for the report tests: measured judges, controls, a saturated distance judge, a partial
(imported) judge, priced API judges and published reference rows, in the schemas the upstream stages write.

Values are deliberately odd: the report must show exactly these, never recompute them from verdicts."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl

from novelty_audit.artifacts import write_json, write_table

DATASETS = ("human-only", "human-plus-generated")
JUDGES = {
    "always-first": {"backend": "always-first", "votes": 3},
    "random": {"backend": "random", "votes": 3},
    "distance-yin-minilm": {"backend": "distance-yin", "model": "minilm"},
    "distance-rnd-minilm": {"backend": "distance-rnd", "model": "minilm"},
    "gpt-p1": {"backend": "openai", "model": "gpt-x", "prompt": "p1"},
    "gpt-p3": {"backend": "openai", "model": "gpt-x", "prompt": "p3"},
    "expert-import": {"backend": "import", "path": "expert.csv"},
}
ACCURACY = {"always-first": 0.0, "random": 0.3312, "distance-yin-minilm": 0.6125, "distance-rnd-minilm": 0.3117,
            "gpt-p1": 0.9345, "gpt-p3": 0.4091, "expert-import": 0.1948}
TIES = {"always-first": 1.0, "random": 0.31, "distance-rnd-minilm": 0.4805}
COST = {"gpt-p1": 12.5, "gpt-p3": 0.0123}
PARTIAL = {"expert-import": {"human-only": (30, 1.0)}}
"""judge → {dataset: (covered pairs, accuracy_on_covered)}; the judge has no entry for other datasets."""
PUBLISHED = [
    {"source": "Sternlicht et al. 2026", "url": "https://example.org/old-ideas", "dataset": "human-only",
     "judge": "claude-opus-4-6", "metric": "strict_accuracy", "value": 0.8247, "prompt": "reference", "note": ""},
    {"source": "Sternlicht et al. 2026", "url": "https://example.org/old-ideas", "dataset": "human-plus-generated",
     "judge": "gpt-5.4", "metric": "strict_accuracy", "value": 0.4091, "prompt": "P4", "note": ""},
    {"source": "distance study", "url": None, "dataset": None, "judge": "BGE-M3 Yin", "metric": "accuracy",
     "value": 0.60, "prompt": None, "note": "576k-paper corpus"},
]
N_PAIRS = 6


def _metrics_for(j: str, ds: str) -> dict | None:
    acc = ACCURACY[j]
    m: dict = {"n_pairs": 154, "strict_accuracy": acc, "soft_accuracy": round(acc + TIES.get(j, 0.02) / 2, 4),
               "tie_rate": TIES.get(j, 0.02), "coverage": 1.0, "n_no_verdict": 2 if j.startswith("gpt") else 0,
               "n_invalid": 2 if j.startswith("gpt") else 0, "n_refusal": 0, "n_error": 1 if j == "gpt-p3" else 0,
               "n_truncated": 0, "n_error_by_reason": {"connection refused": 1} if j == "gpt-p3" else {}}
    if j == "always-first":
        # Every resample gives the same value: a degenerate interval.
        m.update(strict_accuracy_ci_low=0.0, strict_accuracy_ci_high=0.0, tie_rate_ci_low=1.0, tie_rate_ci_high=1.0)
    else:
        m.update(strict_accuracy_ci_low=round(acc - 0.05, 4), strict_accuracy_ci_high=round(acc + 0.05, 4))
    if j in PARTIAL:
        if ds not in PARTIAL[j]:
            return None
        covered, on_covered = PARTIAL[j][ds]
        m.update(coverage=round(covered / 154, 4), covered=covered, accuracy_on_covered=on_covered,
                 accuracy_on_covered_ci_low=1.0, accuracy_on_covered_ci_high=1.0)
    if not j.startswith("distance"):
        m.update(order_flip_rate={"always-first": 1.0, "gpt-p3": 0.45}.get(j, 0.12), order_flip_rate_ci_low=0.0,
                 order_flip_rate_ci_high=1.0 if j == "always-first" else 0.6,
                 first_position_rate={"always-first": 1.0, "gpt-p3": 0.71}.get(j, 0.5))
        if j == "always-first":
            m.update(order_flip_rate_ci_low=1.0)
    else:
        m.update(order_flip_rate=0.0, first_position_rate=0.5)
    if j in COST:
        m["cost_usd"] = COST[j]
    elif not j.startswith("gpt"):
        m["cost_usd"] = 0.0
    return m


def write_metrics(d: Path) -> None:
    doc: dict = {}
    long_rows = []
    for ds in DATASETS:
        for j in JUDGES:
            m = _metrics_for(j, ds)
            if m is None:
                continue
            doc.setdefault(ds, {})[j] = m
            long_rows.append({"dataset": ds, "judge": j, "metric": "strict_accuracy", "value": m["strict_accuracy"],
                              "ci_low": m["strict_accuracy_ci_low"], "ci_high": m["strict_accuracy_ci_high"],
                              "ci_method": "bootstrap percentile (10000 resamples, seed 7)", "wilson_low": None,
                              "wilson_high": None, "direction": "higher"})
    write_json(d / "metrics.json", doc)
    write_table(d / "metrics.parquet", pl.DataFrame(long_rows))
    fm = []
    for ds in DATASETS:
        present = [j for j in JUDGES if j in doc[ds]]
        for a in present:
            for b in present:
                rate = 0.0 if a == b else (0.97 if "always-first" in (a, b) else 0.1 + 0.05 * ((len(a) + len(b)) % 5))
                fm.append({"dataset": ds, "judge_a": a, "judge_b": b, "compared": 154, "flips": round(rate * 154),
                           "flip_rate": rate})
    write_table(d / "flip_matrix.parquet", pl.DataFrame(fm))
    write_table(d / "prompt_sensitivity.parquet", pl.DataFrame(
        [{"dataset": ds, "backbone": "openai/gpt-x", "judges": ["gpt-p1", "gpt-p3"], "n_judges": 2,
          "strict_accuracy_min": 0.4091, "strict_accuracy_max": 0.9345, "strict_accuracy_spread": 0.5254,
          "mean_flip_rate": 0.52, "max_flip_rate": 0.52} for ds in DATASETS]))


# Distance scores per pair: (score_0, score_1); gold is always idea 0 ("a"). p-1 is a confident wrong verdict,
# p-3 a tie, p-4 the most confident correct verdict.
SCORES = {0: (0.31, 0.22), 1: (0.10, 0.45), 2: (0.30, 0.28), 3: (0.25, 0.25), 4: (0.60, 0.05), 5: (0.20, 0.26)}


def _docs(k: int) -> str:
    docs = [{"slot": slot, "rank": r, "doc_id": f"d-{k}{s}{r}", "digest": "0" * 64, "title": f"Prior {k}{s}-{r + 1}",
             "year": 2020 + r, "similarity": round(0.8 - 0.1 * r, 6), "source": "corpus"}
            for slot, s in (("idea_0", "a"), ("idea_1", "b")) for r in range(2)]
    return orjson.dumps(docs, option=orjson.OPT_SORT_KEYS).decode()


def write_judge(d: Path) -> None:
    rows = []
    for ds in DATASETS:
        for k in range(N_PAIRS):
            a, b = f"i-{k}a", f"i-{k}b"
            for j, cfg in JUDGES.items():
                if j in PARTIAL and ds not in PARTIAL[j]:
                    continue
                dist = cfg["backend"].startswith("distance")
                s0, s1 = SCORES[k] if dist else (None, None)
                verdict = ("tie" if s0 == s1 else (a if s0 > s1 else b)) if dist else (a if j != "always-first" else "tie")
                rows.append({"dataset": ds, "judge": j, "pair_id": f"p-{k}", "idea_0": a, "idea_1": b, "gold_idea_id": a,
                             "verdict": verdict, "score_0": s0, "score_1": s1,
                             "cost_usd": COST.get(j, 0.0) / N_PAIRS,
                             "evidence_titles": [f"Prior {k}a-1", f"Prior {k}a-2", f"Prior {k}b-1", f"Prior {k}b-2"] if dist else [],
                             "evidence_docs": _docs(k) if dist else "[]"})
    write_table(d / "verdicts.parquet", pl.DataFrame(rows))
    write_table(d / "judges.parquet", pl.DataFrame(
        [{"judge": j, "backend": c["backend"], "config_digest": f"cfg-{j}", "config": orjson.dumps(c).decode()}
         for j, c in JUDGES.items()]))


def write_pin(d: Path) -> None:
    for ds in DATASETS:
        ideas = [{"dataset": ds, "idea_id": f"i-{k}{s}", "title": f"Idea {k}{s.upper()}",
                  "source": "generated" if (ds == "human-plus-generated" and s == "b") else "human"}
                 for k in range(N_PAIRS) for s in "ab"]
        write_table(d / ds / "ideas.parquet", pl.DataFrame(ideas))


def write_upstream(artifacts: Path) -> dict[str, Path]:
    dirs = {u: artifacts / u for u in ("pin", "judge", "metrics")}
    write_pin(dirs["pin"])
    write_judge(dirs["judge"])
    write_metrics(dirs["metrics"])
    return dirs
