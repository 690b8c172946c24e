"""`novelty-audit judges` lists registered backends and configured judges."""

from __future__ import annotations

import orjson

from novelty_audit.cli import main


def test_judges_lists_backends_and_the_configured_judges(project, capsys):
    main(["judges", "--json"])
    listed = orjson.loads(capsys.readouterr().out)
    assert {"always-first", "random", "import", "openai", "anthropic"} <= set(listed["backends"])
    judges = {j["judge"]: j for j in listed["judges"]}
    assert judges["always-first"]["enabled"] is True
    assert judges["gpt-4o-mini-reference"]["enabled"] is False


def test_judges_fails_on_a_bad_disabled_judge_without_a_traceback(project, capsys):
    import pytest
    import yaml

    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"]["judges"]["typo"] = {"backend": "distance-yinn", "enabled": False}
    (project / "params.yaml").write_text(yaml.safe_dump(raw))
    with pytest.raises(SystemExit) as exc:
        main(["judges", "--json"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "judge.judges.typo.backend" in err and "distance-yin" in err
    assert "Traceback" not in err
