"""Published reference results: a pinned data file of figures as published, loaded and checked, never computed."""

from __future__ import annotations

from pathlib import Path

import pytest

from novelty_audit.artifacts import digest_file
from novelty_audit.errors import BadInputError, PinMismatchError
from novelty_audit.params import load_params
from novelty_audit.published import load_published

REPO = Path(__file__).resolve().parents[2]


def shipped_rows():
    pin = load_params(REPO / "params.yaml").report.published
    assert pin is not None
    return load_published(REPO / pin.path, pin.sha256)


@pytest.fixture
def shipped():
    return shipped_rows()


def test_the_shipped_file_matches_its_pin_and_holds_the_ai2_figures_as_shares(shipped):
    ai2 = {(r.dataset, r.judge, r.prompt): r.value for r in shipped
           if r.source.startswith("Sternlicht") and r.metric == "strict_accuracy"}
    assert len(ai2) == 14
    assert ai2[("human-only", "claude-sonnet-4-5", "reference")] == 0.7403
    assert ai2[("human-plus-generated", "claude-opus-4-6", "reference")] == 0.8636
    assert (ai2[("human-plus-generated", "gpt-5.4", "P3")], ai2[("human-plus-generated", "gpt-5.4", "P4")]) == (0.9351, 0.4091)
    assert all(r.url for r in shipped if r.source.startswith("Sternlicht"))


def test_the_studys_search_judges_are_pointwise_macro_f1_rows_of_their_own():
    rows = {r.judge: r for r in shipped_rows() if r.metric == "pointwise_macro_f1"}
    assert {j: r.value for j, r in rows.items()} == {
        "arXiv search agent (no query cap)": 0.78, "judge given five pre-retrieved abstracts": 0.889}
    assert all(r.source.startswith("Sternlicht") and r.url and r.dataset is None for r in rows.values())


def test_a_published_range_is_kept_as_a_range_and_approximate_figures_say_so(shipped):
    (qwen,) = [r for r in shipped if r.judge.startswith("Qwen3-4B")]
    assert (qwen.value, qwen.low, qwen.high, qwen.approximate) == (None, 0.69, 0.72, True)
    study = [r for r in shipped if r.source.startswith("distance-vs-judge")]
    assert len(study) == 3 and all(r.approximate and r.dataset == "human-only" for r in study)


def test_every_dataset_named_is_a_pinned_dataset(shipped):
    pinned = set(load_params(REPO / "params.yaml").pin.datasets)
    assert {r.dataset for r in shipped} - {None} <= pinned


def test_an_edited_file_fails_its_pin(tmp_path):
    f = tmp_path / "r.yaml"
    f.write_text("results: []\n")
    with pytest.raises(PinMismatchError, match="does not match its pin"):
        load_published(f, "0" * 64)


@pytest.mark.parametrize(
    "row, field",
    [
        ("{source: s, judge: j, metric: m, value: 74.03}", "results.0.value"),  # a percentage, not a share
        ("{source: s, judge: j, metric: m}", "give value, or both low and high"),
        ("{source: s, judge: j, metric: m, low: 0.7, high: 0.6}", "above high"),
        ("{source: s, judge: j, metric: m, value: 0.5, colour: red}", "results.0.colour"),
    ],
)
def test_bad_rows_are_errors_naming_the_field(tmp_path, row, field):
    f = tmp_path / "r.yaml"
    f.write_text(f"results:\n  - {row}\n")
    with pytest.raises(BadInputError) as exc:
        load_published(f, digest_file(f))
    assert str(f) in exc.value.message and field in exc.value.message
