"""`novelty-audit export verdicts` writes the id,verdict files that `flips` and `quality` read: exported
files of two judges compare with no extra flags, and a judge's losing-idea verdicts are accepted because
each row names its pair's two ideas."""

from __future__ import annotations

import csv
from pathlib import Path

import orjson
import polars as pl
import pytest
import yaml

from novelty_audit.pipeline import run_stage


@pytest.fixture
def judged(project: Path) -> Path:
    """The embedded benchmark pinned and judged by three offline controls (pairwise only)."""
    raw = yaml.safe_load((project / "params.yaml").read_text())
    benchmark = ("human-only", "human-plus-generated")  # the two Ai2 splits the project fixture copies
    raw["pin"]["datasets"] = {k: raw["pin"]["datasets"][k] for k in benchmark}
    raw["judge"]["datasets"] = list(benchmark)
    raw["judge"]["tasks"] = ["pairwise"]
    raw["judge"]["judges"] = {"random": {"backend": "random"}, "always-first": {"backend": "always-first", "args": {"orders": "forward"}},
                              "abstain": {"backend": "abstain"}}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    run_stage("pin")
    run_stage("judge")
    return project


def verdicts(project: Path, judge: str, dataset: str) -> dict[str, str]:
    df = pl.read_parquet(project / "artifacts/judge/verdicts.parquet").filter((pl.col("judge") == judge) & (pl.col("dataset") == dataset))
    return dict(zip(df["pair_id"], df["verdict"]))


def test_export_then_flips_round_trips_for_two_judges_with_no_extra_flags(judged, run_main):
    for args in (["verdicts", "--judge", "random"], ["verdicts", "--judge", "always-first"], ["gold"]):
        code, out, err = run_main("export", *args, "--dataset", "human-only")
        assert code == 0, err
        assert "wrote 154 row(s)" in out
    code, out, err = run_main("flips", "random-human-only.csv", "always-first-human-only.csv", "--gold", "gold-human-only.csv", "--json")
    assert code == 0, err
    r = orjson.loads(out)
    rnd, first = verdicts(judged, "random", "human-only"), verdicts(judged, "always-first", "human-only")
    gold = dict(zip(*pl.read_parquet(judged / "artifacts/pin/human-only/pairs.parquet").select("pair_id", "gold_idea_id")))
    assert r["compared"] == 154 and r["flips"] == sum(rnd[k] != first[k] for k in rnd)
    assert r["accuracy_before"] == pytest.approx(sum(rnd[k] == gold[k] for k in rnd) / 154)
    assert r["accuracy_after"] == pytest.approx(sum(first[k] == gold[k] for k in first) / 154)
    with open(judged / "always-first-human-only.csv", newline="") as f:
        row = next(csv.DictReader(f))
    assert set(row) == {"id", "verdict", "dataset", "pair_id", "idea_0", "idea_1"} and row["verdict"] == row["idea_0"]


def test_a_verdict_naming_neither_idea_of_its_pair_is_still_rejected(judged, run_main):
    run_main("export", "verdicts", "--judge", "random", "--dataset", "human-only")
    run_main("export", "verdicts", "--judge", "always-first", "--dataset", "human-only")
    path = judged / "always-first-human-only.csv"
    lines = path.read_text().splitlines()
    other = lines[2].split(",")[1]  # a real idea id, but of another pair
    cells = lines[1].split(",")
    lines[1] = ",".join([cells[0], other, *cells[2:]])
    path.write_text("\n".join(lines) + "\n")
    code, _, err = run_main("flips", "random-human-only.csv", str(path))
    assert code == 2 and "outside the allowed set" in err and cells[0] in err


def test_exports_of_all_datasets_use_dataset_qualified_ids_and_jsonl_works(judged, run_main):
    code, out, err = run_main("export", "verdicts", "--judge", "random", "--format", "jsonl", "--out", "r.jsonl")
    assert code == 0, err
    assert "wrote 308 row(s)" in out
    first = orjson.loads((judged / "r.jsonl").read_text().splitlines()[0])
    assert first["id"] == f"{first['dataset']}/{first['pair_id']}"
    run_main("export", "verdicts", "--judge", "abstain", "--out", "a.csv")
    code, out, err = run_main("flips", "r.jsonl", "a.csv", "--json")
    assert code == 0, err
    assert orjson.loads(out)["compared"] == 308


def test_quality_counts_a_tie_as_an_answer_and_none_as_an_abstention(judged, run_main):
    raw = yaml.safe_load((judged / "params.yaml").read_text())
    raw["judge"]["judges"]["always-first"]["args"] = {"orders": "both"}  # both orders: ties every pair
    (judged / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    run_stage("judge")
    for args in (["verdicts", "--judge", "always-first"], ["verdicts", "--judge", "abstain"], ["gold"]):
        run_main("export", *args, "--dataset", "human-only")
    code, out, err = run_main("quality", "always-first-human-only.csv", "--reference", "gold-human-only.csv", "--json")
    assert code == 0, err
    q = orjson.loads(out)
    assert (q["answered_fraction"], q["reference_accuracy"], q["n_answered"]) == (1.0, 0.0, 154)
    code, out, err = run_main("quality", "abstain-human-only.csv", "--reference", "gold-human-only.csv", "--json")
    assert code == 0, err
    assert orjson.loads(out)["answered_fraction"] == 0.0


def test_export_names_unknown_judges_and_datasets(judged, run_main):
    code, _, err = run_main("export", "verdicts", "--judge", "randon")
    assert code == 2 and "did you mean random" in err
    code, _, err = run_main("export", "verdicts", "--judge", "random", "--dataset", "human")
    assert code == 2 and "human-only" in err
