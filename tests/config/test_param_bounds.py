"""Knobs that cannot be negative (or zero) are refused when params.yaml loads, naming the field, instead of
being accepted and failing (or hanging) halfway through a paid run."""

from pathlib import Path

import pytest
import yaml

from novelty_audit.errors import ConfigError
from novelty_audit.params import load_params

REPO = Path(__file__).resolve().parents[2]


def with_value(tmp_path: Path, dotted: str, value) -> Path:
    """A copy of the shipped params.yaml with `dotted` (e.g. judge.judges.x.args.timeout_s) set to `value`."""
    doc = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    *parents, leaf = dotted.split(".")
    node = doc
    for p in parents:
        node = node.setdefault(p, {})
    node[leaf] = value
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


API = "judge.judges.gpt-4o-mini-reference.args"


@pytest.mark.parametrize(
    "field, value",
    [
        ("judge.budget_usd", -1.0),
        (f"{API}.timeout_s", -5),
        (f"{API}.timeout_s", 0),
        (f"{API}.connect_timeout_s", -1),
        (f"{API}.max_retries", -1),
        (f"{API}.concurrency", -2),
        (f"{API}.concurrency", 0),
        (f"{API}.votes", 0),
        (f"{API}.requests_per_minute", -60),
        ("judge.judges.always-first.args.votes", 0),
        ("judge.judges.ollama-llama3-reference.args.backoff_s", -1),
        ("judge.generators.gemma3-270m-zero.args.votes", -1),
        ("signals.llm.timeout_s", -1),
        ("signals.llm.max_retries", -3),
    ],
)
def test_a_negative_or_zero_knob_is_refused_naming_its_field(tmp_path, field, value):
    path = with_value(tmp_path, field, value)
    with pytest.raises(ConfigError) as exc:
        load_params(path)
    lines = str(exc.value).splitlines()
    assert any(ln.strip().startswith(f"{field}:") for ln in lines), str(exc.value)


@pytest.mark.parametrize(
    "field, value",
    [("judge.budget_usd", 0), (f"{API}.max_retries", 0), (f"{API}.timeout_s", 0.5), (f"{API}.requests_per_minute", None)],
)
def test_the_edge_values_that_mean_something_still_load(tmp_path, field, value):
    load_params(with_value(tmp_path, field, value))


def test_the_bounds_leave_the_params_payload_as_written(tmp_path):
    # Checked, never converted: a stage's params digest is the same as before the bounds existed.
    params = load_params(with_value(tmp_path, f"{API}.timeout_s", 30))
    args = params.judge.judges["gpt-4o-mini-reference"].args
    assert args["timeout_s"] == 30 and type(args["timeout_s"]) is int
    shipped = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))["judge"]["judges"]["gpt-4o-mini-reference"]["args"]
    assert set(args) == set(shipped) | {"timeout_s"}  # no bounded knob filled in with a default


def test_a_negative_knob_exits_2_without_a_traceback(project, run_main):
    p = project / "params.yaml"
    p.write_text(p.read_text(encoding="utf-8").replace("budget_usd: ", "budget_usd: -", 1), encoding="utf-8")
    code, _, err = run_main("judges")
    assert code == 2 and "judge.budget_usd" in err and "Traceback" not in err, err
