"""What every review generator shares: the reviews row, the args check, and the review prompts.

The lowest of the generator modules: `_generate` (the registry of generator backends, and the `expert` and
`import` ones), `_llmgen` (API models through the call layer) and `_ggufgen` (a local GGUF model) build on it,
and it imports none of them.

Prompt modes: `zero` (the novelty sentences), `few` (k examples — another paper's novelty sentences and its
reference evaluation — chosen from the other papers of the same dataset by a seeded draw per paper, never
the paper itself) and `rag` (the record's retrieved titles and abstracts). Templates are the packaged
`review-<mode>-<version>.txt`, read by the one template loader (`novelty_audit.templates`).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import polars as pl
from pydantic import ValidationError

from ..artifacts import code_digest, digest_obj
from ..config import Frozen
from ..errors import ConfigError
from ..templates import packaged, packaged_file, packaged_names
from ._papers import Paper
from ._parse import Item, items_json, label_counts, parse_evaluation, render_items

__all__ = [
    "PROMPT_VERSION",
    "REVIEWS_SCHEMA",
    "REVIEW_KEYS",
    "Generator",
    "few_shot_examples",
    "generator_args",
    "load_template",
    "prompt_context",
    "prompt_values",
    "render_prompt",
    "review_row",
]

REVIEW_KEYS = ["dataset", "judge", "paper_id"]
REVIEWS_SCHEMA = {
    "dataset": pl.String, "judge": pl.String, "paper_id": pl.String, "title": pl.String, "text": pl.String,
    "items": pl.String, "valid": pl.Boolean, "label_counts": pl.String, "config_digest": pl.String,
    "evidence_digest": pl.String, "evidence_parts": pl.String, "code_digest": pl.String,
    "provider_model": pl.String, "call_digests": pl.List(pl.String), "cost_usd": pl.Float64,
}
PROMPT_VERSION = "v1"


class Generator:
    """A configured review generator; `generate` returns one reviews row per paper, in order."""

    backend = ""

    def __init__(self, name: str):
        self.name = name
        self.failed: Counter[str] = Counter()
        """Failed calls by reason (API backends): the outputs are then published incomplete."""

    def config(self) -> dict[str, Any]:
        return {"backend": self.backend}

    @property
    def config_digest(self) -> str:
        return digest_obj(self.config())

    @property
    def code_digest(self) -> str:
        return code_digest(type(self).__module__).digest

    def input_files(self) -> list[Path]:
        return []

    def facts(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        pass

    def generate(self, papers: Sequence[Paper]) -> list[dict[str, Any]]:
        raise NotImplementedError

    def judges_row(self) -> dict[str, Any]:
        return {"judge": self.name, "backend": f"review:{self.backend}", "config_digest": self.config_digest,
                "config": orjson.dumps(self.config(), option=orjson.OPT_SORT_KEYS).decode()}


def review_row(
    gen: Generator, paper: Paper, *, text: str, evidence_parts: dict[str, str], items: Sequence[Item] | None = None,
    valid: bool | None = None, provider_model: str | None = None, call_digests: Sequence[str] = (), cost_usd: float | None = 0.0,
) -> dict[str, Any]:
    """A reviews.parquet row; items/valid are parsed from `text` unless given (expert)."""
    if items is None or valid is None:
        parsed = parse_evaluation(text)
        items, valid = parsed.items, parsed.valid
    parts = {k: v for k, v in sorted(evidence_parts.items()) if v is not None}
    return {
        "dataset": paper.dataset, "judge": gen.name, "paper_id": paper.paper_id, "title": paper.title, "text": text,
        "items": items_json(list(items)), "valid": bool(valid), "label_counts": label_counts(list(items)),
        "config_digest": gen.config_digest, "evidence_digest": digest_obj(parts),
        "evidence_parts": orjson.dumps(parts, option=orjson.OPT_SORT_KEYS).decode(), "code_digest": gen.code_digest,
        "provider_model": provider_model, "call_digests": list(call_digests), "cost_usd": None if cost_usd is None else float(cost_usd),  # None: no price, unknown
    }


def generator_args(name: str, model: type[Frozen], args: dict[str, Any]) -> Any:
    """`args` validated as `model`; a bad one is a ConfigError naming judge.generators.<name>.args.<field>."""
    try:
        return model(**args)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise ConfigError(f"params.yaml judge.generators.{name}.args.{where}: {err['msg']}") from None


# -- prompts ---------------------------------------------------------------------------------------------
def load_template(generator: str, mode: str, version: str) -> tuple[Path, str]:
    """A generator's review template (path, text); a missing one is a params error naming the generator."""
    name = f"review-{mode}-{version}.txt"
    missing = f"params.yaml judge.generators.{generator}.args.prompt: no template {name}"
    hint = f"packaged: {', '.join(packaged_names('review-'))}"
    path = packaged_file(name, missing=missing, hint=hint)
    return path, packaged(name, missing=missing, hint=hint).text


