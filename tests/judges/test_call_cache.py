"""The call cache: a damaged entry is never used, the endpoint is part of the key, a call in flight is
claimed by one process at a time, and temp files of killed writers are cleaned at the next start."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import orjson
import pytest
from judge_items import make_pairs
from mock_llm import MockLLM
from racers import outputs, started

from novelty_audit.artifacts import temp_prefix
from novelty_audit.judges import CallCache, call_key, endpoint_id, verify_caches
from novelty_audit.llm import verify_call_cache
from novelty_audit.llm._entry import encode_entry

KEY = "sk-test-SECRET123"


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", KEY)


def api(build, base_url: str, **kw):
    args = {"model": "mock", "base_url": base_url, "api_key_env": "MOCK_API_KEY", "backoff_s": 0.001, "max_retries": 1, "votes": 1}
    args.update(kw)
    return build("openai", tasks=("pairwise",), **args)


def entries(store: Path) -> list[Path]:
    return sorted(p for p in (store / "cache" / "calls").glob("??/*.json"))


def key_of(**over) -> str:
    base = dict(backend="openai", model="m", endpoint=None, sampling={"temperature": 1.0}, prompt_bytes=b"prompt", vote_index=0)
    base.update(over)
    return call_key(**base)


# -- integrity -----------------------------------------------------------------------------------------


def test_an_edited_stored_choice_is_discarded_with_a_warning_and_the_call_asked_again(build, mock_llm, tmp_path, caplog):
    pairs = make_pairs(2)
    first = api(build, mock_llm.base_url).judge(pairs, []).pairwise
    asked = mock_llm.count
    assert asked == 2 * 2  # 2 pairs × 2 orders × 1 vote
    victim = entries(tmp_path / "store")[0]
    entry = orjson.loads(victim.read_bytes())
    value = entry["value"]
    value["choice"] = 1 - value["choice"] if isinstance(value["choice"], int) else "B"
    victim.write_bytes(orjson.dumps(entry, option=orjson.OPT_SORT_KEYS))  # still valid JSON, same key

    with caplog.at_level(logging.WARNING, logger="novelty_audit.llm._cache"):
        again = api(build, mock_llm.base_url).judge(pairs, []).pairwise
    assert mock_llm.count == asked + 1, "exactly the tampered call is asked again"
    assert again == first, "the tampered vote was not used"
    assert any(str(victim) in r.getMessage() and "checksum" in r.getMessage() for r in caplog.records)
    quarantined = list((tmp_path / "store" / "cache" / "calls" / "corrupt").iterdir())
    assert len(quarantined) == 1 and quarantined[0].name.startswith(victim.stem)
    assert verify_caches(tmp_path / "store" / "cache") == []  # the re-asked answer replaced it, soundly


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda b: b[:-9], id="truncated"),
        pytest.param(lambda b: os.urandom(64), id="random-bytes"),
        pytest.param(lambda b: b.replace(b'"choice":0', b'"choice":1', 1), id="stored-choice-changed"),
        pytest.param(lambda b: orjson.dumps({"outcome": "valid", "choice": 0}), id="bare-value-without-checksum"),
    ],
)
def test_a_damaged_entry_is_never_returned(tmp_path, damage, caplog):
    cache = CallCache(tmp_path / "calls")
    key = key_of()
    cache.put(key, {"outcome": "valid", "choice": 0, "response": '{"answer": "A"}', "cost_usd": 0.0001})
    assert cache.get(key)["choice"] == 0
    path = cache.path(key)
    path.write_bytes(damage(path.read_bytes()))
    with caplog.at_level(logging.WARNING, logger="novelty_audit.llm._cache"):
        assert cache.get(key) is None
    assert not path.exists() and len(list((tmp_path / "calls" / "corrupt").iterdir())) == 1
    assert str(path) in caplog.text
    assert cache.get(key) is None  # nothing left to use; the caller asks again


def test_an_entry_copied_under_another_keys_name_is_rejected(tmp_path):
    cache = CallCache(tmp_path / "calls")
    a, b = key_of(vote_index=0), key_of(vote_index=1)
    cache.put(a, {"outcome": "valid", "choice": 0})
    cache.path(b).parent.mkdir(parents=True, exist_ok=True)
    cache.path(b).write_bytes(cache.path(a).read_bytes())
    assert cache.get(b) is None
    assert cache.get(a) == {"outcome": "valid", "choice": 0}


def test_verify_names_every_damaged_entry_and_changes_nothing(tmp_path):
    cache = CallCache(tmp_path / "cache" / "calls")
    keys = [key_of(vote_index=i) for i in range(3)]
    for i, k in enumerate(keys):
        cache.put(k, {"outcome": "valid", "choice": i % 2})
    cache.put(keys[0], {"outcome": "valid", "choice": 1})  # the replaced answer goes to history/
    assert verify_caches(tmp_path / "cache") == []

    flipped = cache.path(keys[1])
    data = bytearray(flipped.read_bytes())
    data[data.index(b'"choice":') + 9] ^= 0x01  # one flipped bit in the stored choice
    flipped.write_bytes(bytes(data))
    history = next((tmp_path / "cache" / "calls" / "history").iterdir())
    history.write_bytes(history.read_bytes().replace(b'"choice":0', b'"choice":1'))

    bad = dict(verify_caches(tmp_path / "cache"))
    assert set(bad) == {str(flipped), str(history)}
    assert flipped.exists() and history.exists(), "verify only reports"


# -- the endpoint is part of the key --------------------------------------------------------------------


def test_the_same_model_on_two_servers_is_asked_on_each(build, mock_llm):
    pairs = make_pairs(2)
    with MockLLM() as other:
        api(build, mock_llm.base_url).judge(pairs, [])
        api(build, other.base_url).judge(pairs, [])
        assert mock_llm.count == 4 and other.count == 4, "the second server was asked, not replayed"
        api(build, other.base_url + "/").judge(pairs, [])  # the same endpoint spelled differently
        assert other.count == 4


def test_endpoint_identity_is_normalized_and_never_holds_credentials():
    assert endpoint_id("openai", None) == "openai:default"
    assert endpoint_id("openai", "HTTP://LocalHost:80/v1//") == "http://localhost/v1"
    assert endpoint_id("openai", "https://api.example.com:443/v1") == "https://api.example.com/v1"
    assert endpoint_id("openai", "http://127.0.0.1:8000/v1") != endpoint_id("openai", "http://127.0.0.1:8001/v1")
    secret = endpoint_id("openai", "https://user:sk-SECRET@api.example.com/v1?api_key=sk-SECRET#x")
    assert secret == "https://api.example.com/v1" and "SECRET" not in secret
    assert key_of(endpoint=None) != key_of(endpoint="http://127.0.0.1:8000/v1")
    assert key_of(endpoint="http://127.0.0.1:8000/v1/") == key_of(endpoint="http://127.0.0.1:8000/v1")


# -- claims ---------------------------------------------------------------------------------------------

HOLD = textwrap.dedent(
    """
    import sys
    from novelty_audit.judges import CallCache
    claim = CallCache(sys.argv[1]).try_claim(sys.argv[2])
    print("claimed" if claim else "busy", flush=True)
    sys.stdin.readline()  # hold until told to go
    if claim:
        claim.release()
    print("released", flush=True)
    """
)


def test_a_call_claimed_by_another_process_cannot_be_claimed_until_released(tmp_path):
    root, key = tmp_path / "calls", key_of()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(root), key], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "claimed"
        cache = CallCache(root)
        assert cache.try_claim(key) is None
        # Claims are striped by the key's first two hex digits: a key of another stripe is free.
        other_key = next(k for k in (key_of(vote_index=v) for v in range(1, 1000)) if k[:2] != key[:2])
        other = cache.try_claim(other_key)
        assert other is not None, "a claim blocks only its own stripe"
        other.release()
        holder.stdin.write("go\n")
        holder.stdin.flush()
        assert holder.stdout.readline().strip() == "released"
        with cache.try_claim(key) as mine:
            assert mine is not None and mine.held
        assert not mine.held
    finally:
        holder.kill()
        holder.wait(timeout=60)
    stripes = list((root / "claims").iterdir())
    assert all(len(p.stem) == 2 for p in stripes) and len(stripes) <= 256, "one small lock file per stripe, never per call"


def test_a_killed_holder_does_not_block_the_call(tmp_path):
    root, key = tmp_path / "calls", key_of()
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(root), key], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "claimed"
    holder.kill()
    holder.wait(timeout=60)
    cache = CallCache(root)  # the next start: the killed holder's flock died with it
    claim = cache.try_claim(key)
    assert claim is not None
    claim.release()


def test_a_claim_is_exclusive_between_threads_of_one_process_too(tmp_path):
    cache = CallCache(tmp_path / "calls")
    first = cache.try_claim(key_of())
    assert first is not None and cache.try_claim(key_of()) is None
    first.release()
    first.release()  # idempotent
    assert cache.try_claim(key_of()) is not None


# -- leftovers of killed writers --------------------------------------------------------------------------


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait(timeout=60)
    return p.pid


def test_temps_of_a_killed_writer_are_removed_at_the_next_start_and_live_ones_kept(tmp_path):
    root = tmp_path / "calls"
    key = key_of()
    shard = root / key[:2]
    shard.mkdir(parents=True)
    dead = shard / f".{key}.json.{_dead_pid()}.abc123.tmp"
    dead.write_bytes(b'{"half": ')
    mine = shard / f"{temp_prefix(key + '.json')}def456.tmp"  # this process: still writing
    mine.write_bytes(b"{")
    writer = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        theirs = root / "history" / f".{key}.x.json.{writer.pid}.ghi789.tmp"  # another live process
        theirs.parent.mkdir()
        theirs.write_bytes(b"{")
        cache = CallCache(root)
        assert not dead.exists() and mine.exists() and theirs.exists()
    finally:
        writer.kill()
        writer.wait(timeout=60)
    assert cache.get(key) is None and verify_caches(tmp_path) == []


# -- two processes sharing a store ------------------------------------------------------------------------

RACER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    import orjson
    sys.path.insert(0, sys.argv[3])
    from judge_items import make_pairs
    from novelty_audit.judges import JudgeParams, build_judges

    args = {"model": "mock", "base_url": sys.argv[2], "api_key_env": "MOCK_API_KEY", "votes": 2, "concurrency": 4}
    jp = JudgeParams.model_validate({"tasks": ["pairwise"], "progress": False,
                                     "judges": {"j": {"backend": "openai", "args": args}}})
    judge = build_judges(jp, store_root=sys.argv[1]).judges[0]
    print("ready", flush=True)
    go = Path(sys.argv[1]) / "go"
    while not go.exists():
        time.sleep(0.01)
    rows = judge.judge(make_pairs(6), []).pairwise
    print(orjson.dumps({"verdicts": [r["verdict"] for r in rows], "facts": judge.facts()}).decode(), flush=True)
    """
)


