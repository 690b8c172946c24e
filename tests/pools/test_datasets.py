"""The pools stage's pair sets as datasets: candidate sets against same-area D+ and D- human ideas (a candidate
whose area has none is an exclusion with its reason), head-to-head sets, re-pairings of a pinned split by seed."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl

from novelty_audit.artifacts import digest_bytes, short_id
from novelty_audit.config import PoolsParams
from novelty_audit.datasets import IDEA_SCHEMA
from novelty_audit.pools import build_datasets, pair_within_areas
from novelty_audit.pools._datasets import pool_ideas
from novelty_audit.pools._select import EVIDENCE_SCHEMA


def _human(title: str, area: str, label: str) -> dict:
    return {"dataset": "human-only", "idea_id": short_id("i-", title), "text": f"text of {title}", "text_digest": digest_bytes(f"text of {title}".encode()),
            "title": title, "area": area, "source": "human", "rating": 5.0, "contribution": 2.0, "label": label,
            "positive_signals": [], "negative_signals": []}  # fmt: skip


SPLIT = pl.DataFrame(
    [_human(f"P{i}", "rl", "POSITIVE") for i in range(3)] + [_human(f"N{i}", "rl", "NEGATIVE") for i in range(2)]
    + [_human("Q0", "vision", "NEGATIVE")], schema=IDEA_SCHEMA,
)  # fmt: skip


def _file(root: Path, name: str, rows: list[dict]) -> dict:
    path = root / f"{name}.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {"path": path.name, "sha256": hashlib.sha256(path.read_bytes()).hexdigest(), "on_bad_row": "exclude"}


def _build(tmp_path: Path, **pools) -> dict[str, object]:
    pp = PoolsParams.model_validate({"generated": {"source": "none"}, **pools})
    empty_pool = pl.DataFrame(schema={**EVIDENCE_SCHEMA, "pool": pl.String, "text": pl.String, "text_stripped": pl.Boolean})
    no_pairs = pair_within_areas([], [], seed=1, dataset="constructed-human-only")
    out = build_datasets(pp, pool_idea_df=pool_ideas(empty_pool, pl.DataFrame(schema={"idea_id": pl.String, "title": pl.String, "area": pl.String, "text": pl.String})),
                         human_pairs=no_pairs, generated_pairs=None, benchmark_ideas={"human-only": SPLIT}, review_areas=[], root=tmp_path)  # fmt: skip
    return {d.name: d for d in out}


def test_a_candidate_meets_a_same_area_d_plus_idea_and_one_without_is_excluded_with_its_reason(tmp_path: Path) -> None:
    rows = [{"area": "rl", "title": f"C{i}", "text": f"candidate {i}"} for i in range(4)] + [{"area": "vision", "title": "V", "text": "v"},
            {"area": "nowhere", "title": "X", "text": "x"}]  # fmt: skip
    sets = _build(tmp_path, candidates={"a": _file(tmp_path, "a", rows)})
    a, low = sets["a"], sets["a-vs-low"]
    plus = set(SPLIT.filter(pl.col("label") == "POSITIVE")["idea_id"].to_list())
    assert a.pairs.height == 4 and a.info["kind"] == "candidates" and a.info["reused_opponents"] == 1  # 4 candidates, 3 D+
    for r in a.pairs.iter_rows(named=True):
        assert {r["idea_0"], r["idea_1"]} - {r["gold_idea_id"]} <= plus and r["context"] == "rl"
    reasons = {(r["item"], r["field"]): r["reason"] for r in a.exclusions.iter_rows(named=True)}
    assert reasons[(short_id("i-", "V"), "area")] == "no D+ human idea in this area"
    assert reasons[("6", "area")].startswith("unknown area 'nowhere'")
    assert low.pairs.height == 5 and short_id("i-", "V") not in set(low.exclusions["item"])  # vision has a D- idea
    assert a.pointwise.height == 0 and set(a.pairs["pair_id"]) != set(low.pairs["pair_id"])


def test_two_candidate_sets_meet_head_to_head_within_areas(tmp_path: Path) -> None:
    a = _file(tmp_path, "a", [{"area": "rl", "title": "A1", "text": "a1"}, {"area": "vision", "title": "A2", "text": "a2"}])
    b = _file(tmp_path, "b", [{"area": "rl", "title": "B1", "text": "b1"}])
    sets = _build(tmp_path, candidates={"a": a, "b": b}, head_to_head=[["a", "b"]])
    h2h = sets["a-vs-b"]
    assert h2h.pairs.height == 1 and h2h.pairs["gold_idea_id"].item() == short_id("i-", "A1")
    assert h2h.exclusions.select("item", "reason").rows() == [(short_id("i-", "A2"), "no idea of set b in this area")]


def test_a_re_pairing_per_seed_uses_the_pinned_ideas_and_moves_with_the_seed(tmp_path: Path) -> None:
    sets = _build(tmp_path, repair={"dataset": "human-only", "seeds": [1, 2, 3]})
    pairs = {s: sets[f"human-only-seed-{s}"].pairs for s in (1, 2, 3)}
    for df in pairs.values():
        assert df.height == 3 and set(df["gold_idea_id"]) == set(SPLIT.filter(pl.col("label") == "POSITIVE")["idea_id"])
    meet = lambda df: set(zip(df["idea_0"], df["idea_1"]))  # noqa: E731
    assert len({frozenset(meet(df)) for df in pairs.values()}) > 1  # another seed, another pairing
    assert sets["human-only-seed-1"].pointwise.height == 5  # gold datasets keep pointwise labels
