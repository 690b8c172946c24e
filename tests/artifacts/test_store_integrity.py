"""Nothing is trusted from disk without its digest: corrupt store objects and manifests are discarded with a
warning naming them and recomputed; a changed value in a manifest is never published; incomplete outputs are
never reused."""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import orjson
import pytest

from demo_stage import run_demo as _run

from novelty_audit.artifacts import Store, load_manifest
from novelty_audit.errors import ManifestMismatchError


def _flip(path: Path, at: int | None = None) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2 if at is None else at] ^= 0x01
    path.write_bytes(bytes(data))


def _by_digest(tmp_path: Path) -> Path:
    [p] = (tmp_path / "store/manifests/by-digest").glob("*.json")
    return p


def test_a_corrupt_store_object_is_discarded_with_a_warning_and_the_stage_recomputes(tmp_path, caplog):
    calls: list = []
    first = _run(tmp_path, calls)
    obj = Store(tmp_path / "store").object_path(first.output("t.parquet").sha256)
    _flip(obj)
    shutil.rmtree(tmp_path / "artifacts/demo")  # what DVC does before it runs a stage
    with caplog.at_level(logging.WARNING, logger="novelty_audit.artifacts"):
        again = _run(tmp_path, calls)
    assert calls == [1, 1], "the corrupt object must not be restored"
    assert again == first
    assert str(obj) in caplog.text and "discarded corrupt store file" in caplog.text
    assert obj.exists() and obj.read_bytes() == (tmp_path / "artifacts/demo/t.parquet").read_bytes()  # stored again, intact
    assert list((tmp_path / "store/corrupt").iterdir())


def test_a_changed_value_in_a_stored_manifest_is_detected_and_never_restored(tmp_path, caplog):
    calls: list = []
    first = _run(tmp_path, calls)
    stored = _by_digest(tmp_path)
    stored.write_bytes(stored.read_bytes().replace(b'"rows": 2', b'"rows": 3'))
    shutil.rmtree(tmp_path / "artifacts/demo")
    with caplog.at_level(logging.WARNING, logger="novelty_audit.artifacts"):
        again = _run(tmp_path, calls)
    assert calls == [1, 1]
    assert again.summary == {"rows": 2} and again == first
    assert str(stored) in caplog.text


def test_an_identity_pointer_to_another_manifest_is_not_followed(tmp_path):
    calls: list = []
    first = _run(tmp_path, calls)
    [pointer] = (tmp_path / "store/manifests/by-identity").glob("*.json")
    pointer.write_bytes(orjson.dumps({"identity": first.identity, "manifest": "0" * 64}))
    shutil.rmtree(tmp_path / "artifacts/demo")
    _run(tmp_path, calls)
    assert calls == [1, 1]


@pytest.mark.parametrize("garbage", [b"{not json", b"", b"[1, 2]", b"\xff\xfe\x00"])
def test_garbage_in_the_store_manifests_is_discarded_not_a_traceback(tmp_path, caplog, garbage):
    calls: list = []
    _run(tmp_path, calls)
    for p in (tmp_path / "store/manifests").rglob("*.json"):
        p.write_bytes(garbage)
    shutil.rmtree(tmp_path / "artifacts/demo")
    with caplog.at_level(logging.WARNING, logger="novelty_audit.artifacts"):
        _run(tmp_path, calls)
    assert calls == [1, 1]
    assert "discarded corrupt store file" in caplog.text


def test_an_unreadable_published_manifest_means_recompute_and_load_names_it(tmp_path):
    calls: list = []
    _run(tmp_path, calls)
    published = tmp_path / "artifacts/demo/manifest.json"
    published.write_bytes(b'{"stage": "demo", "identity": ')
    with pytest.raises(ManifestMismatchError, match="manifest.json: unreadable manifest"):
        load_manifest(published)
    m = _run(tmp_path, calls)  # restored from the store: no compute, no traceback
    assert calls == [1]
    assert load_manifest(tmp_path / "artifacts/demo") == m


def test_an_edited_summary_in_the_published_manifest_is_replaced_by_the_stored_one(tmp_path):
    calls: list = []
    first = _run(tmp_path, calls)
    published = tmp_path / "artifacts/demo/manifest.json"
    published.write_bytes(published.read_bytes().replace(b'"rows": 2', b'"rows": 9'))
    again = _run(tmp_path, calls)
    assert calls == [1]
    assert again == first and load_manifest(published).summary == {"rows": 2}


def test_incomplete_outputs_are_published_but_never_reused_or_restored(tmp_path):
    calls: list = []
    m = _run(tmp_path, calls, complete=False)
    assert not m.complete and m.incomplete_reason == "1 call failed: HTTP 500"
    assert load_manifest(tmp_path / "artifacts/demo") == m  # published, so nothing is lost
    _run(tmp_path, calls, complete=False)
    assert calls == [1, 1], "incomplete outputs in place are not reused"
    shutil.rmtree(tmp_path / "artifacts/demo")
    done = _run(tmp_path, calls)
    assert calls == [1, 1, 1], "incomplete outputs in the store are not restored"
    assert done.complete and done.identity == m.identity
    _run(tmp_path, calls)
    assert calls == [1, 1, 1], "complete outputs are reused as before"


def test_an_incomplete_forced_run_does_not_hide_the_complete_stored_manifest(tmp_path):
    calls: list = []
    first = _run(tmp_path, calls)
    _run(tmp_path, calls, complete=False, force=True)
    assert Store(tmp_path / "store").manifest_for_identity(first.identity) == first


def test_store_verify_names_a_flipped_object_and_an_edited_manifest_and_reads_only(tmp_path):
    first = _run(tmp_path, [])
    store = Store(tmp_path / "store")
    assert store.verify() == []
    obj = store.object_path(first.output("t.parquet").sha256)
    _flip(obj)
    stored = _by_digest(tmp_path)
    stored.write_bytes(stored.read_bytes().replace(b'"rows": 2', b'"rows": 3'))
    bad = dict(store.verify())
    assert set(bad) == {obj.as_posix(), stored.as_posix()}
    assert "does not match its sha256 name" in bad[obj.as_posix()]
    assert obj.exists() and stored.exists()
