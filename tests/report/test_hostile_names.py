"""Names are data: a judge called `<b>x</b>`, `a|b` or `a\\nb` reads as written in report.md, report.html and
audit.md, never as markup, never splitting a table row or a heading."""

from __future__ import annotations

import re

import pytest
from report_world import PUBLISHED, write_upstream

from novelty_audit.audit import decisions_markdown
from novelty_audit.config import ReportParams
from novelty_audit.markdown import md_table, md_text
from novelty_audit.report import build_report, load_sources

HOSTILE = ["<b>x</b>", "a|b", "a\nb", "back\\slash", "R&D", "100%", "snake_case_", "#1 *bold*"]


def cells(line: str) -> list[str]:
    """A GFM table row's cells: split at `|` not escaped by a backslash."""
    return re.split(r"(?<!\\)\|", line.strip())[1:-1]


def check_markdown(md: str) -> None:
    lines = md.splitlines()
    for i, line in enumerate(lines):
        if re.fullmatch(r"\|(-+:?\|)+", line.replace("---:", "---")):  # a table's rule: its head and rows keep its width
            width = len(cells(line))
            j = i + 1
            while j < len(lines) and lines[j].startswith("| "):
                assert len(cells(lines[j])) == width, lines[j]
                j += 1
            assert len(cells(lines[i - 1])) == width, lines[i - 1]
    assert "<b>" not in md and "</b>" not in md
    assert not any(line == "b" or line.startswith("b |") for line in lines)  # "a\nb" stayed on one line


def test_md_text_shows_every_hostile_name_as_written_on_one_line():
    assert md_text("<b>x</b>") == "&lt;b&gt;x&lt;/b&gt;"
    assert md_text("a|b") == "a\\|b" and md_text("a\nb") == "a b" and md_text("back\\slash") == "back\\\\slash"
    assert md_text("R&D") == "R&amp;D" and md_text("100%") == "100%" and md_text("#1") == "\\#1"
    assert md_text("idea_0_text") == "idea_0_text" and md_text("snake_") == "snake\\_"
    assert md_text("[x](http://e.example)") == "[x\\](http://e.example)" and md_text("0.5 [0.4, 0.6]") == "0.5 [0.4, 0.6]"
    check_markdown(md_table(["judge", "value"], [[n, "0.5"] for n in HOSTILE]))


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("hostile")
    dirs = write_upstream(root / "artifacts")
    sources = load_sources(dirs["metrics"], dirs["judge"], dirs["pin"], published=PUBLISHED)
    for ds in list(sources.metrics):  # the measured judges renamed; the report reads names from metrics.json
        judges = sources.metrics[ds]
        for old, new in zip(("gpt-p1", "gpt-p3", "expert-import", "random"), HOSTILE):
            if old in judges:
                judges[new] = judges.pop(old)
    return build_report(sources, ReportParams())


def test_report_md_escapes_hostile_judge_names_in_tables_and_headings(hostile_report):
    md = hostile_report.markdown
    check_markdown(md)
    assert "&lt;b&gt;x&lt;/b&gt;" in md and "a\\|b" in md and "### a b" in md  # a card's heading, on one line
    html = hostile_report.html
    assert "<b>x</b>" not in html and "&lt;b&gt;x&lt;/b&gt;" in html


def test_audit_md_decisions_escape_hostile_judge_names():
    md = decisions_markdown({n: {"correct": 1} for n in HOSTILE})
    check_markdown(md)
    assert "| a b | 1 | 0 | 0 | 0 |" in md and "| a\\|b |" in md
