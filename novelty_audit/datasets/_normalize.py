"""Validate raw pairs and normalize them into the canonical ideas / pairs / pointwise tables.

Every problem becomes an `Exclusion` naming the file, the item and the field; nothing is
skipped without a row saying why.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl

from ..artifacts import digest_bytes, short_id
from ._records import RawPair

__all__ = ["Exclusion", "Normalized", "normalize_pairs", "normalize_text", "EXCLUSION_SCHEMA", "IDEA_SCHEMA", "PAIR_SCHEMA", "POINT_SCHEMA"]

LABELS = ("POSITIVE", "NEGATIVE")
_NA = ("N/A", "", None)

EXCLUSION_SCHEMA = {"dataset": pl.String, "file": pl.String, "item": pl.String, "field": pl.String, "reason": pl.String}
IDEA_SCHEMA = {
    "dataset": pl.String,
    "idea_id": pl.String,
    "text": pl.String,
    "text_digest": pl.String,
    "title": pl.String,
    "area": pl.String,
    "source": pl.String,
    "rating": pl.Float64,
    "contribution": pl.Float64,
    "label": pl.String,
    "positive_signals": pl.List(pl.String),
    "negative_signals": pl.List(pl.String),
}
PAIR_SCHEMA = {
    "dataset": pl.String,
    "pair_id": pl.String,
    "source_key": pl.String,
    "context": pl.String,
    "idea_0": pl.String,
    "idea_1": pl.String,
    "gold_idea_id": pl.String,
    "gold_slot": pl.Int8,
    "idea_0_digest": pl.String,
    "idea_1_digest": pl.String,
}
POINT_SCHEMA = {"dataset": pl.String, "idea_id": pl.String, "position": pl.Int32, "label": pl.String}


def normalize_text(text: str) -> str:
    """NFC, whitespace runs collapsed to one space, stripped: the form every text digest covers."""
    return " ".join(unicodedata.normalize("NFC", text).split())


@dataclass(frozen=True)
class Exclusion:
    dataset: str
    file: str
    item: str
    field: str
    reason: str

    def line(self) -> str:
        return f"{self.file}: item {self.item}, field {self.field}: {self.reason}"


@dataclass(frozen=True)
class Normalized:
    ideas: pl.DataFrame
    pairs: pl.DataFrame
    pointwise: pl.DataFrame
    exclusions: pl.DataFrame


def _score(value: Any) -> tuple[float | None, str | None]:
    if value in _NA:
        return None, None
    try:
        return float(value), None
    except (TypeError, ValueError):
        return None, f"not a number or 'N/A': {value!r}"


def _signals(value: Any) -> tuple[list[str], str | None]:
    if value is None:
        return [], None
    if not isinstance(value, (list, tuple)) or not all(isinstance(s, str) for s in value):
        return [], "expected a list of sentences"
    return [s for s in value], None


def normalize_pairs(raw: list[RawPair], *, dataset: str, file: Path) -> Normalized:
    fname = Path(file).as_posix()
    excl: list[Exclusion] = []
    ideas: dict[str, dict[str, Any]] = {}
    by_text: dict[str, str] = {}
    pairs: list[dict[str, Any]] = []
    pair_keys: dict[str, str] = {}
    order: list[str] = []

    def bad(item: str, field: str, reason: str) -> None:
        excl.append(Exclusion(dataset, fname, item, field, reason))

    seen_keys: set[str] = set()
    for rp in raw:
        k = rp.key
        n_before = len(excl)
        if k in seen_keys:
            bad(k, "id", "duplicate item id")
        seen_keys.add(k)
        w = rp.winners
        if not (isinstance(w, list) and len(w) == 1 and w[0] in (0, 1)):
            bad(k, "expected_winners", f"needs exactly one winner, 0 or 1; found {w!r}")
        slots: list[dict[str, Any]] = []
        for slot in (0, 1):
            text = rp.ideas.get(slot)
            meta = rp.metadata.get(slot)
            if text is None:
                bad(k, f"ideas.{slot}", "missing idea")
                continue
            if not isinstance(text, str) or not normalize_text(text):
                bad(k, f"ideas.{slot}", "empty text")
                continue
            if not isinstance(meta, dict):
                bad(k, f"metadata.{slot}", "missing metadata")
                continue
            title = meta.get("title")
            if not isinstance(title, str) or not normalize_text(title):
                bad(k, f"metadata.{slot}.title", "missing or empty title")
                continue
            label = meta.get("type")
            if label not in LABELS:
                bad(k, f"metadata.{slot}.type", f"unknown label {label!r} (expected POSITIVE or NEGATIVE)")
                continue
            rating, err_r = _score(meta.get("rating"))
            contribution, err_c = _score(meta.get("contribution"))
            pos, err_p = _signals(meta.get("positive_signals"))
            neg, err_n = _signals(meta.get("negative_signals"))
            for fld, err in (("rating", err_r), ("contribution", err_c), ("positive_signals", err_p), ("negative_signals", err_n)):
                if err:
                    bad(k, f"metadata.{slot}.{fld}", err)
            if err_r or err_c or err_p or err_n:
                continue
            hint = rp.source_hint.get(slot)
            source = hint if hint in ("human", "generated") else ("generated" if rating is None and contribution is None else "human")
            norm = normalize_text(text)
            slots.append(
                {
                    "dataset": dataset,
                    "idea_id": short_id("i-", normalize_text(title)),
                    "text": text.strip(),
                    "text_digest": digest_bytes(norm.encode("utf-8")),
                    "title": normalize_text(title),
                    "area": str(meta.get("area") if meta.get("area") is not None else rp.context),
                    "source": source,
                    "rating": rating,
                    "contribution": contribution,
                    "label": label,
                    "positive_signals": pos,
                    "negative_signals": neg,
                }
            )
        if len(excl) > n_before or len(slots) != 2:
            continue
        gold = w[0]
        if slots[gold]["label"] != "POSITIVE" or slots[1 - gold]["label"] != "NEGATIVE":
            bad(k, "expected_winners", "the expected winner must be the POSITIVE idea and the other NEGATIVE")
            continue
        if slots[0]["idea_id"] == slots[1]["idea_id"]:
            bad(k, "ideas", "both slots hold the same idea")
            continue
        conflict = False
        for slot, s in enumerate(slots):
            known = ideas.get(s["idea_id"])
            if known is not None and known["text_digest"] != s["text_digest"]:
                bad(k, f"ideas.{slot}", f"title {s['title']!r} already names a different text")
                conflict = True
            other = by_text.get(s["text_digest"])
            if other is not None and other != s["idea_id"]:
                bad(k, f"ideas.{slot}", f"the same text already appears under another title (idea {other})")
                conflict = True
        if conflict:
            continue
        pid = short_id("p-", *sorted((slots[0]["idea_id"], slots[1]["idea_id"])))
        if pid in pair_keys:
            bad(k, "ideas", f"duplicate pair: the same two ideas as item {pair_keys[pid]}")
            continue
        pair_keys[pid] = k
        for s in slots:
            if s["idea_id"] not in ideas:
                ideas[s["idea_id"]] = s
                by_text[s["text_digest"]] = s["idea_id"]
                order.append(s["idea_id"])
        pairs.append(
            {
                "dataset": dataset,
                "pair_id": pid,
                "source_key": k,
                "context": str(rp.context),
                "idea_0": slots[0]["idea_id"],
                "idea_1": slots[1]["idea_id"],
                "gold_idea_id": slots[gold]["idea_id"],
                "gold_slot": gold,
                "idea_0_digest": slots[0]["text_digest"],
                "idea_1_digest": slots[1]["text_digest"],
            }
        )

    ideas_df = pl.DataFrame(list(ideas.values()), schema=IDEA_SCHEMA).sort("idea_id")
    pairs_df = pl.DataFrame(pairs, schema=PAIR_SCHEMA).sort("pair_id")
    point_df = pl.DataFrame(
        [{"dataset": dataset, "idea_id": i, "position": n, "label": ideas[i]["label"]} for n, i in enumerate(order)],
        schema=POINT_SCHEMA,
    )
    excl_df = pl.DataFrame([e.__dict__ for e in excl], schema=EXCLUSION_SCHEMA).sort(["item", "field"])
    return Normalized(ideas=ideas_df, pairs=pairs_df, pointwise=point_df, exclusions=excl_df)
