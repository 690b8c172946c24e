"""A file in the Ai2 expert-annotation format imports with no hand-written join.

The file is built from the embedded benchmark: shown orders swapped on every other row (as in the release),
the expert agreeing with gold on every row, a model's `predicted` column right on two rows in three, and one
row whose texts match no pinned pair. The pipeline's own stages pin, judge and score it.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import orjson
import polars as pl
import pytest
import yaml

from novelty_audit.artifacts import load_manifest
from novelty_audit.errors import BadInputError, ConfigError
from novelty_audit.pipeline import run_stage
from novelty_audit.report import ReportParams, build_report, load_sources

COLUMNS = ["item_id", "problem_id", "source_file", "generation_model", "judge_model", "shown_A_idea",
           "shown_B_idea", "gold", "predicted", "annotation", "annotation_reasoning"]
N = 30


def expert_file(project: Path) -> tuple[Path, int]:
    """30 human-only pairs in the Ai2 format + one unmatched row; returns (path, rows where predicted is right)."""
    pairs = pl.read_parquet(project / "artifacts/pin/human-only/pairs.parquet").sort("pair_id").head(N)
    ideas = pl.read_parquet(project / "artifacts/pin/human-only/ideas.parquet")
    text = dict(zip(ideas["idea_id"], ideas["text"]))
    rows, right = [], 0
    for k, p in enumerate(pairs.iter_rows(named=True)):
        shown = (p["idea_0"], p["idea_1"]) if k % 2 == 0 else (p["idea_1"], p["idea_0"])
        gold = "A" if shown[0] == p["gold_idea_id"] else "B"
        wrong = "B" if gold == "A" else "A"
        predicted = gold if k % 3 else wrong
        right += predicted == gold
        rows.append({
            "item_id": k, "problem_id": p["source_key"], "source_file": "human-only/pairwise.yaml",
            "generation_model": "", "judge_model": "gpt-5.4", "shown_A_idea": text[shown[0]],
            "shown_B_idea": text[shown[1]], "gold": gold, "predicted": predicted, "annotation": gold,
            "annotation_reasoning": "…",
        })
    rows.append({**rows[0], "item_id": N, "shown_A_idea": "An idea that is in no pinned split."})
    path = project / "data/imports/expert_annotations.csv"
    path.parent.mkdir(parents=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    return path, right


def benchmark_only(project: Path) -> None:
    """Pin and judge only the two Ai2 splits the project fixture copies."""
    raw = yaml.safe_load((project / "params.yaml").read_text())
    benchmark = ("human-only", "human-plus-generated")
    raw["pin"]["datasets"] = {k: raw["pin"]["datasets"][k] for k in benchmark}
    raw["judge"]["datasets"] = list(benchmark)
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def only_import_judges(project: Path) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    cols = {"text_a": "shown_A_idea", "text_b": "shown_B_idea"}
    path = "data/imports/expert_annotations.csv"
    raw["judge"]["judges"] = {
        "ai2-expert": {"backend": "import", "args": {"path": path, "columns": {**cols, "vote": "annotation"}, "on_unmatched": "exclude"}},
        "gpt-5.4-ai2": {"backend": "import", "args": {"path": path, "columns": {**cols, "vote": "predicted"}, "on_unmatched": "exclude"}},
        "random": {"backend": "random"},
    }
    raw["judge"]["tasks"] = ["pairwise", "pointwise"]
    raw["metrics"]["bootstrap_resamples"] = 200
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def add_judge_dep(project: Path, dep: str) -> None:
    raw = yaml.safe_load((project / "dvc.yaml").read_text())
    raw["stages"]["judge"]["deps"].append(dep)
    (project / "dvc.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def test_ai2_expert_file_imports_by_shown_text_and_scores_on_covered_pairs(project):
    benchmark_only(project)
    run_stage("pin")
    path, right = expert_file(project)
    only_import_judges(project)
    with pytest.raises(ConfigError, match="data/imports"):  # the file must be a dvc dep of the judge stage
        run_stage("judge")
    add_judge_dep(project, "data/imports")
    judge = run_stage("judge")

    excl = judge.summary["exclusions"]
    for j in ("ai2-expert", "gpt-5.4-ai2"):
        (row,) = excl[j]
        assert (row["row"], row["field"]) == (N + 1, "shown_A_idea") and "matches no pinned idea" in row["reason"]

    run_stage("metrics")
    doc = orjson.loads((project / "artifacts/metrics/metrics.json").read_bytes())
    ho = doc["human-only"]
    assert ho["ai2-expert"]["covered"] == N
    assert ho["ai2-expert"]["accuracy_on_covered"] == 1.0  # the expert agrees with gold on every row
    assert ho["ai2-expert"]["coverage"] == pytest.approx(N / 154)
    assert ho["ai2-expert"]["strict_accuracy"] == pytest.approx(N / 154)
    assert ho["gpt-5.4-ai2"]["accuracy_on_covered"] == pytest.approx(right / N)
    assert ho["random"]["coverage"] == 1.0
    # the file matches no human-plus-generated pair: no entry there, not a 0.000 row
    assert set(doc["human-plus-generated"]) == {"random"}
    manifest = load_manifest(project / "artifacts/judge")
    assert manifest.summary["exclusions"] == excl


def test_an_import_judge_whose_file_has_no_probe_pair_gets_no_probe_entry(project):
    benchmark_only(project)
    run_stage("pin")
    run_stage("probe")
    expert_file(project)
    only_import_judges(project)
    add_judge_dep(project, "data/imports")
    run_stage("judge")
    run_stage("metrics")
    doc = orjson.loads((project / "artifacts/metrics/metrics.json").read_bytes())
    assert set(doc["human-only:injection"]) == {"random"}  # not "attack success 0.000 over 200 eligible probes"
    assert doc["human-only:injection"]["random"]["n_eligible"] > 0
    assert {"ai2-expert", "gpt-5.4-ai2"} <= set(doc["human-only"])
    probe_pairs = pl.read_parquet(project / "artifacts/metrics/probe_pairs.parquet")
    assert set(probe_pairs["judge"]) == {"random"}
    report = build_report(load_sources(project / "artifacts/metrics"), ReportParams()).markdown
    table = report.split("### human-only:injection", 1)[1].split("\n#", 1)[0]
    assert "| random |" in table and "ai2-expert" not in table and "gpt-5.4-ai2" not in table


def test_a_limited_run_counts_rows_of_pairs_outside_its_subset_apart_from_unmatched_rows(project, capsys):
    benchmark_only(project)
    run_stage("pin")
    path, _ = expert_file(project)
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(lines[:-1]), encoding="utf-8")  # the N rows that all name pinned pairs
    only_import_judges(project)
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"]["limit"] = 3
    for j in ("ai2-expert", "gpt-5.4-ai2"):
        del raw["judge"]["judges"][j]["args"]["on_unmatched"]  # the default: an unmatched row is an error
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    add_judge_dep(project, "data/imports")
    judge = run_stage("judge")  # no "imported rows match no single pinned pair"

    verdicts = pl.read_parquet(project / "artifacts/judge/verdicts.parquet").filter(pl.col("judge") == "ai2-expert")
    placed = int(verdicts.filter(pl.col("dataset") == "human-only")["n_valid"].sum())
    outside = N - placed
    assert verdicts.filter(pl.col("dataset") == "human-only").height == 3 and outside > 0
    err = capsys.readouterr().err
    assert f"judge ai2-expert: {outside} imported row(s) outside the subset (judge.limit)" in err
    excl = judge.summary["exclusions"]["ai2-expert"]
    assert len(excl) == outside  # every row left out is recorded, each with its reason
    assert all(e["reason"].startswith("outside the subset: pair ") and e["field"] == "shown_A_idea" for e in excl)


def test_a_limited_run_still_refuses_a_row_that_matches_no_pinned_pair(project):
    benchmark_only(project)
    run_stage("pin")
    expert_file(project)  # its last row names an idea in no pinned split
    only_import_judges(project)
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"]["limit"] = 3
    raw["judge"]["judges"]["ai2-expert"]["args"]["on_unmatched"] = "error"
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    add_judge_dep(project, "data/imports")
    with pytest.raises(BadInputError, match=r"1 imported row\(s\) match no single pinned pair \(\d+ other row\(s\) name pinned pairs outside"):
        run_stage("judge")


def test_excluded_rows_are_one_console_line_per_reason_naming_the_pinned_split_that_would_take_them(project, capsys):
    """The Ai2 expert file also holds rows of the gpt-5.4 backbone split: pinned but not judged, they are excluded
    with a line that counts them and names that split, apart from a row that no pinned split holds."""
    raw = yaml.safe_load((project / "params.yaml").read_text())
    split = "human-plus-generated-gpt-5.4"
    raw["pin"]["datasets"] = {k: raw["pin"]["datasets"][k] for k in ("human-only", "human-plus-generated", split)}
    raw["judge"]["datasets"] = ["human-only", "human-plus-generated"]
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    run_stage("pin")
    path, _ = expert_file(project)
    pairs = pl.read_parquet(project / f"artifacts/pin/{split}/pairs.parquet").sort("pair_id").head(4)
    ideas = pl.read_parquet(project / f"artifacts/pin/{split}/ideas.parquet")
    text = dict(zip(ideas["idea_id"], ideas["text"]))
    with path.open("a", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        for k, p in enumerate(pairs.iter_rows(named=True)):
            w.writerow({"item_id": N + 1 + k, "problem_id": p["source_key"], "source_file": "human-plus-generated/backbone-gpt-5.4/pairwise.yaml",
                        "generation_model": "gpt-5.4", "judge_model": "gpt-5.4", "shown_A_idea": text[p["idea_0"]],
                        "shown_B_idea": text[p["idea_1"]], "gold": "A", "predicted": "A", "annotation": "A", "annotation_reasoning": "…"})  # fmt: skip
    only_import_judges(project)
    add_judge_dep(project, "data/imports")
    capsys.readouterr()
    judge = run_stage("judge")
    assert len(judge.summary["exclusions"]["ai2-expert"]) == 5  # every row still recorded with its own reason
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("judge ai2-expert: ")]
    # One line per reason (which of the two texts no judged split holds), each with its count and the split.
    excluded = taken = 0
    for ln in lines:
        n = int(re.search(r": (\d+) imported row", ln).group(1))
        k = re.search(rf"the pinned split {split} would take (them|(\d+) of them)", ln)
        excluded += n
        taken += 0 if k is None else n if k.group(1) == "them" else int(k.group(2))
    assert (excluded, taken) == (5, 4), lines
    assert len(lines) == len({ln.split(" (rows ")[0] for ln in lines})  # no reason twice
