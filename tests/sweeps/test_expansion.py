"""`judge.sweeps` expands into real judges when params.yaml loads; a bad sweep exits 2 naming sweep, knob and value."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from novelty_audit.params import load_params

REPO = Path(__file__).resolve().parents[2]
BASE = "gpt-4o-mini-reference"


def params_with(tmp_path: Path, sweeps: dict, extra_judges: dict | None = None) -> Path:
    doc = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    doc["judge"]["sweeps"] = sweeps
    doc["judge"]["judges"].update(extra_judges or {})
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_one_at_a_time_makes_one_judge_per_value_with_the_base_spec_and_one_knob_changed(tmp_path):
    p = load_params(params_with(tmp_path, {"wording": {"base": BASE, "vary": {"votes": [1], "prompt": ["p3-v1", "p4-v1"], "temperature": [0.0]}}}))
    judges = p.judge.judges
    variants = sorted(k for k in judges if k.startswith("wording/"))
    # knobs in the fixed knob order (prompt before votes before temperature), values in the order written
    assert [k for k in judges if k.startswith("wording/")] == ["wording/prompt=p3-v1", "wording/prompt=p4-v1", "wording/votes=1", "wording/temperature=0.0"]
    base = judges[BASE]
    assert judges["wording/prompt=p3-v1"].args == {**base.args, "prompt": "p3-v1"}
    assert judges["wording/votes=1"].args == {**base.args, "votes": 1}
    assert judges["wording/temperature=0.0"].args["sampling"] == {**base.args["sampling"], "temperature": 0.0}
    assert all(judges[v].backend == base.backend and judges[v].enabled == base.enabled for v in variants)
    info = p.judge.sweep_variants()
    assert info["wording/votes=1"].sweep == "wording" and info["wording/votes=1"].base == BASE and info["wording/votes=1"].knobs == {"votes": 1}


def test_grid_makes_every_combination_with_knobs_in_a_fixed_order(tmp_path):
    p = load_params(params_with(tmp_path, {"g": {"base": BASE, "mode": "grid", "vary": {"votes": [1, 3], "prompt": ["p3-v1", "p4-v1"]}}}))
    assert [k for k in p.judge.judges if k.startswith("g/")] == [
        "g/prompt=p3-v1,votes=1", "g/prompt=p3-v1,votes=3", "g/prompt=p4-v1,votes=1", "g/prompt=p4-v1,votes=3"]
    assert p.judge.judges["g/prompt=p4-v1,votes=1"].args == {**p.judge.judges[BASE].args, "prompt": "p4-v1", "votes": 1}


def test_without_sweeps_the_judge_section_dumps_as_before_and_a_dump_loads_back_to_the_same_params(tmp_path):
    plain = load_params(REPO / "params.yaml").judge
    assert "sweeps" not in plain.model_dump()  # the judge stage's params digest does not move
    swept = load_params(params_with(tmp_path, {"s": {"base": BASE, "vary": {"votes": [1]}}})).judge
    assert type(swept).model_validate(swept.model_dump(mode="python")) == swept


def test_each_variant_has_its_own_config_digest_and_a_same_as_base_variant_shares_the_bases(tmp_path):
    from novelty_audit.judges import build_judges

    base = "gpt-4o-mini-p3"  # its pointwise_prompt is pinned, so a pairwise prompt without a pointwise form still builds
    p = load_params(params_with(tmp_path, {"s": {"base": base, "vary": {"prompt": ["p3-v1", "p4-v1"], "votes": [1]}}}))
    built = build_judges(p.judge, store_root=tmp_path / "store", names=[base, "s/prompt=p3-v1", "s/prompt=p4-v1", "s/votes=1"])
    d = {j.name: j.config_digest for j in built.judges}
    assert d["s/prompt=p3-v1"] == d[base]
    assert len({d[base], d["s/prompt=p4-v1"], d["s/votes=1"]}) == 3


@pytest.mark.parametrize(
    "sweep, extra, says",
    [
        ({"base": BASE, "vary": {"temprature": [0.5]}}, None, ["judge.sweeps.bad", "temprature", "unknown knob", "0.5"]),
        ({"base": BASE, "vary": {"votes": []}}, None, ["judge.sweeps.bad", "votes", "empty value list"]),
        ({"base": "no-such-judge", "vary": {"votes": [1]}}, None, ["judge.sweeps.bad.base", "no-such-judge", "not a judge"]),
        ({"base": BASE, "vary": {"votes": [0]}}, None, ["judge.sweeps.bad", "knob votes value 0", "greater than or equal to 1"]),
        ({"base": BASE, "vary": {"votes": [1]}}, {"bad/votes=1": {"backend": "random"}}, ["judge.sweeps.bad", "knob votes value 1", "clashes"]),
        ({"base": BASE, "mode": "zigzag", "vary": {"votes": [1]}}, None, ["judge.sweeps.bad", "mode"]),
        # a value only the backend's args model refuses: named by the sweep, the base, the knob and the variant id
        ({"base": BASE, "vary": {"reasoning": ["deep"]}}, None,
         ["judge.sweeps.bad: base gpt-4o-mini-reference (openai), knob reasoning value 'deep'", "judge.judges.bad/reasoning=deep.args.reasoning"]),
        # a knob the backend has no arg for: refused naming the sweep, the base and the knob
        ({"base": "random", "vary": {"temperature": [0.5]}}, None,
         ["judge.sweeps.bad: base random (random), knob temperature value 0.5", "has no arg sampling.temperature"]),
        ({"base": "distance-knn-tfidf", "vary": {"reasoning_effort": ["low"]}}, None,
         ["judge.sweeps.bad: base distance-knn-tfidf (distance-knn), knob reasoning_effort value 'low'", "has no arg sampling.reasoning_effort"]),
        ({"bases": [BASE, "distance-knn-tfidf"], "vary": {"orders": ["forward"]}}, None,
         ["judge.sweeps.bad: base distance-knn-tfidf (distance-knn), knob orders value 'forward'", "has no arg orders"]),
        ({"base": BASE, "vary": {"reasoning": ["low"]}}, None, ["knob reasoning value 'low'", "the reasoning budget is the knob `reasoning_effort`"]),
    ],
)
def test_a_bad_sweep_exits_2_naming_the_sweep_the_knob_and_the_value(tmp_path, monkeypatch, run_main, sweep, extra, says):
    params_with(tmp_path, {"bad": sweep}, extra)
    monkeypatch.chdir(tmp_path)
    code, out, err = run_main("judges")
    assert code == 2, out + err
    assert "Traceback" not in err
    text = " ".join((out + err).split())
    for s in says:
        assert s in text, text


def test_judges_lists_every_variant_with_its_sweep(tmp_path, monkeypatch, run_main):
    params_with(tmp_path, {"s": {"base": BASE, "vary": {"prompt": ["p3-v1"], "votes": [1]}}})
    monkeypatch.chdir(tmp_path)
    import json

    code, out, err = run_main("judges", "--json")
    assert code == 0, err
    rows = {j["judge"]: j for j in json.loads(out)["judges"]}
    assert rows["s/prompt=p3-v1"]["sweep"] == {"sweep": "s", "base": BASE, "knobs": {"prompt": "p3-v1"}}
    assert rows["s/votes=1"]["sweep"]["knobs"] == {"votes": 1}
    assert rows[BASE].get("sweep") is None
    code, out, _ = run_main("judges")
    assert code == 0 and "sweep" in out  # the table has a sweep column (cells may be cut to the terminal width)
