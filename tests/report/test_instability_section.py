"""The report's instability section, from a hand-made sweeps.json beside the synthetic study of report_world.py:
per sweep a table of variants, each naming its base, the split the base was judged on, paired or unpaired and the
items on each side, with ties in columns of their own; the dataset's published rows below ("published, not rerun"),
a forest plot of the deltas and a disagreement heatmap of every two judges; a pointwise table when variants were
judged pointwise; no section without sweeps. An unpaired row (a split with other ideas) shows no disagreement or
McNemar p ("not measured", never 0); an unknown cost is "unknown". Values are odd on purpose: the report shows
exactly these and recomputes nothing."""

from __future__ import annotations

import base64
import copy
import re

import pytest
from browser import WAIT, chrome, needs_browser
from report_world import PUBLISHED, write_upstream
from test_report_content import _body, _Page

from novelty_audit.artifacts import write_json
from novelty_audit.config import ReportParams
from novelty_audit.report import build_report, load_sources, write_report

BASE = "gpt-p1"
P3, V1 = "prompts/prompt=p3", "prompts/votes=1"
PLAN, GPT54 = "human-only-plan", "human-plus-generated-gpt-5.4"
W1, W3 = f"wording/{BASE}/prompt=p4", "wording/gpt-p3/prompt=p4"


def _on(ds: str, base: str = BASE, split: str | None = None, paired: bool = True) -> dict:
    """What a row of sweeps.json says it compared: the base judge, both datasets, paired or not."""
    return {"base": base, "compared_on": {"variant": ds, "base": split or ds}, "paired": paired}


_P3 = {**_on("human-only"), "n_items": 154, "n_items_base": 154, "strict_accuracy": 0.4091, "strict_accuracy_base": 0.9345,
       "delta_strict_accuracy": -0.5254, "delta_strict_accuracy_ci_low": -0.6012, "delta_strict_accuracy_ci_high": -0.4437,
       "mcnemar_p": 0.0004, "mcnemar_p_holm": 0.0008, "disagreement_rate": 0.5714, "disagreement_rate_ci_low": 0.4935,
       "disagreement_rate_ci_high": 0.6494, "tie_rate": 0.2727, "tie_rate_base": 0.0195, "delta_tie_rate": 0.2532,
       "delta_tie_rate_ci_low": 0.1818, "delta_tie_rate_ci_high": 0.3247, "order_flip_rate": 0.45,
       "order_flip_rate_base": 0.12, "delta_order_flip_rate": 0.33, "cost_per_decision_usd": 0.00412,
       "cost_per_decision_usd_base": 0.00398}
_V1 = {**_on("human-only"), "n_items": 154, "n_items_base": 154, "strict_accuracy": 0.9156, "strict_accuracy_base": 0.9345,
       "delta_strict_accuracy": -0.0189, "delta_strict_accuracy_ci_low": -0.0519, "delta_strict_accuracy_ci_high": 0.013,
       "mcnemar_p": 0.3877, "mcnemar_p_holm": 0.3877, "disagreement_rate": 0.0844, "disagreement_rate_ci_low": 0.0455,
       "disagreement_rate_ci_high": 0.1299, "tie_rate": 0.0, "tie_rate_base": 0.0195, "delta_tie_rate": -0.0195,
       "cost_per_decision_usd": None, "cost_per_decision_usd_base": 0.00398,  # a model without a price
       "pointwise_n_items": 299, "pointwise_n_items_base": 299, "macro_f1": 0.6123, "macro_f1_base": 0.6501,
       "delta_macro_f1": -0.0378, "delta_macro_f1_ci_low": -0.0712, "delta_macro_f1_ci_high": -0.0051,
       "pointwise_accuracy": 0.6321, "pointwise_accuracy_base": 0.6622, "delta_pointwise_accuracy": -0.0301,
       "pointwise_disagreement_rate": 0.1137, "pointwise_cost_per_decision_usd": None, "pointwise_cost_per_decision_usd_base": None}
_MATRIX = {"disagreement_matrix": {BASE: {P3: 0.5714, V1: 0.0844}, P3: {BASE: 0.5714, V1: 0.5584}, V1: {BASE: 0.0844, P3: 0.5584}},
           "disagreement_matrix_n_items": {BASE: {P3: 154, V1: 154}, P3: {BASE: 154, V1: 154}, V1: {BASE: 154, P3: 154}}}
