"""One model owns the bounds of the call knobs: params.yaml is checked against it when it loads, the API judges'
args extend it, and the call layer runs on it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from novelty_audit.config import CallSettings
from novelty_audit.errors import ConfigError
from novelty_audit.judges import LLMArgs
from novelty_audit.params import load_params

REPO = Path(__file__).resolve().parents[2]
API = "judge.judges.gpt-4o-mini-reference.args"


def _params_with(tmp_path: Path, knob: str, value) -> Path:
    doc = yaml.safe_load((REPO / "params.yaml").read_text(encoding="utf-8"))
    node = doc
    for part in API.split("."):
        node = node[part]
    node[knob] = value
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_the_api_judges_args_carry_the_call_layers_settings_and_their_bounds():
    assert issubclass(LLMArgs, CallSettings)
    for name, field in CallSettings.model_fields.items():
        assert LLMArgs.model_fields[name].metadata == field.metadata, name  # the same bounds, not a copy that drifts


@pytest.mark.parametrize("knob, value", [("circuit_breaker", -1), ("batch_discount", 0), ("batch_discount", 1.5),
                                         ("batch_max_requests", 0), ("batch_poll_s", -1), ("tokens_per_minute", 0)])  # fmt: skip
def test_a_call_knob_out_of_bounds_is_refused_when_params_load_naming_its_field(tmp_path, knob, value):
    with pytest.raises(ConfigError) as exc:
        load_params(_params_with(tmp_path, knob, value))
    assert any(ln.strip().startswith(f"{API}.{knob}:") for ln in str(exc.value).splitlines()), str(exc.value)


@pytest.mark.parametrize("knob, value", [("timeout_s", -5), ("circuit_breaker", -1), ("batch_discount", 2)])
def test_a_judge_built_outside_params_yaml_is_held_to_the_same_bounds(knob, value):
    with pytest.raises(ValueError, match=knob):
        LLMArgs(model="m", **{knob: value})


def test_the_edge_values_that_mean_something_still_validate():
    CallSettings(circuit_breaker=0, max_retries=0, backoff_s=0, batch_discount=1, batch_poll_s=0)
