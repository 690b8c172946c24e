"""The judge registry: one hop from params name to backend factory; typos fail before any call."""

from __future__ import annotations

import pytest

from novelty_audit.errors import ConfigError, UnknownNameError
from novelty_audit.judges import JUDGES, JudgeParams, build_judges, judge_catalog


def test_unknown_backend_suggests_close_matches(tmp_path):
    jp = JudgeParams.model_validate({"judges": {"af": {"backend": "always-frist"}}})
    with pytest.raises(UnknownNameError) as exc:
        build_judges(jp, store_root=tmp_path)
    assert "always-frist" in exc.value.message
    assert "always-first" in exc.value.hint


def test_a_backend_cannot_be_registered_twice():
    with pytest.raises(ValueError, match="registered twice"):
        JUDGES.register("always-first")(lambda ctx: None)


def test_bad_args_name_the_judge_and_field(tmp_path):
    jp = JudgeParams.model_validate({"judges": {"ctrl": {"backend": "always-first", "args": {"vots": 3}}}})
    with pytest.raises(ConfigError) as exc:
        build_judges(jp, store_root=tmp_path)
    assert "judge.judges.ctrl.args" in exc.value.message and "vots" in exc.value.message


def test_unknown_keys_in_the_judge_section_fail_when_params_load():
    with pytest.raises(Exception, match="extra"):
        JudgeParams.model_validate({"judgez": {}})


def test_disabled_judges_are_configured_but_not_built(tmp_path):
    jp = JudgeParams.model_validate(
        {"judges": {"on": {"backend": "random"}, "off": {"backend": "openai", "enabled": False, "args": {"model": "m"}}}}
    )
    built = build_judges(jp, store_root=tmp_path)
    assert [j.name for j in built.judges] == ["on"]
    listed = judge_catalog(jp)
    assert {j["judge"]: j["enabled"] for j in listed["judges"]} == {"off": False, "on": True}
    assert {"always-first", "always-second", "random", "abstain", "import", "openai", "anthropic"} <= set(listed["backends"])


def test_config_digest_follows_every_knob(tmp_path):
    def digest(**args):
        jp = JudgeParams.model_validate({"judges": {"r": {"backend": "random", "args": args}}})
        return build_judges(jp, store_root=tmp_path).judges[0].config_digest

    assert digest() == digest(votes=3)
    assert digest() != digest(votes=5)
    assert digest() != digest(orders="forward")


def test_an_api_judge_with_a_budget_needs_a_price(tmp_path):
    jp = JudgeParams.model_validate(
        {"budget_usd": 1.0, "judges": {"g": {"backend": "openai", "args": {"model": "unpriced-model"}}}}
    )
    with pytest.raises(ConfigError, match="no entry in judge.prices"):
        build_judges(jp, store_root=tmp_path)
