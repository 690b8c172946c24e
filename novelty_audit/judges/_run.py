"""One judge-stage run: read the pinned items, ask every judge, check coverage, write the three tables."""

from __future__ import annotations

import gc
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import polars as pl

from ..config import JudgeParams
from ..artifacts import digest_bytes, write_table
from ..errors import BadInputError
from ._base import (
    JUDGES_SCHEMA,
    NONE,
    PAIRWISE_SCHEMA,
    PLANTED_TABLE,
    POINTWISE_SCHEMA,
    TIE,
    Idea,
    Judge,
    JudgeOutput,
    PairItem,
    Planted,
    PointItem,
    judges_row,
)
from ._build import Built
from ._excluded import corpus_exclusion_lines, corpus_exclusions
from ._prompts import JUDGE_TEMPLATE_PREFIXES

__all__ = [
    "DatasetDirs", "JudgeMap", "JudgeRun", "failed_calls", "failure_line", "judge_stage_inputs", "limit_items", "load_items", "prompts_dir", "run_judges", "runs_probe", "select_items", "RunItems",
]  # fmt: skip

JudgeMap = Callable[[Sequence[Judge], list[PairItem], list[PointItem]], list[JudgeOutput]]
"""Hook for orchestrators (flows/): run each judge over the items, one JudgeOutput per judge in order,
each equal to `judge.judge(pairs, points)` (rows in any order; facts summed over any split)."""

_PIN_TABLES = ("ideas.parquet", "pairs.parquet", "pointwise.parquet")


@dataclass
class JudgeRun:
    """Counts for the manifest summary (content) and run facts for the log (calls, cost, seconds)."""

    summary: dict[str, Any] = field(default_factory=dict)
    facts: dict[str, Any] = field(default_factory=dict)
    failed: Counter[str] = field(default_factory=Counter)
    """Failed calls by reason, over the judges whose errors a rerun can fix (see `failed_calls`)."""


def prompts_dir() -> Path:
    return Path(str(resources.files("novelty_audit").joinpath("prompts")))


DatasetDirs = Mapping[str, Path]
"""Dataset name → the directory of its tables, for datasets that are not pinned splits (the pools stage's
`datasets/<name>/`); every other dataset is read from the pin stage's `<pin_dir>/<name>/`."""


def _base(pin_dir: Path, ds: str, dirs: DatasetDirs | None) -> Path:
    return Path(dirs[ds]) if dirs and ds in dirs else Path(pin_dir) / ds


def judge_stage_inputs(jp: JudgeParams, pin_dir: Path, built: Built, probe_dir: Path | None = None, dataset_dirs: DatasetDirs | None = None) -> list[Path]:
    """Files whose content decides the judge stage's outputs: pinned tables (and those of the pools stage's
    datasets named in `dataset_dirs`), probe tables, prompt templates, judge inputs."""
    paths: list[Path] = []
    sources = (
        (Path(pin_dir), jp.run_datasets(), "pinned", dataset_dirs,
         "run the pin stage first (the pools stage for a pools dataset), and list in judge.datasets (and a sweep's dataset "
         "knob) only datasets under pin.datasets or built by the pools stage (artifacts/pools/datasets.json)"),
    )  # fmt: skip
    if jp.probe_datasets:  # only then is a probe directory required
        sources += ((_probe_dir(probe_dir), jp.probe_datasets, "probe", None,
                     "run the probe stage first (novelty-audit stage probe), with the split under probe.datasets"),)
    for root, datasets, what, dirs, hint in sources:
        for ds in datasets:
            for t in _PIN_TABLES:
                p = _base(root, ds, dirs) / t
                if not p.exists():
                    raise BadInputError(f"{p}: missing {what} table for dataset '{ds}'", hint=hint)
                paths.append(p)
            if (_base(root, ds, dirs) / PLANTED_TABLE).is_file():  # a probe dataset's planted documents decide what judges see
                paths.append(_base(root, ds, dirs) / PLANTED_TABLE)
    # Only the judge's own templates: other stages' prompts share the folder but not this stage's identity.
    paths.extend(p for p in prompts_dir().iterdir() if p.name.startswith(JUDGE_TEMPLATE_PREFIXES))
    for j in built.judges:
        paths.extend(Path(p) for p in j.input_files())
        # Project template files (prompt: prompts/x.jinja2) of any judge that renders templates.
        paths.extend(Path(t.path) for t in getattr(j, "templates", {}).values() if getattr(t, "path", None))
    return sorted(set(paths))


