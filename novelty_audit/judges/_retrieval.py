"""Retrieval for LLM judges: the k most similar prior-work abstracts per idea (TF-IDF cosine, no torch).

Neighbours that are the idea itself (same normalized title, or cosine ≥ 0.95) are left out, so an idea
is never shown its own abstract as "prior work". Deterministic: ties in similarity break by corpus id.
A block depends on the idea's title and text only, and is memoized by their digest, never by idea id.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..artifacts import digest_bytes, digest_obj
from ..errors import BadInputError, ConfigError
from ._guard import QUOTE_VERSION, bound_lines, quote
from .distance import load_corpus, normalize_title

__all__ = ["Retriever", "bounded_lines", "make_retriever", "memo_key", "planted_docs", "truncation_fact"]


def bounded_lines(docs: list[dict[str, Any]], args: Any) -> list[dict[str, Any]]:
    """Each doc with the `line` a prompt shows for it ("- title (year): abstract") cut to `args.max_doc_chars`,
    the idea's lines together to half of `args.max_turn_chars` (a prompt shows at most two ideas), and the
    characters cut (`truncated_chars`, counted in its evidence_docs entry when not 0)."""
    lines = [f"- {d['title']} ({d['year'] or 'n.d.'}): {d['abstract'] or '(no abstract)'}" for d in docs]
    cut = bound_lines(lines, args.max_doc_chars, args.max_turn_chars // 2)
    return [{**d, "line": b.text, "truncated_chars": b.cut} for d, b in zip(docs, cut, strict=True)]


def planted_docs(idea: Any) -> list[dict[str, Any]]:
    """The documents the injection probe planted for `idea` (probe datasets only), as retrieved docs: shown
    first, before the k retrieved ones."""
    return [
        {"doc_id": d.doc_id, "title": d.title, "year": None, "abstract": d.abstract, "similarity": None, "source": "probe",
         "digest": digest_bytes(f"{d.title}\n{d.abstract}".encode())}
        for d in getattr(idea, "planted", ())
    ]  # fmt: skip


def memo_key(idea: Any) -> str:
    """What decides an idea's block: its title and text (query and own-title filter) and any planted document."""
    planted = [[d.doc_id, d.title, d.abstract] for d in getattr(idea, "planted", ())]
    return digest_obj({"title": idea.title, "text": idea.text, **({"planted": planted} if planted else {})})


def truncation_fact(doc: dict[str, Any]) -> dict[str, int]:
    return {"truncated_chars": doc["truncated_chars"]} if doc.get("truncated_chars") else {}


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
        self._docs: dict[str, list[dict[str, Any]]] = {}

    def config(self) -> dict[str, Any]:
        a = self.args
        return {"method": "tfidf", "corpus": self.path.as_posix(), "corpus_digest": self.corpus_digest, "k": a.k, "max_chars": a.max_chars,
                "max_doc_chars": a.max_doc_chars, "max_turn_chars": a.max_turn_chars, "quoting": QUOTE_VERSION}

    def input_files(self) -> list[Path]:
        return [self.path]

    def docs(self, idea) -> list[dict[str, Any]]:
        """The abstracts shown for `idea`: {doc_id, title, year, abstract (as shown), digest, similarity}, nearest first."""
        query = f"{idea.title}. {idea.text}"
        # The title takes part in the query and in the own-title filter: both decide the block.
        memo = memo_key(idea)
        if memo in self._docs:
            return self._docs[memo]
        sims = (self._matrix @ self._vec.transform([query]).T).toarray().ravel()
        own = normalize_title(idea.title)
        order = sorted(range(len(self.records)), key=lambda i: (-sims[i], self.records[i]["id"]))
        shown: list[dict[str, Any]] = []
        for i in order:
            r = self.records[i]
            if normalize_title(r["title"]) == own or sims[i] >= 0.95:
                continue
            abstract = r["abstract"] if len(r["abstract"]) <= self.args.max_chars else r["abstract"][: self.args.max_chars] + "…"
            shown.append({
                "doc_id": r["id"], "title": r["title"], "year": int(r["year"]) if r["year"] else None, "abstract": abstract,
                "digest": digest_bytes(f"{r['title']}\n{abstract}".encode()), "similarity": float(sims[i]),
            })  # fmt: skip
            if len(shown) == self.args.k:
                break
        self._docs[memo] = bounded_lines(planted_docs(idea) + shown, self.args)
        return self._docs[memo]

    def block(self, idea) -> str:
        """The related-work lines of `idea`, bounded (`bounded_lines`): what the evidence digest covers."""
        return "\n".join(d["line"] for d in self.docs(idea) if d["line"])

    def blocks(self, shown) -> tuple[str, ...]:
        """Each shown idea's block as the prompt shows it: quoted as data (judges/_guard.py `quote`)."""
        return tuple(quote(b, "related papers") if b else b for b in map(self.block, shown))

    def evidence_digest(self, shown) -> str:
        return digest_obj(sorted(self.block(i) for i in shown))

    def evidence_parts(self, ideas: Sequence[Any], slots: Sequence[str]) -> dict[str, str]:
        """{retrieval: digest of the blocks shown, corpus: its digest, <slot>_retrieved_<rank>: each abstract shown}."""
        parts = {"retrieval": self.evidence_digest(ideas), "corpus": self.corpus_digest}
        for slot, idea in zip(slots, ideas):
            parts.update({f"{slot}_retrieved_{r}": d["digest"] for r, d in enumerate(self.docs(idea))})
        return parts

    def evidence_docs(self, ideas: Sequence[Any], slots: Sequence[str]) -> list[dict[str, Any]]:
        return [
            {"slot": slot, "rank": r, "doc_id": d["doc_id"], "digest": d["digest"], "title": d["title"], "year": d["year"],
             "similarity": d["similarity"], "source": d.get("source", "corpus"), **truncation_fact(d)}
            for slot, idea in zip(slots, ideas) for r, d in enumerate(self.docs(idea))
        ]  # fmt: skip

    def facts(self) -> dict[str, Any]:
        """For the run log: each corpus record left out, with its reason (their counts go to the stage summary)."""
        return {"corpus_exclusions": self.exclusions.to_dicts()} if self.exclusions.height else {}

    def close(self) -> None:
        """Nothing to release (the S2 retriever closes its HTTP client)."""


def make_retriever(args: Any, ctx: Any) -> Retriever | Any:
    """The retriever `args` selects: Semantic Scholar search (`source: semantic-scholar`) or the local corpus.
    Both give blocks (what the prompt shows), evidence parts and evidence_docs for the same ideas."""
    from ._s2 import S2Args, S2Retriever

    if isinstance(args, S2Args):
        return S2Retriever(args, ctx.cache_dir, refresh=ctx.refresh)
    return Retriever(args)
