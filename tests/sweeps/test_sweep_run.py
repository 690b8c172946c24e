"""A sweep over a mock API judge (prompts reference / p3 / p4 × votes 1 / 3, one-at-a-time) through the judge and
metrics stages: reports/sweeps.json holds every variant's figures, checked against a direct count from
verdicts.parquet; editing one knob of the base re-asks only the variants that inherit it."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import polars as pl
import pytest
import yaml
from mock_llm import MockLLM

from novelty_audit.pipeline import run_stage

BASE = "mock-reference"
VARIANTS = ["prompts/prompt=reference-v1", "prompts/prompt=p3-v1", "prompts/prompt=p4-v1", "prompts/votes=1", "prompts/votes=3"]
LIMIT = 8
FIELDS = ("n_items", "strict_accuracy", "strict_accuracy_base", "delta_strict_accuracy", "delta_strict_accuracy_ci_low",
          "delta_strict_accuracy_ci_high", "mcnemar_p", "mcnemar_p_holm", "disagreement_rate", "disagreement_rate_ci_low",
          "disagreement_rate_ci_high", "tie_rate", "tie_rate_base", "delta_tie_rate", "delta_order_flip_rate")  # fmt: skip


def by_prompt_hash(body: dict, nth: int) -> str:
    """A or B from the digest of the exact prompt (and how often it was asked): each prompt wording and each
    vote answers differently, deterministically."""
    text = "\n".join(str(m.get("content")) for m in body.get("messages", []))
    label = "AB"[hashlib.sha256(f"{text}\n{nth}".encode()).digest()[0] % 2]
    return f'Both ideas are plausible.\n{{"answer": "{label}"}}'


def configure(project: Path, mock: MockLLM, base_prompt: str = "reference-v1") -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {
        "datasets": ["human-only", "human-plus-generated"],
        "tasks": ["pairwise"],
        "progress": False,
        "limit": LIMIT,
        "judges": {
            BASE: {"backend": "openai", "args": {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY",
                                                 "prompt": base_prompt, "votes": 3, "concurrency": 16}},
        },
        "sweeps": {"prompts": {"base": BASE, "mode": "one-at-a-time", "vary": {"prompt": ["reference-v1", "p3-v1", "p4-v1"], "votes": [1, 3]}}},
    }
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


@pytest.fixture
def swept(tiny: Path, monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", "sk-test-sweeps")
    run_stage("pin")
    with MockLLM(answer=by_prompt_hash) as mock:
        configure(tiny, mock)
        run_stage("judge")
        run_stage("metrics")
        yield tiny, mock


def test_sweeps_json_holds_every_variant_against_its_base_and_disagreement_equals_a_direct_count(swept):
    project, _ = swept
    report = json.loads((project / "reports/sweeps.json").read_text())
    assert report == json.loads((project / "artifacts/metrics/sweeps.json").read_text())
    v = pl.read_parquet(project / "artifacts/judge/verdicts.parquet")
    assert sorted(v["judge"].unique().to_list()) == sorted([BASE, *VARIANTS])
    assert sorted(report) == ["human-only", "human-plus-generated"]
    for ds, sweeps in report.items():
        rows = sweeps["prompts"]
        assert sorted(k for k in rows if k != "_sweep") == sorted(VARIANTS)
        base = v.filter((pl.col("dataset") == ds) & (pl.col("judge") == BASE)).select("pair_id", "verdict", "gold_idea_id")
        for vid in VARIANTS:
            r = rows[vid]
            for f in FIELDS:
                assert f in r, (ds, vid, f)
            other = v.filter((pl.col("dataset") == ds) & (pl.col("judge") == vid)).select("pair_id", "verdict", "gold_idea_id")
            both = base.join(other, on="pair_id", suffix="_v")
            assert r["n_items"] == both.height == LIMIT  # judge.limit applies to the variants too
            differ = int((both["verdict"] != both["verdict_v"]).sum())
            assert r["disagreement_rate"] == pytest.approx(differ / both.height)
            acc_v = float((both["verdict_v"] == both["gold_idea_id"]).mean())
            acc_b = float((both["verdict"] == both["gold_idea_id"]).mean())
            assert r["delta_strict_accuracy"] == pytest.approx(acc_v - acc_b)
            assert r["tie_rate"] == pytest.approx(float((both["verdict_v"] == "tie").mean()))
            assert r["delta_strict_accuracy_ci_low"] <= r["delta_strict_accuracy"] <= r["delta_strict_accuracy_ci_high"]
            assert r["disagreement_rate_ci_low"] <= r["disagreement_rate"] <= r["disagreement_rate_ci_high"]
            assert 0 <= r["mcnemar_p"] <= r["mcnemar_p_holm"] <= 1
        # the variants equal to the base (same prompt, same votes) agree with it on every item; other wordings do not
        assert rows["prompts/prompt=reference-v1"]["disagreement_rate"] == 0 == rows["prompts/votes=3"]["disagreement_rate"]
        assert rows["prompts/prompt=p3-v1"]["disagreement_rate"] > 0 or rows["prompts/prompt=p4-v1"]["disagreement_rate"] > 0
        accs = [rows[f"prompts/prompt={p}"]["strict_accuracy"] for p in ("reference-v1", "p3-v1", "p4-v1")]
        assert rows["_sweep"]["prompt_spread"] == pytest.approx(max(accs) - min(accs))
        assert rows["_sweep"]["prompt_spread_n_items"] == LIMIT and "model_spread" not in rows["_sweep"]


@pytest.mark.slow
def test_editing_one_knob_of_the_base_reasks_only_the_variants_that_inherit_it(swept):
    project, mock = swept
    before = pl.read_parquet(project / "artifacts/judge/verdicts.parquet")
    asked = mock.count
    configure(project, mock, base_prompt="p5-v1")  # the prompt variants set their own prompt: they do not inherit it
    run_stage("judge")
    run_stage("metrics")
    new = mock.requests[asked:]
    assert new, "the base and its votes variants use the new wording and must be asked"
    p5 = (Path(__file__).resolve().parents[2] / "novelty_audit/prompts/pairwise-p5-v1.txt").read_text()
    marker = next(line for line in p5.splitlines() if len(line) > 40 and "{{" not in line and "[" not in line)
    assert all(marker in "\n".join(str(m.get("content")) for m in r.body["messages"]) for r in new), "only p5 prompts are sent"
    after = pl.read_parquet(project / "artifacts/judge/verdicts.parquet")
    for vid in ("prompts/prompt=reference-v1", "prompts/prompt=p3-v1", "prompts/prompt=p4-v1"):
        cols = ["dataset", "pair_id", "verdict", "config_digest", "call_digests"]
        assert after.filter(pl.col("judge") == vid).select(cols).equals(before.filter(pl.col("judge") == vid).select(cols)), vid
    for vid in (BASE, "prompts/votes=1", "prompts/votes=3"):
        old = before.filter(pl.col("judge") == vid)["config_digest"].unique().to_list()
        assert after.filter(pl.col("judge") == vid)["config_digest"].unique().to_list() != old, vid
    # A second run after the edit asks nothing: every variant is a cache hit.
    asked = mock.count
    run_stage("judge", force=True)
    assert mock.count == asked


def check_latex_tabular(tex: str) -> list[list[str]]:
    """Fail unless `tex` is a well-formed booktabs table: balanced environments and braces, \\toprule, \\midrule and
    \\bottomrule, one column spec letter per cell in every row, every row ended by `\\\\`, no unescaped special
    character. Returns the rows' cells (the head row first; group heading rows left out), stacked lines joined by a
    space, typeset minus signs as `-`."""
    import re

    stack = []
    for kind, env in re.findall(r"\\(begin|end)\{(\w+\*?)\}", tex):
        if kind == "begin":
            stack.append(env)
        else:
            assert stack and stack.pop() == env, f"\\end{{{env}}} closes nothing open"
    assert not stack, f"unclosed environments: {stack}"
    unescaped = re.sub(r"\\[&%$#_{}]|\\text\w+\{\}", "", tex)
    assert unescaped.count("{") == unescaped.count("}"), "unbalanced braces"
    spec = re.search(r"\\begin\{tabular\}\{@\{\}([lcr]+)@\{\}\}", tex)
    assert spec, "no tabular column spec"
    ncols = len(spec.group(1))
    body = tex[spec.end(): tex.rindex(r"\end{tabular}")]
    body = re.sub(r"\\begin\{tabular\}\[b\]\{@\{\}[cr]@\{\}\}(.*?)\\end\{tabular\}",
                  lambda m: m.group(1).replace("\\\\", " ").replace(r"\scriptsize", ""), body)
    assert body.strip().startswith(r"\toprule") and body.strip().endswith(r"\bottomrule") and r"\midrule" in body
    rows = []
    for line in body.strip().splitlines():
        if line.strip() in (r"\toprule", r"\midrule", r"\bottomrule") or line.startswith((r"\multicolumn", r"\cmidrule", " & ")):
            continue
        assert line.endswith(r" \\"), f"row not ended by \\\\: {line}"
        cells = re.split(r"(?<!\\)&", line[: -len(r" \\")])
        assert len(cells) == ncols, f"{len(cells)} cells for {ncols} columns: {line}"
        for c in cells:
            assert not re.search(r"(?<!\\)[_%#^~]", c.replace(r"\textasciitilde{}", "").replace(r"\textasciicircum{}", "")), c
        rows.append([c.strip().replace("$-$", "-").replace(r"\_", "_").replace(r"\textasciitilde{}", "~") for c in cells])
    return rows


def numbers(cell: str) -> list[float]:
    import re

    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", cell)]


def in_percent(value: float, low: float, high: float) -> list[float]:
    """What a LaTeX cell shows: percent to one decimal, the interval unless it has zero width at that precision."""
    return [100 * value] if f"{100 * low:.1f}" == f"{100 * high:.1f}" else [100 * value, 100 * low, 100 * high]


def csv_rows(text: str) -> list[dict[str, str]]:
    import csv
    import io

    return list(csv.DictReader(io.StringIO(text)))


def test_export_table_latex_is_a_well_formed_tabular_whose_values_match_metrics_json_and_sweeps_json(swept, run_main):
    project, _ = swept
    metrics = json.loads((project / "artifacts/metrics/metrics.json").read_text())
    code, tex, err = run_main("export", "table", "metrics", "--format", "latex", "--intervals")
    assert code == 0, err
    rows = check_latex_tabular(tex)
    header, body = rows[0], rows[1:]
    assert header[:3] == ["judge", "pairs", "strict acc."]
    assert len(body) == sum(1 for j in metrics.values() for m in j.values() if "n_pairs" in m) > 0
    pins = yaml.safe_load((project / "params.yaml").read_text())["pin"]["datasets"]
    assert all(f"{ds} ({pins[ds]['sha256'][:12]})" in tex for ds in metrics)  # the caption names the dataset pins
    from novelty_audit.audit import current_run_id

    assert f"run {current_run_id(project / 'artifacts')}" in tex
    # The CSV holds the same rows in the same order, unrounded, with the dataset and the full id.
    code, text, err = run_main("export", "table", "metrics", "--format", "csv", "--intervals")
    assert code == 0, err
    records = csv_rows(text)
    assert len(records) == len(body)
    for r, rec in zip(body, records):
        m = metrics[rec["dataset"]][rec["judge"]]
        assert float(rec["strict_accuracy"]) == m["strict_accuracy"] and float(rec["strict_accuracy_low"]) == m["strict_accuracy_ci_low"]
        assert r[0] == rec["judge"] or (len(rec["judge"]) > 16 and f"{r[0]}: " in tex)  # a long id: short label + legend
        assert numbers(r[1]) == [m["n_pairs"]]
        want = in_percent(m["strict_accuracy"], m["strict_accuracy_ci_low"], m["strict_accuracy_ci_high"])
        assert numbers(r[2]) == pytest.approx(want, abs=0.05)  # percent, one decimal
    sweeps = json.loads((project / "reports/sweeps.json").read_text())
    code, tex, err = run_main("export", "table", "sweeps", "--format", "latex", "--intervals", "--columns", "n_items,disagreement_rate")
    assert code == 0, err
    rows = check_latex_tabular(tex)
    header, body = rows[0], rows[1:]
    code, text, _ = run_main("export", "table", "sweeps", "--format", "csv", "--columns", "n_items,disagreement_rate")
    records = csv_rows(text)
    assert sorted((r["dataset"], r["variant"]) for r in records) == sorted((ds, v) for ds in sweeps for v in VARIANTS)
    for r, rec in zip(body, records):
        short = rec["variant"].split("/", 1)[1]  # under a "dataset: sweep" heading; a long one by a short label + legend
        assert r[0] == short or (len(short) > 16 and f"{r[0]}: " in tex and short.replace("_", r"\_") in tex.replace(r"\allowbreak{}", ""))
        m = sweeps[rec["dataset"]]["prompts"][rec["variant"]]
        assert float(rec["disagreement_rate"]) == m["disagreement_rate"]
        want = in_percent(m["disagreement_rate"], m["disagreement_rate_ci_low"], m["disagreement_rate_ci_high"])
        assert numbers(r[2]) == pytest.approx(want, abs=0.05)
    code, md, _ = run_main("export", "table", "sweeps", "--format", "markdown")
    assert code == 0 and sum(line.startswith("| ") for line in md.splitlines()) == len(body) + 1  # header + rows
    out = project / "sweeps.csv"
    code, _, _ = run_main("export", "table", "sweeps", "--format", "csv", "--out", str(out))
    assert code == 0 and len(out.read_text().splitlines()) == len(body) + 1
    code, _, err = run_main("export", "table", "pairs", "--format", "latex")
    assert code == 2 and "expected one of metrics, sweeps, probe, paper" in err
    code, _, err = run_main("export", "table", "probe", "--format", "latex")  # this run judged no probe dataset
    assert code == 2 and "metrics.json holds no probe dataset" in err
    code, _, err = run_main("export", "table", "metrics", "--format", "docx")
    assert code == 2 and "latex, csv, markdown" in err
    code, text, err = run_main("export", "table", "paper", "--format", "csv")  # judges × datasets, strict and soft
    assert code == 0 and text.splitlines()[0] == ("judge,Human-Only strict_accuracy,Human-Only soft_accuracy,"
                                                  "Human+Generated strict_accuracy,Human+Generated soft_accuracy"), err
    code, _, err = run_main("export", "table", "sweeps", "--columns", "n_items,delta_strict_acuracy")
    assert code == 2 and "unknown column(s) delta_strict_acuracy" in err and "delta_strict_accuracy" in err
