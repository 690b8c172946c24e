"""The signals and pools stages: pinned inputs, reproducible pools by seed, a seed change is a config change."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import polars as pl
import pytest
import yaml

from novelty_audit.artifacts import load_manifest, read_json
from novelty_audit.errors import PinMismatchError
from novelty_audit.pipeline import run_stage

pytestmark = pytest.mark.slow  # every test here runs stages: seconds each

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "signals" / "fixtures" / "openreview_v2_iclr2026.json"


@pytest.fixture
def reviews_project(project: Path) -> Path:
    """The `project` copy plus the shipped review files."""
    for sub in ("raw-reviews", "review-sentences"):
        shutil.copytree(REPO / "data" / sub, project / "data" / sub)
    for p in (project / "data").rglob("*"):
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return project


def _edit_params(edit) -> None:
    doc = yaml.safe_load(Path("params.yaml").read_text(encoding="utf-8"))
    edit(doc)
    Path("params.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def _with_openreview_dump(doc) -> None:
    # More papers per area than the seven shipped reviews, and median percentiles, so pools have several members.
    dest = Path("data/openreview/iclr2026.json")
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIXTURE, dest)
    doc["signals"]["openreview"] = [{"path": dest.as_posix(), "sha256": hashlib.sha256(dest.read_bytes()).hexdigest()}]
    # A new input file is a DVC dependency too, or the stage refuses to run.
    dvc = yaml.safe_load(Path("dvc.yaml").read_text(encoding="utf-8"))
    dvc["stages"]["signals"]["deps"].append(dest.parent.as_posix())
    Path("dvc.yaml").write_text(yaml.safe_dump(dvc, sort_keys=False), encoding="utf-8")
    doc["pools"]["percentile"] = {"top": 50, "bottom": 50, "method": "linear"}


def _run_all() -> dict[str, object]:
    return {name: run_stage(name) for name in ("pin", "signals", "pools")}


def _bytes(d: str) -> dict[str, bytes]:
    return {p.relative_to(d).as_posix(): p.read_bytes() for p in Path(d).rglob("*") if p.is_file()}


def test_default_run_extracts_scores_and_checks_offline(reviews_project: Path) -> None:
    ms = _run_all()
    scores = read_json("reports/signals_scores.json")
    rules = scores["extractors"]["rules"]
    assert rules["detection"]["n_novelty"] == 493 and rules["detection"]["n_other"] == 500
    assert rules["recovery"]["papers"] == 7 and rules["recovery"]["recorded"] == 25
    assert 0 < rules["polarity"]["n"] and rules["polarity"]["correct"] <= rules["polarity"]["n"]
    snippets = pl.read_parquet("artifacts/signals/snippets.parquet")
    reviews = pl.read_parquet("artifacts/signals/reviews.parquet")
    for s in snippets.join(reviews, on="review_id").iter_rows(named=True):
        assert s[s["section"]][s["start"] : s["end"]] == s["text"]  # verbatim, with offsets
        assert s["review_digest"] == s["review_digest_right"]
    check = read_json("reports/pools_rule_check.json")
    assert set(check["datasets"]) == {"human-only", "human-plus-generated"}
    assert {r["rule"] for r in check["datasets"]["human-only"]["not_checkable"]} == {"rating-percentile", "decision", "signal-majority"}
    summary = read_json("reports/pools_summary.json")
    assert summary == load_manifest(Path("artifacts/pools")).summary
    assert summary["papers"] == 7 and summary["generated"] == 154
    excluded = pl.read_parquet("artifacts/pools/exclusions.parquet")
    pooled = set(pl.read_parquet("artifacts/pools/pool.parquet")["paper_id"])
    assert pooled | set(excluded["paper_id"]) == set(pl.read_parquet("artifacts/signals/papers.parquet")["paper_id"])
    assert not pooled & set(excluded["paper_id"])  # every paper is either pooled or excluded with its rules
    assert ms["pools"].params == {"pools": ms["pools"].params["pools"]}  # the pools digest covers only its section


def test_same_seed_and_inputs_give_identical_pools_and_pairs(reviews_project: Path, tmp_path_factory) -> None:
    _edit_params(_with_openreview_dump)
    first = _run_all()
    out_a = _bytes("artifacts/pools")
    pairs = pl.read_parquet("artifacts/pools/pairs.parquet").filter(pl.col("dataset") == "constructed-human-only")
    assert pairs.height >= 5 and pairs["negative_reused"].any()

    other = tmp_path_factory.mktemp("again")
    for name in ("params.yaml", "dvc.yaml", "data"):
        src = reviews_project / name
        (shutil.copytree if src.is_dir() else shutil.copy)(src, other / name)
    os.chdir(other)
    second = _run_all()
    assert _bytes("artifacts/pools") == out_a
    assert first["pools"].identity == second["pools"].identity
    assert first["pools"].digest() == second["pools"].digest()


def test_a_changed_seed_changes_the_pairing_and_is_recorded_as_a_config_change(reviews_project: Path) -> None:
    _edit_params(_with_openreview_dump)
    before = _run_all()
    pairs_before = pl.read_parquet("artifacts/pools/pairs.parquet")
    pool_before = Path("artifacts/pools/pool.parquet").read_bytes()
    _edit_params(lambda d: d["pools"].update(seed=d["pools"]["seed"] + 1))
    after = _run_all()
    pairs_after = pl.read_parquet("artifacts/pools/pairs.parquet")

    assert not pairs_before.equals(pairs_after)
    assert Path("artifacts/pools/pool.parquet").read_bytes() == pool_before  # the seed moves pairs, not pools
    assert after["signals"].outputs == before["signals"].outputs  # nothing upstream moved
    m_before, m_after = before["pools"], after["pools"]
    assert m_before.params_digest != m_after.params_digest
    assert m_after.params["pools"]["seed"] == m_before.params["pools"]["seed"] + 1
    assert m_before.code == m_after.code and [(r.path, r.digest) for r in m_before.inputs] == [(r.path, r.digest) for r in m_after.inputs]


def test_an_edited_review_file_stops_the_run_naming_file_and_digests(reviews_project: Path) -> None:
    run_stage("pin")
    f = Path("data/raw-reviews/learning-from-peers-in-reasoning-models.md")
    expected = hashlib.sha256(f.read_bytes()).hexdigest()
    f.write_text(f.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    actual = hashlib.sha256(f.read_bytes()).hexdigest()
    with pytest.raises(PinMismatchError) as err:
        run_stage("signals")
    msg = str(err.value)
    assert f.as_posix() in msg and expected in msg and actual in msg


NEW_REVIEW = """# Cached Attention Reuse for Long Context Models

