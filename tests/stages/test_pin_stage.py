"""The pin stage: reruns reproduce digests; an edit moves exactly the edited idea and its pairs."""

from pathlib import Path

import pytest
import yaml

from novelty_audit.artifacts import load_manifest
from novelty_audit.datasets import accept_pins
from novelty_audit.errors import BadInputError, PinMismatchError
from novelty_audit.params import load_params
from novelty_audit.pipeline import run_stage

pytestmark = pytest.mark.slow  # every test here runs stages: seconds each

HO = Path("data/novelty-judge-bench/human-only/pairwise.yaml")
TITLE = "Learning from Peers in Reasoning Models"


def _edit_idea_text(title: str) -> None:
    data = yaml.safe_load(HO.read_text())
    for entry in data.values():
        for slot in (0, 1):
            if entry["metadata"][slot]["title"] == title:
                entry["ideas"][slot] = entry["ideas"][slot] + " We also release code."
    HO.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def _items(m, rel):
    return m.output(rel).items


def test_two_runs_give_identical_manifests_and_outputs(project):
    a = run_stage("pin")
    first = {p: p.read_bytes() for p in Path("artifacts/pin").rglob("*") if p.is_file()}
    b = run_stage("pin", force=True)
    second = {p: p.read_bytes() for p in Path("artifacts/pin").rglob("*") if p.is_file()}
    assert a == b and a.digest() == b.digest()
    assert first == second


def test_editing_one_idea_moves_only_that_idea_and_its_pairs(project):
    before = run_stage("pin")
    _edit_idea_text(TITLE)
    with pytest.raises(PinMismatchError):
        run_stage("pin")
    changes = accept_pins(Path("params.yaml"), load_params(), Path("artifacts/pin"))
    after = run_stage("pin")

    ideas_b, ideas_a = _items(before, "human-only/ideas.parquet"), _items(after, "human-only/ideas.parquet")
    assert ideas_b.keys() == ideas_a.keys()  # ids are stable under a text edit
    moved = {k for k in ideas_a if ideas_a[k] != ideas_b[k]}
    assert len(moved) == 1
    (edited,) = moved

    import polars as pl

    pairs = pl.read_parquet("artifacts/pin/human-only/pairs.parquet")
    holding = set(pairs.filter((pl.col("idea_0") == edited) | (pl.col("idea_1") == edited))["pair_id"])
    pairs_b, pairs_a = _items(before, "human-only/pairs.parquet"), _items(after, "human-only/pairs.parquet")
    assert {k for k in pairs_a if pairs_a[k] != pairs_b[k]} == holding and holding

    # The other split is untouched, and the manifest says which input moved.
    assert _items(after, "human-plus-generated/ideas.parquet") == _items(before, "human-plus-generated/ideas.parquet")
    moved_inputs = {r.path for r in after.inputs} - {(r.path) for r in after.inputs if r in before.inputs}
    assert moved_inputs == {HO.as_posix()}
    ho_change = next(c for c in changes if c.dataset == "human-only")
    assert set(ho_change.items["changed"]) == {edited} | holding
    assert not ho_change.items["added"] and not ho_change.items["removed"]
    assert not next(c for c in changes if c.dataset == "human-plus-generated").changed


def _break_one_winner(key: int) -> None:
    data = yaml.safe_load(HO.read_text())
    data[key]["expected_winners"] = [0, 1]
    HO.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))


def test_bad_items_stop_the_stage_naming_file_item_and_field(project):
    _break_one_winner(3)
    accept_pins(Path("params.yaml"), load_params(), Path("artifacts/pin"))
    with pytest.raises(BadInputError) as exc:
        run_stage("pin")
    assert f"{HO.as_posix()}: item 3, field expected_winners" in str(exc.value)
    assert not Path("artifacts/pin").exists()


def test_exclude_mode_records_bad_items_in_the_exclusions_table(project):
    _break_one_winner(3)
    accept_pins(Path("params.yaml"), load_params(), Path("artifacts/pin"))
    raw = yaml.safe_load(Path("params.yaml").read_text())
    raw["pin"]["on_bad_item"] = "exclude"
    Path("params.yaml").write_text(yaml.safe_dump(raw))
    m = run_stage("pin")
    import polars as pl

    ex = pl.read_parquet("artifacts/pin/human-only/exclusions.parquet")
    assert ex.select("item", "field").rows() == [("3", "expected_winners")]
    assert m.summary["human-only"]["pairs"] == 153 and m.summary["human-only"]["excluded"] == 1


def test_accept_rewrites_only_the_moved_pin_line_of_params_yaml(project):
    before = Path("params.yaml").read_text().splitlines()
    _edit_idea_text(TITLE)
    accept_pins(Path("params.yaml"), load_params(), Path("artifacts/pin"))
    text = Path("params.yaml").read_text()
    assert "# The only configuration source" in text
    after = text.splitlines()
    # Long flow-style lines, comments and `null`s stay as written: the diff is the one sha256 line.
    assert len(after) == len(before)
    moved = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(moved) == 1 and moved[0][0].strip().startswith("sha256: f17e8d49") and moved[0][1].strip().startswith("sha256: ")
    assert load_params().pin.datasets["human-only"].sha256 != "f17e8d499b4cb0e0e85c41d55352df42f0dc9b5231a8544e86bb7b62043a67e3"


def test_the_manifest_records_code_params_inputs_and_tools(project):
    m = run_stage("pin")
    assert "stages.pin" in m.code.modules and "novelty_audit.datasets._normalize" in m.code.modules
    assert set(m.params) == {"pin"}
    pins = load_params().pin.datasets.values()  # every pinned file, and the published results pinned beside one
    assert {r.path for r in m.inputs} == {d.path for d in pins} | {d.published.path for d in pins if d.published}
    assert HO.as_posix() in {r.path for r in m.inputs}
    assert {"python", "polars"} <= set(m.tools)
    assert load_manifest(Path("artifacts/pin")) == m
