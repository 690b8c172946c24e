"""execute_stage: identity decides reuse, outputs are published atomically, verify catches tampering."""

import polars as pl
import pytest

from demo_stage import run_demo as _run

from novelty_audit.artifacts import Store, verify_tree


def test_same_identity_reuses_outputs_without_computing(tmp_path):
    calls: list = []
    first = _run(tmp_path, calls)
    second = _run(tmp_path, calls)
    assert calls == [1]
    assert first == second


def test_a_known_identity_is_restored_byte_for_byte_from_the_store(tmp_path):
    calls: list = []
    first = _run(tmp_path, calls)
    before = (tmp_path / "artifacts/demo/t.parquet").read_bytes()
    import shutil

    shutil.rmtree(tmp_path / "artifacts/demo")  # what DVC does before it runs a stage
    again = _run(tmp_path, calls)
    assert calls == [1]
    assert again.identity == first.identity
    assert (tmp_path / "artifacts/demo/t.parquet").read_bytes() == before


def test_forced_recompute_gives_byte_identical_outputs(tmp_path):
    calls: list = []
    first = _run(tmp_path, calls)
    before = (tmp_path / "artifacts/demo/manifest.json").read_bytes()
    forced = _run(tmp_path, calls, force=True)
    assert calls == [1, 1]
    assert forced == first
    assert (tmp_path / "artifacts/demo/manifest.json").read_bytes() == before


def test_changed_params_change_the_identity(tmp_path):
    a = _run(tmp_path, [], value=1)
    b = _run(tmp_path, [], value=2)
    assert a.identity != b.identity and a.params_digest != b.params_digest
    assert a.code == b.code and a.inputs == b.inputs


def test_a_crash_midway_leaves_the_previous_outputs_and_no_partial_files(tmp_path):
    good = _run(tmp_path, [])
    with pytest.raises(RuntimeError):
        _run(tmp_path, [], value=5, fail=True)
    out = tmp_path / "artifacts" / "demo"
    assert sorted(p.name for p in out.iterdir()) == ["manifest.json", "t.parquet"]
    assert pl.read_parquet(out / "t.parquet")["v"].to_list() == [1, 2]
    assert not [p for p in (tmp_path / "artifacts").iterdir() if p.name.startswith(".")]
    assert verify_tree(tmp_path / "artifacts") == (1, [])
    assert good.identity


def test_verify_names_a_file_whose_byte_was_flipped(tmp_path):
    _run(tmp_path, [])
    target = tmp_path / "artifacts/demo/t.parquet"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0xFF
    target.write_bytes(bytes(data))
    checked, bad = verify_tree(tmp_path / "artifacts")
    assert checked == 1
    assert [m.path for m in bad] == [target.as_posix()]


def test_manifest_records_per_item_digests_and_keeps_run_facts_out(tmp_path):
    m = _run(tmp_path, [])
    rec = m.output("t.parquet")
    assert rec.rows == 2 and set(rec.items) == {"a", "b"}
    text = (tmp_path / "artifacts/demo/manifest.json").read_text()
    assert "seconds" not in text and "started" not in text
    facts = Store(tmp_path / "store").run_facts("demo")
    assert facts[-1]["action"] == "computed" and "seconds" in facts[-1]
