"""A NovBench study's published results, keyed by the dataset they were measured on.

A NovBench dataset's pin names its published file beside it (`pin.datasets.<name>.published: {path, sha256,
data}`). The pin stage checks the file's sha256 like the dataset's own and writes that dataset's rows — only the
rows of its own data set (`data`: original, change or del) — to `artifacts/pin/<name>/published.json`; the report
reads them from there, so a set pinned from another file shows its own published rows or none, never another
set's. Where the study's expert-as-model row is one row repeated for every data set of the file, each row says
so (`note`): it was computed from other sentences than the set's reference items, so it is not comparable with a
measured `expert` row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ..artifacts import check_pinned_file, read_json
from ..errors import BadInputError

__all__ = ["EXPERT_REUSED_NOTE", "PUBLISHED_FILE", "check_published", "published_rows", "read_published"]

PUBLISHED_FILE = "published.json"
"""Per NovBench dataset under the pin stage's output directory: its published rows."""
_SOURCE = "NovBench (ACL 2026 Findings), github njust-winchy/llm4novelty, rebuttal_result/{name}"
_DATA = {"": "original", "change": "change", "del": "del"}
_DATA_LABEL = {"original": "original", "change": "change (paraphrased novelty sentences)", "del": "del (novelty sentences cut)"}
_METRICS = ("coverage", "dist_acc", "clarity", "relevance")

EXPERT_REUSED_NOTE = (
    "one expert row reused by the study for every data set of this file ({sets}), computed from other sentences "
    "than this set's reference items (on a held-out set here, expert (KC+LS)/3 was 0.5434 against the published "
    "0.5617): not comparable with the measured expert row"
)


def check_published(dataset: str, pin: Any) -> Path:
    """The published file of `pin.published`, checked against its sha256 (PinMismatchError, exit 2, if not)."""
    path = Path(pin.published.path)
    if not path.is_file():
        raise BadInputError(f"dataset {dataset}: published results {path} not found",
                            hint=f"check pin.datasets.{dataset}.published.path in params.yaml")
    check_pinned_file(path, pin.published.sha256, what=f"dataset {dataset}: published results {path}",
                      hint=f"restore the file from its release, or re-pin pin.datasets.{dataset}.published.sha256")
    return path


def published_rows(path: str | Path, dataset: str | None = None, data: str | None = None) -> list[dict[str, Any]]:
    """The study's published GPT-4o and expert-as-model scores of a NovBench result file, one row per (generator,
    prompt, data set); with `data`, only that data set's rows (`dataset` is written into each row). The file is
    read as it is: check it first (`check_published`)."""
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"{path}: not found", hint="the NovBench published results ship in data/novbench/")
    doc = orjson.loads(path.read_bytes())
    if not isinstance(doc, dict):
        raise BadInputError(f"{path}: expected an object of '<model>_<prompt>[_<data>]' entries")
    model_rows: list[dict[str, Any]] = []
    expert: dict[str, set[tuple]] = {}
    for key, vals in sorted(doc.items()):
        model, _, rest = key.partition("_")
        prompt, _, variant = rest.partition("_")
        if not isinstance(vals, dict) or variant not in _DATA:
            raise BadInputError(f"{path}: entry {key}: expected an object of scores keyed '<model>_<prompt>[_change|_del]'")
        which = _DATA[variant]
        model_rows.append({"generator": model, "prompt": prompt, "data": which,
                           **{m: vals.get(f"model_{m}") for m in _METRICS}})
        expert.setdefault(which, set()).add(tuple(vals.get(f"exp_{m}") for m in _METRICS))
    # The expert row repeats per prompt; one per data set. Reused when every data set holds the same values.
    reused = len(expert) > 1 and len({v for vs in expert.values() for v in vs}) == 1
    note = EXPERT_REUSED_NOTE.format(sets=", ".join(sorted(expert, key=list(_DATA_LABEL).index))) if reused else ""
    rows = model_rows + [{"generator": "expert as model", "prompt": "—", "data": which, **dict(zip(_METRICS, v))}
                         for which, vs in expert.items() for v in sorted(vs, key=repr)]
    out = []
    for r in rows:
        if data is not None and r["data"] != data:
            continue
        out.append({"dataset": dataset, "source": _SOURCE.format(name=path.name), "generator": r["generator"],
                    "prompt": r["prompt"], "data": _DATA_LABEL[r["data"]], "coverage": r["coverage"],
                    "dist_acc": r["dist_acc"], "clarity": r["clarity"], "relevance_ims": r["relevance"],
                    "note": note if r["generator"] == "expert as model" else ""})
    return sorted(out, key=lambda r: (r["generator"] == "expert as model", r["generator"], list(_DATA_LABEL.values()).index(r["data"]), r["prompt"]))


def read_published(pin_dir: str | Path) -> tuple[list[Path], list[dict[str, Any]]]:
    """The published rows the pin stage wrote, every dataset's (files to hash, rows in dataset order)."""
    files = sorted(Path(pin_dir).glob(f"*/{PUBLISHED_FILE}"))
    rows: list[dict[str, Any]] = []
    for f in files:
        got = read_json(f)
        if not isinstance(got, list) or any(not isinstance(r, dict) or r.get("dataset") != f.parent.name for r in got):
            raise BadInputError(f"{f}: expected the published rows of dataset {f.parent.name}", hint="run the pin stage again")
        rows += got
    return files, rows
