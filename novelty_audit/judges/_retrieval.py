"""Retrieval for LLM judges: the k most similar prior-work abstracts per idea (TF-IDF cosine, no torch).

Neighbours that are the idea itself (same normalized title, or cosine ≥ 0.95) are left out, so an idea
is never shown its own abstract as "prior work". Deterministic: ties in similarity break by corpus id.
A block depends on the idea's title and text only, and is memoized by their digest, never by idea id.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..artifacts import digest_obj
from ..errors import BadInputError, ConfigError
from .distance import load_corpus, normalize_title

__all__ = ["Retriever"]

class Retriever:
    """TF-IDF nearest abstracts for each idea; blocks are cached per idea."""

    def __init__(self, args: Any):
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.args = args
        self.path = Path(args.corpus)
        if not self.path.exists():
            raise ConfigError(f"retrieval corpus {self.path} does not exist", hint="set args.retrieval.corpus")
        # The same loader as the distance judges: HTML stripped, every unusable record listed in exclusions.
        corpus = load_corpus(self.path)
        self.exclusions = corpus.exclusions
        self.records = [
            {"id": r["doc_id"], "title": r["title"], "abstract": r["abstract"], "year": "" if r["year"] is None else str(r["year"])}
            for r in corpus.table.to_dicts()
        ]
        self.corpus_digest = corpus.digest
        self._vec = TfidfVectorizer(sublinear_tf=True, stop_words="english")
        try:
            self._matrix = self._vec.fit_transform([f"{r['title']}. {r['abstract']}" for r in self.records])
        except ValueError as exc:  # scikit-learn's "empty vocabulary": nothing but stop words
            raise BadInputError(f"retrieval corpus {self.path}: TF-IDF finds no usable term in its {len(self.records)} record(s): {exc}",
                                hint="check the corpus abstracts (args.retrieval.corpus)") from None
        self._blocks: dict[str, str] = {}

    def config(self) -> dict[str, Any]:
        return {"method": "tfidf", "corpus": self.path.as_posix(), "corpus_digest": self.corpus_digest, "k": self.args.k, "max_chars": self.args.max_chars}

    def input_files(self) -> list[Path]:
        return [self.path]

    def block(self, idea) -> str:
        query = f"{idea.title}. {idea.text}"
        # The title takes part in the query and in the own-title filter: both decide the block.
        memo = digest_obj({"title": idea.title, "text": idea.text})
        if memo in self._blocks:
            return self._blocks[memo]
        sims = (self._matrix @ self._vec.transform([query]).T).toarray().ravel()
        own = normalize_title(idea.title)
        order = sorted(range(len(self.records)), key=lambda i: (-sims[i], self.records[i]["id"]))
        lines = []
        for i in order:
            r = self.records[i]
            if normalize_title(r["title"]) == own or sims[i] >= 0.95:
                continue
            abstract = r["abstract"] if len(r["abstract"]) <= self.args.max_chars else r["abstract"][: self.args.max_chars] + "…"
            lines.append(f"- {r['title']} ({r['year'] or 'n.d.'}): {abstract}")
            if len(lines) == self.args.k:
                break
        self._blocks[memo] = "\n".join(lines)
        return self._blocks[memo]

    def blocks(self, shown) -> tuple[str, ...]:
        return tuple(self.block(i) for i in shown)

    def evidence_digest(self, shown) -> str:
        return digest_obj(sorted(self.block(i) for i in shown))
