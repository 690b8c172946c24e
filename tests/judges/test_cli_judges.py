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
