"""The NovBench report section: measured rows, published rows kept apart and labelled, values escaped."""

from __future__ import annotations

from pathlib import Path

import pytest

from novelty_audit.errors import PinMismatchError
from novelty_audit.novbench import ReportSection, check_published, published_rows, report_section
from novelty_audit.params import DatasetPin

PUBLISHED = Path(__file__).resolve().parents[2] / "data" / "novbench" / "result_dict_change.json"

METRICS = {
    "human-only": {"always-first": {"strict_accuracy": 0.5}},
    "novbench-change": {
        "expert": {"coverage": 1.0, "coverage_ci_low": 1.0, "coverage_ci_high": 1.0, "dist_acc": 1.0, "clarity": None,
                   "clarity_fs": None, "clarity_kc": 0.785, "clarity_ls": 0.884, "relevance_cos": 0.6, "n_papers": 100,
                   "n_items": 471, "n_invalid": 0},
        "<script>": {"coverage": 0.2, "dist_acc": 0.7, "n_papers": 100, "n_items": 300, "n_invalid": 4},
    },
}


def test_published_rows_are_read_from_the_file_one_per_prompt_and_variant() -> None:
    rows = published_rows(PUBLISHED)
    gpt = [r for r in rows if r["generator"] == "gpt-4o"]
    assert len(gpt) == 9  # zero / few / rag × original / change / del
    few_change = next(r for r in gpt if r["prompt"] == "few" and r["data"].startswith("change"))
    assert few_change["coverage"] == pytest.approx(0.2376399433899434)
    assert few_change["relevance_ims"] == pytest.approx(3.480388054847717)
    assert {r["data"].split()[0] for r in rows if r["generator"] == "expert as model"} == {"original", "change", "del"}


def test_a_published_file_that_moved_is_refused(tmp_path: Path) -> None:
    moved = tmp_path / "r.json"
    moved.write_text('{"gpt-4o_zero": {"model_coverage": 0.9}}')
    pin = DatasetPin(source="novbench", path="x.json", sha256="0",
                     published={"path": str(moved), "sha256": "19ca4ebfbaaf2b4aa570e8ff8ec0825692ad2869ce9e334194fb2e0ccac61f9a", "data": "change"})
    with pytest.raises(PinMismatchError):
        check_published("novbench-change", pin)


def test_section_lists_measured_novbench_rows_only_and_published_rows_apart() -> None:
    sec = report_section(METRICS, published_rows(PUBLISHED), None, notes={"clarity_fs_unavailable": "no LM here"})
    assert isinstance(sec, ReportSection) and sec.id == "novbench"
    assert "always-first" not in sec.markdown  # pairwise rows belong to the main tables
    assert "1.000 [1.000, 1.000]" in sec.markdown and "null" in sec.markdown
    assert "Published, not rerun" in sec.html and "relevance_ims (1–5)" in sec.html
    measured_table, published_table = sec.markdown.split("**Published, not rerun**")
    assert "gpt-4o" not in measured_table and "gpt-4o" in published_table
    assert "<script>" not in sec.html and "&lt;script&gt;" in sec.html
    assert "no LM here" in sec.html


def test_no_novbench_entry_and_nothing_published_gives_no_section() -> None:
    assert report_section({"human-only": METRICS["human-only"]}, None, None) is None
