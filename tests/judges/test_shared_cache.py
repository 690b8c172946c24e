"""The team-shared call cache (`store.shared_cache`): two checkouts sharing one cache URL pay once; entries
are checked before use; concurrent writers never leave a damaged entry; nothing secret is stored."""

from __future__ import annotations

import logging
import multiprocessing
from pathlib import Path

import orjson
import pytest
from judge_items import make_pairs, make_points

from novelty_audit.judges import JudgeParams, build_judges
from novelty_audit.llm import SharedCallCache
from novelty_audit.llm._entry import decode_entry as _decode
from novelty_audit.llm._entry import encode_entry as _encode
from novelty_audit.params import StoreParams

KEY = "sk-test-SHARED-SECRET-42"


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", KEY)


def checkout(root: Path, base_url: str, shared: str | None, options: dict | None = None, **args):
    """One checkout's judge: its own store root (local call cache), the team's shared cache URL."""
    spec = {"model": "mock", "base_url": base_url, "api_key_env": "MOCK_API_KEY", "backoff_s": 0.001, "max_retries": 1, "votes": 2}
    spec.update(args)
    jp = JudgeParams.model_validate(
        {"tasks": ["pairwise", "pointwise"], "progress": False, "judges": {"j": {"backend": "openai", "args": spec}}}
    )
    return build_judges(jp, store_root=root, shared_cache=shared, shared_cache_options=options).judges[0]


def verdicts(out) -> list[tuple]:
    return [(r["pair_id"], r["verdict"], tuple(r["votes_forward"]), tuple(r["votes_reverse"])) for r in out.pairwise] + [
        (r["idea_id"], r["predicted"]) for r in out.pointwise
    ]


def shared_entries(root: Path) -> list[Path]:
    return sorted(root.glob("calls/??/*.json"))


def test_a_second_checkout_makes_no_call_for_the_first_ones_work(mock_llm, tmp_path):
    team = tmp_path / "team-cache"
    pairs, points = make_pairs(3), make_points(2)
    first = checkout(tmp_path / "alice", mock_llm.base_url, str(team)).judge(pairs, points)
    paid = mock_llm.count
    assert paid == 3 * 2 * 2 + 2 * 2  # pairs × orders × votes + points × votes
    assert len(shared_entries(team)) == paid  # every answer written back

    judge = checkout(tmp_path / "bob", mock_llm.base_url, f"file://{team}")
    second = judge.judge(pairs, points)
    assert mock_llm.count == paid, "the second checkout asked the provider again"
    assert verdicts(second) == verdicts(first)
    assert judge.facts()["shared_cache_hits"] == paid and judge.facts()["calls"] == 0
    assert [r["call_digests"] for r in second.pairwise] == [r["call_digests"] for r in first.pairwise]
    # the fetched entries are now local: bob's next run needs neither the provider nor the team cache
    assert len(list((tmp_path / "bob" / "cache" / "calls").glob("??/*.json"))) == paid


def test_work_only_the_second_checkout_has_is_asked_once_and_shared_back(mock_llm, tmp_path):
    team = tmp_path / "team"
    checkout(tmp_path / "alice", mock_llm.base_url, str(team)).judge(make_pairs(2), [])
    before = mock_llm.count
    checkout(tmp_path / "bob", mock_llm.base_url, str(team)).judge(make_pairs(3), [])
    assert mock_llm.count - before == 1 * 2 * 2  # only the third pair
    assert len(shared_entries(team)) == 3 * 2 * 2


def test_a_damaged_shared_entry_is_ignored_with_a_warning_asked_again_and_replaced(mock_llm, tmp_path, caplog):
    team = tmp_path / "team"
    pairs = make_pairs(1)
    checkout(tmp_path / "alice", mock_llm.base_url, str(team), votes=1).judge(pairs, [])
    paid = mock_llm.count
    victim = shared_entries(team)[0]
    entry = orjson.loads(victim.read_bytes())
    entry["value"]["response"] = '{"answer": "B"}'  # an edited answer under the old checksum
    victim.write_bytes(orjson.dumps(entry, option=orjson.OPT_SORT_KEYS))

    with caplog.at_level(logging.WARNING, logger="novelty_audit.llm._shared_cache"):
        checkout(tmp_path / "bob", mock_llm.base_url, str(team), votes=1).judge(pairs, [])
    assert mock_llm.count == paid + 1  # exactly the damaged one asked again
    assert any("ignored the entry of" in r.getMessage() and "checksum mismatch" in r.getMessage() for r in caplog.records)
    assert _decode(victim.read_bytes(), victim.stem)[0] is not None  # the fresh answer replaced it


def test_an_entry_under_another_keys_name_is_not_used(mock_llm, tmp_path):
    team = tmp_path / "team"
    pairs = make_pairs(1)
    checkout(tmp_path / "alice", mock_llm.base_url, str(team), votes=1).judge(pairs, [])
    a, b = shared_entries(team)
    a.write_bytes(b.read_bytes())  # a sound entry, but of the other call
    before = mock_llm.count
    checkout(tmp_path / "bob", mock_llm.base_url, str(team), votes=1).judge(pairs, [])
    assert mock_llm.count == before + 1


