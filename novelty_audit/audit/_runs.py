"""Load the two sides of an audit: a recorded run (runs ledger) or the current stage outputs.

A side is a set of stage manifests. Its verdicts are read through the judge manifest: output
record → sha256 → the store's object file, so a run stays auditable after its working files
were overwritten.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from ..artifacts import MANIFEST_NAME, RunRecord, StageManifest, Store, digest_file, load_manifest
from ..errors import ManifestMismatchError, NoveltyAuditError
from ._adjudicate import index_adjudications, load_adjudications
from ._classify import classify_changes, corpus_rows
from ._explain import infer_corpus_changes
from ._model import KINDS, AuditResult

__all__ = ["RunSide", "ledger_side", "current_side", "current_run_id", "latest_other_run", "audit", "audit_sides", "CURRENT",
           "list_runs", "parse_when", "run_at", "window"]

CURRENT = "current"
"""The RUN name for the stage outputs in the working tree (not yet, or not necessarily, recorded)."""


@dataclass(frozen=True)
class RunSide:
    """One side of an audit: a label (run id or `current`) and the stage manifests it consists of."""

    label: str
    manifests: dict[str, StageManifest] = field(default_factory=dict)


def ledger_side(store: Store, ref: str) -> RunSide:
    """A recorded run by run id or git revision (prefixes allowed)."""
    rec = store.find_run(ref)
    return RunSide(rec.run_id, {name: store.manifest_by_digest(d) for name, d in rec.stages.items()})


def current_side(artifacts: str | Path, stages: tuple[str, ...] = ("pin", "probe", "pools", "judge")) -> RunSide:
    """The stage outputs now in `artifacts/<stage>/` (their manifests)."""
    out = {}
    for name in stages:
        if (Path(artifacts) / name / MANIFEST_NAME).exists():
            out[name] = load_manifest(Path(artifacts) / name)
    return RunSide(CURRENT, out)


def current_run_id(artifacts: str | Path) -> str | None:
    """The run id the stage outputs now in `artifacts/` would be recorded under (None when there are none).

    Every `artifacts/<stage>/` with a manifest counts, as in `record_run`: recorded runs and the working
    outputs are told apart by content, never by position in the ledger.
    """
    root = Path(artifacts)
    if not root.is_dir():
        return None
    digests = {
        d.name: load_manifest(d).digest()
        for d in sorted(root.iterdir())
        if d.is_dir() and not d.name.startswith(".") and (d / MANIFEST_NAME).exists()
    }
    return RunRecord.run_id_for(digests) if digests else None


def latest_other_run(store: Store, artifacts: str | Path) -> RunRecord | None:
    """The latest ledger run whose content differs from the current stage outputs (None if there is none).

    The run the current outputs are compared with: the same whether or not they were recorded already, so
    the report's audit is the same after `dvc repro`, after a flow run, and after either run again.
    """
    current = current_run_id(artifacts)
    others = [r for r in store.runs() if r.run_id != current]
    return others[-1] if others else None


def _object(store: Store, manifest: StageManifest, rel: str) -> Path:
    sha = manifest.output(rel).sha256
    p = store.object_path(sha)
    if not p.exists():
        raise ManifestMismatchError(
            f"stage {manifest.stage}: output {rel} (sha256 {sha[:12]}) is not in the store at {store.root}",
            hint="the store was pruned or copied partially; rerun the stage (dvc repro) to store it again",
        )
    if digest_file(p) != sha:
        raise ManifestMismatchError(f"store object {p} for {manifest.stage}/{rel} does not match its sha256 {sha[:12]}")
    return p


def _tables(store: Store, manifest: StageManifest | None, name: str) -> list[pl.DataFrame]:
    if manifest is None:
        return []
    rels = sorted(r.path for r in manifest.outputs if r.path == name or r.path.endswith("/" + name))
    return [pl.read_parquet(_object(store, manifest, rel)) for rel in rels]


def _kind_table(store: Store, side: RunSide, kind: str) -> pl.DataFrame | None:
    name = {"pairwise": "verdicts.parquet", "pointwise": "pointwise.parquet", "review": "reviews.parquet"}[kind]
    judge = side.manifests.get("judge")
    if judge is None:
        raise NoveltyAuditError(
            f"run {side.label} has no judge stage manifest", hint="audit runs that include the judge stage"
        )
    tables = _tables(store, judge, name)
    if not tables:
        if kind == "pairwise":
            raise ManifestMismatchError(f"run {side.label}: the judge manifest lists no verdicts.parquet output")
        return None
    return pl.concat(tables, how="diagonal_relaxed") if len(tables) > 1 else tables[0]


def _verdicts(store: Store, side: RunSide) -> pl.DataFrame:
    out = _kind_table(store, side, "pairwise")
    assert out is not None
    return out


def _configs(store: Store, side: RunSide) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for df in _tables(store, side.manifests.get("judge"), "judges.parquet"):
        for row in df.select("judge", "config").to_dicts():
            cfg = row["config"]
            out[row["judge"]] = orjson.loads(cfg) if isinstance(cfg, (str, bytes)) else dict(cfg or {})
    return out


def _ideas(store: Store, side: RunSide) -> tuple[dict[tuple[str, str], str], dict[tuple[str, str], str]]:
    """(titles, texts) by (dataset, idea_id) from the pin, probe and pools stages' ideas tables."""
    titles: dict[tuple[str, str], str] = {}
    texts: dict[tuple[str, str], str] = {}
    # The pools stage's datasets (candidate sets, re-pairings) hold their ideas too (datasets/<name>/ideas.parquet).
    tables = [t for stage in ("pin", "probe", "pools") for t in _tables(store, side.manifests.get(stage), "ideas.parquet")]
    for df in tables:
        cols = [c for c in ("dataset", "idea_id", "title", "text") if c in df.columns]
        for row in df.select(cols).to_dicts():
            titles[(row["dataset"], row["idea_id"])] = row["title"]
            if "text" in row:
                texts[(row["dataset"], row["idea_id"])] = row["text"]
    return titles, texts


