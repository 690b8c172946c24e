"""Published NovBench rows belong to their dataset: each file is pinned beside the dataset it was measured on,
checked by the pin stage, and only that dataset's own data set is shown beside it; the study's expert row,
reused across sets, says so beside the row."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import orjson
import pytest
import yaml

from novelty_audit.errors import PinMismatchError
from novelty_audit.novbench import (
    EXPERT_REUSED_NOTE,
    published_rows,
    read_published,
    report_section,
)
from novelty_audit.params import load_params
from novelty_audit.pipeline import run_stage

REPO = Path(__file__).resolve().parents[2]
RESULTS = REPO / "data" / "novbench" / "result_dict_change.json"


def test_a_dataset_gets_only_its_own_data_sets_rows_with_the_published_values_unmoved() -> None:
    doc = orjson.loads(RESULTS.read_bytes())
    rows = published_rows(RESULTS, "novbench-change", "change")
    assert {r["dataset"] for r in rows} == {"novbench-change"}
    assert {r["data"].split()[0] for r in rows} == {"change"}
    gpt = {r["prompt"]: r for r in rows if r["generator"] == "gpt-4o"}
    assert sorted(gpt) == ["few", "rag", "zero"]
    for prompt, r in gpt.items():
        entry = doc[f"gpt-4o_{prompt}_change"]
        assert (r["coverage"], r["dist_acc"], r["clarity"], r["relevance_ims"]) == (
            entry["model_coverage"], entry["model_dist_acc"], entry["model_clarity"], entry["model_relevance"])
    (expert,) = [r for r in rows if r["generator"] == "expert as model"]
    assert expert["clarity"] == doc["gpt-4o_zero_change"]["exp_clarity"] == pytest.approx(0.5617, abs=1e-4)
    # the other sets of the same file are theirs, not this dataset's
    assert {r["data"].split()[0] for r in published_rows(RESULTS, "x", "del")} == {"del"}


def test_the_expert_row_the_study_reused_across_sets_says_so_beside_the_row() -> None:
    rows = published_rows(RESULTS, "novbench-change", "change")
    (expert,) = [r for r in rows if r["generator"] == "expert as model"]
    assert "reused" in expert["note"] and "0.5434" in expert["note"] and "0.5617" in expert["note"]
    assert all(r["note"] == "" for r in rows if r is not expert)
    metrics = {"novbench-change": {"expert": {"coverage": 1.0, "dist_acc": 1.0, "clarity_kc": 0.785, "clarity_ls": 0.884,
                                              "n_papers": 100, "n_items": 471, "n_invalid": 0}}}
    sec = report_section(metrics, rows, None)
    measured, published = sec.markdown.split("**Published, not rerun**")
    line = next(ln for ln in published.splitlines() if "expert as model" in ln)
    assert "0.562" in line and "not comparable with the measured expert row" in line  # the note sits on the row itself
    assert "0.5434" not in measured


def test_an_expert_row_computed_per_set_carries_no_reuse_note(tmp_path: Path) -> None:
    own = {f"gpt-4o_zero{suffix}": {"model_coverage": 0.2, "exp_coverage": 1.0, "exp_clarity": clarity}
           for suffix, clarity in (("", 0.5), ("_change", 0.6), ("_del", 0.7))}
    path = tmp_path / "result_dict_own.json"
    path.write_text(json.dumps(own))
    (expert,) = [r for r in published_rows(path, "mine", "change") if r["generator"] == "expert as model"]
    assert expert["clarity"] == 0.6 and expert["note"] == ""
    assert EXPERT_REUSED_NOTE not in json.dumps(published_rows(path, "mine"))


def pin_other_novbench_set(project: Path, published: dict | None) -> None:
    """A second NovBench dataset pinned from another file (here a copy of the shipped one)."""
    raw = yaml.safe_load((project / "params.yaml").read_text())
    other = project / "data/novbench/other_set.json"
    shutil.copyfile(project / raw["pin"]["datasets"]["novbench-change"]["path"], other)
    entry = {**raw["pin"]["datasets"]["novbench-change"], "path": "data/novbench/other_set.json"}
    entry.pop("published")
    if published is not None:
        entry["published"] = published
    raw["pin"]["datasets"]["novbench-other"] = entry
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def test_the_pin_stage_keys_published_rows_by_dataset_and_a_set_without_a_pin_shows_none(tiny: Path) -> None:
    pin_other_novbench_set(tiny, None)
    run_stage("pin")
    files, rows = read_published(tiny / "artifacts/pin")
    assert [f.parent.name for f in files] == ["novbench-change"]
    assert {r["dataset"] for r in rows} == {"novbench-change"} and {r["data"].split()[0] for r in rows} == {"change"}
    assert not (tiny / "artifacts/pin/novbench-other/published.json").exists()
    sec = report_section({}, rows, None)
    assert "novbench-other" not in sec.markdown and "novbench-change" in sec.markdown


def test_a_set_pinned_with_its_own_published_file_shows_its_own_rows(tiny: Path) -> None:
    sha = load_params(tiny / "params.yaml").pin.datasets["novbench-change"].published.sha256
    pin_other_novbench_set(tiny, {"path": "data/novbench/result_dict_change.json", "sha256": sha, "data": "del"})
    run_stage("pin")
    _, rows = read_published(tiny / "artifacts/pin")
    by_ds = {ds: {r["data"].split()[0] for r in rows if r["dataset"] == ds} for ds in ("novbench-change", "novbench-other")}
    assert by_ds == {"novbench-change": {"change"}, "novbench-other": {"del"}}


def test_a_published_file_that_moved_stops_the_pin_stage_naming_the_dataset(tiny: Path) -> None:
    path = tiny / "data/novbench/result_dict_change.json"
    path.write_bytes(path.read_bytes().replace(b"0.56", b"0.57", 1))
    with pytest.raises(PinMismatchError, match="dataset novbench-change: published results"):
        run_stage("pin")


def test_published_results_are_refused_on_a_pairwise_split(tmp_path: Path, run_main) -> None:
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    raw["pin"]["datasets"]["human-only"]["published"] = raw["pin"]["datasets"]["novbench-change"]["published"]
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    code, _, err = run_main("judges", "--params", str(tmp_path / "params.yaml"))
    assert code == 2 and "pin.datasets.human-only" in err and "only a novbench dataset" in err, err