def test_shared_entries_and_paths_hold_no_secret(mock_llm, tmp_path):
    team = tmp_path / "team"
    checkout(tmp_path / "alice", mock_llm.base_url.replace("http://", f"http://user:{KEY}@"), str(team)).judge(make_pairs(2), make_points(1))
    assert shared_entries(team)
    for p in team.rglob("*"):
        assert KEY not in str(p)
        if p.is_file():
            assert KEY.encode() not in p.read_bytes(), p


def test_secret_looking_shared_cache_options_are_refused():
    with pytest.raises(ValueError, match="store.shared_cache_options.secret: secrets are read from the environment only"):
        StoreParams(shared_cache="s3://team/cache", shared_cache_options={"secret": "x", "endpoint_url": "http://127.0.0.1:9"})
    assert StoreParams(shared_cache="s3://team/cache", shared_cache_options={"endpoint_url": "http://127.0.0.1:9"}).shared_cache


def test_an_unreachable_shared_cache_costs_calls_never_the_run(mock_llm, tmp_path, caplog):
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the cache directory should be")
    with caplog.at_level(logging.WARNING, logger="novelty_audit.llm._shared_cache"):
        out = checkout(tmp_path / "alice", mock_llm.base_url, str(blocker / "cache"), votes=1).judge(make_pairs(2), [])
    assert [r["verdict"] for r in out.pairwise] and mock_llm.count == 2 * 2
    assert any("goes on with the local cache only" in r.getMessage() for r in caplog.records)


def _hammer(url: str, keys: list[str], writer: int) -> None:
    shared = SharedCallCache(url)
    for k in keys:
        # Each writer has its own answer for the key (sampled answers differ): any one of them may win, whole.
        shared.put(k, _encode(k, {"response": f"writer {writer} " + "x" * 20000, "outcome": "valid"}))


def test_concurrent_writers_never_leave_a_damaged_or_partial_entry(tmp_path):
    url = str(tmp_path / "team")
    keys = [f"{i:02x}" + "0" * 62 for i in range(40)]
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_hammer, args=(url, keys, w)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    found = SharedCallCache(url).fetch(keys)
    assert sorted(found) == keys  # every entry present and sound
    assert not list((tmp_path / "team").rglob("*.tmp"))


def test_two_checkouts_of_the_project_share_answers_through_params_store_shared_cache(project, mock_llm, tmp_path):
    """End to end through params.yaml: the second checkout's judge stage makes 0 calls and writes equal verdicts."""
    import polars as pl
    import yaml

    from novelty_audit.pipeline import run_stage

    team = tmp_path / "team-cache"

    def checkout_params(name: str) -> None:
        raw = yaml.safe_load((project / "params.yaml").read_text())
        raw["store"] = {"root": f".store-{name}", "artifacts": f"artifacts-{name}", "shared_cache": str(team)}
        raw["pin"]["datasets"] = {"human-only": raw["pin"]["datasets"]["human-only"]}  # only what this test judges
        raw["judge"] = {
            "datasets": ["human-only"], "tasks": ["pairwise"], "progress": False,
            "judges": {"mock": {"backend": "openai", "args": {"model": "mock", "base_url": mock_llm.base_url, "api_key_env": "MOCK_API_KEY", "votes": 1}}},
        }  # fmt: skip
        (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))

    checkout_params("alice")
    run_stage("pin")
    run_stage("judge")
    paid = mock_llm.count
    assert paid == 154 * 2 and len(shared_entries(team)) == paid

    checkout_params("bob")
    run_stage("pin")
    run_stage("judge")
    assert mock_llm.count == paid, "the second checkout asked the provider again"
    alice = pl.read_parquet(project / "artifacts-alice/judge/verdicts.parquet")
    bob = pl.read_parquet(project / "artifacts-bob/judge/verdicts.parquet")
    assert bob.equals(alice)


def test_verify_walks_every_cache_in_the_call_cache_format_including_semantic_scholar_responses(tmp_path):
    from novelty_audit.judges import verify_caches

    key = "ab" + "0" * 62
    damaged = tmp_path / "cache" / "s2" / "ab" / f"{key}.json"
    damaged.parent.mkdir(parents=True)
    damaged.write_bytes(_encode(key, {"data": []})[:-20])
    assert [(Path(f).name, reason) for f, reason in verify_caches(tmp_path / "cache")] == [(damaged.name, "not valid JSON")]


def test_a_flow_chunk_reads_and_fills_the_shared_cache_like_the_unsplit_stage(mock_llm, tmp_path):
    from novelty_audit.orchestration import plan_chunks, run_chunk

    team = tmp_path / "team"
    spec = {"model": "mock", "base_url": mock_llm.base_url, "api_key_env": "MOCK_API_KEY", "backoff_s": 0.001, "max_retries": 1, "votes": 1}
    jp = JudgeParams.model_validate({"tasks": ["pairwise"], "progress": False, "judges": {"j": {"backend": "openai", "args": spec}}})
    pairs = make_pairs(2)
    checkout(tmp_path / "alice", mock_llm.base_url, str(team), votes=1).judge(pairs, [])
    paid = mock_llm.count
    (chunk,) = plan_chunks(build_judges(jp, store_root=tmp_path / "bob").judges, pairs, [], chunk_size=10)
    out = run_chunk(jp, tmp_path / "bob", chunk, shared_cache=str(team))
    assert mock_llm.count == paid, "a chunk on a worker asked the provider for work the team cache holds"
    assert out.facts["shared_cache_hits"] == paid