def _families(store: Store, *sides: RunSide) -> dict[tuple[str, str], str]:
    """(probe dataset, pair id) → attack family, from the probe stage's probes tables of either side."""
    out: dict[tuple[str, str], str] = {}
    for side in sides:
        for df in _tables(store, side.manifests.get("probe"), "probes.parquet"):
            out.update(zip(zip(df["dataset"].to_list(), df["pair_id"].to_list()), df["family"].to_list()))
    return out


def _injected(attacked: str | None, clean: str | None, position: str | None) -> str | None:
    """The text a probe added to the clean idea (the probe stage joins them with a blank line)."""
    if attacked is None or clean is None:
        return None
    sep = "\n\n"
    if position == "prepend" and attacked.endswith(sep + clean):
        return attacked[: -len(sep + clean)]
    if attacked.startswith(clean + sep):
        return attacked[len(clean + sep):]
    return None


def _probes(store: Store, *sides: RunSide) -> dict[tuple[str, str], dict[str, Any]]:
    """(probe dataset, pair id) → {family, template_id, position, attacked_idea_id, slot, injected} (the after side
    wins), `injected` being the attacked idea's text minus the clean idea's (the pin stage's text)."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for side in sides:
        texts = _ideas(store, side)[1]
        pairs = {}
        for df in _tables(store, side.manifests.get("probe"), "pairs.parquet"):
            pairs.update({(r["dataset"], r["pair_id"]): r for r in df.select("dataset", "pair_id", "idea_0", "idea_1").to_dicts()})
        for df in _tables(store, side.manifests.get("probe"), "probes.parquet"):
            for r in df.to_dicts():
                attacked = r.get("attacked_idea_id")
                pair = pairs.get((r["dataset"], r["pair_id"]), {})
                slot = "idea_0" if pair.get("idea_0") == attacked else "idea_1" if pair.get("idea_1") == attacked else None
                out[(r["dataset"], r["pair_id"])] = {
                    "family": r.get("family"), "template_id": r.get("template_id"), "position": r.get("position"),
                    "attacked_idea_id": attacked, "slot": slot,
                    "injected": _injected(texts.get((r["dataset"], attacked)), texts.get((r.get("split"), r.get("clean_idea_id"))),
                                          r.get("position")),
                }  # fmt: skip
    return out


def _subset(side: RunSide) -> dict[str, Any] | None:
    """The judge stage's subset summary ({limit, seed, datasets}) when the run judged a subset (judge.limit)."""
    judge = side.manifests.get("judge")
    got = None if judge is None else judge.summary.get("subset")
    return dict(got) if isinstance(got, dict) else None


