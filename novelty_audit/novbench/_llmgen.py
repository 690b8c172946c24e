"""API review generators (`openai`, `anthropic`) on the call layer (`novelty_audit.llm`).

A generator asks one chat request per paper through an `LLMClient`: the call cache and its claims, the budget,
retries, circuit breaker and error reasons are the layer's, exactly as for the judges; the prompt (a versioned
`prompts/review-<mode>-v1.txt`, see `_genbase`) and the reading of the answer (the three-section parser
instead of a verdict) are the generator's. A cached answer is re-read by the current parser on every run, as
for verdicts. The args are the judges' `LLMArgs` (model, base_url, sampling, price, call knobs) without the
judge-only ones, so a call key is the one a judge with the same endpoint, sampling and prompt would have.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from ..artifacts import digest_bytes
from ..config import Frozen, GeneratorSpec, JudgeParams, Price
from ..errors import ConfigError
from ..judges import LLMArgs
from ..llm import TRUNCATING_FINISH, Budget, CallCache, Endpoint, LLMClient, Reply, Request
from ._genbase import (
    PROMPT_VERSION,
    Generator,
    few_shot_examples,
    load_template,
    prompt_context,
    prompt_values,
    render_prompt,
    review_row,
)
from ._papers import Paper
from ._parse import parse_evaluation

__all__ = ["LLMGenerator", "ReviewArgs", "build_llm_generator", "few_shot_examples", "render_prompt"]

DEFAULT_KEY_ENV = "default"
"""The endpoint's own key variable (OPENAI_API_KEY, ANTHROPIC_API_KEY) when the args name none."""


class ReviewArgs(Frozen):
    """The review-specific args; every other arg is the judges' LLMArgs (model, base_url, sampling, price, …)."""

    mode: Literal["zero", "few", "rag"] = "zero"
    k: int = Field(default=3, ge=1)
    """few: examples per prompt."""
    prompt: str = PROMPT_VERSION
    """Template version: prompts/review-<mode>-<prompt>.txt."""


class LLMGenerator(Generator):
    """One API model writing one evaluation per paper, every call through the call layer."""

    def __init__(self, name: str, backend: str, review: ReviewArgs, llm: LLMArgs, *, cache_dir: Path, budget: Budget,
                 prices: dict[str, Price], seed: int, progress: bool, refresh: bool):
        super().__init__(name)
        self.backend = backend
        self.review = review
        self.args = llm
        self.seed = seed
        self.path, self.template = load_template(name, review.mode, review.prompt)
        price = Price(input_per_mtok=0.0, output_per_mtok=0.0) if llm.local else llm.price if llm.price is not None else prices.get(llm.model)
        if budget.cap is not None and price is None:
            raise ConfigError(
                f"judge.generators.{name}: judge.budget_usd is set but model '{llm.model}' has no price",
                hint=f"add `{llm.model}: {{input_per_mtok: …, output_per_mtok: …}}` under judge.prices, or set `local: true` "
                     f"in judge.generators.{name}.args for a local or free endpoint, or remove judge.budget_usd",
            )
        key_env = llm.api_key_env if "api_key_env" in llm.model_fields_set else DEFAULT_KEY_ENV
        self.llm = LLMClient(
            Endpoint(backend, llm.model, llm.base_url, llm.api, key_env),  # type: ignore[arg-type]
            llm, cache=CallCache(Path(cache_dir) / "calls"), budget=budget, price=price, who=f"generator {name}",
            progress=progress, refresh=refresh, classify=lambda request, answer: self._classify(answer.text, answer.refused, answer.finish_reason),
        )  # fmt: skip

    def sampling(self) -> dict[str, Any]:
        return self.args.sampling.model_dump(mode="json")

    def config(self) -> dict[str, Any]:
        a = self.args
        return {
            "backend": self.backend, "api": a.api, "model": a.model, "base_url": a.base_url, "mode": self.review.mode,
            "k": self.review.k if self.review.mode == "few" else None,
            "seed": self.seed if self.review.mode == "few" else None,
            "prompt": self.path.name, "prompt_digest": digest_bytes(self.template.encode("utf-8")),
            "sampling": self.sampling(),
        }

    def input_files(self) -> list[Path]:
        return [self.path]

    def facts(self) -> dict[str, Any]:
        """Run facts: calls, cache hits, retries, cost, and why calls failed."""
        out = dict(self.llm.stats)
        out["errors_by_reason"] = dict(sorted(self.llm.errors.items()))
        out["error_details"] = dict(sorted(self.llm.error_details.items()))
        return out

    def _classify(self, text: str | None, refused: bool, finish_reason: str | None) -> tuple[str, Any, str | None]:
        """(outcome, choice, note) stored in the cache entry. `choice` carries the text itself: the review row
        keeps every answer, readable or not."""
        parsed = parse_evaluation(text)
        if parsed.valid:
            return "valid", text, None
        if refused:
            return "refusal", text, f"provider flagged a refusal (finish_reason={finish_reason})"
        if finish_reason in TRUNCATING_FINISH:
            return "truncated", text, f"cut at max_tokens={self.args.sampling.max_tokens} before any section heading"
        return "invalid", text, "no section heading (Positive|Neutral|Negative Novelty Evaluations)"

    def _prompt(self, p: Paper, pool: Sequence[Paper]) -> tuple[list[dict[str, str]], dict[str, str | None]]:
        context = prompt_context(p, pool, self.review.mode, self.review.k, self.seed)
        values, parts = prompt_values(p, self.review.mode, context)
        return render_prompt(self.template, self.path, values), parts

    def _text(self, reply: Reply) -> str:
        """The answer text of a reply ("" for a failed call or a refusal without text)."""
        entry = reply.entry
        if entry.get("outcome") == "error":
            return ""
        text = entry.get("response") if reply.cached and entry.get("outcome") in ("valid", "invalid", "truncated") else entry.get("choice")
        return text if isinstance(text, str) else ""

    def generate(self, papers: Sequence[Paper]) -> list[dict[str, Any]]:
        prompts = [self._prompt(p, papers) for p in papers]
        requests = [Request(messages=msgs, sampling=self.args.sampling, replicate=0, label=f"review {p.paper_id}")
                    for p, (msgs, _) in zip(papers, prompts, strict=True)]
        replies = self.llm.ask(requests)
        rows = []
        for p, (_, parts), r in zip(papers, prompts, replies, strict=True):
            if r.failure is not None:
                self.failed[r.failure.reason or "unspecified"] += 1
            rows.append(review_row(self, p, text=self._text(r), evidence_parts=parts,  # type: ignore[arg-type]
                                   provider_model=r.entry.get("provider_model"), call_digests=[r.key] if r.key else [],
                                   cost_usd=None if r.entry.get("cost_usd", 0.0) is None else float(r.entry.get("cost_usd") or 0.0)))
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
    budget = budget if budget is not None else Budget.for_run(jp.budget_usd, store_root)
    return LLMGenerator(name, spec.backend, review, llm, cache_dir=Path(store_root) / "cache", budget=budget,
                        prices=jp.prices, seed=jp.seed, progress=jp.progress, refresh=jp.refresh)
