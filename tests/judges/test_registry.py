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
    with pytest.raises(ConfigError, match="has no price"):
        build_judges(jp, store_root=tmp_path)


# -- every configured judge is validated, enabled or not ---------------------------------


def test_every_backend_declares_its_args_model_so_it_can_be_validated_without_building():
    from pydantic import BaseModel

    for name in JUDGES.names():
        model = JUDGES.args_model(name)
        assert model is not None and issubclass(model, BaseModel), name


def test_a_disabled_judge_with_an_unknown_backend_fails_with_close_matches(tmp_path):
    jp = JudgeParams.model_validate(
        {"judges": {"on": {"backend": "random"}, "off": {"backend": "opneai", "enabled": False, "args": {"model": "m"}}}}
    )
    with pytest.raises(UnknownNameError) as exc:
        build_judges(jp, store_root=tmp_path)
    assert "judge.judges.off.backend" in exc.value.message and "opneai" in exc.value.message
    assert "openai" in exc.value.hint


def test_a_disabled_judges_bad_args_fail_naming_the_field(tmp_path):
    jp = JudgeParams.model_validate(
        {
            "judges": {
                "on": {"backend": "random"},
                "off": {"backend": "openai", "enabled": False, "args": {"modle": "gpt", "sampling": {"temperatur": 0}}},
            }
        }
    )
    with pytest.raises(ConfigError) as exc:
        build_judges(jp, store_root=tmp_path, names=["on"])
    msg = exc.value.message
    assert "judge.judges.off.args.modle" in msg  # misspelt key
    assert "judge.judges.off.args.model" in msg  # so the required one is missing
    assert "judge.judges.off.args.sampling.temperatur" in msg  # nested fields are named in full
    assert "model" in exc.value.hint


def test_every_problem_is_listed_at_once(tmp_path):
    jp = JudgeParams.model_validate(
        {"judges": {"a": {"backend": "always-frist", "enabled": False}, "b": {"backend": "random", "args": {"vots": 3}}}}
    )
    with pytest.raises(ConfigError) as exc:
        judge_catalog(jp)
    assert "judge.judges.a.backend" in exc.value.message and "judge.judges.b.args.vots" in exc.value.message


def test_validation_imports_no_extra_and_builds_no_client():
    # A fresh interpreter: what validating imports is not hidden by what other tests imported.
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import sys
        from novelty_audit.judges import JudgeParams, validate_judges
        heavy = ("torch", "sentence_transformers", "llama_cpp", "openai", "anthropic", "httpx")
        before = {m for m in heavy if m in sys.modules}
        validate_judges(JudgeParams.model_validate({"judges": {
            "g": {"backend": "gguf-logprob", "args": {"model": "/nonexistent/model.gguf"}},
            "d": {"backend": "distance-yin", "args": {"corpus": "/nonexistent/corpus.parquet"}},
            "o": {"backend": "openai", "args": {"model": "m", "base_url": "http://127.0.0.1:9/v1"}},
            "c": {"backend": "anthropic", "args": {"model": "m"}},
        }}))
        print(sorted({m for m in heavy if m in sys.modules} - before))
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"


def test_a_typo_in_a_disabled_judge_fails_when_params_load(project):
    import yaml

    from novelty_audit.pipeline import load_checked_params

    raw = yaml.safe_load((project / "params.yaml").read_text())
    off = [n for n, s in raw["judge"]["judges"].items() if s.get("enabled") is False]
    assert off, "the shipped params.yaml has disabled judges"
    raw["judge"]["judges"][off[0]]["args"]["vote"] = 3
    (project / "params.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(ConfigError) as exc:
        load_checked_params(project / "params.yaml")
    assert f"judge.judges.{off[0]}.args.vote" in exc.value.message
    assert str(project / "params.yaml") in exc.value.message


def test_importing_the_judges_package_imports_no_backend_module_until_a_name_is_used():
    # A fresh interpreter: the backend table names factories lazily, so only the name that is used is imported.
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent(
        """
        import sys
        import novelty_audit.judges as judges
        backends = ("novelty_audit.judges._controls", "novelty_audit.judges._import", "novelty_audit.judges._openai",
                    "novelty_audit.judges._anthropic", "novelty_audit.judges._gguf", "novelty_audit.judges.distance._judge")
        print(sorted(m for m in backends if m in sys.modules))
        judges.JUDGES.get("random")
        print(sorted(m for m in backends if m in sys.modules))
        """
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.split("\n")[:2] == ["[]", "['novelty_audit.judges._controls']"]


def test_every_backend_in_the_table_resolves_to_a_factory_with_a_description():
    from novelty_audit.judges import BACKENDS

    for name in BACKENDS:
        factory = JUDGES.get(name)
        assert callable(factory) and (factory.__doc__ or "").strip(), name
