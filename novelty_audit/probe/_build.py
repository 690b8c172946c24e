"""Derive a probe dataset from a pinned split: copies of pairs whose less novel idea carries an attack.

Ids follow what a probe *is* (the clean pair and the template id), digests what it *says* (the texts): an
edited template keeps its probes' ids, so the audit aligns them and names the move an `evidence` change,
while their text digests (and only theirs) move.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ..artifacts import digest_bytes, short_id
from ..config import probe_dataset
from ..datasets import IDEA_SCHEMA, PAIR_SCHEMA, POINT_SCHEMA, normalize_text
from ..errors import BadInputError
from ..judges import PLANTED_SCHEMA
from ._catalogue import FAMILIES, RETRIEVED, Catalogue, Template

__all__ = ["PROBE_SCHEMA", "ProbeTables", "build_probes", "attack_text"]

OPENING_WORDS = 12
"""Words of the attacked idea's text a `retrieved` template's `{opening}` stands for."""
SEPARATOR = "\n\n"
"""Between the idea and the attack: a paragraph of its own, as an author would add it."""

PROBE_SCHEMA = {
    "dataset": pl.String,
    "pair_id": pl.String,
    "split": pl.String,
    "clean_pair_id": pl.String,
    "family": pl.String,
    "template_id": pl.String,
    "template_digest": pl.String,
    "position": pl.String,
    "attacked_idea_id": pl.String,
    "clean_idea_id": pl.String,
    "gold_idea_id": pl.String,
}
"""One row per probe pair (docs/design/probe.md): which clean pair, which template, where it went."""


@dataclass(frozen=True)
class ProbeTables:
    """A probe dataset in the pin stage's table shapes, plus what each probe pair is."""

    ideas: pl.DataFrame
    pairs: pl.DataFrame
    pointwise: pl.DataFrame
    """Empty: the probe is pairwise (the question is which idea wins)."""
    probes: pl.DataFrame
    planted: pl.DataFrame
    """PLANTED_SCHEMA: the document each `retrieved` probe plants for its attacked idea (whose text is unchanged)."""


def _rank(seed: int, *parts: str) -> str:
    return digest_bytes(":".join([str(seed), *parts]).encode("utf-8"))


def attack_text(text: str, attack: str, position: str) -> str:
    """The idea text with the attack added before or after it."""
    return f"{attack}{SEPARATOR}{text}" if position == "prepend" else f"{text}{SEPARATOR}{attack}"


def _choose(cat: Catalogue, seed: int, split: str, pair_id: str, family: str) -> tuple[Template, str]:
    """One template of `family` for this pair, and its position; ranked by sha256 of ids, never of texts,
    so editing a template's text never changes which probes use it."""
    t = min(cat.by_family(family), key=lambda t: (_rank(seed, split, pair_id, family, t.id), t.id))
    position = t.position
    if position == "either":
        position = "prepend" if int(_rank(seed, split, pair_id, t.id, "position")[:8], 16) % 2 == 0 else "append"
    return t, position


def build_probes(cat: Catalogue, pin_dir: Path, split: str, *, seed: int, pairs: int | None) -> ProbeTables:
    """Probes of `split` (read from the pin stage's tables in `pin_dir`): the first `pairs` pairs ranked by
    sha256(seed, split, pair id), each with one template per family on its non-gold idea."""
    base = Path(pin_dir) / split
    if not (base / "pairs.parquet").is_file():
        raise BadInputError(f"{base / 'pairs.parquet'}: no pinned pairs for probe dataset '{split}'",
                            hint="list in probe.datasets only pairwise splits under pin.datasets, and run the pin stage first")
    ideas = {r["idea_id"]: r for r in pl.read_parquet(base / "ideas.parquet").iter_rows(named=True)}
    clean = sorted(pl.read_parquet(base / "pairs.parquet").iter_rows(named=True), key=lambda r: (_rank(seed, split, r["pair_id"]), r["pair_id"]))
    chosen = clean if pairs is None else clean[:pairs]
    name = probe_dataset(split)
    idea_rows: dict[str, dict] = {}
    pair_rows: list[dict] = []
    probe_rows: list[dict] = []
    planted_rows: list[dict] = []

    def add_idea(row: dict) -> None:
        known = idea_rows.get(row["idea_id"])
        if known is not None and known["text_digest"] != row["text_digest"]:
            raise RuntimeError(f"probe idea {row['idea_id']} derived with two different texts")
        idea_rows[row["idea_id"]] = row

    for p in sorted(chosen, key=lambda r: r["pair_id"]):
        gold = p["gold_idea_id"]
        target = p["idea_1"] if p["idea_0"] == gold else p["idea_0"]
        for family in FAMILIES:
            if not cat.by_family(family):
                continue  # `retrieved` is optional
            t, position = _choose(cat, seed, split, p["pair_id"], family)
            applied = cat.applied_text(t)
            src = ideas[target]
            # A retrieved attack leaves the idea as written: it is a document planted in what the judge retrieves.
            if family == RETRIEVED:
                # The planted text may name the idea it attacks by its opening words: judges see ideas by their text.
                applied = applied.replace("{opening}", " ".join(src["text"].split()[:OPENING_WORDS]))
            text = src["text"] if family == RETRIEVED else attack_text(src["text"], applied, position)
            attacked = {
                **src, "dataset": name, "idea_id": short_id("i-", target, t.id, position), "text": text,
                "text_digest": digest_bytes(normalize_text(text).encode("utf-8")),
            }  # fmt: skip
            add_idea(attacked)
            if family == RETRIEVED:
                planted_rows.append({"dataset": name, "idea_id": attacked["idea_id"], "doc_id": f"probe:{t.id}", "title": t.title,
                                     "abstract": applied, "template_id": t.id})  # fmt: skip
            add_idea({**ideas[gold], "dataset": name})
            slots = [attacked if i == target else ideas[i] for i in (p["idea_0"], p["idea_1"])]
            pid = short_id("q-", p["pair_id"], t.id, position)
            pair_rows.append({
                "dataset": name, "pair_id": pid, "source_key": f"{p['source_key']}#{t.id}", "context": p["context"],
                "idea_0": slots[0]["idea_id"], "idea_1": slots[1]["idea_id"], "gold_idea_id": gold, "gold_slot": p["gold_slot"],
                "idea_0_digest": slots[0]["text_digest"], "idea_1_digest": slots[1]["text_digest"],
            })  # fmt: skip
            probe_rows.append({
                "dataset": name, "pair_id": pid, "split": split, "clean_pair_id": p["pair_id"], "family": family,
                "template_id": t.id, "template_digest": digest_bytes(f"{t.title}\n{applied}".encode() if family == RETRIEVED else applied.encode()),
                "position": position,
                "attacked_idea_id": attacked["idea_id"], "clean_idea_id": target, "gold_idea_id": gold,
            })  # fmt: skip
    return ProbeTables(
        ideas=pl.DataFrame(list(idea_rows.values()), schema=IDEA_SCHEMA).sort("idea_id"),
        pairs=pl.DataFrame(pair_rows, schema=PAIR_SCHEMA).sort("pair_id"),
        pointwise=pl.DataFrame(schema=POINT_SCHEMA),
        probes=pl.DataFrame(probe_rows, schema=PROBE_SCHEMA).sort("pair_id"),
        planted=pl.DataFrame(planted_rows, schema=PLANTED_SCHEMA).unique(maintain_order=True).sort("idea_id"),
    )