PROMPTS = {P3: _P3, V1: _V1, "_sweep": {"prompt_spread": 0.5254, "prompt_spread_n_items": 154, "prompt_spread_n_variants": 2,
                                        **_MATRIX}}

# The format flip: the base's config on the plan split, compared pair by pair with the base on human-only (the base
# is not judged on the plan split, so metrics.json has no row of it there).
_PLAN_ROW = {**_on(PLAN, split="human-only"), "n_items": 150, "n_items_base": 150, "strict_accuracy": 0.7733,
             "strict_accuracy_base": 0.9333, "delta_strict_accuracy": -0.16, "delta_strict_accuracy_ci_low": -0.2267,
             "delta_strict_accuracy_ci_high": -0.0933, "mcnemar_p": 0.0001, "mcnemar_p_holm": 0.0001,
             "disagreement_rate": 0.2067, "tie_rate": 0.04, "tie_rate_base": 0.0133, "delta_tie_rate": 0.0267,
             "cost_per_decision_usd": 0.0051, "cost_per_decision_usd_base": 0.0049}
# Another backbone's regenerated low sides: other ideas, so two samples; nothing paired is measured.
_GPT54_ROW = {**_on(GPT54, split="human-plus-generated", paired=False), "n_items": 151, "n_items_base": 154,
              "strict_accuracy": 0.5629, "strict_accuracy_base": 0.9345, "delta_strict_accuracy": -0.3716,
              "delta_strict_accuracy_ci_low": -0.4501, "delta_strict_accuracy_ci_high": -0.2902, "mcnemar_p": None,
              "mcnemar_p_holm": None, "disagreement_rate": None, "tie_rate": 0.0596, "tie_rate_base": 0.0195,
              "delta_tie_rate": 0.0401, "cost_per_decision_usd": None, "cost_per_decision_usd_base": None}
# Two bases in one sweep, each variant against its own.
_W1 = {**_on("human-plus-generated"), "n_items": 154, "n_items_base": 154, "strict_accuracy": 0.8766,
       "strict_accuracy_base": 0.9345, "delta_strict_accuracy": -0.0579, "mcnemar_p": 0.0213, "mcnemar_p_holm": 0.0426,
       "disagreement_rate": 0.1169, "tie_rate": 0.0, "tie_rate_base": 0.0195, "delta_tie_rate": -0.0195}
_W3 = {**_on("human-plus-generated", base="gpt-p3"), "n_items": 152, "n_items_base": 152, "strict_accuracy": 0.5132,
       "strict_accuracy_base": 0.4079, "delta_strict_accuracy": 0.1053, "mcnemar_p": 0.0311, "mcnemar_p_holm": 0.0426,
       "disagreement_rate": 0.2303, "tie_rate": 0.0197, "tie_rate_base": 0.0, "delta_tie_rate": 0.0197}
WORDING = {W1: _W1, W3: _W3, "_sweep": {"disagreement_matrix": {BASE: {W1: 0.1169}, W1: {BASE: 0.1169}, "gpt-p3": {W3: 0.2303},
                                                                W3: {"gpt-p3": 0.2303}}}}

SWEEPS = {
    "human-only": {"prompts": PROMPTS},
    # The same figures on both splits: no sentence may repeat.
    "human-plus-generated": {"prompts": {k: {**v, **_on("human-plus-generated")} if k != "_sweep" else copy.deepcopy(v)
                                         for k, v in PROMPTS.items()}, "wording": WORDING},
    PLAN: {"format": {f"format/dataset={PLAN}": _PLAN_ROW, "_sweep": {}}},
    GPT54: {"backbones": {f"backbones/dataset={GPT54}": _GPT54_ROW, "_sweep": {}}},
}


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


