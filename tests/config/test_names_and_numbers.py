"""Names that end up in table rows, headings and file names are one line of visible text, and number fields hold
finite numbers within their bounds: both are refused when params.yaml loads, naming the field; the command line
refuses a negative or non-finite --wait with one message (exit 2)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from novelty_audit.config import check_name
from novelty_audit.errors import ConfigError
from novelty_audit.params import load_params
from novelty_audit.pipeline import load_checked_params

REPO = Path(__file__).resolve().parents[2]
API = "gpt-4o-mini-reference"


def write(tmp_path: Path, edit) -> Path:
    doc = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    edit(doc)
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def refused(path: Path, loader=load_params) -> str:
    with pytest.raises(ConfigError) as exc:
        loader(path)
    return str(exc.value)


def rename_dataset(doc: dict, new: str) -> None:
    doc["pin"]["datasets"][new] = doc["pin"]["datasets"].pop("human-only")


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d: d["judge"]["judges"].update({"first\nsecond": {"backend": "always-first"}}), "judge id"),
        (lambda d: d["judge"].update(sweeps={"s\n": {"base": "always-first", "vary": {"votes": [1]}}}), "judge.sweeps: a sweep"),
        (lambda d: d["judge"].update(sweeps={"s": {"bases": ["always-first", "ran\x1bdom"], "vary": {"votes": [1]}}}), "bases"),
        (lambda d: rename_dataset(d, "human\nonly"), "pin.datasets"),
        (lambda d: d["judge"].update(datasets=["human-only", "human-plus-generated\r"]), "judge.datasets"),
        (lambda d: d["judge"]["judges"]["always-first"].update(datasets=["human\u2028only"]), "datasets.0"),
        (lambda d: d["judge"]["generators"].update({"gen\terator": {"backend": "expert"}}), "generators"),
        (lambda d: d["judge"].update(sweeps={"s": {"base": "always-first", "vary": {"dataset": ["human\u202eonly"]}}}), "dataset"),
    ],
)
def test_a_name_with_a_line_break_or_a_control_character_is_refused_naming_its_field(tmp_path, edit, field):
    text = refused(write(tmp_path, edit))
    assert field in text and "holds the control character" in text, text


def test_a_knob_value_that_would_put_a_line_break_into_a_variant_id_is_refused_naming_sweep_knob_and_value(tmp_path):
    text = refused(write(tmp_path, lambda d: d["judge"].update(sweeps={"s": {"base": API, "vary": {"prompt": ["p3-v1\nrow"]}}})))
    assert "judge.sweeps.s: knob prompt value 'p3-v1\\nrow': variant id" in text
    assert "\nrow" not in text  # the name is quoted, never printed raw


def test_the_shared_name_check_passes_plain_names_and_unicode_letters_through():
    for name in ("human-only", "gpt-4o-mini/prompt=p3-v1", "Idées inédites", "候选集"):
        assert check_name(name, "candidate set") == name
    with pytest.raises(ValueError, match="candidate set: name 'a\\\\x00b' holds the control character U\\+0000"):
        check_name("a\x00b", "candidate set")


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "-1"])
def test_budget_usd_must_be_a_finite_amount_of_zero_or_more(tmp_path, value):
    path = tmp_path / "params.yaml"
    text = (REPO / "params.yaml").read_text(encoding="utf-8")
    path.write_text(text.replace("budget_usd: 5.0", f"budget_usd: {value}", 1), encoding="utf-8")
    assert any(line.strip().startswith("judge.budget_usd:") for line in refused(path).splitlines())


@pytest.mark.parametrize(
    "dotted, value",
    [
        ("judge.prices.gpt-4o-mini.input_per_mtok", -0.15),
        ("judge.prices.gpt-4o-mini.output_per_mtok", float("inf")),
        (f"judge.judges.{API}.args.timeout_s", float("nan")),
        (f"judge.judges.{API}.args.sampling.temperature", float("nan")),
        (f"judge.judges.{API}.args.sampling.temperature", -0.5),
        (f"judge.judges.{API}.args.sampling.top_p", 1.5),
        (f"judge.judges.{API}.args.sampling.max_tokens", 0),
        ("metrics.confidence", float("nan")),
        ("signals.llm.temperature", -1.0),
        ("signals.recovery.min_similarity", 1.5),
        ("pools.percentile.top", float("inf")),
    ],
)
def test_a_nan_infinite_or_out_of_range_number_is_refused_naming_its_field(tmp_path, dotted, value):
    def edit(doc: dict) -> None:
        *parents, leaf = dotted.split(".")
        node = doc
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value

    text = refused(write(tmp_path, edit), load_checked_params)
    assert any(line.strip().startswith(f"{dotted}:") for line in text.splitlines()), text


@pytest.mark.parametrize("wait", ["-5", "nan", "inf"])
def test_stage_wait_must_be_a_finite_number_of_seconds(run_main, wait):
    code, out, err = run_main("stage", "judge", "--wait", wait)
    assert code == 2 and "Traceback" not in err
    assert err.count("error:") == 1 and "--wait" in err and "finite number of seconds" in err, err


@pytest.mark.parametrize("raw", ["nan", "inf", "-1", "soon"])
def test_the_lock_wait_from_the_environment_is_refused_when_not_a_finite_number(monkeypatch, raw):
    from novelty_audit.artifacts import LOCK_TIMEOUT_ENV
    from novelty_audit.artifacts._lock import lock_timeout

    monkeypatch.setenv(LOCK_TIMEOUT_ENV, raw)
    with pytest.raises(ConfigError, match=LOCK_TIMEOUT_ENV):
        lock_timeout()