def _planted(base: Path) -> dict[str, tuple[Planted, ...]]:
    """idea_id → the documents the injection probe planted for it (a probe dataset's planted.parquet; none elsewhere)."""
    path = base / PLANTED_TABLE
    if not path.is_file():
        return {}
    out: dict[str, list[Planted]] = {}
    for r in pl.read_parquet(path).sort(["idea_id", "doc_id"]).iter_rows(named=True):
        out.setdefault(r["idea_id"], []).append(Planted(r["doc_id"], r["title"], r["abstract"]))
    return {k: tuple(v) for k, v in out.items()}


def load_items(pin_dir: Path, datasets: list[str], dataset_dirs: DatasetDirs | None = None) -> tuple[list[PairItem], list[PointItem]]:
    """Pairs (published slot order) and pointwise items of each dataset, joined to their ideas by idea_id."""
    pairs: list[PairItem] = []
    points: list[PointItem] = []
    for ds in datasets:
        base = _base(pin_dir, ds, dataset_dirs)
        planted = _planted(base)
        ideas = {
            r["idea_id"]: Idea(r["idea_id"], r["title"], r["text"], r["text_digest"], r["area"], planted.get(r["idea_id"], ()))
            for r in pl.read_parquet(base / "ideas.parquet").iter_rows(named=True)
        }
        for r in pl.read_parquet(base / "pairs.parquet").sort("pair_id").iter_rows(named=True):
            missing = [s for s in ("idea_0", "idea_1") if r[s] not in ideas]
            if missing:
                raise BadInputError(f"{base / 'pairs.parquet'}: pair {r['pair_id']}, field {missing[0]}: idea not in ideas.parquet")
            pairs.append(
                PairItem(ds, r["pair_id"], ideas[r["idea_0"]], ideas[r["idea_1"]], r["gold_idea_id"], r["context"], r.get("source_key"))
            )
        for r in pl.read_parquet(base / "pointwise.parquet").sort("idea_id").iter_rows(named=True):
            if r["idea_id"] not in ideas:
                raise BadInputError(f"{base / 'pointwise.parquet'}: idea {r['idea_id']}, field idea_id: not in ideas.parquet")
            points.append(PointItem(ds, ideas[r["idea_id"]], r["label"]))
    return pairs, points


def _check_coverage(name: str, rows: list[dict], expected: list[tuple[str, str]], key: str, what: str) -> None:
    got = Counter((r["dataset"], r[key]) for r in rows)
    dup = [k for k, n in got.items() if n > 1]
    lost = [k for k in expected if k not in got]
    extra = [k for k in got if k not in set(expected)]
    if dup or lost or extra:
        raise RuntimeError(
            f"judge {name}: {what} verdicts do not cover the items exactly once: "
            f"{len(lost)} lost, {len(dup)} duplicated, {len(extra)} unknown (e.g. {(lost or dup or extra)[:3]})"
        )


_OUTCOME_COUNTS = ("n_valid", "n_invalid", "n_refusal", "n_error", "n_truncated")


def _summary(out: JudgeOutput) -> dict[str, dict[str, Any]]:
    """Per dataset: verdict and call-outcome counts (pointwise ones prefixed `pointwise_`) and, when calls
    failed, `error_reasons` {reason: failed calls} over both tasks. Content only: no time, no call counts."""
    per_ds: dict[str, Counter[str]] = {}
    reasons: dict[str, Counter[str]] = {}
    for r in out.pairwise:
        s = per_ds.setdefault(r["dataset"], Counter())
        s["pairs"] += 1
        s["ties"] += r["verdict"] == TIE
        s["none"] += r["verdict"] == NONE
        for k in _OUTCOME_COUNTS:
            s[k] += r[k]
        if r.get("n_undecided"):  # only agents have undecided calls: other judges' summaries keep their keys
            s["n_undecided"] += r["n_undecided"]
        reasons.setdefault(r["dataset"], Counter()).update(r["error_reasons"] or [])
    for r in out.pointwise:
        s = per_ds.setdefault(r["dataset"], Counter())
        s["pointwise"] += 1
        s["pointwise_none"] += r["predicted"] == NONE
        for k in _OUTCOME_COUNTS:
            s[f"pointwise_{k}"] += r[k]
        if r.get("n_undecided"):
            s["pointwise_n_undecided"] += r["n_undecided"]
        reasons.setdefault(r["dataset"], Counter()).update(r["error_reasons"] or [])
    summary: dict[str, dict[str, Any]] = {}
    for ds, c in sorted(per_ds.items()):
        summary[ds] = dict(sorted(c.items()))
        if reasons.get(ds):
            summary[ds]["error_reasons"] = dict(sorted(reasons[ds].items()))
    return summary


