"""`novelty-audit verify` checks the outputs dvc.lock records against the md5 DVC computes for them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from novelty_audit.artifacts import dvc_md5, locked_outs


def dvc_own_md5(path: Path) -> str:
    """The md5 dvc-data (DVC's own hashing library) builds for a file or a directory."""
    from dvc_data.hashfile.build import build
    from dvc_data.hashfile.db import HashFileDB
    from dvc_objects.fs import MemoryFileSystem
    from dvc_objects.fs.local import LocalFileSystem

    _, _, obj = build(HashFileDB(MemoryFileSystem(), "memory://odb"), os.path.abspath(path), LocalFileSystem(), "md5")
    return obj.hash_info.value


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "novelty_audit.cli", *args], cwd=cwd, capture_output=True, text=True)


def write_lock(project: Path, outs: dict[str, str | None]) -> None:
    """A dvc.lock whose pin stage records `outs` ({path: md5}; None: a DVC 2 entry without `hash: md5`)."""
    entries = [{"path": p, **({"hash": "md5"} if md5 else {}), "md5": md5 or "0" * 32} for p, md5 in outs.items()]
    lock = {"schema": "2.0", "stages": {"pin": {"cmd": "novelty-audit stage pin", "outs": entries}}}
    (project / "dvc.lock").write_text(yaml.safe_dump(lock, sort_keys=False))


def test_dvc_md5_is_what_dvc_computes_for_a_file_and_a_directory(tmp_path):
    d = tmp_path / "out"
    (d / "b" / "c").mkdir(parents=True)
    (d / "z.txt").write_text("line\r\nnext\n")  # DVC 3 hashes bytes: no CRLF folding
    (d / "b" / "a.parquet").write_bytes(bytes(range(256)) * 10)
    (d / "b" / "c" / "m.json").write_text('{"x": 1}')
    (d / "b-sibling.txt").write_text("sorts between b/ and z.txt by relpath")
    assert dvc_md5("out", tmp_path) == dvc_own_md5(d)
    assert dvc_md5("out/z.txt", tmp_path) == dvc_own_md5(d / "z.txt")


@pytest.mark.slow
def test_verify_names_outputs_that_are_not_the_ones_dvc_lock_records(project):
    doc = yaml.safe_load((project / "dvc.yaml").read_text())
    doc["stages"] = {"pin": doc["stages"]["pin"]}
    doc.pop("plots", None)
    (project / "dvc.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    assert cli("stage", "pin", cwd=project).returncode == 0
    res = cli("verify", cwd=project)
    assert res.returncode == 0 and "no dvc.lock" in res.stdout and "none is checked" in res.stdout, res.stdout + res.stderr

    write_lock(project, {"artifacts/pin": dvc_own_md5(project / "artifacts/pin")})  # what `dvc repro pin` records
    res = cli("verify", cwd=project)
    assert res.returncode == 0, res.stderr
    assert "dvc.lock: 1 recorded output(s) match" in res.stdout

    # The pin stage run by hand after a data edit: the outputs and their manifest agree, dvc.lock is behind.
    data = project / "data/novelty-judge-bench/human-only/pairwise.yaml"
    data.write_text(data.read_text().replace("Prefix Dominance Trap", "Prefix Dominance Pitfall", 1))
    assert cli("pin", "--accept", cwd=project).returncode == 0
    assert cli("stage", "pin", cwd=project).returncode == 0
    res = cli("verify", cwd=project)
    assert res.returncode == 1, res.stdout
    bad = [line for line in res.stderr.splitlines() if line.startswith("BAD")]
    assert len(bad) == 1 and bad[0].startswith("BAD artifacts/pin: not the output dvc.lock records"), res.stderr
    assert "dvc commit pin" in bad[0] and "dvc checkout pin" in bad[0] and "(stage pin)" in bad[0]

    write_lock(project, {"artifacts/pin": None})  # a DVC 2 lock file: said, not silently passed
    res = cli("verify", cwd=project)
    assert res.returncode == 0 and "not checked (DVC 2 entries without `hash: md5`" in res.stdout and "artifacts/pin" in res.stdout


def test_locked_outs_reads_every_stage_out_of_dvc_lock(tmp_path):
    write_lock(tmp_path, {"artifacts/pin": "a" * 32, "reports/x.json": None})
    outs = locked_outs(tmp_path / "dvc.lock")
    assert [(o.stage, o.path, o.hash) for o in outs] == [("pin", "artifacts/pin", "md5"), ("pin", "reports/x.json", None)]
