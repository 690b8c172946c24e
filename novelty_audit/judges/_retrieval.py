"""Retrieval for LLM judges: the k most similar prior-work abstracts per idea (TF-IDF cosine, no torch).

Neighbours that are the idea itself (same normalized title, or cosine ≥ 0.95) are left out, so an idea
is never shown its own abstract as "prior work". Deterministic: ties in similarity break by corpus id.
"""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

import orjson

from ..artifacts import digest_file, digest_obj
from ..errors import BadInputError, ConfigError

__all__ = ["Retriever", "load_corpus"]

_TAG = re.compile(r"<[^>]+>")


def _clean(text: Any) -> str:
    return re.sub(r"\s+", " ", html.unescape(_TAG.sub(" ", str(text or "")))).strip()


def load_corpus(path: Path) -> list[dict[str, str]]:
    """Records {id, title, abstract, year} from Parquet, JSON (a list or a mapping of records) or JSONL."""
    if not path.exists():
        raise ConfigError(f"retrieval corpus {path} does not exist", hint="set args.retrieval.corpus")
    if path.suffix == ".parquet":
        import polars as pl

        rows = pl.read_parquet(path).to_dicts()
    elif path.suffix == ".jsonl":
        rows = [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]
    else:
        data = orjson.loads(path.read_bytes())
        rows = list(data.values()) if isinstance(data, dict) else data
    out = []
    for n, r in enumerate(rows):
        if not isinstance(r, dict):
            raise BadInputError(f"{path}: record {n}: expected an object")
        rid = r.get("id") or r.get("key") or r.get("paper_id")
        title, abstract = _clean(r.get("title")), _clean(r.get("abstract"))
        if not rid or not title or not abstract:
            raise BadInputError(f"{path}: record {n}: field id/title/abstract is missing", hint="each record needs id (or key), title, abstract")
        year = r.get("year") or str(r.get("date") or "")[:4]
        out.append({"id": str(rid), "title": title, "abstract": abstract, "year": str(year or "")})
    return sorted(out, key=lambda r: r["id"])


class Retriever:
    """TF-IDF nearest abstracts for each idea; blocks are cached per idea."""

    def __init__(self, args: Any):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.args = args
        self.path = Path(args.corpus)
        self.records = load_corpus(self.path)
        self.corpus_digest = digest_file(self.path)
        self._vec = TfidfVectorizer(sublinear_tf=True, stop_words="english")
        self._matrix = self._vec.fit_transform([f"{r['title']}. {r['abstract']}" for r in self.records])
        self._blocks: dict[str, str] = {}

    def config(self) -> dict[str, Any]:
        return {"method": "tfidf", "corpus": self.path.as_posix(), "corpus_sha256": self.corpus_digest, "k": self.args.k, "max_chars": self.args.max_chars}

    def input_files(self) -> list[Path]:
        return [self.path]

    def block(self, idea) -> str:
        if idea.idea_id in self._blocks:
            return self._blocks[idea.idea_id]
        sims = (self._matrix @ self._vec.transform([f"{idea.title}. {idea.text}"]).T).toarray().ravel()
        own = idea.title.strip().lower()
        order = sorted(range(len(self.records)), key=lambda i: (-sims[i], self.records[i]["id"]))
        lines = []
        for i in order:
            r = self.records[i]
            if r["title"].lower() == own or sims[i] >= 0.95:
                continue
            abstract = r["abstract"] if len(r["abstract"]) <= self.args.max_chars else r["abstract"][: self.args.max_chars] + "…"
            lines.append(f"- {r['title']} ({r['year'] or 'n.d.'}): {abstract}")
            if len(lines) == self.args.k:
                break
        self._blocks[idea.idea_id] = "\n".join(lines)
        return self._blocks[idea.idea_id]

    def blocks(self, shown) -> tuple[str, ...]:
        return tuple(self.block(i) for i in shown)

    def evidence_digest(self, shown) -> str:
        return digest_obj(sorted(self.block(i) for i in shown))