_CORPUS_INDEXES: dict[tuple, dict[str, dict[str, str]]] = {}
"""Corpus indexes by the content of their files (the review page audits on every request)."""


def _corpus_index(path: Path) -> dict[str, dict[str, str]]:
    """doc id → {sha256 of "title. abstract": abstract} of the corpus at `path` ({} when it cannot be read)."""
    from ..artifacts import digest_bytes

    try:
        files = sorted(f for f in path.rglob("*") if f.is_file()) if path.is_dir() else [path]
        stamp = (str(path.resolve()), tuple((str(f), digest_file(f)) for f in files))
    except OSError:
        return {}
    if stamp not in _CORPUS_INDEXES:
        try:
            from ..judges.distance import load_corpus

            corpus = load_corpus(path, root=Path.cwd())
        except (NoveltyAuditError, OSError, ValueError):
            return {}
        index: dict[str, dict[str, str]] = {}
        for doc_id, text, abstract in zip(corpus.table["doc_id"].to_list(), corpus.texts, corpus.table["abstract"].to_list()):
            index.setdefault(doc_id, {})[digest_bytes(text.encode("utf-8"))] = abstract
        while len(_CORPUS_INDEXES) >= 4:  # a long-running review server keeps the latest few corpus versions
            _CORPUS_INDEXES.pop(next(iter(_CORPUS_INDEXES)))
        _CORPUS_INDEXES[stamp] = index
    return _CORPUS_INDEXES[stamp]


class _Abstracts:
    """(doc id, digest) → abstract, from the corpus files the two sides' distance judges name (their `corpus`
    config), read when first asked. A document is matched by the digest of its text as the judge embedded it
    (title + abstract), so an abstract shown is exactly the one that was judged; a corpus that cannot be read
    gives none (the audit says the text is not available)."""

    def __init__(self, configs: list[Mapping[str, Mapping[str, Any]]]):
        self.paths = sorted({str(c["corpus"]) for cfgs in configs for c in cfgs.values() if isinstance(c.get("corpus"), str)})
        self.index: dict[str, dict[str, str]] | None = None

    def _load(self) -> dict[str, dict[str, str]]:
        index: dict[str, dict[str, str]] = {}
        for path in self.paths:
            for doc_id, by_digest in _corpus_index(Path(path)).items():
                index.setdefault(doc_id, {}).update(by_digest)
        return index

    def __call__(self, doc_id: str, digest: str) -> str | None:
        if self.index is None:
            self.index = self._load()
        return self.index.get(doc_id, {}).get(digest)


def _titles(store: Store, side: RunSide) -> dict[tuple[str, str], str]:
    return _ideas(store, side)[0]


def audit_sides(store: Store, before: RunSide, after: RunSide, *, adjudications: str | Path | None = None) -> AuditResult:
    """Classify every change from `before` to `after`: pairwise verdicts, pointwise predictions and (when both
    sides have one) the reviews table (see `classify_changes`)."""
    titles_b, texts_b = _ideas(store, before)
    titles_a, texts_a = _ideas(store, after)
    index = index_adjudications(load_adjudications(adjudications))
    configs_b, configs_a = _configs(store, before), _configs(store, after)
    lookup = _Abstracts([configs_b, configs_a])
    tables = []
    for kind in KINDS:
        tb, ta = _kind_table(store, before, kind), _kind_table(store, after, kind)
        if tb is None and ta is None:
            continue
        if tb is None or ta is None:
            # A table on one side only (pointwise or reviews added to the pipeline): its judges are added/removed.
            present = ta if tb is None else tb
            assert present is not None
            empty = present.clear()
            tb, ta = (empty, ta) if tb is None else (tb, empty)
        tables.append((kind, tb, ta))
    corpus = infer_corpus_changes(corpus_rows(tables), lookup)
    common = dict(from_run=before.label, to_run=after.label, configs_before=configs_b, configs_after=configs_a,
                  titles={**titles_b, **titles_a}, adjudications=index, texts_before=texts_b, texts_after=texts_a,
                  families=_families(store, before, after), probes=_probes(store, before, after),
                  subset_before=_subset(before), subset_after=_subset(after), corpus=corpus, lookup=lookup)
    parts = [classify_changes(tb, ta, kind=kind, **common) for kind, tb, ta in tables]  # type: ignore[arg-type]
    return AuditResult(
        from_run=before.label, to_run=after.label, compared=sum(r.compared for r in parts),
        unchanged_with_changed_digests=sum(r.unchanged_with_changed_digests for r in parts),
        changes=[c for r in parts for c in r.changes], membership=[m for r in parts for m in r.membership],
        datasets=sorted({d for r in parts for d in r.datasets}), judges=sorted({j for r in parts for j in r.judges}),
        not_judged=sum(r.not_judged for r in parts), subsets=parts[0].subsets if parts else {}, corpus=corpus,
    )


