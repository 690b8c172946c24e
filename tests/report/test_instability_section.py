"""The report's instability section, from a hand-made sweeps.json beside the synthetic study of report_world.py:
per sweep a table of variants against their base with ties in columns of their own, the dataset's published rows
below ("published, not rerun"), a forest plot of the deltas and a disagreement heatmap of every two judges; no
section without sweeps. Values are odd on purpose: the report shows exactly these and recomputes nothing."""

from __future__ import annotations

import base64
import copy
import re

import pytest
from report_world import PUBLISHED, write_upstream
from test_report_content import _body, _Page

from novelty_audit.artifacts import write_json
from novelty_audit.config import ReportParams
from novelty_audit.report import build_report, load_sources

BASE = "gpt-p1"
P3, V1 = "prompts/prompt=p3", "prompts/votes=1"
SWEEPS = {
    "human-only": {
        "prompts": {
            P3: {"n_items": 154, "strict_accuracy": 0.4091, "strict_accuracy_base": 0.9345, "delta_strict_accuracy": -0.5254,
                 "delta_strict_accuracy_ci_low": -0.6012, "delta_strict_accuracy_ci_high": -0.4437, "mcnemar_p": 0.0004,
                 "mcnemar_p_holm": 0.0008, "disagreement_rate": 0.5714, "disagreement_rate_ci_low": 0.4935,
                 "disagreement_rate_ci_high": 0.6494, "tie_rate": 0.2727, "tie_rate_base": 0.0195, "delta_tie_rate": 0.2532,
                 "delta_tie_rate_ci_low": 0.1818, "delta_tie_rate_ci_high": 0.3247, "order_flip_rate": 0.45,
                 "order_flip_rate_base": 0.12, "delta_order_flip_rate": 0.33},
            V1: {"n_items": 154, "strict_accuracy": 0.9156, "strict_accuracy_base": 0.9345, "delta_strict_accuracy": -0.0189,
                 "delta_strict_accuracy_ci_low": -0.0519, "delta_strict_accuracy_ci_high": 0.013, "mcnemar_p": 0.3877,
                 "mcnemar_p_holm": 0.3877, "disagreement_rate": 0.0844, "disagreement_rate_ci_low": 0.0455,
                 "disagreement_rate_ci_high": 0.1299, "tie_rate": 0.0, "tie_rate_base": 0.0195, "delta_tie_rate": -0.0195},
            "_sweep": {"prompt_spread": 0.5254, "prompt_spread_n_items": 154, "prompt_spread_n_variants": 2,
                       "disagreement_matrix": {BASE: {P3: 0.5714, V1: 0.0844}, P3: {BASE: 0.5714, V1: 0.5584},
                                               V1: {BASE: 0.0844, P3: 0.5584}},
                       "disagreement_matrix_n_items": {BASE: {P3: 154, V1: 154}, P3: {BASE: 154, V1: 154},
                                                       V1: {BASE: 154, P3: 154}}},
        }
    }
}


SWEEPS["human-plus-generated"] = copy.deepcopy(SWEEPS["human-only"])  # the same figures twice: no sentence may repeat


def _build(tmp_path, sweeps):
    dirs = write_upstream(tmp_path / "artifacts")
    if sweeps is not None:
        write_json(dirs["metrics"] / "sweeps.json", sweeps)
    rep = build_report(load_sources(dirs["metrics"], dirs["judge"], dirs["pin"], published=PUBLISHED), ReportParams())
    page = _Page()
    page.feed(rep.html)
    return rep, page


@pytest.fixture(scope="module")
def swept(tmp_path_factory):
    return _build(tmp_path_factory.mktemp("swept"), SWEEPS)