def limit_items(pairs: Sequence[PairItem], points: Sequence[PointItem], limit: int | None, seed: int) -> tuple[list[PairItem], list[PointItem]]:
    """`judge.limit`: per dataset the `limit` pairs ranked first by sha256(seed, pair id), in their input order,
    and the pointwise items of their ideas (a dataset without pairs: `limit` ideas, ranked alike). Ranking by a
    per-pair hash (not a shuffle of the list) keeps a pair's membership independent of the other pairs: an added
    pair displaces at most one. The dataset is not in the hash, so splits holding the same pairs (a plan-format
    split and its original) keep the same subset and a sweep compares them item by item."""
    if limit is None:
        return list(pairs), list(points)
    by_ds: dict[str, list[PairItem]] = {}
    for p in pairs:
        by_ds.setdefault(p.dataset, []).append(p)
    keep: set[tuple[str, str]] = set()
    for ds, items in by_ds.items():
        ranked = sorted(items, key=lambda p: (digest_bytes(f"{seed}:{p.pair_id}".encode()), p.pair_id))
        keep.update((ds, p.pair_id) for p in ranked[:limit])
    chosen = [p for p in pairs if (p.dataset, p.pair_id) in keep]
    ideas = {(p.dataset, i.idea_id) for p in chosen for i in p.ideas}
    # A dataset with pointwise items but no pairs: its `limit` ideas ranked the same way.
    lone: dict[str, list[PointItem]] = {}
    for pt in points:
        if pt.dataset not in by_ds:
            lone.setdefault(pt.dataset, []).append(pt)
    for ds, items in lone.items():
        ranked = sorted(items, key=lambda pt: (digest_bytes(f"{seed}:{pt.idea.idea_id}".encode()), pt.idea.idea_id))
        ideas.update((ds, pt.idea.idea_id) for pt in ranked[:limit])
    return chosen, [pt for pt in points if (pt.dataset, pt.idea.idea_id) in ideas]


def _limit_summary(jp: JudgeParams, all_pairs: Sequence[PairItem], pairs: Sequence[PairItem], points: Sequence[PointItem]) -> dict[str, Any]:
    """What a limited run judged, per dataset: shown in the manifest summary (content, not a run fact)."""
    total = Counter(p.dataset for p in all_pairs)
    chosen = Counter(p.dataset for p in pairs)
    ideas = Counter(p.dataset for p in points)
    return {
        "limit": jp.limit,
        "seed": jp.seed,
        "datasets": {ds: {"pairs": chosen[ds], "of_pairs": total[ds], "pointwise": ideas[ds]} for ds in sorted(set(total) | set(ideas))},
    }


def _probe_dir(probe_dir: Path | None) -> Path:
    if probe_dir is None:
        raise ValueError("judge.probe_datasets is set: pass the probe stage's output directory (probe_dir)")
    return Path(probe_dir)


def runs_probe(jp: JudgeParams, judge: Judge) -> bool:
    """Whether `judge` judges the probe datasets (`judge.probe_judges`; null: every enabled judge)."""
    return bool(jp.probe_datasets) and (jp.probe_judges is None or judge.name in jp.probe_judges)


def _probe_split(dataset: str) -> str:
    return dataset.rsplit(":", 1)[0]


@dataclass(frozen=True)
class RunItems:
    """The items a judge-stage run asks: every pinned one, and the `judge.limit` subset kept to `judge.tasks`."""

    all_pairs: list[PairItem]
    all_points: list[PointItem]
    probe_all: list[PairItem]
    pairs: list[PairItem]
    points: list[PointItem]
    probe_pairs: list[PairItem]
    subset: dict[str, Any] | None
    """What `judge.limit` kept (None: no limit)."""

    def for_judge(self, jp: JudgeParams, judge: Judge) -> list[PairItem]:
        """The pairs `judge` is asked, of its own datasets (`JudgeParams.datasets_of`): the probe pairs too,
        derived from those datasets, when it runs the probe."""
        own = set(jp.datasets_of(judge.name))
        pairs = [p for p in self.pairs if p.dataset in own]
        return pairs + [p for p in self.probe_pairs if _probe_split(p.dataset) in own] if runs_probe(jp, judge) else pairs

    def points_for(self, jp: JudgeParams, judge: Judge) -> list[PointItem]:
        """The pointwise items `judge` is asked: those of its own datasets."""
        own = set(jp.datasets_of(judge.name))
        return [p for p in self.points if p.dataset in own]