def test_two_processes_sharing_a_store_send_each_call_once(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    tests_dir = str(Path(__file__).parent)
    env = {**os.environ, "MOCK_API_KEY": KEY}
    with MockLLM(latency=0.3) as mock:
        with started([[sys.executable, "-c", RACER, str(store), mock.base_url, tests_dir] for _ in range(2)], env) as procs:
            (store / "go").touch()  # both start asking at once
            outs = outputs(procs)
        distinct = 6 * 2 * 2  # pairs × orders × votes
        assert mock.count == distinct, "no call was sent by both processes"
    assert outs[0]["verdicts"] == outs[1]["verdicts"]
    assert sum(o["facts"]["calls"] for o in outs) == distinct
    assert sum(o["facts"]["claim_waits"] for o in outs) > 0, "the two runs overlapped (else this test proves nothing)"


def test_threads_of_one_process_share_a_stripe_but_never_a_key(tmp_path):
    cache = CallCache(tmp_path / "calls")
    key = key_of()
    same_stripe = next(k for k in (key_of(vote_index=v) for v in range(1, 5000)) if k[:2] == key[:2] and k != key)
    a, b = cache.try_claim(key), cache.try_claim(same_stripe)
    assert a is not None and b is not None and cache.try_claim(key) is None
    a.release()
    b.release()


def _claim_in_forked_child(root: str, key: str, out) -> None:
    out.put(CallCache(root).try_claim(key) is not None)


def test_a_forked_child_does_not_inherit_its_parents_claims(tmp_path):
    import multiprocessing

    root, key = tmp_path / "calls", key_of()
    held = CallCache(root).try_claim(key)
    assert held is not None
    # Another key of the held stripe: a child that kept the parent's descriptor (and flock) would get it.
    same_stripe = next(k for k in (key_of(vote_index=v) for v in range(1, 5000)) if k[:2] == key[:2] and k != key)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_claim_in_forked_child, args=(str(root), same_stripe, out))
    child.start()
    try:
        assert out.get(timeout=120) is False, "the child shares the parent's descriptor but not its claim"
    finally:
        child.join(timeout=120)
        held.release()


