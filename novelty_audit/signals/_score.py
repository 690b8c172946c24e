"""Scores of a signal extractor: detection, polarity, and recovery of the benchmark's own signals.

Recovery matching (documented in docs/design/signals.md): a recorded signal and an extracted
snippet of the same paper match when, after `match_key` normalization (NFKC, lower case,
markdown emphasis and edge punctuation removed, whitespace collapsed),
1. they are equal (`exact`), or
2. one contains the other and the shorter has at least `min_words` words (`containment`) —
   the benchmark sometimes records a clause of a sentence, sometimes two sentences; or
3. their difflib ratio is at least `min_similarity` (`similarity`).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from ..config import RecoveryParams
from ..errors import BadInputError
from ._text import match_key

__all__ = [
    "load_review_sentences",
    "detection_scores",
    "polarity_scores",
    "match_signal",
    "recovery_scores",
    "RECOVERY_SCHEMA",
]

RECOVERY_SCHEMA = {
    "paper_id": pl.String,
    "title": pl.String,
    "extractor": pl.String,
    "kind": pl.String,
    "polarity": pl.String,
    "text": pl.String,
    "matched_text": pl.String,
    "matched_polarity": pl.String,
    "match": pl.String,
}


def load_review_sentences(novelty: Path, other: Path) -> tuple[list[str], list[str]]:
    """The NovBench sentences: novelty_data.json ([sentence, "NOVELTY"] pairs) and non_novelty_data.json ({text, labels})."""
    def load(path: Path) -> Any:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise BadInputError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
        except UnicodeDecodeError as exc:
            raise BadInputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        except RecursionError:
            raise BadInputError(f"{path}: JSON nested too deeply to read") from None
        if not isinstance(data, list):
            raise BadInputError(f"{path}: expected a JSON list of records, found {type(data).__name__}")
        return data

    nov_raw, oth_raw = load(novelty), load(other)
    nov: list[str] = []
    for i, rec in enumerate(nov_raw):
        if not (isinstance(rec, list) and len(rec) == 2 and isinstance(rec[0], str) and rec[1] == "NOVELTY"):
            raise BadInputError(f"{novelty}: record {i}, field [0]/[1]: expected [sentence, \"NOVELTY\"], found {rec!r:.120}")
        nov.append(rec[0])
    oth: list[str] = []
    for i, rec in enumerate(oth_raw):
        if not (isinstance(rec, dict) and isinstance(rec.get("text"), str)):
            raise BadInputError(f"{other}: record {i}, field text: expected {{text: str, labels: [...]}}, found {rec!r:.120}")
        oth.append(rec["text"])
    return nov, oth


def _ratio(a: int, b: int) -> float | None:
    return a / b if b else None


def detection_scores(novelty: Sequence[str], other: Sequence[str], detect: Callable[[str], str | None]) -> dict[str, Any]:
    """Precision/recall/F1 of 'this sentence judges novelty' (any polarity counts as detected)."""
    tp = sum(detect(s) is not None for s in novelty)
    fp = sum(detect(s) is not None for s in other)
    fn, tn = len(novelty) - tp, len(other) - fp
    p, r = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
    f1 = 2 * p * r / (p + r) if p and r else 0.0
    return {"n_novelty": len(novelty), "n_other": len(other), "tp": tp, "fp": fp, "fn": fn, "tn": tn,
            "precision": p, "recall": r, "f1": f1}


def polarity_scores(signals: Sequence[tuple[str, str]], classify: Callable[[str], str | None]) -> dict[str, Any]:
    """Accuracy on polarity-labelled signals: (text, 'positive' | 'negative')."""
    by: dict[str, dict[str, int]] = {lab: {"n": 0, "correct": 0, "wrong": 0, "missed": 0} for lab in ("positive", "negative")}
    for text, label in signals:
        got = classify(text)
        b = by[label]
        b["n"] += 1
        b["missed" if got is None else "correct" if got == label else "wrong"] += 1
    tot = {k: sum(b[k] for b in by.values()) for k in ("n", "correct", "wrong", "missed")}
    out: dict[str, Any] = {**tot, "accuracy": _ratio(tot["correct"], tot["n"]),
                           "accuracy_on_detected": _ratio(tot["correct"], tot["correct"] + tot["wrong"])}
    for lab, b in by.items():
        out[lab] = {**b, "accuracy": _ratio(b["correct"], b["n"])}
    return out


def match_signal(recorded: str, snippet: str, params: RecoveryParams) -> str | None:
    """How `snippet` matches `recorded` (exact | containment | similarity), or None."""
    a, b = match_key(recorded), match_key(snippet)
    if not a or not b:
        return None
    if a == b:
        return "exact"
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    if short in long_ and len(short.split()) >= params.min_words:
        return "containment"
    if difflib.SequenceMatcher(None, a, b, autojunk=False).ratio() >= params.min_similarity:
        return "similarity"
    return None


def recovery_scores(
    papers: pl.DataFrame,
    snippets: pl.DataFrame,
    recorded: dict[str, list[tuple[str, str]]],
    extractor: str,
    params: RecoveryParams,
) -> tuple[dict[str, Any], pl.DataFrame]:
    """Which of the benchmark's recorded signals (per paper id: (text, polarity)) the extractor recovers, and what it adds."""
    rows: list[dict[str, Any]] = []
    per_paper: dict[str, dict[str, Any]] = {}
    n_rec = n_any = n_same = n_added = n_papers = 0
    added_by: dict[str, int] = {"positive": 0, "negative": 0}
    for paper in papers.sort("paper_id").iter_rows(named=True):
        pid = paper["paper_id"]
        if pid not in recorded:
            continue
        n_papers += 1
        mine = snippets.filter((pl.col("paper_id") == pid) & (pl.col("extractor") == extractor)).sort("snippet_id")
        ext = list(zip(mine["text"].to_list(), mine["polarity"].to_list(), strict=True))
        used: set[int] = set()
        before = (n_rec, n_any, n_same, n_added)
        for text, pol in recorded[pid]:
            n_rec += 1
            best = None
            for j, (s, spol) in enumerate(ext):
                how = match_signal(text, s, params)
                if how and (best is None or (spol == pol and best[2] != pol)):
                    best = (j, how, spol, s)
                    if spol == pol:
                        break
            if best:
                used.add(best[0])
                n_any += 1
                n_same += best[2] == pol
            rows.append({"paper_id": pid, "title": paper["title"], "extractor": extractor, "kind": "recorded", "polarity": pol,
                         "text": text, "matched_text": best[3] if best else None, "matched_polarity": best[2] if best else None,
                         "match": best[1] if best else "none"})
        for j, (s, spol) in enumerate(ext):
            if j in used or any(match_signal(t, s, params) for t, _ in recorded[pid]):
                continue
            n_added += 1
            added_by[spol] += 1
            rows.append({"paper_id": pid, "title": paper["title"], "extractor": extractor, "kind": "added", "polarity": spol,
                         "text": s, "matched_text": None, "matched_polarity": None, "match": "none"})
        per_paper[pid] = {
            "title": paper["title"],
            **{k: now - then for k, now, then in zip(("recorded", "recovered", "recovered_same_polarity", "added"),
                                                    (n_rec, n_any, n_same, n_added), before, strict=True)},
        }
    scores = {
        "papers": n_papers,
        "recorded": n_rec,
        "recovered": n_any,
        "recovered_same_polarity": n_same,
        "recall": _ratio(n_any, n_rec),
        "recall_same_polarity": _ratio(n_same, n_rec),
        "added": n_added,
        "added_positive": added_by["positive"],
        "added_negative": added_by["negative"],
        "per_paper": per_paper,
    }
    return scores, pl.DataFrame(rows, schema=RECOVERY_SCHEMA)