def select_items(jp: JudgeParams, pin_dir: Path, probe_dir: Path | None, dataset_dirs: DatasetDirs | None = None) -> RunItems:
    """The items of a run (and of its dry run, which must plan exactly these)."""
    all_pairs, all_points = load_items(pin_dir, jp.run_datasets(), dataset_dirs)
    probe_all = load_items(_probe_dir(probe_dir), list(jp.probe_datasets))[0] if jp.probe_datasets else []
    pairs, points = limit_items(all_pairs, all_points, jp.limit, jp.seed)
    probe_pairs, _ = limit_items(probe_all, [], jp.limit, jp.seed)
    subset = _limit_summary(jp, all_pairs, pairs, points) if jp.limit is not None else None
    if "pairwise" not in jp.tasks:
        pairs, probe_pairs = [], []
    if "pointwise" not in jp.tasks:
        points = []
    return RunItems(list(all_pairs), list(all_points), list(probe_all), list(pairs), list(points), list(probe_pairs), subset)


@contextmanager
def frozen_heap() -> Iterator[Callable[[], None]]:
    """The objects alive now left out of the cycle collector's passes until the block ends (`gc.freeze`); the
    block is handed a function that freezes what is alive by then too (a no-op where this freeze is not ours).

    What is alive before the judges run (imported libraries, the loaded items and corpora) outlives them, yet
    each full pass of the collector walked all of it while requests were out: pauses the requests sat
    through (docs/benchmarks.md, paper scale). Left alone where someone else froze objects (their freeze is
    theirs to undo) or turned the collector off."""
    if gc.get_freeze_count() or not gc.isenabled():
        yield lambda: None
        return
    gc.freeze()
    try:
        yield gc.freeze
    finally:
        gc.unfreeze()  # a long-lived process (a notebook, a flow worker) collects again what dies later


def run_judges(
    jp: JudgeParams, pin_dir: Path, built: Built, out_dir: Path, *, map_judges: JudgeMap | None = None, probe_dir: Path | None = None,
    dataset_dirs: DatasetDirs | None = None,
) -> JudgeRun:
    """Run every built judge over the pinned items (and the probe pairs, for the judges that run the probe)
    and write verdicts/pointwise/judges Parquet into `out_dir`."""
    with frozen_heap() as freeze_more:
        return _run_judges(jp, pin_dir, built, out_dir, map_judges=map_judges, probe_dir=probe_dir, dataset_dirs=dataset_dirs, after_judge=freeze_more)