def test_each_variant_is_a_row_naming_its_base_the_split_compared_on_and_the_items_on_each_side(swept):
    rep, page = swept
    rows = _body(page, "sweep-table-human-only-prompts")
    classes = page.row_classes["sweep-table-human-only-prompts"][1:]
    assert [r["judge"] for r in rows][:3] == [f"{BASE} (base)", P3, V1] and classes[:3] == ["base", "measured", "measured"]
    p3 = rows[1]
    assert p3["compared with"] == f"{BASE} on human-only, paired"
    assert p3["strict accuracy"] == "0.409"  # the variant's own figure on the shared items (sweeps.json has no interval)
    assert p3["Δ strict accuracy"] == "-0.525 [-0.601, -0.444]"
    assert p3["McNemar p (Holm)"] == "0.000 (0.001)"
    assert p3["disagreement with base"] == "0.571 [0.493, 0.649]"
    # Ties: their own rate and change, beside accuracy and never folded into it.
    assert p3["tie rate"] == "0.273" and p3["Δ tie rate"] == "+0.253 [0.182, 0.325]"
    assert p3["Δ order flip rate"] == "+0.330" and p3["items (variant / base)"] == "154 / 154"
    assert p3["cost per decision (variant / base)"] == "$0.00412 / $0.00398"
    assert rows[2]["Δ order flip rate"] == "—"  # not in sweeps.json: shown as missing, not as 0
    assert rows[0]["strict accuracy"] == "0.934 [0.884, 0.985]" and rows[0]["tie rate"] == "0.020"  # the base, from metrics.json
    assert rows[0]["compared with"] == "its own run on human-only" and rows[0]["items (variant / base)"] == "154"
    assert "Spread of strict accuracy in prompts on human-only" in rep.html
    assert "across the prompt knob 0.525 (2 variants, 154 items judged by all)" in rep.html


def test_an_unknown_cost_reads_unknown_never_free_or_zero(swept):
    _, page = swept
    v1 = _body(page, "sweep-table-human-only-prompts")[2]
    assert v1["cost per decision (variant / base)"] == "unknown / $0.00398"
    plan = _body(page, f"sweep-table-{PLAN}-format")[1]
    assert plan["cost per decision (variant / base)"] == "$0.0051 / $0.0049"
    gpt54 = _body(page, f"sweep-table-{GPT54}-backbones")[1]
    assert gpt54["cost per decision (variant / base)"] == "unknown / unknown"


def test_a_variant_on_a_plan_split_is_compared_with_its_base_on_the_original_split(swept):
    rep, page = swept
    rows = _body(page, f"sweep-table-{PLAN}-format")
    # The base has no row on the plan split: its own row is its human-only figure, and the heading names it.
    assert rows[0]["judge"] == f"{BASE} (base)" and rows[0]["compared with"] == "its own run on human-only"
    assert rows[0]["strict accuracy"] == "0.934 [0.884, 0.985]"
    plan = rows[1]
    assert plan["judge"] == f"format/dataset={PLAN}" and plan["compared with"] == f"{BASE} on human-only, paired"
    assert plan["items (variant / base)"] == "150 / 150" and plan["disagreement with base"] == "0.207"
    assert plan["McNemar p (Holm)"] == "0.000 (0.000)"
    assert f"<h3 id=\"sweep-{PLAN}-format\">format on {PLAN} (base {BASE})</h3>" in rep.html
    assert f"no two judges of the sweep share an item on {PLAN}" in rep.html  # the base was not judged there


def test_an_unpaired_row_says_unpaired_and_shows_no_disagreement_or_mcnemar(swept):
    rep, page = swept
    row = _body(page, f"sweep-table-{GPT54}-backbones")[1]
    assert row["compared with"] == f"{BASE} on human-plus-generated, unpaired"
    assert row["items (variant / base)"] == "151 / 154"  # each side its own items
    assert row["McNemar p (Holm)"] == "not measured" and row["disagreement with base"] == "not measured"
    assert row["Δ strict accuracy"] == "-0.372 [-0.450, -0.290]"  # the unpaired interval, as sweeps.json gives it
    md = rep.markdown
    line = next(ln for ln in md.splitlines() if ln.startswith(f"| backbones/dataset={GPT54} "))
    assert "unpaired" in line and line.count("not measured") == 2 and "| 0.000 |" not in line
    forest = _svg(rep, f"sweep-forest-{GPT54}-backbones")
    assert f"backbones/dataset={GPT54}" in forest and "95% bootstrap interval" in forest
    assert _legend(forest) == {"unpaired"}  # drawn as unpaired, and the legend lists only what is drawn
    assert _legend(_svg(rep, "sweep-forest-human-only-prompts")) == {"paired"}


