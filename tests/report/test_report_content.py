"""What a researcher reads in the report: sorted judges beside the control floor and published figures,
coverage-aware rows, saturation, order effects only where positions are seen, readable flip matrices,
informative prior-work examples, one card per judge, and no sentence said twice."""

from __future__ import annotations

import csv
import io
import re
from html.parser import HTMLParser

import pytest
from report_world import ACCURACY, DATASETS, JUDGES, PUBLISHED, write_upstream

from novelty_audit.config import ReportParams
from novelty_audit.report import build_report, load_sources, write_report


class _Page(HTMLParser):
    """Cells of each table by id (with each row's class), sections by id, and the text of notes and captions."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.row_classes: dict[str, list[str]] = {}
        self.sections: list[str] = []
        self.sentences_in: list[str] = []
        self._table: str | None = None
        self._cell: list[str] | None = None
        self._prose: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        if tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table], self.row_classes[self._table] = [], []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
            self.row_classes[self._table].append(a.get("class", ""))
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []
        elif tag == "section":
            self.sections.append(a.get("id", ""))
        elif tag in ("p", "figcaption"):
            self._prose = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None
        elif tag in ("p", "figcaption") and self._prose is not None:
            self.sentences_in.append("".join(self._prose))
            self._prose = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        if self._prose is not None:
            self._prose.append(data)


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("world")
    dirs = write_upstream(root / "artifacts")
    sources = load_sources(dirs["metrics"], dirs["judge"], dirs["pin"], published=PUBLISHED)
    rep = build_report(sources, ReportParams())
    write_report(rep, root / "out")
    page = _Page()
    page.feed(rep.html)
    return rep, page, root / "out", sources


def _body(page: _Page, table: str) -> list[dict[str, str]]:
    header, *rows = page.tables[table]
    return [dict(zip(header, r)) for r in rows]


def test_judges_are_sorted_by_accuracy_within_a_dataset_with_controls_after_them(report):
    _, page, *_ = report
    rows = _body(page, "judges-human-only")
    classes = page.row_classes["judges-human-only"][1:]
    measured = [r["judge"] for r, c in zip(rows, classes) if c == "measured"]
    controls = [r["judge"] for r, c in zip(rows, classes) if c == "control"]
    assert measured == sorted(measured, key=lambda j: -ACCURACY[j])
    assert controls == ["random", "always-first"]
    assert classes.index("control") > max(i for i, c in enumerate(classes) if c == "measured")


def test_published_rows_are_marked_published_not_rerun_with_their_source_and_never_merged(report):
    rep, page, *_ = report
    rows = _body(page, "judges-human-plus-generated")
    pub = [r for r, c in zip(rows, page.row_classes["judges-human-plus-generated"][1:]) if c == "published"]
    assert [r["judge"] for r in pub] == ["gpt-5.4, prompt P4 (published)"]
    # One cell spans the rest of the row: a published figure has no tie rate, flips or failed calls to show.
    assert pub[0]["strict accuracy"] == "0.409" and list(pub[0].values())[-1] == "published, not rerun: Sternlicht et al. 2026"
    assert 'href="https://example.org/old-ideas"' in rep.html
    # Every published figure is in its own table, including ranges and metrics that are not strict accuracy.
    table = _body(page, "published")
    assert len(table) == len(PUBLISHED)
    assert table[2]["metric"] == "accuracy" and table[2]["value (share)"] == "0.600"
    assert not any("BGE-M3" in r["judge"] for r in _body(page, "judges-human-only"))


def test_a_partial_judge_shows_accuracy_on_covered_pairs_and_no_row_where_it_saw_nothing(report):
    _, page, *_ = report
    expert = next(r for r in _body(page, "judges-human-only") if r["judge"] == "expert-import")
    assert expert["strict accuracy"] == "0.195 [0.145, 0.245]"
    assert expert["accuracy on covered pairs"] == "1.000 on 30 pairs, coverage 0.195"
    assert "partial coverage" in expert["note"]
    assert not any(r["judge"] == "expert-import" for r in _body(page, "judges-human-plus-generated"))
    assert [r["dataset"] for r in _body(page, "card-expert-import-datasets")] == ["human-only"]
    # Without a partial judge on a dataset there is no coverage column to read.
    assert "accuracy on covered pairs" not in page.tables["judges-human-plus-generated"][0]


def test_a_degenerate_interval_is_shown_as_an_exact_value(report):
    _, page, *_ = report
    first = next(r for r in _body(page, "judges-human-only") if r["judge"] == "always-first")
    assert first["strict accuracy"] == "0.000" and first["tie rate"] == "1.000"
    assert next(r for r in _body(page, "judges-human-only") if r["judge"] == "gpt-p3")["strict accuracy"] == "0.409 [0.359, 0.459]"


def test_saturated_judges_are_flagged_and_controls_are_not(report):
    _, page, *_ = report
    sat = _body(page, "saturation")
    assert {(r["dataset"], r["judge"]) for r in sat} == {(ds, "distance-rnd-minilm") for ds in DATASETS}
    rnd = next(r for r in _body(page, "judges-human-only") if r["judge"] == "distance-rnd-minilm")
    assert rnd["note"] == "saturated: ties on 48% of pairs"


def test_order_effects_are_plotted_only_for_judges_that_see_positions(report):
    rep, page, out, _ = report
    rows = list(csv.DictReader(io.StringIO(rep.plots["order_flips.csv"].decode())))
    assert {r["judge"] for r in rows} == {j for j, c in JUDGES.items() if not c["backend"].startswith("distance")}
    # First-position rate is metrics.json's figure everywhere, a position-blind judge's too (its share of verdicts
    # for the idea listed first), in the accuracy table, the judge's card and "All metrics".
    yin = next(r for r in _body(page, "judges-human-only") if r["judge"] == "distance-yin-minilm")
    assert yin["first-position rate"] == "0.500"
    card = next(r for r in _body(page, "card-distance-yin-minilm-datasets") if r["dataset"] == "human-only")
    every = {k: v for t in page.tables if t.startswith("metrics-human-only") for r in _body(page, t)
             if r["judge"] == "distance-yin-minilm" for k, v in r.items()}
    assert card["first-position rate"] == every["first position rate"] == "0.500"
    gpt = next(r for r in _body(page, "judges-human-only") if r["judge"] == "gpt-p3")
    assert gpt["order flip rate"] == "0.450 [0.000, 0.600]"
    assert (out / "plots" / "order_flips_human-only.svg").exists()


def test_flip_matrices_leave_controls_out_of_the_colour_scale_and_list_them_apart(report):
    rep, page, *_ = report
    svg = rep.plots["flip_matrix_human-only.svg"].decode()
    assert "always-first" not in svg and "random" not in svg and "gpt-p1" in svg
    # The text on dark cells is white, on light cells black.
    fills = set(re.findall(r'<text[^>]*fill="(#fff|white|#000|black)"', svg))
    assert fills & {"#fff", "white"} and fills & {"#000", "black"}
    controls = page.tables["flip-controls-human-only"]
    assert controls[0] == ["flip rate on human-only against", "always-first", "random"]
    assert ["gpt-p1", "0.970", "0.200"] in controls


def test_the_cost_chart_shows_only_judges_with_a_cost(report):
    rep, *_ = report
    rows = list(csv.DictReader(io.StringIO(rep.plots["accuracy_cost.csv"].decode())))
    assert {r["judge"] for r in rows} == {"gpt-p1", "gpt-p3"}
    assert "log scale" in rep.plots["accuracy_cost.svg"].decode()  # $0.0123 and $12.5 span three orders


def test_nearest_prior_work_shows_informative_pairs_with_gold_titles_and_correctness(report):
    rep, page, *_ = report
    rows = [r for r in _body(page, "nearest-prior-work") if r["judge"] == "distance-yin-minilm"]
    hpg = [r for r in rows if r["dataset"] == "human-plus-generated"]
    rows = [r for r in rows if r["dataset"] == "human-only"]
    assert [r["shown because"] for r in rows] == ["most confident wrong verdict", "closest call", "most confident correct verdict"]
    assert [r["idea 0 (score)"] for r in rows] == ["Idea 1A (score 0.100)", "Idea 3A (score 0.250)", "Idea 4A (score 0.600)"]
    assert [r["verdict is"] for r in rows] == ["wrong", "wrong", "correct"]
    assert rows[0]["gold (more novel)"] == "Idea 1A" and rows[1]["verdict (more novel)"] == "tie"
    assert rows[0]["nearest prior work of idea 0"] == "Prior 1a-1 (2020, cos 0.80); Prior 1a-2 (2021, cos 0.70)"
    assert hpg[0]["idea 1 (score)"] == "Idea 1B [generated idea] (score 0.450)"
    assert "Score: the distance judge's novelty score" in rep.markdown and "1 − the highest cosine similarity" in rep.markdown


def test_every_judge_has_a_card_with_its_intervals_prompt_sensitivity_cost_and_drift_link(report):
    rep, page, *_ = report
    assert sorted(s for s in page.sections if s.startswith("judge-")) == sorted(f"judge-{j}" for j in JUDGES)
    facts = dict(page.tables["card-gpt-p3"][1:])
    assert facts["backend"] == "openai" and facts["model"] == "gpt-x" and facts["prompt"] == "p3"
    assert facts["prompt sensitivity"].startswith("human-only: 2 variants of openai/gpt-x, strict accuracy 0.409–0.934")
    assert facts["drift history"].startswith("drift.md, section gpt-p3")
    assert 'href="drift.md#gpt-p3"' in rep.html
    row = _body(page, "card-gpt-p3-datasets")[0]
    assert row["strict accuracy"] == "0.409 [0.359, 0.459]" and row["cost per pair"] == f"${0.0123 / 154:.4f}"
    assert row["failed calls (inv./trunc./ref./err.)"] == "2/0/0/1" and row["no verdict"] == "2 of 154"
    assert _body(page, "card-random-datasets")[0]["cost per pair"] == "free"


def test_the_latest_audit_points_to_the_review_page_and_the_files_beside_the_report(report):
    rep, page, *_ = report
    assert "<code>novelty-audit review</code>" in rep.html
    assert [r["file"] for r in _body(page, "audit-files")] == ["audit.md", "audit.json", "drift.md"]


def test_no_sentence_is_said_twice(report):
    _, page, *_ = report
    sentences = [s.strip() for text in page.sentences_in for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]
    repeated = {s for s in sentences if sentences.count(s) > 1}
    assert not repeated, repeated


def test_the_same_sources_give_byte_identical_files(report):
    rep, _, _, sources = report
    again = build_report(sources, ReportParams())
    assert again.html == rep.html and again.markdown == rep.markdown and again.plots == rep.plots


def test_novbench_datasets_appear_only_in_their_own_section(report):
    _, _, _, sources = report
    from dataclasses import replace

    entry = {"coverage": 0.25, "dist_acc": 0.7, "n_papers": 3, "n_items": 9, "n_invalid": 0}
    nb = replace(sources, metrics={**sources.metrics, "novbench-change": {"expert": entry}})
    rep = build_report(nb, ReportParams())
    page = _Page()
    page.feed(rep.html)
    assert 'id="novbench"' in rep.html and '<a href="#novbench">NovBench</a>' in rep.html
    assert "judges-novbench-change" not in page.tables and "metrics-novbench-change" not in page.tables
    assert not any(s == "judge-expert" for s in page.sections)
    assert "## NovBench" in rep.markdown