def _run_judges(
    jp: JudgeParams, pin_dir: Path, built: Built, out_dir: Path, *, map_judges: JudgeMap | None, probe_dir: Path | None,
    dataset_dirs: DatasetDirs | None, after_judge: Callable[[], None],
) -> JudgeRun:
    chosen = select_items(jp, pin_dir, probe_dir, dataset_dirs)
    all_pairs, all_points, probe_all = chosen.all_pairs, chosen.all_points, chosen.probe_all
    subset = chosen.subset
    pair_rows: list[dict] = []
    point_rows: list[dict] = []
    result = JudgeRun()
    result.summary["skipped_judges"] = dict(built.skipped)
    if subset is not None:
        result.summary["subset"] = subset
    corpora = corpus_exclusions(built.judges)
    if corpora:  # corpus records no judge could use: counted here, each named in the run log; none: no entry
        result.summary["corpus_exclusions"] = corpora
        print(*corpus_exclusion_lines(corpora), sep="\n", file=sys.stderr)
    # Judges asked the same items form a group asked in one go (one hook call, one fan-out): without per-judge
    # datasets, the judges that also run the probe pairs, and the rest.
    items = {id(j): chosen.for_judge(jp, j) for j in built.judges}
    points_of = {id(j): chosen.points_for(jp, j) for j in built.judges}
    groups: dict[tuple[str, bool], list[Judge]] = {}
    for j in built.judges:
        groups.setdefault(("\0".join(jp.datasets_of(j.name)), runs_probe(jp, j)), []).append(j)
    # judge.limit: a judge matching rows made elsewhere (import) is told which pinned items this run leaves out,
    # so a row naming one is counted as outside the subset, never as matching no pinned item.
    for judge in built.judges:
        if hasattr(judge, "set_left_out"):
            kept = {(p.dataset, p.pair_id) for p in items[id(judge)]}
            kept_points = {(p.dataset, p.idea.idea_id) for p in points_of[id(judge)]}
            own = set(jp.datasets_of(judge.name))
            pool = [p for p in all_pairs if p.dataset in own] + ([p for p in probe_all if _probe_split(p.dataset) in own] if runs_probe(jp, judge) else [])
            pool = pool if "pairwise" in jp.tasks else []
            point_pool = [p for p in all_points if p.dataset in own] if "pointwise" in jp.tasks else []
            judge.set_left_out([p for p in pool if (p.dataset, p.pair_id) not in kept],
                               [p for p in point_pool if (p.dataset, p.idea.idea_id) not in kept_points])
        if hasattr(judge, "set_other_splits") and "pairwise" in jp.tasks:
            # Only for the console hint naming a split that would take excluded rows: never a vote, never an output.
            own = set(jp.datasets_of(judge.name))
            others = sorted(d.name for d in Path(pin_dir).iterdir() if (d / "pairs.parquet").is_file() and d.name not in own)
            judge.set_other_splits(load_items(pin_dir, others)[0] if others else [])
    outputs: dict[int, JudgeOutput] = {}
    if map_judges is not None:
        for group in groups.values():
            first = id(group[0])
            outputs.update(zip((id(j) for j in group), map_judges(group, items[first], points_of[first])))
    for judge in built.judges:
        started = time.perf_counter()
        out = outputs[id(judge)] if map_judges is not None else judge.judge(items[id(judge)], points_of[id(judge)])
        _check_coverage(judge.name, out.pairwise, [(p.dataset, p.pair_id) for p in items[id(judge)]], "pair_id", "pairwise")
        _check_coverage(judge.name, out.pointwise, [(p.dataset, p.idea.idea_id) for p in points_of[id(judge)]], "idea_id", "pointwise")
        pair_rows.extend(out.pairwise)
        point_rows.extend(out.pointwise)
        result.facts[judge.name] = {**out.facts, "seconds": round(time.perf_counter() - started, 4)}
        result.summary[judge.name] = _summary(out)
        if out.exclusions:  # recorded, never dropped silently (e.g. imported rows matching no pinned pair)
            result.summary.setdefault("exclusions", {})[judge.name] = out.exclusions
        result.failed.update(failed_calls(judge, out))
        after_judge()  # what this judge made (its rows, its answers) outlives the run too: frozen with the rest
    verdicts = pl.DataFrame(pair_rows, schema=PAIRWISE_SCHEMA) if pair_rows else pl.DataFrame(schema=PAIRWISE_SCHEMA)
    pointwise = pl.DataFrame(point_rows, schema=POINTWISE_SCHEMA) if point_rows else pl.DataFrame(schema=POINTWISE_SCHEMA)
    judges = pl.DataFrame([judges_row(j) for j in built.judges], schema=JUDGES_SCHEMA) if built.judges else pl.DataFrame(schema=JUDGES_SCHEMA)
    write_table(Path(out_dir) / "verdicts.parquet", verdicts.sort(["dataset", "judge", "pair_id"]))
    write_table(Path(out_dir) / "pointwise.parquet", pointwise.sort(["dataset", "judge", "idea_id"]))
    write_table(Path(out_dir) / "judges.parquet", judges.sort("judge"))
    return result


def failed_calls(judge: Judge, out: JudgeOutput) -> Counter[str]:
    """Failed calls by reason in one judge's output, each distinct call once (`JudgeOutput.failed_calls`: a
    call shared by two rows, and the retries of one call, are one failure). A judge that reports no calls
    falls back to counting its rows. None for an `import` judge, whose errors are votes recorded in its file,
    not calls: asking again cannot change them."""
    failed: Counter[str] = Counter()
    if judge.backend == "import":
        return failed
    if out.failed_calls:
        failed.update(out.failed_calls.values())
        return failed
    for r in [*out.pairwise, *out.pointwise]:
        if r["n_error"] > 0:
            reasons = r.get("error_reasons") or []
            failed.update(reasons)
            if len(reasons) < r["n_error"]:
                failed["unknown reason"] += r["n_error"] - len(reasons)
    return failed


def failure_line(failed: Counter[str]) -> str | None:
    """"296 calls failed: connection refused" / "30 calls failed: 20 HTTP 500, 10 timeout"; None when none failed."""
    total = sum(failed.values())
    if not total:
        return None
    if len(failed) == 1:
        return f"{total} call{'s' if total != 1 else ''} failed: {next(iter(failed))}"
    parts = ", ".join(f"{n} {reason}" for reason, n in sorted(failed.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{total} calls failed: {parts}"