def test_the_intro_says_what_holds_for_paired_and_unpaired_rows(swept, tmp_path):
    rep, _ = swept
    assert "Paired rows (the same split, or the same pairs rewritten" in rep.html
    assert "Unpaired rows (a split with other ideas" in rep.html and "they were not measured on these rows" in rep.html
    assert "every comparison is paired" not in rep.html.lower()
    only_paired, _ = _build(tmp_path, {"human-only": {"prompts": PROMPTS}})
    assert "Paired rows (" in only_paired.html and "Unpaired rows (" not in only_paired.html
    only_unpaired, _ = _build(tmp_path / "u", {GPT54: SWEEPS[GPT54]})
    assert "Unpaired rows (" in only_unpaired.html and "Paired rows (" not in only_unpaired.html


def test_a_sweep_with_two_bases_groups_each_variant_under_its_own_base(swept):
    rep, page = swept
    rows = _body(page, "sweep-table-human-plus-generated-wording")
    classes = page.row_classes["sweep-table-human-plus-generated-wording"][1:]
    measured = [(r["judge"], r["compared with"]) for r, c in zip(rows, classes) if c in ("base", "measured")]
    assert measured == [(f"{BASE} (base)", "its own run on human-plus-generated"), (W1, f"{BASE} on human-plus-generated, paired"),
                        ("gpt-p3 (base)", "its own run on human-plus-generated"), (W3, "gpt-p3 on human-plus-generated, paired")]
    assert rows[2]["strict accuracy"] == "0.409 [0.359, 0.459]"  # gpt-p3's own metrics.json row
    assert rows[3]["Δ strict accuracy"] == "+0.105"
    assert rows[3]["cost per decision (variant / base)"] == "—"  # sweeps.json gives no cost here: neither side applies
    assert "wording on human-plus-generated (bases gpt-p1, gpt-p3)" in rep.html
    heat = _svg(rep, "sweep-disagreement-human-plus-generated-wording")
    assert all(j in heat for j in (BASE, "gpt-p3", W1, W3))


def test_variants_judged_pointwise_get_a_pointwise_table(swept):
    _, page = swept
    rows = _body(page, "sweep-pointwise-human-only-prompts")
    assert [r["judge"] for r in rows] == [V1]  # prompts/prompt=p3 was not judged pointwise
    v1 = rows[0]
    assert v1["compared with"] == f"{BASE} on human-only, paired" and v1["ideas (variant / base)"] == "299 / 299"
    assert v1["macro-F1"] == "0.612" and v1["Δ macro-F1"] == "-0.038 [-0.071, -0.005]"
    assert v1["disagreement with base"] == "0.114" and v1["cost per decision (variant / base)"] == "unknown / unknown"
    assert f"sweep-pointwise-{GPT54}-backbones" not in page.tables
    assert "sweep-pointwise-human-plus-generated-prompts" in page.tables  # said once per sweep and dataset


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
    assert pub[0]["compared with"] == "—" and pub[0]["strict accuracy"] == "0.825" and list(pub[0].values())[-1] == "published, not rerun: Sternlicht et al. 2026"
    assert classes.index("published") > max(i for i, c in enumerate(classes) if c == "measured")


def _legend(svg: str) -> set[str]:
    legend = re.findall(r'<g class="mark-text role-legend-label".*?</g>', svg, re.S)
    return set(re.findall(r">([a-z]+)</text>", " ".join(legend)))


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


