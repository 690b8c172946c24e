"""A newcomer's first `dvc repro`: a fresh clone with empty caches, timed per stage (goal ≤ 90 s).

Usage: python benchmarks/bench_first_run.py [--source head|worktree] [--no-shipped] [--keep]

- `--source head` (default): `git clone` of this checkout's HEAD, what a newcomer gets; `worktree`: a copy of the
  working tree (tests/project_copy.py's ignore_run_state), to time uncommitted changes.
- The clone's own code runs (PYTHONPATH=<clone>), not the checkout an editable install points at.
- Caches are the clone's own: the store (`store.root`, `.novelty-audit/` inside the project) holds every cache
  of the pipeline (embeddings, densities, TF-IDF fits, call cache), so a fresh clone shares nothing with this one.
- `--no-shipped` removes `args.vectors` from the clone's params.yaml: the run embeds everything itself (the
  uncached reference; with `--keep`, `novelty-audit embeddings build` in the kept clone writes the file anew).

Stage times are the wall time from DVC's "Running stage" line to the next (so DVC's own lock-file work is in
them). The machine's load is recorded at start and end: figures taken beside other work are not idle figures.
The last line is one JSON object: seconds, seconds_by_stage, yin_human_only_correct, load, digests of the
verdicts and metrics (to compare a run with shipped vectors against one without), and what the judge stage
embedded.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from project_copy import ignore_run_state  # noqa: E402

GOAL_S = 90.0
YIN = "distance-yin-minilm"
STAGE_LINE = re.compile(r"^Running stage '([^']+)'")
# `, vectors: {path: …, sha256: …}` (with an optional &anchor) or `, vectors: *anchor` inside a flow mapping.
VECTORS_ARG = re.compile(r",\s*vectors:\s*(?:&[\w-]+\s*)?(?:\{[^{}]*\}|\*[\w-]+)")


def sh(*cmd: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    res = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed in {cwd}:\n{res.stdout}\n{res.stderr}")


def make_project(source: str, root: Path) -> None:
    if source == "head":
        sh("git", "clone", "-q", str(REPO), str(root), cwd=REPO)
        return
    shutil.copytree(REPO, root, ignore=ignore_run_state)
    for cmd in (["git", "init", "-q"], ["dvc", "init", "-q"], ["git", "add", "-A"],
                ["git", "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qm", "init"]):  # fmt: skip
        sh(*cmd, cwd=root)


def drop_shipped_vectors(root: Path) -> int:
    """Remove every judge's `args.vectors` from the clone's params.yaml, as text: the rest stays byte for byte (a YAML
    round trip rewrote quoting and broke the file). Checked by parsing the result."""
    import yaml

    path = root / "params.yaml"
    text, dropped = VECTORS_ARG.subn("", path.read_text(encoding="utf-8"))
    judges = yaml.safe_load(text)["judge"]["judges"]
    left = [name for name, spec in judges.items() if "vectors" in (spec.get("args") or {})]
    if left:
        raise SystemExit(f"--no-shipped: could not remove args.vectors of {', '.join(left)} from params.yaml (write it inline, in the args mapping)")
    path.write_text(text, encoding="utf-8")
    sh("git", "-c", "user.email=b@b", "-c", "user.name=b", "commit", "-qam", "bench: no shipped vectors", cwd=root)
    return dropped


def repro(root: Path, env: dict[str, str]) -> tuple[int, float, dict[str, float], list[str]]:
    """(exit code, seconds, seconds per stage, output lines) of `dvc repro` in `root`."""
    started = time.monotonic()
    marks: list[tuple[str, float]] = []
    lines: list[str] = []
    proc = subprocess.Popen(["dvc", "repro"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        m = STAGE_LINE.match(line)
        if m:
            marks.append((m.group(1), time.monotonic()))
    rc = proc.wait()
    ended = time.monotonic()
    by_stage = {name: round((marks[i + 1][1] if i + 1 < len(marks) else ended) - t, 2) for i, (name, t) in enumerate(marks)}
    return rc, round(ended - started, 2), by_stage, lines


def yin_correct(root: Path) -> int | None:
    import polars as pl

    path = root / "artifacts" / "judge" / "verdicts.parquet"
    if not path.exists():
        return None
    v = pl.read_parquet(path).filter((pl.col("dataset") == "human-only") & (pl.col("judge") == YIN))
    return int((v["verdict"] == v["gold_idea_id"]).sum())


def digests(root: Path) -> dict[str, str | None]:
    """Content digests of the verdict tables (rows, not Parquet bytes) and the bytes of metrics.json."""
    import polars as pl

    from novelty_audit.artifacts import digest_file, digest_table

    out: dict[str, str | None] = {}
    for name in ("verdicts", "pointwise"):
        p = root / "artifacts" / "judge" / f"{name}.parquet"
        out[f"{name}_digest"] = digest_table(pl.read_parquet(p)) if p.exists() else None
    m = root / "artifacts" / "metrics" / "metrics.json"
    out["metrics_sha256"] = digest_file(m) if m.exists() else None
    return out


def embedding_facts(root: Path) -> dict[str, object]:
    """What the judge stage embedded (run log, never hashed): shipped file used?, texts run through a model."""
    log = root / ".novelty-audit" / "runlog.jsonl"
    facts: dict[str, object] = {"texts_encoded": 0, "shipped_vectors": None}
    if not log.exists():
        return facts
    for line in log.read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if rec.get("stage") != "judge":
            continue
        for value in rec.values():
            # Sentence-transformers judges only (a TF-IDF judge counts calls, not texts, and fits no model to ship).
            if isinstance(value, dict) and not str(value.get("embedder_model_id", "tfidf@")).startswith("tfidf@"):
                facts["texts_encoded"] = int(facts["texts_encoded"]) + int(value.get("texts_encoded") or 0)  # type: ignore[arg-type]
                if value.get("shipped_vectors"):
                    sv = value["shipped_vectors"]
                    facts["shipped_vectors"] = {k: sv.get(k) for k in ("path", "used", "groups", "texts", "installed", "reason") if k in sv}
    return facts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source", choices=("head", "worktree"), default="head")
    ap.add_argument("--no-shipped", action="store_true", help="drop args.vectors: embed everything (the uncached reference)")
    ap.add_argument("--keep", action="store_true", help="keep the clone and print its path")
    a = ap.parse_args()

    load_start = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="bench-first-run-"))
    root = tmp / "project"
    try:
        make_project(a.source, root)
        dropped = drop_shipped_vectors(root) if a.no_shipped else 0
        # The clone's code, not an editable install's checkout; no analytics call in the timing.
        env = {**os.environ, "DVC_NO_ANALYTICS": "1", "PYTHONPATH": str(root)}
        rc, seconds, by_stage, lines = repro(root, env)
        load_end = os.getloadavg()
        if rc != 0:
            print("\n".join(lines[-30:]), file=sys.stderr)
        for name, s in by_stage.items():
            print(f"{name:>8}: {s:7.1f} s")
        print(f"   total: {seconds:7.1f} s (goal ≤ {GOAL_S:.0f} s)  load average {load_start[0]:.2f} → {load_end[0]:.2f} on {os.cpu_count()} CPUs")
        result = {
            "seconds": seconds,
            "seconds_by_stage": by_stage,
            "yin_human_only_correct": yin_correct(root),
            "returncode": rc,
            "goal_seconds": GOAL_S,
            "source": a.source,
            "shipped_vectors_dropped": dropped,
            **embedding_facts(root),
            **digests(root),
            "loadavg_start": [round(x, 2) for x in load_start],
            "loadavg_end": [round(x, 2) for x in load_end],
            "cpus": os.cpu_count(),
            "clone": str(root) if a.keep else None,
        }
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
