"""Candidate sets: ideas of an idea-generation system, read from a pinned JSONL or CSV file and checked row by row.

A row needs `area`, `title` and `text` (`system` is optional). A bad row (not an object, a missing or empty field,
an area the human ideas do not have, a title seen before, a text over the word limit, a title that is a human
idea's) stops the read naming file, line and field, or, with `on_bad_row: exclude`, lands in the exclusions with
its reason. Idea ids come from the normalized title, as in a pinned split, so editing a text keeps the idea's pairs
and moves only their evidence (the text digest).
"""

from __future__ import annotations

import csv
import io
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..artifacts import atomic_write_bytes, digest_bytes, digest_file, short_id
from ..config import CandidateSet, check_set_name, round_trip_yaml
from ..datasets import EXCLUSION_SCHEMA, IDEA_SCHEMA, normalize_text
from ..errors import BadInputError, ConfigError

__all__ = ["AddReport", "CandidateRead", "candidates_add", "read_candidates", "add_candidates", "CANDIDATE_FIELDS", "CANDIDATES_DIR"]

CANDIDATE_FIELDS = ("area", "title", "text")
CANDIDATES_DIR = Path("data/candidates")
"""Where `candidates add` copies a file (a DVC dep of the pools stage, tracked in git)."""


@dataclass(frozen=True)
class CandidateRead:
    """The good rows (pin-format ideas, `source` = generated, label null) and the excluded ones with reasons."""

    ideas: pl.DataFrame
    exclusions: pl.DataFrame
    systems: dict[str, str]
    """idea id → the row's `system` (empty when the file gives none)."""

    @property
    def bad_lines(self) -> list[str]:
        return [f"{r['file']}: line {r['item']}, field {r['field']}: {r['reason']}" for r in self.exclusions.iter_rows(named=True)]


def _records(path: Path, text: str) -> list[tuple[int, Any]]:
    """(line number, record) per non-blank row; a JSONL line that is not JSON is a record of its error."""
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(io.StringIO(text, newline=""))
        missing = [f for f in CANDIDATE_FIELDS if f not in (reader.fieldnames or [])]
        if missing:
            raise BadInputError(f"{path}: line 1, field {missing[0]}: the CSV header lacks it", hint="columns: area, title, text (system optional)")
        return [(reader.line_num, row) for row in reader]
    if path.suffix.lower() not in (".jsonl", ".json"):
        raise BadInputError(f"{path}: expected a .jsonl or .csv file")
    out: list[tuple[int, Any]] = []
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            out.append((i, json.loads(line)))
        except (json.JSONDecodeError, RecursionError):
            out.append((i, ValueError("not valid JSON")))
    return out


def _problem(rec: Any, areas: dict[str, str], max_words: int) -> tuple[str, str] | None:
    """(field, reason) of the first problem of one record, or None."""
    if isinstance(rec, ValueError):
        return "-", str(rec)
    if not isinstance(rec, dict):
        return "-", "expected an object with fields area, title, text"
    for field in CANDIDATE_FIELDS:
        if not isinstance(rec.get(field), str) or not normalize_text(rec[field]):
            return field, "missing or empty"
    if rec.get("system") is not None and not isinstance(rec["system"], str):
        return "system", "not a string"
    if normalize_text(rec["area"]).casefold() not in areas:
        return "area", f"unknown area {normalize_text(rec['area'])!r} (the human ideas' areas: {', '.join(sorted(areas.values())[:4])}, …)"
    n = len(rec["text"].split())
    if n > max_words:
        return "text", f"{n} words, over the limit of {max_words}"
    return None


def read_candidates(path: Path, *, areas: list[str], max_words: int, human_titles: set[str] = frozenset(), on_bad_row: str = "error") -> CandidateRead:
    """Check every row of a candidate file against the human ideas' `areas`; see the module docstring."""
    path = Path(path)
    try:
        text = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise BadInputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    canon = {normalize_text(a).casefold(): a for a in areas}
    humans = {normalize_text(t).casefold() for t in human_titles}
    rows: list[dict[str, Any]] = []
    bad: list[dict[str, Any]] = []
    systems: dict[str, str] = {}
    seen: dict[str, int] = {}
    for line, rec in _records(path, text):
        problem = _problem(rec, canon, max_words)
        if problem is None:
            key = normalize_text(rec["title"]).casefold()
            if key in seen:
                problem = ("title", f"duplicate title (first at line {seen[key]})")
            elif key in humans:
                problem = ("title", "the title of a human idea it would be paired with")
            seen.setdefault(key, line)
        if problem is not None:
            bad.append({"dataset": None, "file": path.as_posix(), "item": str(line), "field": problem[0], "reason": problem[1]})
            continue
        title, body = normalize_text(rec["title"]), rec["text"].strip()
        iid = short_id("i-", title)
        systems[iid] = normalize_text(rec.get("system") or "")
        rows.append({
            "dataset": None, "idea_id": iid, "text": body, "text_digest": digest_bytes(normalize_text(body).encode("utf-8")),
            "title": title, "area": canon[normalize_text(rec["area"]).casefold()], "source": "generated", "rating": None,
            "contribution": None, "label": None, "positive_signals": [], "negative_signals": [],
        })  # fmt: skip
    result = CandidateRead(pl.DataFrame(rows, schema=IDEA_SCHEMA).sort("idea_id"), pl.DataFrame(bad, schema=EXCLUSION_SCHEMA), systems)
    if bad and on_bad_row == "error":
        lines = result.bad_lines
        raise BadInputError(
            f"{len(bad)} bad row(s) in the candidate file:\n  " + "\n  ".join(lines[:20]) + ("" if len(lines) <= 20 else f"\n  … and {len(lines) - 20} more"),
            hint="fix the rows, or exclude them (candidates add --exclude-bad; params: on_bad_row: exclude)",
        )
    if not rows:
        raise BadInputError(f"{path}: no usable candidate rows", hint="one object per line with area, title, text")
    return result


