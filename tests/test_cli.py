"""The CLI: user errors are one clear message with no traceback; verify names tampered files."""

import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "novelty_audit.cli", *args], cwd=cwd, capture_output=True, text=True)


def only_stages(project: Path, *names: str) -> None:
    """Trim the project's dvc.yaml to `names`: verify checks every declared stage, and these tests run only some."""
    doc = yaml.safe_load((project / "dvc.yaml").read_text())
    doc["stages"] = {n: doc["stages"][n] for n in names}
    doc.pop("plots", None)
    (project / "dvc.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))


def flip(path: Path, at: int = 100) -> None:
    data = bytearray(path.read_bytes())
    data[min(at, len(data) - 1)] ^= 0x01
    path.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def pinned_template(tmp_path_factory) -> Path:
    """A project whose pin stage ran once through the CLI, for the module: each `pinned` test gets a copy of it
    instead of paying a `stage pin` process of its own."""
    from project_copy import make_project

    root = make_project(tmp_path_factory.mktemp("pinned") / "project")
    res = cli("stage", "pin", cwd=root)
    assert res.returncode == 0, res.stderr
    return root


@pytest.fixture
def pinned(pinned_template: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh copy of `pinned_template` (outputs, manifest and store), made the cwd."""
    root = tmp_path / "project"
    shutil.copytree(pinned_template, root)
    monkeypatch.chdir(root)
    return root


def test_verify_passes_then_names_a_flipped_byte(pinned):
    project = pinned
    only_stages(project, "pin")
    ok = cli("verify", cwd=project)
    assert ok.returncode == 0 and "all match" in ok.stdout, ok.stderr
    target = project / "artifacts/pin/human-only/pairs.parquet"
    flip(target)
    bad = cli("verify", cwd=project)
    assert bad.returncode == 1
    assert "artifacts/pin/human-only/pairs.parquet" in bad.stderr
    assert "Traceback" not in bad.stderr


def test_verify_names_the_stage_whose_declared_outputs_are_missing(pinned):
    project = pinned
    only_stages(project, "pin", "judge")
    res = cli("verify", cwd=project)
    assert res.returncode == 1
    assert "artifacts/judge: declared output is missing" in res.stderr and "(stage judge)" in res.stderr
    shutil.rmtree(project / "artifacts/pin")  # a checkout where a stage's outputs are gone
    res = cli("verify", cwd=project)
    assert "artifacts/pin: declared output is missing" in res.stderr and "(stage pin)" in res.stderr


def test_verify_names_a_flipped_byte_in_a_store_object_and_a_corrupt_manifest_without_traceback(pinned):
    project = pinned
    only_stages(project, "pin")
    obj = next(p for p in (project / ".novelty-audit/objects").rglob("*") if p.is_file())
    flip(obj)
    (project / "artifacts/pin/manifest.json").write_bytes(b'{"stage": "pin", ')
    res = cli("verify", cwd=project)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert f"{obj.relative_to(project).as_posix()}: store object" in res.stderr
    assert "artifacts/pin/manifest.json" in res.stderr and "unreadable manifest" in res.stderr


def test_verify_names_a_flipped_byte_in_a_call_cache_entry(pinned):
    from novelty_audit.judges import CallCache

    project = pinned
    only_stages(project, "pin")
    cache = CallCache(project / ".novelty-audit/cache/calls")
    cache.put("a" * 64, {"outcome": "valid", "choice": "A", "text": '{"answer": "A"}'})
    entry = next(p for p in (project / ".novelty-audit/cache/calls").rglob("*.json"))
    entry.write_bytes(entry.read_bytes().replace(b'"choice":"A"', b'"choice":"B"').replace(b'"choice": "A"', b'"choice": "B"'))
    res = cli("verify", cwd=project)
    assert res.returncode == 1 and "Traceback" not in res.stderr
    assert entry.relative_to(project).as_posix() in res.stderr


def test_verify_checks_published_reports_against_the_outputs_they_copy(pinned):
    project = pinned  # the pin stage below reuses pinned_template's outputs: its params are unchanged
    only_stages(project, "pin", "judge", "metrics")
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {"datasets": ["human-only"], "tasks": ["pairwise"], "progress": False, "judges": {"always-first": {"backend": "always-first"}}}
    raw["metrics"]["bootstrap_resamples"] = 0
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    for name in ("pin", "judge", "metrics"):
        res = cli("stage", name, cwd=project)
        assert res.returncode == 0, res.stderr
    ok = cli("verify", cwd=project)
    assert ok.returncode == 0, ok.stderr
    report = project / "reports/metrics/human-only/always-first.json"
    flip(report, at=10)
    res = cli("verify", cwd=project)
    assert res.returncode == 1 and f"{report.relative_to(project)}: sha256" in res.stderr and "(stage metrics)" in res.stderr
    assert cli("stage", "metrics", cwd=project).returncode == 0  # the stage republishes its copy on reuse
    assert cli("verify", cwd=project).returncode == 0
    sweeps = project / "reports/sweeps.json"  # a byte copy of an output
    (project / "artifacts/.published/metrics.json").unlink()  # a fresh clone: no publish records
    assert cli("stage", "metrics", cwd=project).returncode == 0
    (project / "artifacts/.published/metrics.json").unlink()
    res = cli("verify", cwd=project)
    assert "reports/sweeps.json" not in res.stderr, "an exact copy of a recorded output is vouched for by its manifest"
    sweeps.write_text('{"x": 1}')
    res = cli("verify", cwd=project)
    assert res.returncode == 1
    assert "reports/sweeps.json: declared output recorded by no stage and equal to no recorded output" in res.stderr


def test_a_pin_mismatch_is_one_message_without_traceback(project):
    f = project / "data/novelty-judge-bench/human-only/pairwise.yaml"
    f.write_text(f.read_text() + "\n")
    res = cli("stage", "pin", cwd=project)
    assert res.returncode == 2
    assert "does not match its pin" in res.stderr and "pin --accept" in res.stderr
    assert "Traceback" not in res.stderr


def test_pin_accept_prints_which_files_and_items_changed(pinned):
    project = pinned
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


def test_manifest_and_runs_print_json(pinned):
    project = pinned  # pin ran through the CLI (pinned_template)
    m = orjson.loads(cli("manifest", "pin", cwd=project).stdout)
    assert m["manifest"]["stage"] == "pin" and m["last_run"]["action"] in {"computed", "reused", "restored"}
    runs = cli("runs", "--json", cwd=project)
    assert runs.returncode == 0 and isinstance(orjson.loads(runs.stdout), list)


def _bad_params(project: Path) -> None:
    """Two broken copies of params.yaml: a Latin-1 byte on line 2, and a judge asked for zero votes."""
    text = (project / "params.yaml").read_bytes()
    first, rest = text.split(b"\n", 1)
    (project / "latin1.yaml").write_bytes(first + b"\n# caf\xe9\n" + rest)
    raw = yaml.safe_load(text)
    raw["judge"]["judges"]["random"] = {"backend": "random", "args": {"votes": 0}}
    (project / "votes0.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


USAGE_ERRORS = [
    pytest.param([], "no command given", id="no-arguments"),
    pytest.param(["stage"], "argument 'name'", id="stage-without-a-name"),
    pytest.param(["manifest"], "argument 'name'", id="manifest-without-a-name"),
    pytest.param(["flips"], "argument 'before'", id="flips-without-files"),
    pytest.param(["bogus"], "'bogus'", id="unknown-command"),
    pytest.param(["--nope"], "--nope", id="unknown-option"),
    pytest.param(["stage", "judge", "--limit", "0"], "'--limit'", id="limit-zero"),
    pytest.param(["stage", "pin", "--wait", "abc"], "'--wait'", id="wait-not-a-number"),
    pytest.param(["review", "--port", "x"], "'--port'", id="port-not-an-integer"),
    pytest.param(["quality", "x.csv"], "option '--reference'", id="quality-without-reference"),
    pytest.param(["stage", "pin", "--params", "data"], "data: is a directory", id="params-is-a-directory"),
    pytest.param(["stage", "pin", "--params", "latin1.yaml"], "latin1.yaml: line 2: byte 0xe9", id="params-not-utf8"),
    pytest.param(["stage", "pin", "--params", "votes0.yaml"], "judge.judges.random.args.votes", id="votes-zero"),
]


@pytest.mark.parametrize(("args", "names"), USAGE_ERRORS)
def test_a_usage_error_exits_2_with_one_message_and_a_hint_never_a_traceback(project, args, names):
    _bad_params(project)
    (project / "x.csv").write_text("id,verdict\np1,A\n")
    res = cli(*args, cwd=project)
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    assert "Traceback" not in res.stderr and "╭" not in res.stderr and "│" not in res.stderr, res.stderr  # Rich frames
    errors = [line for line in res.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, res.stderr
    assert names.lower() in res.stderr.lower(), res.stderr
    assert "hint:" in res.stderr, res.stderr