def _resolve(store: Store, ref: str, artifacts: str | Path | None) -> RunSide:
    if ref == CURRENT:
        if artifacts is None:
            raise NoveltyAuditError("RUN 'current' needs the artifacts directory", hint="pass artifacts=")
        return current_side(artifacts)
    when = parse_when(ref)
    if when is not None:
        rec = run_at(store, when, ref)
        return ledger_side(store, rec.run_id)
    return ledger_side(store, ref)


_DURATION = re.compile(r"^(\d{1,4})([hdw])$")  # ≤ 4 digits: a git revision prefix (≥ 7 hex) never reads as an age


def parse_when(ref: str, *, end_of_day: bool = True, now: datetime | None = None) -> datetime | None:
    """A RUN given as a time: `7d`/`12h`/`2w` ago, or an ISO date/time (a date means its end, UTC). None: not a time."""
    m = _DURATION.match(ref.strip())
    if m:
        unit = {"h": "hours", "d": "days", "w": "weeks"}[m.group(2)]
        return (now or datetime.now(timezone.utc)) - timedelta(**{unit: int(m.group(1))})
    if not re.match(r"^\d{4}-\d{2}-\d{2}", ref.strip()):
        return None
    try:
        t = datetime.fromisoformat(ref.strip())
    except ValueError:
        raise NoveltyAuditError(f"'{ref}' is not an ISO date or time", hint="e.g. 2026-11-20 or 2026-11-20T14:00") from None
    if t.tzinfo is None:
        t = t.replace(tzinfo=timezone.utc)
    if end_of_day and len(ref.strip()) == 10:
        t = t + timedelta(days=1) - timedelta(microseconds=1)
    return t


def _occurrences(store: Store) -> list[tuple[datetime, RunRecord]]:
    out = []
    for r in store.runs():
        for o in r.seen:
            try:
                t = datetime.fromisoformat(o.time)
            except (TypeError, ValueError):
                continue
            out.append((t if t.tzinfo else t.replace(tzinfo=timezone.utc), r))
    return sorted(out, key=lambda x: x[0])


def run_at(store: Store, when: datetime, label: str) -> RunRecord:
    """The run in force at `when`: the one recorded last at or before it."""
    before = [r for t, r in _occurrences(store) if t <= when]
    if not before:
        raise NoveltyAuditError(f"no run was recorded at or before {label} ({when.isoformat(timespec='seconds')})",
                                hint="see `novelty-audit runs`")
    return before[-1]