- Avg Score: 6.00
- Decision: Accept (Poster)

## Abstract
We reuse attention maps across layers.

## Human Reviews

## Human Reviewer 1

### Rating
6

### Strengths
- The idea of reusing cached attention maps across layers is novel and original.

### Weaknesses
- The evaluation uses only two datasets.

### Contribution
3
"""


def test_an_added_review_file_is_refused_until_accepted_then_read(reviews_project: Path, capsys) -> None:
    from novelty_audit.cli import main
    from novelty_audit.signals import paper_id_for

    run_stage("pin")
    before = run_stage("signals")
    new = Path("data/raw-reviews/cached-attention-reuse.md")
    new.write_text(NEW_REVIEW, encoding="utf-8")
    with Path("data/raw-reviews/INDEX.tsv").open("a", encoding="utf-8") as fh:
        fh.write(f"{new.name}\tCached Attention Reuse for Long Context Models\tPOSITIVE\t6.00\t3.00\t1\t0\t{len(NEW_REVIEW)}\n")
    with pytest.raises(PinMismatchError) as err:
        run_stage("signals")
    assert new.as_posix() in str(err.value) and "novelty-audit signals --accept" in str(err.value)

    main(["signals", "--accept"])
    assert f"{new.as_posix()}: pinned" in capsys.readouterr().out
    after = run_stage("signals")
    assert after.identity != before.identity
    assert new.as_posix() in [r.path for r in after.inputs]
    pid = paper_id_for("Cached Attention Reuse for Long Context Models")
    assert pid in pl.read_parquet("artifacts/signals/papers.parquet")["paper_id"].to_list()
    snippets = pl.read_parquet("artifacts/signals/snippets.parquet").filter(pl.col("paper_id") == pid)
    assert snippets.filter(pl.col("polarity") == "positive")["text"].to_list() == [
        "The idea of reusing cached attention maps across layers is novel and original."
    ]


def test_every_file_the_signals_stage_reads_is_in_its_identity_and_a_dvc_dependency(reviews_project: Path) -> None:
    run_stage("pin")
    m = run_stage("signals")
    deps = yaml.safe_load(Path("dvc.yaml").read_text(encoding="utf-8"))["stages"]["signals"]["deps"]
    recorded = [r.path for r in m.inputs]
    assert "data/raw-reviews/INDEX.tsv" in recorded  # the index is read, so it decides the identity
    assert len([p for p in recorded if p.startswith("data/raw-reviews/") and p.endswith(".md")]) == 7
    for path in recorded:
        assert any(path == d or path.startswith(d.rstrip("/") + "/") for d in deps), f"{path} is not a dvc.yaml dep"