def test_a_process_with_many_cache_roots_keeps_a_bounded_number_of_stripe_descriptors(tmp_path):
    from novelty_audit.llm import _cache

    open_fds = lambda: len(os.listdir("/proc/self/fd"))  # noqa: E731
    before = open_fds()
    for i in range(6):  # 6 roots x ~200 stripes each: far more idle stripes than a process keeps open
        cache = CallCache(tmp_path / f"calls-{i}")
        for v in range(400):
            claim = cache.try_claim(key_of(vote_index=v))
            if claim is not None:
                claim.release()
    assert _cache._CLAIMS.open_descriptors() <= _cache._IDLE_FDS
    assert open_fds() - before <= _cache._IDLE_FDS
    again = cache.try_claim(key_of(vote_index=0))  # a stripe closed for lack of room opens again when needed
    assert again is not None
    again.release()


def test_a_claim_is_quick_only_once_this_process_has_its_stripe_open_and_is_refused_while_held(tmp_path):
    cache = CallCache(tmp_path / "calls")
    key = key_of()
    assert not cache.claim_is_quick(key), "a stripe never opened here may need its file created: not quick"
    first = cache.try_claim(key)
    assert first is not None and cache.claim_is_quick(key)
    assert cache.try_claim(key) is None, "one holder per key, also within a process"
    first.release()
    assert cache.claim_is_quick(key), "the unlocked descriptor stays open for the next claim"
    again = cache.try_claim(key)
    assert again is not None
    again.release()