def add_candidates(
    file: Path, name: str, *, params_path: Path, areas: list[str], human_titles: set[str], exclude_bad: bool = False,
    max_words: int = CandidateSet.model_fields["max_words"].default, root: Path = Path("."),
) -> tuple[CandidateSet, CandidateRead]:
    """Check `file`, copy it to data/candidates/NAME.<ext> and pin it under params.yaml pools.candidates.NAME.

    The copy (not the original) is what the pools stage reads: it lives in the project, so it is a DVC dep and a
    git-tracked input, and the original can move or change without changing a result."""
    try:
        check_set_name(name)
    except ValueError as exc:
        raise ConfigError(f"candidates add: {exc}") from None
    file = Path(file)
    on_bad = "exclude" if exclude_bad else "error"
    read = read_candidates(file, areas=areas, max_words=max_words, human_titles=human_titles, on_bad_row=on_bad)
    dest = CANDIDATES_DIR / f"{name}{file.suffix.lower()}"
    for other in (CANDIDATES_DIR / f"{name}{ext}" for ext in (".jsonl", ".json", ".csv")):
        if other != dest and (root / other).exists():
            raise ConfigError(f"candidates add: {other} already holds set '{name}'", hint="remove it first, or pick another name")
    (root / CANDIDATES_DIR).mkdir(parents=True, exist_ok=True)
    if (root / dest).resolve() != file.resolve():
        tmp = (root / dest).with_name(f".{dest.name}.tmp")
        shutil.copyfile(file, tmp)
        tmp.replace(root / dest)
    entry = CandidateSet(path=dest.as_posix(), sha256=digest_file(root / dest), on_bad_row=on_bad, max_words=max_words)
    yaml = round_trip_yaml()  # comments and layout kept: only this entry changes
    doc = yaml.load(params_path.read_text(encoding="utf-8"))
    pools = doc.setdefault("pools", {})
    if not pools.get("candidates"):  # `candidates: {}` (flow style) becomes a block mapping, its comment kept
        from ruamel.yaml.comments import CommentedMap

        pools["candidates"] = CommentedMap()
    pools["candidates"][name] = entry.model_dump(mode="json", exclude_defaults=False)
    buf = io.StringIO()
    yaml.dump(doc, buf)
    atomic_write_bytes(params_path, buf.getvalue().encode("utf-8"))
    return entry, read


@dataclass(frozen=True)
class AddReport:
    """What `novelty-audit candidates add` did: the pinned entry, the rows kept and the rows excluded."""

    name: str
    entry: CandidateSet
    read: CandidateRead

    def lines(self) -> list[str]:
        n_bad = self.read.exclusions.height
        out = [f"candidate set {self.name}: {self.read.ideas.height} ideas pinned at {self.entry.path} (sha256 {self.entry.sha256[:12]})"]
        if n_bad:
            out.append(f"excluded {n_bad} bad row(s) (recorded in the datasets' exclusions.parquet by the pools stage):")
            out += [f"  {line}" for line in self.read.bad_lines]
        out.append(f"judge it: add {self.name} (and {self.name}-vs-low, the floor against D- ideas) to judge.datasets, then `dvc repro`")
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "entry": self.entry.model_dump(mode="json"), "ideas": self.read.ideas.height,
                "excluded": self.read.exclusions.to_dicts()}  # fmt: skip


def candidates_add(file: Path, name: str, *, params_path: Path, exclude_bad: bool = False, max_words: int | None = None) -> AddReport:
    """`novelty-audit candidates add`: check the file against the human ideas params.yaml pairs candidates with, then
    copy and pin it (`add_candidates`)."""
    from ..datasets import load_dataset
    from ..params import load_params

    params = load_params(params_path)
    if any(n in params.pin.datasets for n in (name, name + "-vs-low")):
        raise ConfigError(f"candidates add: '{name}' names a pinned split (pin.datasets)", hint="pick another name")
    src = params.pools.candidate_humans
    if src.source == "pin":
        if src.dataset not in params.pin.datasets:
            raise ConfigError(f"pools.candidate_humans.dataset: '{src.dataset}' is not under pin.datasets")
        ideas = load_dataset(src.dataset, params.pin.datasets[src.dataset]).ideas
        areas, titles = sorted(set(ideas["area"].to_list())), set(ideas.filter(pl.col("source") == "human")["title"].to_list())
    else:
        papers = Path(params.store.artifacts) / "signals" / "papers.parquet"
        if not papers.is_file():
            raise BadInputError(f"{papers}: not found; candidates paired with review pools take their areas from it",
                                hint="run the signals stage first (novelty-audit stage signals)")
        df = pl.read_parquet(papers, columns=["title", "area"])
        areas, titles = sorted({a for a in df["area"].to_list() if a}), set(df["title"].to_list())
    words = max_words if max_words is not None else CandidateSet.model_fields["max_words"].default
    entry, read = add_candidates(file, name, params_path=params_path, areas=areas, human_titles=titles, exclude_bad=exclude_bad, max_words=words)
    return AddReport(name, entry, read)
