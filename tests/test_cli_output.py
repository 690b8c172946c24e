"""Console tables read through a pipe or from a file (no terminal) are as wide as their cells: judge and backend names
whole, never cut with '…' at rich's 80 columns (the audit's piped output: tests/audit/test_piped_output.py)."""

from __future__ import annotations

import yaml


def test_judges_piped_lists_every_backend_and_judge_name_whole(project, run_main):
    code, out, err = run_main("judges")
    assert code == 0, err
    assert "…" not in out
    judges = yaml.safe_load((project / "params.yaml").read_text())["judge"]["judges"]
    assert len(judges) > 5
    for name in judges:
        assert f" {name} " in out, name
    assert " idea-novelty-checker " in out  # the longest backend name, cut as "idea-novelty-…" at 80 columns

