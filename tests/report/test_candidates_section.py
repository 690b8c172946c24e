"""The "Your ideas" section: from candidates.json alone, per candidate set one sentence with the win rate's band over
the judge configurations, a dot-and-interval chart with ties beside, and the table; it renders in Chromium. With
UPDATE_SCREENSHOTS=1 the browser test writes docs/img/your-ideas.png."""

from __future__ import annotations

import os
import re
from pathlib import Path

import polars as pl
import pytest
from browser import WAIT, chrome, needs_browser
from report_world import write_upstream

from novelty_audit.artifacts import write_json
from novelty_audit.config import ReportParams
from novelty_audit.metrics import candidate_metrics
from novelty_audit.report import _charts, build_report, load_sources, write_report

SCREENSHOT = Path(__file__).resolve().parents[2] / "docs" / "img" / "your-ideas.png"
WINS = {"distance-yin-minilm": 14, "distance-knn-minilm": 12, "distance-knn-tfidf": 13, "distance-rnd-minilm": 7, "always-first": 0}
TIES = {"distance-rnd-minilm": 15, "always-first": 30}


def _verdicts() -> pl.DataFrame:
    rows = []
    for ds, shift in (("my-system", 0), ("my-system-vs-low", 3)):
        for judge, wins in WINS.items():
            for i in range(30):
                won = i < min(30, wins + shift) if judge != "always-first" else False
                tie = not won and i >= 30 - TIES.get(judge, 0)
                rows.append({"dataset": ds, "judge": judge, "pair_id": f"p{i}", "gold_idea_id": f"c{i}",
                             "verdict": f"c{i}" if won else "tie" if tie else f"h{i}"})
    return pl.DataFrame(rows)


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("candidates-report")
    dirs = write_upstream(root / "artifacts")
    figures = candidate_metrics(_verdicts(), {"my-system": "candidates", "my-system-vs-low": "candidates-low"}, confidence=0.95,
                                controls={"always-first"})
    write_json(dirs["metrics"] / "candidates.json", figures)
    sources = load_sources(dirs["metrics"], dirs["judge"], dirs["pin"])
    write_report(build_report(sources, ReportParams()), root / "out")
    return root / "out"


def test_the_section_states_the_band_over_configurations_with_ties_and_items(built: Path) -> None:
    md = (built / "report.md").read_text()
    assert "## Your ideas" in md
    assert ("my-system wins 23–47% against top-decile human ideas (D+) across 4 judge configurations; ties 0–50%; "
            "against bottom human ideas (D-) 33–57%; 30 items.") in md
    assert (built / "plots" / "candidates_my-system.svg").read_bytes().startswith(b"<svg")
    assert "| always-first (control) | 0.0% [0.0, 11.4] |" in md  # controls listed after, outside the band


def _legend(svg: str) -> set[str]:
    legend = re.findall(r'<g class="mark-text role-legend-label".*?</g>', svg, re.S)
    return set(re.findall(r">([a-z]+)</text>", " ".join(legend)))


def test_the_charts_legend_lists_only_the_kinds_it_draws(built: Path) -> None:
    # Judges and a control are drawn; a published figure never is (published win rates do not exist).
    assert _legend((built / "plots" / "candidates_my-system.svg").read_text()) == {"measured", "control"}
    only_judges = [{"label": j, "kind": "measured", "candidate_win_rate": 0.4, "ci_low": 0.3, "ci_high": 0.5, "tie_rate": 0.1}
                   for j in ("a", "b")]
    assert _legend(_charts.to_svg(_charts.candidate_chart(only_judges, (0.4, 0.4)))) <= {"measured"}


def test_candidate_datasets_are_not_accuracy_datasets(built: Path) -> None:
    md = (built / "report.md").read_text()
    overview = md.split("## Accuracy by dataset")[1].split("\n## ")[0]
    assert "my-system" not in overview


@needs_browser
def test_the_section_renders_in_chromium(built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    with chrome(tmp_path / "profile", monkeypatch, "--hide-scrollbars", "--window-size=1100,900") as browser:
        browser.get((built / "report.html").as_uri())
        img = "const i = document.querySelector('#candidates-chart-my-system img'); return !!i && i.complete && i.naturalWidth > 0;"
        WebDriverWait(browser, WAIT).until(lambda d: d.execute_script(img))
        nav = browser.execute_script("return Array.from(document.querySelectorAll('nav a')).map(a => a.getAttribute('href'));")
        assert "#your-ideas" in nav
        assert browser.find_element(By.ID, "your-ideas").is_displayed()
        if os.environ.get("UPDATE_SCREENSHOTS") == "1":
            browser.execute_script("document.getElementById('your-ideas').scrollIntoView();")
            SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
            browser.save_screenshot(str(SCREENSHOT))


def test_a_head_to_head_set_has_its_own_table_without_a_floor(tmp_path: Path) -> None:
    from novelty_audit.report._candidates import candidate_blocks

    figures = candidate_metrics(_verdicts().filter(pl.col("dataset") == "my-system").with_columns(pl.lit("a-vs-b").alias("dataset")),
                                {"a-vs-b": "head-to-head"}, confidence=0.95, controls={"always-first"})
    blocks = candidate_blocks(figures, {"always-first"}, lambda *a: None)
    table = blocks[-1]
    assert table.header[1] == "win rate of the first set" and len(table.rows[0]) == len(table.header)
    assert "a-vs-b wins 23–47% against the other set's ideas of the same area across 4 judge configurations" in blocks[-2].text