def test_opening_a_runs_stripes_makes_each_of_its_claims_quick(tmp_path):
    cache = CallCache(tmp_path / "calls")
    keys = [key_of(vote_index=v) for v in range(300)]
    assert not any(cache.claim_is_quick(k) for k in keys)
    cache.open_stripes(keys)  # what a run does once, off its event loop, before its first call
    assert all(cache.claim_is_quick(k) for k in keys)
    claims = [cache.try_claim(k) for k in keys]
    assert all(c is not None for c in claims)
    for c in claims:
        c.release()


def _shard_keys(n: int, shard: str = "ab") -> list[str]:
    return [f"{shard}{i:062x}" for i in range(n)]


def test_a_shard_packs_its_loose_entries_once_it_holds_pack_at_of_them_and_every_entry_reads_back(tmp_path):
    cache = CallCache(tmp_path / "calls")
    keys = _shard_keys(cache.pack_at * 3 + 5)
    for i, k in enumerate(keys[: cache.pack_at - 1]):
        cache.put(k, {"outcome": "valid", "choice": i % 2, "i": i})
    assert len(list((tmp_path / "calls" / "ab").glob("*.json"))) == cache.pack_at - 1, "below the bound: loose files"
    for i, k in enumerate(keys[cache.pack_at - 1 :], start=cache.pack_at - 1):
        cache.put(k, {"outcome": "valid", "choice": i % 2, "i": i})
    assert list((tmp_path / "calls" / "ab").glob("*.json")) == [], "packed, and every later entry appended to the pack"
    assert (tmp_path / "calls" / "packs" / "ab.pack").read_bytes().count(b"\n") == len(keys)
    assert [cache.get(k)["i"] for k in keys] == list(range(len(keys)))
    other = CallCache(tmp_path / "calls")  # another judge's cache on the same root
    assert [other.get(k)["i"] for k in keys] == list(range(len(keys)))
    assert verify_call_cache(tmp_path / "calls") == []