def window(store: Store, *, since: str | None = None, at: str | None = None) -> tuple[str, str]:
    """(from run id, to run id) of a time window: `since` (7d, ISO date) → now; `at` (a date) → that day.

    From is the run in force when the window opens, or, if none was recorded yet, the first run recorded in
    the window; to is the run in force when it closes. Equal ends are an error: nothing was recorded."""
    if (since is None) == (at is None):
        raise NoveltyAuditError("give one of --since and --at")
    label = since or at or ""
    if since is not None:
        start = parse_when(since, end_of_day=False)
        end = datetime.now(timezone.utc)
    else:
        start = parse_when(at or "", end_of_day=False)
        end = None if start is None else start + timedelta(days=1) - timedelta(microseconds=1)
    if start is None or end is None:
        raise NoveltyAuditError(f"'{label}' is not a time", hint="use 7d, 12h, 2w or an ISO date such as 2026-11-20")
    occ = _occurrences(store)
    opened = [r for t, r in occ if t <= start]
    inside = [r for t, r in occ if start < t <= end]
    closed = [r for t, r in occ if t <= end]
    if not closed:
        raise NoveltyAuditError(f"no run was recorded by the end of {label}", hint="see `novelty-audit runs`")
    first = opened[-1] if opened else (inside[0] if inside else None)
    last = closed[-1]
    if first is None or first.run_id == last.run_id or not inside:
        raise NoveltyAuditError(f"no run of other content was recorded in the window {label} "
                                f"({start.isoformat(timespec='seconds')} → {end.isoformat(timespec='seconds')})",
                                hint="see `novelty-audit runs`")
    return first.run_id, last.run_id


def list_runs(store: Store) -> list[dict[str, Any]]:
    """The ledger's runs, latest first, for run pickers: run_id, time, git_revision, revisions, seen, stages."""
    return [
        {"run_id": r.run_id, "time": r.time, "git_revision": r.git_revision, "revisions": r.revisions(),
         "seen": len(r.seen), "stages": sorted(r.stages), "describe": r.describe()}
        for r in reversed(store.runs())
    ]

def audit(
    store: Store,
    from_run: str | None = None,
    to_run: str | None = None,
    *,
    adjudications: str | Path | None = None,
    artifacts: str | Path | None = None,
) -> AuditResult:
    """Audit verdict changes between two runs of the ledger (default: its last two).

    The ledger holds one record per distinct run, latest last, so the default compares the last two
    distinct runs. A RUN is a run id or git revision (prefixes allowed; one that matches several runs is
    an error listing them), an ISO date/time or an age (`7d`, `12h`, `2w`; at most 4 digits) naming the run in
    force then (see `run_at`), or `current` for the stage outputs in `artifacts`. Both sides naming the same
    recorded run is an error (nothing to compare), never an empty audit. With only `to_run` given,
    `from_run` is the ledger run before it (for `current`: the latest run of other content); with only
    `from_run` given, `to_run` is the latest run.
    """
    runs = store.runs()
    if from_run is None or to_run is None:
        if to_run is None:
            if len(runs) < (2 if from_run is None else 1):
                raise NoveltyAuditError(
                    f"the runs ledger {store.root / 'runs.jsonl'} holds {len(runs)} run(s); an audit needs two",
                    hint="run the pipeline again (dvc repro), or pass --from RUN --to current",
                )
            to_side = ledger_side(store, runs[-1].run_id)
            position = len(runs) - 1
        else:
            to_side = _resolve(store, to_run, artifacts)
            ids = [r.run_id for r in runs]
            if to_side.label == CURRENT:
                # `current` may already be recorded (it is, right after `dvc repro`): compare it with the latest
                # run of other content, never with itself.
                current = current_run_id(artifacts) if artifacts is not None else None
                others = [i for i, r in enumerate(ids) if r != current]
                position = others[-1] + 1 if others else 0
            else:
                position = ids.index(to_side.label)
        if from_run is None:
            if position < 1:
                raise NoveltyAuditError(
                    f"no run precedes {to_side.label} in the runs ledger {store.root / 'runs.jsonl'}",
                    hint="pass --from RUN",
                )
            from_side = ledger_side(store, runs[position - 1].run_id)
        else:
            from_side = _resolve(store, from_run, artifacts)
    else:
        from_side = _resolve(store, from_run, artifacts)
        to_side = _resolve(store, to_run, artifacts)
    if from_side.label == to_side.label and from_side.label != CURRENT:
        raise NoveltyAuditError(
            f"--from {from_run or '(default)'} and --to {to_run or '(latest)'} both name run {from_side.label}: nothing to compare",
            hint="name two different runs (see `novelty-audit runs`), or --to current",
        )
    return audit_sides(store, from_side, to_side, adjudications=adjudications)