@needs_browser
def test_the_section_renders_in_chromium_every_chart_decodes_and_no_sweep_table_runs_off_the_page(swept, tmp_path, monkeypatch):
    from selenium.webdriver.support.ui import WebDriverWait

    rep, _ = swept
    write_report(rep, tmp_path / "out")
    with chrome(tmp_path / "profile", monkeypatch, "--hide-scrollbars", "--window-size=1280,1700") as browser:
        browser.get((tmp_path / "out" / "report.html").as_uri())
        images = ("return Array.from(document.querySelectorAll('#instability ~ figure img, figure[id^=sweep-] img'))"
                  ".map(i => [i.closest('figure').id, i.complete && i.naturalWidth > 0]);")
        WebDriverWait(browser, WAIT).until(lambda d: d.execute_script(images) and all(ok for _, ok in d.execute_script(images)))
        assert {f for f, _ in browser.execute_script(images)} >= {f"sweep-forest-{GPT54}-backbones", "sweep-forest-human-only-prompts",
                                                                   "sweep-disagreement-human-plus-generated-wording"}
        over = browser.execute_script(
            "const right = document.body.getBoundingClientRect().right;"
            "return Array.from(document.querySelectorAll('table[id^=sweep-]'))"
            ".filter(t => t.getBoundingClientRect().right > right + 1).map(t => t.id);")
        assert over == [], over
        cells = browser.execute_script("return Array.from(document.getElementById(arguments[0]).querySelectorAll('td'))"
                                       ".map(td => td.innerText);", f"sweep-table-{GPT54}-backbones")
        assert "not measured" in cells


def test_the_section_reads_what_the_metrics_stage_writes_plan_split_unpaired_split_and_two_bases(tmp_path):
    import polars as pl

    from novelty_audit.config import MetricsParams, SweepVariant
    from novelty_audit.metrics import sweeps_json

    def judged(ds: str, judge: str, verdicts: str, low: str = "b") -> list[dict]:
        """One row per pair p0, p1, …: 'a' (the gold idea), 'b' (the low side) or 't' (a tie)."""
        out = []
        for i, v in enumerate(verdicts):
            idea = {"a": f"a{i}", "b": f"{low}{i}", "t": "tie"}[v]
            out.append({"dataset": ds, "judge": judge, "pair_id": f"{low}p{i}", "idea_0": f"a{i}", "idea_1": f"{low}{i}",
                        "gold_idea_id": f"a{i}", "verdict": idea, "verdict_forward": idea, "verdict_reverse": idea})
        return out

    rows = (judged("human-only", BASE, "aaaaaabb") + judged(PLAN, f"format/dataset={PLAN}", "aabbaabb")
            + judged("human-plus-generated", BASE, "aaaaaaab") + judged("human-plus-generated", "gpt-p3", "abababab")
            + judged("human-plus-generated", W1, "aaaaaatb") + judged("human-plus-generated", W3, "aaabbaab")
            + judged(GPT54, f"backbones/dataset={GPT54}", "aaaabbb", low="g"))  # other low sides: other pair ids
    variants = {f"format/dataset={PLAN}": SweepVariant(sweep="format", base=BASE, knobs={"dataset": PLAN}),
                f"backbones/dataset={GPT54}": SweepVariant(sweep="backbones", base=BASE, knobs={"dataset": GPT54}),
                W1: SweepVariant(sweep="wording", base=BASE, knobs={"prompt": "p4"}),
                W3: SweepVariant(sweep="wording", base="gpt-p3", knobs={"prompt": "p4"})}
    written = sweeps_json(pl.DataFrame(rows), variants, MetricsParams(bootstrap_resamples=50),
                          compared_with={PLAN: ("human-only", True), GPT54: ("human-plus-generated", False)})
    rep, page = _build(tmp_path, written)
    plan = _body(page, f"sweep-table-{PLAN}-format")
    assert plan[0]["compared with"] == "its own run on human-only"
    assert plan[1]["compared with"] == f"{BASE} on human-only, paired" and plan[1]["items (variant / base)"] == "8 / 8"
    assert plan[1]["disagreement with base"].startswith("0.250") and plan[1]["cost per decision (variant / base)"] == "unknown / unknown"
    regen = _body(page, f"sweep-table-{GPT54}-backbones")[1]
    assert regen["compared with"] == f"{BASE} on human-plus-generated, unpaired" and regen["items (variant / base)"] == "7 / 8"
    assert regen["McNemar p (Holm)"] == regen["disagreement with base"] == "not measured"
    wording = _body(page, "sweep-table-human-plus-generated-wording")
    assert [r["judge"] for r in wording][:4] == [f"{BASE} (base)", W1, "gpt-p3 (base)", W3]
    assert wording[3]["Δ strict accuracy"].startswith("+0.125")  # 5/8 against gpt-p3's own 4/8
