"""The report's search-agent section: grounding and effort per decision beside pointwise macro-F1, the study's
published rows below the measured ones ("published, not rerun"), never merged; no section when no judge searched.
Values are odd on purpose: the report shows exactly what metrics.json holds."""

from __future__ import annotations

import orjson
from report_world import PUBLISHED, write_upstream
from test_report_content import _body, _Page

from novelty_audit.artifacts import write_json
from novelty_audit.config import ReportParams
from novelty_audit.report import build_report, load_sources

AGENT = {"n_ideas": 6, "pointwise_macro_f1": 0.7123, "pointwise_macro_f1_ci_low": 0.61, "pointwise_macro_f1_ci_high": 0.8,
         "grounded_rate": 0.6667, "cost_per_decision_usd": 0.0137, "queries_per_decision": 4.5,
         "rounds_per_decision": 5.25, "tokens_per_decision": 3141.0, "n_undecided": 1}
PROMPTED = {"n_ideas": 6, "pointwise_macro_f1": 0.8011}
STUDY = [
    {"source": "Sternlicht et al. 2026", "url": "https://example.org/old-ideas", "dataset": None,
     "judge": "arXiv search agent (no query cap)", "metric": "pointwise_macro_f1", "value": 0.78, "prompt": None, "note": ""},
    {"source": "Sternlicht et al. 2026", "url": "https://example.org/old-ideas", "dataset": None,
     "judge": "judge given five pre-retrieved abstracts", "metric": "pointwise_macro_f1", "value": 0.889, "prompt": None,
     "note": ""},
]


def _build(tmp_path, agents: bool):
    dirs = write_upstream(tmp_path / "artifacts")
    doc = orjson.loads((dirs["metrics"] / "metrics.json").read_bytes())
    doc["human-only"]["gpt-p1"].update(PROMPTED)
    if agents:
        doc["human-only"]["ai-scientist"] = AGENT
    write_json(dirs["metrics"] / "metrics.json", doc)
    rep = build_report(load_sources(dirs["metrics"], dirs["judge"], dirs["pin"], published=PUBLISHED + STUDY), ReportParams())
    page = _Page()
    page.feed(rep.html)
    return rep, page


def test_agents_show_grounding_and_effort_per_decision_beside_macro_f1_and_the_published_rows_follow(tmp_path):
    rep, page = _build(tmp_path, agents=True)
    rows = _body(page, "agents-human-only")
    classes = page.row_classes["agents-human-only"][1:]
    assert [r["judge"] for r in rows] == ["ai-scientist", "gpt-p1", "arXiv search agent (no query cap) (published)",
                                          "judge given five pre-retrieved abstracts (published)"]
    assert classes == ["agent", "judge", "published", "published"]
    agent, prompted, unbounded, five = rows
    assert agent["pointwise macro-F1"] == "0.712 [0.610, 0.800]"
    assert (agent["grounded rate"], agent["USD / decision"], agent["queries / decision"], agent["rounds / decision"],
            agent["tokens / decision"], agent["undecided"]) == ("0.667", "0.014", "4.500", "5.250", "3141", "1")
    assert prompted["pointwise macro-F1"] == "0.801" and prompted["grounded rate"] == "—"  # it never searched
    # Published rows are their own rows: the figure, then one cell naming the source, never merged into a measured row.
    assert unbounded["pointwise macro-F1"] == "0.780" and five["pointwise macro-F1"] == "0.889"
    assert list(unbounded.values())[-1] == "published, not rerun: Sternlicht et al. 2026 (split not recorded)"
    assert "search agents" in rep.html and "Search agents: grounding and cost per decision" in rep.markdown


def test_no_agent_section_when_no_judge_searched(tmp_path):
    rep, page = _build(tmp_path, agents=False)
    assert "agents-human-only" not in page.row_classes
    assert "Search agents: grounding" not in rep.markdown
    assert "arXiv search agent (no query cap)" in rep.markdown, "the published table still lists the study's rows"


def test_comparators_are_labelled_rebuilt_or_faithful_beside_the_published_figures(tmp_path):
    import polars as pl

    dirs = write_upstream(tmp_path / "artifacts")
    doc = orjson.loads((dirs["metrics"] / "metrics.json").read_bytes())
    doc["human-only"].update({"sci": AGENT, "sci-faithful": AGENT, "inc": AGENT})
    write_json(dirs["metrics"] / "metrics.json", doc)
    judges = pl.read_parquet(dirs["judge"] / "judges.parquet")
    extra = pl.DataFrame({"judge": ["sci", "sci-faithful", "inc"], "backend": ["ai-scientist", "ai-scientist", "idea-novelty-checker"],
                          "config_digest": ["a", "b", "c"],
                          "config": ["{}", orjson.dumps({"mode": "faithful", "original": {"commit": "abcdef0123" + "0" * 30}}).decode(), "{}"]},
                         schema=judges.schema)  # fmt: skip
    pl.concat([judges, extra]).write_parquet(dirs["judge"] / "judges.parquet")
    rep = build_report(load_sources(dirs["metrics"], dirs["judge"], dirs["pin"], published=PUBLISHED + STUDY), ReportParams())
    page = _Page()
    page.feed(rep.html)
    names = [r["judge"] for r in _body(page, "agents-human-only")]
    assert "sci (rebuilt after AI-Scientist's novelty check)" in names
    assert "inc (rebuilt after the Idea Novelty Checker)" in names
    assert "sci-faithful (faithful to AI-Scientist's novelty check @abcdef0)" in names
    assert not any(n in ("sci", "inc", "sci-faithful") for n in names), "a comparator row without its label"