def test_a_reader_finds_entries_packed_after_it_first_looked(tmp_path):
    writer, reader = CallCache(tmp_path / "calls"), CallCache(tmp_path / "calls")
    keys = _shard_keys(writer.pack_at * 2)
    for k in keys[: writer.pack_at]:
        writer.put(k, {"outcome": "valid", "choice": 0})
    assert reader.get(keys[0]) is not None and reader.get(keys[-1]) is None
    for k in keys[writer.pack_at :]:
        writer.put(k, {"outcome": "valid", "choice": 1})
    assert reader.get(keys[-1]) == {"outcome": "valid", "choice": 1}


def test_a_damaged_packed_entry_is_never_returned_and_its_new_answer_shadows_it(tmp_path, caplog):
    root = tmp_path / "calls"
    cache = CallCache(root)
    keys = _shard_keys(cache.pack_at)
    for k in keys:
        cache.put(k, {"outcome": "valid", "choice": 0})
    pack = root / "packs" / "ab.pack"
    data = bytearray(pack.read_bytes())
    data[data.index(b'"choice":') + 9] ^= 0x01  # one flipped bit in the first packed entry's choice
    pack.write_bytes(bytes(data))
    fresh = CallCache(root)
    bad = verify_call_cache(root)
    assert bad == [(f"{pack}:0", "checksum mismatch: the stored answer was changed after it was written")]
    with caplog.at_level(logging.WARNING, logger="novelty_audit.llm._cache"):
        assert fresh.get(keys[0]) is None
    assert len(list((root / "corrupt").iterdir())) == 1 and str(pack) in caplog.text
    assert fresh.get(keys[1]) == {"outcome": "valid", "choice": 0}
    fresh.put(keys[0], {"outcome": "valid", "choice": 1})  # asked again
    assert fresh.get(keys[0]) == CallCache(root).get(keys[0]) == {"outcome": "valid", "choice": 1}


def test_replacing_a_packed_answer_keeps_the_old_one_in_history(tmp_path):
    cache = CallCache(tmp_path / "calls")
    keys = _shard_keys(cache.pack_at)
    for k in keys:
        cache.put(k, {"outcome": "valid", "choice": 0})
    assert not cache.path(keys[0]).exists()
    cache.put(keys[0], {"outcome": "valid", "choice": 1})
    assert cache.get(keys[0]) == {"outcome": "valid", "choice": 1}
    assert len(list((tmp_path / "calls" / "history").iterdir())) == 1


def _packed_shard(root: Path, more: int) -> tuple[CallCache, list[str]]:
    """A cache whose shard `ab` was just packed (`pack_at` entries, choice 0), and `more` keys of it not yet written."""
    cache = CallCache(root)
    keys = _shard_keys(CallCache.pack_at + more)
    for k in keys[: CallCache.pack_at]:
        cache.put(k, {"outcome": "valid", "choice": 0})
    return cache, keys


