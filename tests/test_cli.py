"""The CLI: user errors are one clear message with no traceback; verify names tampered files."""

import subprocess
import sys
from pathlib import Path

import orjson


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "novelty_audit.cli", *args], cwd=cwd, capture_output=True, text=True)


def test_verify_passes_then_names_a_flipped_byte(project):
    assert cli("stage", "pin", cwd=project).returncode == 0
    ok = cli("verify", cwd=project)
    assert ok.returncode == 0 and "all match" in ok.stdout
    target = project / "artifacts/pin/human-only/pairs.parquet"
    data = bytearray(target.read_bytes())
    data[100] ^= 0x01
    target.write_bytes(bytes(data))
    bad = cli("verify", cwd=project)
    assert bad.returncode == 1
    assert "artifacts/pin/human-only/pairs.parquet" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_a_pin_mismatch_is_one_message_without_traceback(project):
    f = project / "data/novelty-judge-bench/human-only/pairwise.yaml"
    f.write_text(f.read_text() + "\n")
    res = cli("stage", "pin", cwd=project)
    assert res.returncode == 2
    assert "does not match its pin" in res.stderr and "pin --accept" in res.stderr
    assert "Traceback" not in res.stderr


def test_pin_accept_prints_which_files_and_items_changed(project):
    cli("stage", "pin", cwd=project)
    f = project / "data/novelty-judge-bench/human-only/pairwise.yaml"
    f.write_text(f.read_text().replace("Prefix Dominance Trap", "Prefix Dominance Pitfall", 1))
    res = cli("pin", "--accept", cwd=project)
    assert res.returncode == 0, res.stderr
    assert "human-only" in res.stdout and "re-pinned" in res.stdout and "changed (" in res.stdout
    assert "human-plus-generated: data/novelty-judge-bench/human-plus-generated/pairwise.yaml unchanged" in res.stdout
    assert cli("stage", "pin", cwd=project).returncode == 0


def test_unknown_stage_suggests_the_close_name(project):
    res = cli("stage", "pinn", cwd=project)
    assert res.returncode == 2 and "did you mean pin" in res.stderr and "Traceback" not in res.stderr


def test_invalid_params_name_the_field(project):
    p = project / "params.yaml"
    p.write_text(p.read_text().replace("on_bad_item: error", "on_bad_itme: error"))
    res = cli("stage", "pin", cwd=project)
    assert res.returncode == 2 and "pin.on_bad_itme" in res.stderr and "Traceback" not in res.stderr


def test_manifest_and_runs_print_json(project):
    cli("stage", "pin", cwd=project)
    m = orjson.loads(cli("manifest", "pin", cwd=project).stdout)
    assert m["manifest"]["stage"] == "pin" and m["last_run"]["action"] in {"computed", "reused", "restored"}
    runs = cli("runs", "--json", cwd=project)
    assert runs.returncode == 0 and isinstance(orjson.loads(runs.stdout), list)