def test_each_variant_is_a_row_against_its_base_with_ties_in_columns_of_their_own(swept):
    rep, page = swept
    rows = _body(page, "sweep-table-human-only-prompts")
    classes = page.row_classes["sweep-table-human-only-prompts"][1:]
    assert [r["judge"] for r in rows][:3] == [f"{BASE} (base)", P3, V1] and classes[:3] == ["base", "measured", "measured"]
    p3 = rows[1]
    assert p3["strict accuracy"] == "0.409"  # the variant's own figure on the shared items (sweeps.json has no interval)
    assert p3["Δ strict accuracy"] == "-0.525 [-0.601, -0.444]"
    assert p3["McNemar p (Holm)"] == "0.000 (0.001)"
    assert p3["disagreement with base"] == "0.571 [0.493, 0.649]"
    # Ties: their own rate and change, beside accuracy and never folded into it.
    assert p3["tie rate"] == "0.273" and p3["Δ tie rate"] == "+0.253 [0.182, 0.325]"
    assert p3["Δ order flip rate"] == "+0.330" and p3["items"] == "154"
    assert rows[2]["Δ order flip rate"] == "—"  # not in sweeps.json: shown as missing, not as 0
    assert rows[0]["strict accuracy"] == "0.934 [0.884, 0.985]" and rows[0]["tie rate"] == "0.020"  # the base, from metrics.json
    assert "Spread of strict accuracy in prompts on human-only" in rep.html
    assert "across the prompt knob 0.525 (2 variants, 154 items judged by all)" in rep.html


def test_two_sweeps_with_the_same_figures_say_no_sentence_twice(swept):
    _, page = swept
    assert "sweep-table-human-plus-generated-prompts" in page.tables
    sentences = [s.strip() for text in page.sentences_in for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    assert not {s for s in sentences if sentences.count(s) > 1}


def test_the_datasets_published_rows_follow_the_measured_ones_labelled_published_not_rerun(swept):
    _, page = swept
    rows = _body(page, "sweep-table-human-only-prompts")
    classes = page.row_classes["sweep-table-human-only-prompts"][1:]
    pub = [r for r, c in zip(rows, classes) if c == "published"]
    assert [r["judge"] for r in pub] == ["claude-opus-4-6, prompt reference (published)"]  # human-only's only published row
    assert pub[0]["strict accuracy"] == "0.825" and list(pub[0].values())[-1] == "published, not rerun: Sternlicht et al. 2026"
    assert classes.index("published") > max(i for i, c in enumerate(classes) if c == "measured")


def _svg(rep, fid: str) -> str:
    tag = rep.html.split(f'<figure id="{fid}">', 1)[1].split("</figure>", 1)[0]
    return base64.b64decode(tag.split("base64,", 1)[1].split('"', 1)[0]).decode("utf-8")


def test_a_forest_plot_of_the_deltas_and_a_disagreement_heatmap_of_every_two_judges_are_embedded(swept):
    rep, _ = swept
    forest = _svg(rep, "sweep-forest-human-only-prompts")
    assert P3 in forest and V1 in forest and BASE not in forest  # the base is the zero line, not a row
    heat = _svg(rep, "sweep-disagreement-human-only-prompts")
    assert all(j in heat for j in (BASE, P3, V1))
    assert "0.56" in heat and "0.57" in heat and "0.08" in heat  # cell texts: the matrix's rates
    assert rep.plots["sweep_forest_human-only-prompts.svg"].decode() == forest
    assert 'href="#instability"' in rep.html and '<h2 id="instability">' in rep.html
    assert "![Change in strict accuracy against the base, prompts on human-only](plots/sweep_forest_human-only-prompts.svg)" in rep.markdown


@pytest.mark.parametrize("sweeps", [None, {}])
def test_a_run_without_sweeps_has_no_instability_section(tmp_path, sweeps):
    rep, _ = _build(tmp_path, sweeps)
    assert 'id="instability"' not in rep.html and "#instability" not in rep.html and "Instability" not in rep.markdown
    assert not any(n.startswith("sweep_") for n in rep.plots)


def test_every_chart_the_report_renders_is_a_valid_vega_lite_spec(tmp_path, monkeypatch):
    # The report renders without altair's per-chart schema pass (speed); the specs are held to the schema here.
    import vl_convert
    from altair.utils.schemapi import validate_jsonschema
    from altair.vegalite.v6.schema.core import load_schema

    specs: list[dict] = []
    render = vl_convert.vegalite_to_svg
    monkeypatch.setattr(vl_convert, "vegalite_to_svg", lambda spec, *a, **k: (specs.append(spec), render(spec, *a, **k))[1])
    _build(tmp_path, SWEEPS)
    marks = {str(layer.get("mark")) for s in specs for layer in [s, *s.get("layer", [])]}
    assert len(specs) >= 6 and any("rect" in m for m in marks), "forest plots, heatmaps and the study's charts were rendered"
    schema = load_schema()
    for spec in specs:
        validate_jsonschema(spec, schema)