def test_an_entry_appended_to_a_pack_is_read_back_by_another_process_and_checked_by_verify(tmp_path):
    root = tmp_path / "calls"
    writer, keys = _packed_shard(root, 3)
    reader = CallCache(root)
    assert reader.get(keys[-1]) is None  # the reader has indexed the pack as it was
    for k in keys[CallCache.pack_at :]:
        writer.put(k, {"outcome": "valid", "choice": 1})
    code = "import sys; from novelty_audit.llm._cache import CallCache; c = CallCache(sys.argv[1]); print(sum(c.get(k) is not None for k in sys.argv[2:]))"
    out = subprocess.run([sys.executable, "-c", code, str(root), *keys], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == str(len(keys)), "a process that never saw the writes reads every entry"
    assert reader.get(keys[-1]) == {"outcome": "valid", "choice": 1}, "an index extends once the pack has grown"
    assert verify_call_cache(root) == []


def test_a_torn_last_line_left_by_a_killed_writer_stays_a_line_of_its_own_and_is_never_returned(tmp_path):
    root = tmp_path / "calls"
    cache, keys = _packed_shard(root, 2)
    pack = root / "packs" / "ab.pack"
    whole = encode_entry(keys[-2], {"outcome": "valid", "choice": 1})
    with open(pack, "ab") as fh:
        fh.write(whole[: len(whole) // 2])  # the writer died mid-write
    cache.put(keys[-1], {"outcome": "valid", "choice": 1})
    fresh = CallCache(root)
    assert fresh.get(keys[-1]) == {"outcome": "valid", "choice": 1}
    assert fresh.get(keys[-2]) is None, "half an entry is no entry: the call is asked again"
    assert [reason for _, reason in verify_call_cache(root)] == ["not valid JSON"]


def test_refreshing_an_answer_kept_loose_beside_a_pack_moves_the_old_one_to_history(tmp_path):
    root = tmp_path / "calls"
    cache, keys = _packed_shard(root, 1)
    late = cache.path(keys[-1])  # a loose entry written beside the pack (a teammate's answer, an older version)
    late.write_bytes(encode_entry(keys[-1], {"outcome": "valid", "choice": 0}))
    cache.put(keys[-1], {"outcome": "valid", "choice": 1})
    assert not late.exists(), "a loose file left beside the new line would shadow it"
    assert CallCache(root).get(keys[-1]) == {"outcome": "valid", "choice": 1}
    assert len(list((root / "history").iterdir())) == 1


def test_an_answer_written_under_a_claim_that_found_no_entry_looks_for_no_older_one(tmp_path, monkeypatch):
    root = tmp_path / "calls"
    cache, keys = _packed_shard(root, 1)
    looked: list[str] = []
    monkeypatch.setattr(CallCache, "_packed_bytes", lambda self, key, scanned=None: looked.append(key))
    cache.put(keys[-1], {"outcome": "valid", "choice": 1}, fresh=True)
    assert looked == [] and not cache.path(keys[-1]).exists(), "appended to the pack, nothing looked up first"
    monkeypatch.undo()
    assert CallCache(root).get(keys[-1]) == {"outcome": "valid", "choice": 1}
    assert not (root / "history").exists()


def test_a_batch_lookup_looks_at_a_packed_shard_once_however_many_of_its_keys_are_missing(tmp_path, monkeypatch):
    root = tmp_path / "calls"
    writer, keys = _packed_shard(root, 5)
    reader = CallCache(root)
    stats: list[str] = []
    real = os.stat
    monkeypatch.setattr(os, "stat", lambda p, *a, **kw: stats.append(str(p)) or real(p, *a, **kw))
    found = reader.get_all(keys)
    assert len(found) == CallCache.pack_at and [p for p in stats if p.endswith(".pack")] == [str(writer.pack_path(keys[0]))]
    writer.put(keys[-1], {"outcome": "valid", "choice": 1})
    assert reader.get_all(keys[-2:]) == {keys[-1]: {"outcome": "valid", "choice": 1}}, "a later lookup sees what was appended since"


def test_looking_up_a_batch_returns_the_sound_entries_loose_or_packed_and_leaves_out_misses_and_damage(tmp_path, caplog):
    root = tmp_path / "calls"
    cache, keys = _packed_shard(root, 2)
    loose = key_of(vote_index=7)  # another shard, below the packing bound: a loose file
    cache.put(loose, {"outcome": "valid", "choice": 1})
    damaged = key_of(vote_index=8)
    cache.put(damaged, {"outcome": "valid", "choice": 1})
    cache.path(damaged).write_bytes(cache.path(damaged).read_bytes().replace(b'"choice":1', b'"choice":0'))
    with caplog.at_level(logging.WARNING, logger="novelty_audit.llm._cache"):
        found = CallCache(root).get_all([*keys, loose, damaged])
    assert found == {**{k: {"outcome": "valid", "choice": 0} for k in keys[:-2]}, loose: {"outcome": "valid", "choice": 1}}
    assert "checksum mismatch" in caplog.text and not cache.path(damaged).exists(), "damage is set aside, as by get"
