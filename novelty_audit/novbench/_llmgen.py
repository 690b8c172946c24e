"""API review generators (`openai`, `anthropic`) on the judges' call engine (judges/_llm.py).

The generator is a thin subclass of the backend's judge: the engine's call cache and claims, budget,
retries, circuit breaker and error reasons apply unchanged; only the prompt (a versioned
`prompts/review-<mode>-v1.txt`) and the reading of the answer (the three-section parser instead of a
verdict) differ. A cached answer is re-read by the current parser on every run, as for verdicts.

Prompt modes: `zero` (the novelty sentences), `few` (k examples — another paper's novelty sentences and its
reference evaluation — chosen from the other papers of the same dataset by a seeded draw per paper, never
the paper itself) and `rag` (the record's retrieved titles and abstracts).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from ..artifacts import canonical_bytes, digest_bytes, digest_obj
from ..config import Frozen
from ..config._judge import GeneratorSpec, JudgeParams
from ..errors import ConfigError
from ..templates import packaged, packaged_file, packaged_names
from ..judges._base import JudgeContext
from ..judges._cache import call_key
from ..judges._llm import TRUNCATING_FINISH, LLMArgs
from ..judges._protocol import Call
from ._generate import Generator, review_row
from ._papers import Paper
from ._parse import parse_evaluation, render_items

__all__ = ["LLMGenerator", "ReviewArgs", "build_llm_generator", "few_shot_examples", "render_prompt"]

PROMPT_VERSION = "v1"


class ReviewArgs(Frozen):
    """The review-specific args; every other arg is the judges' LLMArgs (model, base_url, sampling, price, …)."""

    mode: Literal["zero", "few", "rag"] = "zero"
    k: int = Field(default=3, ge=1)
    """few: examples per prompt."""
    prompt: str = PROMPT_VERSION
    """Template version: prompts/review-<mode>-<prompt>.txt."""


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


def _judge_class(backend: str) -> type:
    if backend == "openai":
        from ..judges._openai import OpenAIJudge as base
    else:
        from ..judges._anthropic import AnthropicJudge as base

    class ReviewCallJudge(base):  # type: ignore[misc, valid-type]
        """The backend's judge with the prompt given per call and answers read as evaluations."""

        def __init__(self, ctx: JudgeContext, args: LLMArgs):
            super().__init__(ctx, args)
            self.messages: dict[tuple[str, str], list[dict[str, str]]] = {}

        def _prepare(self, call: Call) -> tuple[Any, str]:
            payload = self._payload(self.messages[(call.dataset, call.item_id)])
            key = call_key(backend=self.call_backend, model=self.args.model, endpoint=self.args.base_url,
                           sampling=self.sampling(), prompt_bytes=canonical_bytes(payload), vote_index=call.vote_index)
            return payload, key

        def _classify(self, task: str, text: str | None, refused: bool, finish_reason: str | None) -> tuple[str, Any, str | None]:
            # `choice` carries the text itself: the review row keeps every answer, readable or not.
            parsed = parse_evaluation(text)
            if parsed.valid:
                return "valid", text, None
            if refused:
                return "refusal", text, f"provider flagged a refusal (finish_reason={finish_reason})"
            if finish_reason in TRUNCATING_FINISH:
                return "truncated", text, f"cut at max_tokens={self.args.sampling.max_tokens} before any section heading"
            return "invalid", text, "no section heading (Positive|Neutral|Negative Novelty Evaluations)"

    return ReviewCallJudge


class LLMGenerator(Generator):
    def __init__(self, name: str, backend: str, review: ReviewArgs, llm: LLMArgs, ctx: JudgeContext, seed: int):
        super().__init__(name)
        self.backend = backend
        self.review = review
        self.seed = seed
        self.path, self.template = load_template(name, review.mode, review.prompt)
        self.judge = _judge_class(backend)(ctx, llm)

    def config(self) -> dict[str, Any]:
        a = self.judge.args
        return {
            "backend": self.backend, "api": a.api, "model": a.model, "base_url": a.base_url, "mode": self.review.mode,
            "k": self.review.k if self.review.mode == "few" else None,
            "seed": self.seed if self.review.mode == "few" else None,
            "prompt": self.path.name, "prompt_digest": digest_bytes(self.template.encode("utf-8")),
            "sampling": self.judge.sampling(),
        }

    def input_files(self) -> list[Path]:
        return [self.path]

    def facts(self) -> dict[str, Any]:
        return self.judge.facts()

    def close(self) -> None:
        self.judge.close()

    def _prompt(self, p: Paper, pool: Sequence[Paper]) -> tuple[list[dict[str, str]], dict[str, str | None]]:
        context = prompt_context(p, pool, self.review.mode, self.review.k, self.seed)
        values, parts = prompt_values(p, self.review.mode, context)
        return render_prompt(self.template, self.path, values), parts

    def generate(self, papers: Sequence[Paper]) -> list[dict[str, Any]]:
        prompts = {}
        for p in papers:
            msgs, parts = self._prompt(p, papers)
            self.judge.messages[(p.dataset, p.paper_id)] = msgs
            prompts[(p.dataset, p.paper_id)] = parts
        calls = [Call("review", p.dataset, p.paper_id, None, 0, ()) for p in papers]  # type: ignore[arg-type]
        results = self.judge.run_calls(calls)
        rows = []
        for p, r in zip(papers, results, strict=True):
            text = r.choice if isinstance(r.choice, str) else ""
            if r.outcome == "error":
                self.failed[r.error_reason or "unspecified"] += 1
            rows.append(review_row(self, p, text=text, evidence_parts=prompts[(p.dataset, p.paper_id)],  # type: ignore[arg-type]
                                   provider_model=r.provider_model, call_digests=[r.call_digest] if r.call_digest else [],
                                   cost_usd=r.cost_usd))
        return rows


def build_llm_generator(name: str, spec: GeneratorSpec, jp: JudgeParams, *, store_root: str | Path, budget: Any) -> LLMGenerator:
    own = {k: v for k, v in spec.args.items() if k in ReviewArgs.model_fields}
    rest = {k: v for k, v in spec.args.items() if k not in ReviewArgs.model_fields}
    for bad in ("votes", "orders", "pointwise_prompt", "reasoning", "input_form", "retrieval"):
        if bad in rest:
            raise ConfigError(f"params.yaml judge.generators.{name}.args.{bad}: not an arg of a review generator")
    try:
        review = ReviewArgs(**own)
        llm = LLMArgs(**rest, votes=1, orders="forward")
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"params.yaml judge.generators.{name}.args.{'.'.join(str(x) for x in err['loc'])}: {err['msg']}") from None
    if llm.api != "chat":
        raise ConfigError(f"params.yaml judge.generators.{name}.args.api: review generators use the chat API")
    from ..judges._budget import Budget

    ctx = JudgeContext(name=name, seed=jp.seed, cache_dir=Path(store_root) / "cache", refresh=jp.refresh,
                       prices=jp.prices, budget=budget if budget is not None else Budget.for_run(jp.budget_usd, store_root),
                       progress=jp.progress, tasks=("review",))
    return LLMGenerator(name, spec.backend, review, llm, ctx, jp.seed)
