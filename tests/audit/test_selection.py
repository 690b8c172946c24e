"""`novelty-audit audit` selection: filters by dataset/judge/pair/cause/status, runs by id, git revision or date,
default the last two distinct runs; ambiguous or unknown references exit 2, never a silent fallback."""

from __future__ import annotations

import orjson
import pytest
from worlds import DocLedger, DocWorld, doc, write_params


@pytest.fixture
def project(tmp_path, monkeypatch):
    ledger = DocLedger(tmp_path)
    write_params(tmp_path)
    monkeypatch.chdir(tmp_path)
    return ledger


def _three_runs(project) -> list[str]:
    """run 1; run 2: a new document flips judge-x on p-ab and p-ac (evidence); run 3: a knob flips judge-y on p-cd (config)."""
    w1 = DocWorld(configs={**DocWorld().configs, "judge-y": {"backend": "distance-yin", "k": 1}},
                  verdicts={**DocWorld().verdicts, ("judge-y", "p-cd"): "i-c"})
    w2 = w1.edit(neighbours={**w1.neighbours, "i-a": [doc("n1", "Weather sonification")]})
    w2 = w2.with_verdict("judge-x", "p-ab", "i-b").with_verdict("judge-x", "p-ac", "i-c")
    w3 = w2.edit(configs={**w2.configs, "judge-y": {"backend": "distance-yin", "k": 2}}).with_verdict("judge-y", "p-cd", "i-d")
    return [project.record(w) for w in (w1, w2, w3)]


def _set_ledger(project, facts: dict[str, tuple[str, str | None]]) -> None:
    """Rewrite the ledger's times and git revisions (run id → (time, revision)), as if recorded then."""
    path = project.store.root / "runs.jsonl"
    lines = []
    for raw in path.read_text().splitlines():
        rec = orjson.loads(raw)
        time, rev = facts[rec["run_id"]]
        rec.update(time=time, git_revision=rev, seen=[{"time": time, "git_revision": rev}])
        lines.append(orjson.dumps(rec, option=orjson.OPT_SORT_KEYS).decode())
    path.write_text("\n".join(lines) + "\n")


def _json(run_main, *args: str) -> dict:
    code, out, err = run_main("audit", "--json", *args)
    assert code == 0, err
    return orjson.loads(out)


def test_the_default_is_the_last_two_distinct_runs_and_filters_narrow_the_changes(project, run_main):
    r1, r2, r3 = _three_runs(project)
    doc_all = _json(run_main)
    assert (doc_all["from"], doc_all["to"]) == (r2, r3)
    assert [c["cause"] for c in doc_all["changes"]] == ["config"]
    span = _json(run_main, "--from", r1[:8])
    assert sorted(c["pair"] for c in span["changes"]) == ["p-ab", "p-ac", "p-cd"]
    evidence = _json(run_main, "--from", r1, "--cause", "evidence")
    assert sorted(c["pair"] for c in evidence["changes"]) == ["p-ab", "p-ac"]
    assert evidence["hidden"] == 1 and evidence["filters"] == {"cause": "evidence"}
    assert evidence["summary"]["config"] == 0  # the summary counts what is shown
    one = _json(run_main, "--from", r1, "--pair", "p-ab", "--judge", "judge-x", "--dataset", "human-only", "--status", "unadjudicated")
    assert [c["pair"] for c in one["changes"]] == ["p-ab"]
    assert [c["cause"] for c in _json(run_main, "--from", r1, "--judge", "judge-y")["changes"]] == ["config"]
    assert _json(run_main, "--from", r1, "--judge", "judge-z")["changes"] == []
    code, _, err = run_main("audit", "--cause", "weather")
    assert code == 2 and "--cause weather: not one of dataset, config" in err


def test_a_git_revision_names_its_run_ambiguity_lists_candidates_and_an_unknown_revision_exits_2(project, run_main):
    r1, r2, r3 = _three_runs(project)
    _set_ledger(project, {r1: ("2026-11-10T09:00:00+00:00", "aaaa1111"), r2: ("2026-11-20T09:00:00+00:00", "bbbb2222"),
                          r3: ("2026-11-20T15:00:00+00:00", "bbbb3333")})
    assert _json(run_main, "--from", "aaaa1111", "--to", "bbbb2222")["to"] == r2
    code, _, err = run_main("audit", "--from", "bbbb")
    assert code == 2 and "matches 2 runs" in err and r2 in err and r3 in err
    code, _, err = run_main("audit", "--from", "cccc9999")
    assert code == 2 and "no run matches 'cccc9999'" in err
    # The latest run compared with itself is refused, never shown as "no changes".
    code, _, err = run_main("audit", "--from", "bbbb3333")
    assert code == 2 and "nothing to compare" in err


def test_runs_are_chosen_by_date_with_since_and_at(project, run_main):
    r1, r2, r3 = _three_runs(project)
    _set_ledger(project, {r1: ("2026-11-10T09:00:00+00:00", None), r2: ("2026-11-20T09:00:00+00:00", None),
                          r3: ("2026-11-20T15:00:00+00:00", None)})
    day = _json(run_main, "--at", "2026-11-20")
    assert (day["from"], day["to"]) == (r1, r3)  # in force at the day's start → at its end
    assert (_json(run_main, "--since", "2026-11-15")["from"], _json(run_main, "--since", "2026-11-15")["to"]) == (r1, r3)
    assert _json(run_main, "--since", "2026-11-20T12:00")["from"] == r2
    assert _json(run_main, "--from", "2026-11-19", "--to", "2026-11-20")["to"] == r3  # a date means its end
    code, _, err = run_main("audit", "--at", "2026-11-12")
    assert code == 2 and "no run of other content was recorded" in err
    code, _, err = run_main("audit", "--from", "2026-11-01")
    assert code == 2 and "no run was recorded at or before 2026-11-01" in err
    code, _, err = run_main("audit", "--since", "7d", "--from", r1)
    assert code == 2 and "do not combine" in err


def test_list_runs_gives_the_run_pickers_latest_first(project):
    from novelty_audit.audit import list_runs

    r1, r2, r3 = _three_runs(project)
    runs = list_runs(project.root / "params.yaml")
    assert [r["run_id"] for r in runs] == [r3, r2, r1]
    assert {"run_id", "time", "git_revision", "revisions", "seen", "stages", "describe"} <= set(runs[0])
