"""Normalize a NovBench-format file into canonical tables with content ids and digests.

Tables (artifacts/pin/<dataset>/):
- papers.parquet key paper_id: dataset, paper_id (`np-` + 16 hex over the normalized title: stable when the
  novelty sentences are edited, so the audit sees an edit as `evidence`), source_id (the record's `id`), title,
  abstract, keywords, decision, novelty_digest, reference_digest, retrieved_digest, n_sentences,
  n_reference_items, n_retrieved, list_parse (`literal` | `split`: how the list-like string fields were read).
- sentences.parquet key sentence_id: dataset, paper_id, position, text, text_digest.
- reference_items.parquet key item_id: dataset, paper_id, position, label, text, text_digest.
- retrieved.parquet key doc_id: dataset, paper_id, rank, doc_id, title, abstract, digest.
- skipped_items.parquet: dataset, paper_id, line, text, reason — reference items the parsing rule skips
  (empty, `None`, < 10 characters): recorded, not bad input.
- exclusions.parquet (the pin schema): records that cannot be used (bad JSON shape, no novelty sentences,
  no reference item, duplicate title), each naming file, item and field.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from ..artifacts import digest_bytes, digest_obj, short_id
from ..datasets import EXCLUSION_SCHEMA, normalize_text
from ..errors import BadInputError
from ._parse import parse_evaluation

__all__ = ["NovbenchTables", "TABLE_KEYS", "normalize_novbench", "read_list_field"]

PAPER_SCHEMA = {
    "dataset": pl.String, "paper_id": pl.String, "source_id": pl.String, "title": pl.String, "abstract": pl.String,
    "keywords": pl.List(pl.String), "decision": pl.String, "novelty_digest": pl.String, "reference_digest": pl.String,
    "retrieved_digest": pl.String, "n_sentences": pl.Int32, "n_reference_items": pl.Int32, "n_retrieved": pl.Int32,
    "list_parse": pl.String,
}
SENTENCE_SCHEMA = {"dataset": pl.String, "paper_id": pl.String, "sentence_id": pl.String, "position": pl.Int32,
                   "text": pl.String, "text_digest": pl.String}
ITEM_SCHEMA = {"dataset": pl.String, "paper_id": pl.String, "item_id": pl.String, "position": pl.Int32,
               "label": pl.String, "text": pl.String, "text_digest": pl.String}
RETRIEVED_SCHEMA = {"dataset": pl.String, "paper_id": pl.String, "rank": pl.Int32, "doc_id": pl.String,
                    "title": pl.String, "abstract": pl.String, "digest": pl.String}
SKIPPED_SCHEMA = {"dataset": pl.String, "paper_id": pl.String, "line": pl.Int32, "text": pl.String, "reason": pl.String}

TABLE_KEYS: dict[str, list[str] | None] = {
    "papers": ["paper_id"],
    "sentences": ["sentence_id"],
    "reference_items": ["item_id"],
    "retrieved": ["paper_id", "rank"],
    "skipped_items": None,
    "exclusions": None,
}


@dataclass(frozen=True)
class NovbenchTables:
    papers: pl.DataFrame
    sentences: pl.DataFrame
    reference_items: pl.DataFrame
    retrieved: pl.DataFrame
    skipped_items: pl.DataFrame
    exclusions: pl.DataFrame

    def summary(self) -> dict[str, int]:
        return {
            "papers": self.papers.height,
            "novelty_sentences": self.sentences.height,
            "reference_items": self.reference_items.height,
            "retrieved_docs": self.retrieved.height,
            "skipped_reference_items": self.skipped_items.height,
            "excluded": self.exclusions.height,
        }


def _text_digest(text: str) -> str:
    return digest_bytes(normalize_text(text).encode("utf-8"))


def read_list_field(value: Any) -> tuple[list[str], str]:
    """A list of strings from a JSON list or from the release's Python-list-like strings.

    Some of those strings are not valid literals (an unescaped apostrophe, a missing closing quote): they are
    read by splitting on quote-comma-quote, and the way used is returned so it stays visible in the table.
    """
    if isinstance(value, list):
        if not all(isinstance(v, str) for v in value):
            raise ValueError("list holds a non-string")
        return list(value), "literal"
    if not isinstance(value, str):
        raise ValueError(f"expected a list or a list-like string, got {type(value).__name__}")
    s = value.strip()
    try:
        got = ast.literal_eval(s)
        if isinstance(got, list) and all(isinstance(v, str) for v in got):
            return got, "literal"
    except (ValueError, SyntaxError):
        pass
    if not (s.startswith("[") and s.endswith("]")):
        raise ValueError("not a list")
    inner = s[1:-1].strip()
    if not inner:
        return [], "split"
    out = []
    for part in re.split(r"(?<=['\"]),\s*(?=['\"])", inner):
        if part[:1] in "'\"":
            q, part = part[0], part[1:]
            if part.endswith(q):
                part = part[:-1]
        out.append(part.replace("\\'", "'").replace('\\"', '"'))
    return out, "split"


def _strings(rec: dict[str, Any], name: str) -> list[str]:
    v = rec.get(name)
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ValueError("expected a list of strings")
    return v


def normalize_novbench(path: Path, dataset: str) -> NovbenchTables:
    """Read a NovBench JSON file (a list of paper records) into the tables; bad records become exclusions."""
    path = Path(path)
    try:
        records = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise BadInputError(f"{path}: not valid JSON ({exc})", hint="a NovBench file is a JSON list of paper records") from None
    if not isinstance(records, list):
        raise BadInputError(f"{path}: expected a JSON list of paper records, got {type(records).__name__}")
    file = path.as_posix()
    papers, sentences, items, retrieved, skipped, excl = [], [], [], [], [], []
    seen: dict[str, str] = {}

    def exclude(item: str, fld: str, reason: str) -> None:
        excl.append({"dataset": dataset, "file": file, "item": item, "field": fld, "reason": reason})

    for n, rec in enumerate(records):
        item = f"#{n}"
        if not isinstance(rec, dict):
            exclude(item, "record", f"expected an object, got {type(rec).__name__}")
            continue
        item = f"#{n} (id {rec.get('id')})"
        title = rec.get("title")
        if not isinstance(title, str) or not normalize_text(title):
            exclude(item, "title", "missing or empty")
            continue
        paper_id = short_id("np-", normalize_text(title).lower())
        if paper_id in seen:
            exclude(item, "title", f"duplicate title (first at {seen[paper_id]})")
            continue
        try:
            novelty, how_n = read_list_field(rec.get("paper_novelty"))
        except ValueError as exc:
            exclude(item, "paper_novelty", str(exc))
            continue
        novelty = [normalize_text(s) for s in novelty if normalize_text(s)]
        if not novelty:
            exclude(item, "paper_novelty", "no novelty sentence")
            continue
        try:
            keywords, how_k = read_list_field(rec.get("keywords") or [])
        except ValueError:
            keywords, how_k = [], "split"
        ref = rec.get("output_format")
        if not isinstance(ref, str):
            exclude(item, "output_format", "missing or not a string")
            continue
        parsed = parse_evaluation(ref)
        if not parsed.items:
            exclude(item, "output_format", "no reference item after parsing")
            continue
        try:
            titles = _strings(rec, "retrieved_title")
            abstracts = _strings(rec, "retrieved_abstract")
        except ValueError as exc:
            exclude(item, "retrieved_title/retrieved_abstract", str(exc))
            continue
        if len(titles) != len(abstracts):
            exclude(item, "retrieved_abstract", f"{len(abstracts)} abstracts for {len(titles)} titles")
            continue
        seen[paper_id] = item

        s_digests = []
        for pos, s in enumerate(novelty):
            d = _text_digest(s)
            s_digests.append(d)
            sentences.append({"dataset": dataset, "paper_id": paper_id, "sentence_id": short_id("ns-", paper_id, str(pos), d),
                              "position": pos, "text": s, "text_digest": d})
        i_rows = []
        for pos, it in enumerate(parsed.items):
            d = _text_digest(it.text)
            i_rows.append({"dataset": dataset, "paper_id": paper_id, "item_id": short_id("ri-", paper_id, str(pos), it.label, d),
                           "position": pos, "label": it.label, "text": it.text, "text_digest": d})
        items.extend(i_rows)
        for line, text, reason in parsed.skipped:
            skipped.append({"dataset": dataset, "paper_id": paper_id, "line": line, "text": text, "reason": reason})
        r_digests = []
        for rank, (t, a) in enumerate(zip(titles, abstracts)):
            t, a = normalize_text(t), normalize_text(a)
            d = digest_bytes(f"{t}\n{a}".encode("utf-8"))
            r_digests.append(d)
            retrieved.append({"dataset": dataset, "paper_id": paper_id, "rank": rank, "doc_id": short_id("rd-", t.lower()),
                              "title": t, "abstract": a, "digest": d})
        papers.append({
            "dataset": dataset, "paper_id": paper_id, "source_id": str(rec.get("id")), "title": normalize_text(title),
            "abstract": normalize_text(str(rec.get("abstract") or "")), "keywords": [normalize_text(k) for k in keywords],
            "decision": str(rec.get("decision") or ""), "novelty_digest": digest_obj(s_digests),
            "reference_digest": digest_obj([[r["label"], r["text_digest"]] for r in i_rows]),
            "retrieved_digest": digest_obj(r_digests), "n_sentences": len(novelty), "n_reference_items": len(i_rows),
            "n_retrieved": len(titles), "list_parse": "literal" if how_n == how_k == "literal" else "split",
        })

    return NovbenchTables(
        papers=pl.DataFrame(papers, schema=PAPER_SCHEMA).sort("paper_id"),
        sentences=pl.DataFrame(sentences, schema=SENTENCE_SCHEMA).sort("paper_id", "position"),
        reference_items=pl.DataFrame(items, schema=ITEM_SCHEMA).sort("paper_id", "position"),
        retrieved=pl.DataFrame(retrieved, schema=RETRIEVED_SCHEMA).sort("paper_id", "rank"),
        skipped_items=pl.DataFrame(skipped, schema=SKIPPED_SCHEMA).sort("paper_id", "line"),
        exclusions=pl.DataFrame(excl, schema=EXCLUSION_SCHEMA),
    )
