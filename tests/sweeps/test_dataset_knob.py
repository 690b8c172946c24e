"""The `dataset` knob of judge.sweeps and the Ai2 splits it varies over: every further split of the release is
pinned (not judged by default) and names the split it is a variant of; a dataset variant is its base's config
judged on that split alone, the base is not asked there, and reports/sweeps.json compares the variant with the base
on the original split: item by item for the plan-format rewrites (same pairs), as two samples for regenerated
low sides (other ideas)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from mock_llm import MockLLM

from novelty_audit.datasets import load_dataset
from novelty_audit.params import load_params
from novelty_audit.pipeline import run_stage

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared" / "data" / "novelty-judge-bench"
BACKBONES = ["human-plus-generated-gpt-5.4", "human-plus-generated-gpt-5.1", "human-plus-generated-opus-4-5"]
PLANS = {"human-only-plan": "human-only", "human-plus-generated-plan": "human-plus-generated"}
DEFAULT = ["human-only", "human-plus-generated"]
BASE = "mock-reference"
LIMIT = 3


def pairwise_files(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("pairwise*.yaml")}


def test_every_ai2_pairwise_split_shipped_is_pinned_and_none_is_judged_by_default() -> None:
    params = load_params(REPO / "params.yaml")
    pinned = {d.path.removeprefix("data/novelty-judge-bench/"): d.sha256 for d in params.pin.datasets.values()
              if d.path.startswith("data/novelty-judge-bench/")}
    assert set(pinned) == pairwise_files(REPO / "data/novelty-judge-bench")
    for rel, sha in pinned.items():
        assert hashlib.sha256((REPO / "data/novelty-judge-bench" / rel).read_bytes()).hexdigest() == sha, rel
    if SHARED.is_dir():  # the team's copy of the release: every split there is pinned here, byte for byte
        assert pairwise_files(SHARED) <= set(pinned)
        for rel in pairwise_files(SHARED):
            assert (SHARED / rel).read_bytes() == (REPO / "data/novelty-judge-bench" / rel).read_bytes(), rel
    # Pinned, not judged, and read by no other stage unless named.
    default = ["human-only", "human-plus-generated"]
    assert params.judge.run_datasets() == params.judge.datasets == default
    assert params.pools.check_datasets == default and params.pools.generated.dataset == "human-plus-generated"
    assert params.probe.datasets == ["human-only"] and params.signals.benchmark_datasets == ["human-only"]
    assert all(params.judge.datasets_of(j) == default for j in params.judge.judges)


@pytest.mark.parametrize("name", BACKBONES)
def test_each_backbone_split_keeps_the_human_pairs_and_regenerates_only_the_negatives(name: str) -> None:
    pins = load_params(REPO / "params.yaml").pin.datasets

    def load(n: str):
        return load_dataset(n, pins[n].model_copy(update={"path": str(REPO / pins[n].path)}))

    base, split = load("human-plus-generated"), load(name)
    assert (split.pairs.height, split.ideas.height, split.exclusions.height) == (154, 308, 0)
    positives = lambda n: set(n.ideas.filter(pl.col("label") == "POSITIVE")["text"])
    generated = lambda n: set(n.ideas.filter(pl.col("source") == "generated")["text"])
    assert positives(split) == positives(base)
    assert not generated(split) & generated(base)


@pytest.mark.parametrize("name", [*BACKBONES, *PLANS])
def test_each_further_split_names_its_original_and_is_paired_exactly_when_it_holds_the_same_pairs(name: str) -> None:
    pins = load_params(REPO / "params.yaml").pin.datasets

    def load(n: str):
        return load_dataset(n, pins[n].model_copy(update={"path": str(REPO / pins[n].path)}))

    of = pins[name].variant_of
    assert of is not None and of.split == PLANS.get(name, "human-plus-generated")
    split, original = load(name), load(of.split)
    same_pairs = set(split.pairs["pair_id"]) == set(original.pairs["pair_id"])
    assert of.paired == same_pairs == (name in PLANS)
    if of.paired:  # the same two papers per pair (titles), the same gold, every text rewritten
        gold = lambda n: dict(zip(n.pairs["pair_id"], n.pairs["gold_idea_id"]))
        assert gold(split) == gold(original)
        assert not set(split.ideas["text"]) & set(original.ideas["text"])
    assert pins["human-only"].variant_of is None and pins["human-plus-generated"].variant_of is None


def write_params(project: Path, judge: dict) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = judge
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def judge_section(base_url: str, vary: dict, mode: str = "one-at-a-time", datasets: list[str] = DEFAULT) -> dict:
    return {
        "datasets": datasets,
        "tasks": ["pairwise", "pointwise"],
        "progress": False,
        "limit": LIMIT,
        "judges": {
            BASE: {"backend": "openai", "args": {"model": "mock", "base_url": base_url, "api_key_env": "MOCK_API_KEY",
                                                 "votes": 1, "concurrency": 8, "pointwise_prompt": "reference-v1"}},
            "first": {"backend": "always-first"},
        },
        "sweeps": {"backbones": {"base": BASE, "mode": mode, "vary": vary}},
    }


def test_a_dataset_variant_is_the_base_spec_on_one_split_and_the_base_stays_on_its_own(tmp_path: Path) -> None:
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    write_params(tmp_path, judge_section("http://127.0.0.1:9/v1", {"prompt": ["p3-v1"], "dataset": [*BACKBONES[1:], "human-only-plan"]}))
    params = load_params(tmp_path / "params.yaml")
    jp = params.judge
    one = "backbones/dataset=human-plus-generated-gpt-5.1"
    assert sorted(jp.sweep_variants()) == sorted(["backbones/prompt=p3-v1", one, "backbones/dataset=human-plus-generated-opus-4-5",
                                                  "backbones/dataset=human-only-plan"])
    assert jp.judges[one].args == jp.judges[BASE].args and jp.judges[one].datasets == [BACKBONES[1]]
    assert jp.datasets_of(one) == [BACKBONES[1]]
    assert jp.datasets_of("backbones/prompt=p3-v1") == DEFAULT  # one knob at a time: the prompt variant stays put
    assert jp.datasets_of(BASE) == jp.datasets_of("first") == DEFAULT  # not asked on its variants' splits
    assert jp.run_datasets() == [*DEFAULT, *BACKBONES[1:], "human-only-plan"]
    assert params.pin.compared_with(one.split("=")[1]) == ("human-plus-generated", False)
    assert params.pin.compared_with("human-only-plan") == ("human-only", True)
    assert params.pin.compared_with("human-only") == ("human-only", True)
    # grid: every prompt on every split, the id's knobs in KNOBS order (dataset last)
    write_params(tmp_path, judge_section("http://127.0.0.1:9/v1", {"dataset": BACKBONES[1:2], "prompt": ["p3-v1", "p4-v1"]}, "grid"))
    jp = load_params(tmp_path / "params.yaml").judge
    assert sorted(jp.sweep_variants()) == [f"backbones/prompt={p},dataset={BACKBONES[1]}" for p in ("p3-v1", "p4-v1")]
    # the judge section of a run without a dataset knob dumps as before (no `datasets` key on any judge)
    assert "datasets" not in jp.model_dump()["judges"]["first"]


@pytest.mark.parametrize(("value", "datasets", "message"), [
    ("no-such-split", DEFAULT, "judge.sweeps.backbones.vary.dataset: 'no-such-split' is not a pinned pairwise split"),
    ("novbench-change", DEFAULT, "'novbench-change' is not a pinned pairwise split"),
    (3, DEFAULT, "value 3 is not a dataset name"),
    ("human-plus-generated-plan", ["human-only"], "judge.sweeps.backbones.vary.dataset: 'human-plus-generated-plan' is compared "
     "with base 'mock-reference' on 'human-plus-generated' (pin.datasets.human-plus-generated-plan.variant_of), which "
     "'mock-reference' is not asked about: add 'human-plus-generated' to judge.datasets"),
])  # fmt: skip
def test_a_dataset_value_that_cannot_be_compared_is_refused_when_params_load(tmp_path: Path, run_main, value, datasets, message) -> None:
    (tmp_path / "params.yaml").write_text((REPO / "params.yaml").read_text())
    write_params(tmp_path, judge_section("http://127.0.0.1:9/v1", {"dataset": [value]}, datasets=datasets))
    code, _, err = run_main("judges", "--params", str(tmp_path / "params.yaml"))
    assert code == 2 and message in " ".join(err.split()), err
    assert "Traceback" not in err


def test_a_variant_of_that_names_no_other_pinned_pairwise_split_is_refused_when_params_load(tmp_path: Path, run_main) -> None:
    raw = yaml.safe_load((REPO / "params.yaml").read_text())
    raw["pin"]["datasets"]["human-only-plan"]["variant_of"] = {"split": "novbench-change", "paired": True}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    code, _, err = run_main("judges", "--params", str(tmp_path / "params.yaml"))
    assert code == 2 and "pin.datasets.human-only-plan.variant_of.split: 'novbench-change' is not another pinned pairwise split" in err, err


SWEPT = [BACKBONES[1], "human-only-plan"]


@pytest.fixture
def swept(tiny: Path, monkeypatch, run_main):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-dataset-knob")
    run_stage("pin")
    with MockLLM(answer=answer_by_prompt) as mock:
        write_params(tiny, judge_section(mock.base_url, {"prompt": ["p3-v1"], "dataset": SWEPT}))
        code, out, err = run_main("stage", "judge", "--dry-run", "--json")
        assert code == 0 and mock.count == 0, err
        planned = json.loads(out)
        run_stage("judge")
        run_stage("metrics")
        yield tiny, mock, planned


def answer_by_prompt(body: dict, nth: int) -> str:
    text = "\n".join(str(m.get("content")) for m in body.get("messages", []))
    if '"answer": "yes"' in text or "<yes or no>" in text:
        return '{"answer": "%s"}' % ("yes", "no")[hashlib.sha256(text.encode()).digest()[0] % 2]
    return '{"answer": "%s"}' % "AB"[hashlib.sha256(text.encode()).digest()[0] % 2]


def test_dataset_variants_are_judged_on_their_split_only_and_compared_with_the_base_on_its_original(swept, run_main) -> None:
    project, mock, planned = swept
    v = pl.read_parquet(project / "artifacts/judge/verdicts.parquet")
    p = pl.read_parquet(project / "artifacts/judge/pointwise.parquet")
    where = lambda df, j: sorted(df.filter(pl.col("judge") == j)["dataset"].unique().to_list())
    for ds in SWEPT:
        vid = f"backbones/dataset={ds}"
        assert where(v, vid) == where(p, vid) == [ds]
        assert v.filter(pl.col("judge") == vid).height == LIMIT  # judge.limit applies per split
    assert where(v, BASE) == where(v, "backbones/prompt=p3-v1") == where(v, "first") == DEFAULT

    report = json.loads((project / "reports/sweeps.json").read_text())
    assert sorted(report) == sorted([*DEFAULT, *SWEPT])
    assert sorted(k for k in report["human-only"]["backbones"] if k != "_sweep") == ["backbones/prompt=p3-v1"]
    for ds, original, paired in ((BACKBONES[1], "human-plus-generated", False), ("human-only-plan", "human-only", True)):
        vid = f"backbones/dataset={ds}"
        rows = report[ds]["backbones"]
        assert sorted(k for k in rows if k != "_sweep") == [vid]  # where its numbers are measured, nowhere else
        row = rows[vid]
        assert row["compared_on"] == {"variant": ds, "base": original} and row["paired"] is paired and row["base"] == BASE
        ours = v.filter((pl.col("dataset") == ds) & (pl.col("judge") == vid))
        base = v.filter((pl.col("dataset") == original) & (pl.col("judge") == BASE))
        assert row["n_items"] == row["n_items_base"] == LIMIT
        assert row["strict_accuracy"] == pytest.approx(float((ours["verdict"] == ours["gold_idea_id"]).mean()))
        assert row["strict_accuracy_base"] == pytest.approx(float((base["verdict"] == base["gold_idea_id"]).mean()))
        if paired:  # judge.limit keeps the same pairs on both splits: every pair is compared with itself
            assert set(ours["pair_id"]) == set(base["pair_id"])
            flips = ours.join(base, on="pair_id").filter(pl.col("verdict") != pl.col("verdict_right")).height
            assert row["disagreement_rate"] == pytest.approx(flips / LIMIT)
        else:  # other ideas: nothing to pair, so no disagreement and no McNemar, and not zero either
            assert row["disagreement_rate"] is None and row["mcnemar_p"] is None and row["mcnemar_p_holm"] is None
            assert "disagreement_rate_ci_low" not in row
        assert row["delta_strict_accuracy_ci_low"] <= row["delta_strict_accuracy"] <= row["delta_strict_accuracy_ci_high"]

    # the dry run planned exactly the calls the run sent, each variant on its own split
    assert planned[f"backbones/dataset={BACKBONES[1]}"]["items"] == LIMIT + len(
        p.filter(pl.col("judge") == f"backbones/dataset={BACKBONES[1]}"))
    assert planned[BASE]["items"] == v.filter(pl.col("judge") == BASE).height + p.filter(pl.col("judge") == BASE).height
    # the base is asked on its own splits only; each dataset variant's calls are new (other texts)
    assert mock.count == sum(planned[j]["calls"] for j in planned if planned[j]["api_calls"]) - p.filter(
        pl.col("judge") == "backbones/prompt=p3-v1").height  # p3 changes the pairwise wording only

    code, out, err = run_main("judges", "--json")
    assert code == 0, err
    listed = {j["judge"]: j for j in json.loads(out)["judges"]}
    assert listed[f"backbones/dataset={BACKBONES[1]}"]["datasets"] == [BACKBONES[1]]
    assert listed[f"backbones/dataset={BACKBONES[1]}"]["sweep"]["knobs"] == {"dataset": BACKBONES[1]}
    assert listed[BASE]["datasets"] == DEFAULT


def test_editing_a_splits_variant_of_reruns_metrics_and_changes_how_its_variant_is_compared(swept) -> None:
    project, mock, _ = swept
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["pin"]["datasets"]["human-only-plan"]["variant_of"]["paired"] = False
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    mock.reset()
    run_stage("metrics")  # the judge stage's outputs are unchanged; only the comparison moves
    row = json.loads((project / "reports/sweeps.json").read_text())["human-only-plan"]["backbones"]["backbones/dataset=human-only-plan"]
    assert row["paired"] is False and row["disagreement_rate"] is None and row["mcnemar_p"] is None
    assert mock.count == 0