def prompt_context(p: Paper, pool: Sequence[Paper], mode: str, k: int, seed: int) -> list[Any]:
    """What a prompt shows besides `p`'s own statements, in keep order: few-shot examples (draw order) or the
    retrieved documents (rank); nothing for zero-shot."""
    if mode == "few":
        return few_shot_examples(p, pool, k, seed)
    if mode == "rag":
        return list(p.retrieved)
    return []


def prompt_values(p: Paper, mode: str, context: Sequence[Any]) -> tuple[dict[str, str], dict[str, str | None]]:
    """The template values for `p` with `context` (`prompt_context`, possibly cut short), and the evidence
    parts they carry: with every retrieved document shown, their pinned digest; with fewer, which ones."""
    values = {"novelty": _novelty(p)}
    parts: dict[str, str | None] = {"novelty_sentences": p.novelty_digest}
    if mode == "few":
        values["examples"] = "\n\n".join(
            f"Example {n}\nNovelty statements:\n{_novelty(q)}\n\nNovelty evaluation:\n{render_items(q.reference)}"
            for n, q in enumerate(context, start=1)
        )
        parts["few_shot"] = digest_obj([[q.paper_id, q.novelty_digest, q.reference_digest] for q in context])
    elif mode == "rag":
        values["related"] = "\n\n".join(f"[{n}] {d.title}\n{d.abstract}" for n, d in enumerate(context, start=1)) or "(none)"
        parts["retrieved"] = p.retrieved_digest if len(context) == len(p.retrieved) else digest_obj([d.digest for d in context])
    return values, parts


def _sections(text: str, path: Path) -> list[dict[str, str]]:
    if not text.startswith("[system]\n") or "\n[user]\n" not in text:
        raise ConfigError(f"{path}: a review template has a [system] section, then a [user] section")
    system, user = text[len("[system]\n"):].split("\n[user]\n", 1)
    return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user.strip()}]


def render_prompt(template: str, path: Path, values: dict[str, str]) -> list[dict[str, str]]:
    """The chat messages of a review template with `values` filled in; a placeholder left over is a
    ConfigError naming the template file."""
    msgs = _sections(template, path)
    for m in msgs:
        for name, value in values.items():
            m["content"] = m["content"].replace("{{" + name + "}}", value)
        if "{{" in m["content"]:
            left = m["content"][m["content"].index("{{"):].split("}}")[0] + "}}"
            raise ConfigError(f"{path}: unknown placeholder {left}", hint=f"placeholders: {', '.join(sorted(values))}")
    return msgs


def _novelty(p: Paper) -> str:
    return "\n".join(f"- {s}" for s in p.sentences)


def few_shot_examples(paper: Paper, pool: Sequence[Paper], k: int, seed: int) -> list[Paper]:
    """k other papers of the same dataset, drawn by a generator seeded with (seed, dataset, paper id)."""
    others = sorted((q for q in pool if q.dataset == paper.dataset and q.paper_id != paper.paper_id), key=lambda q: q.paper_id)
    rng = random.Random(int(digest_obj([seed, paper.dataset, paper.paper_id])[:16], 16))
    return rng.sample(others, min(k, len(others)))
