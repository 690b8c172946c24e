"""The API LLM judges' shared half: typed args, prompts, parsing and the vote protocol over the call layer.

Everything about sending — cache and inter-process claims, concurrency, rate limits, retries, the circuit
breaker, cost and budget, batches, progress, SIGTERM/SIGINT — is the call layer's (`novelty_audit.llm`).
A judge renders its prompts, hands the layer one `Request` per call, and reads each reply into a verdict.
`OpenAIJudge` / `AnthropicJudge` (`_openai.py`, `_anthropic.py`) only name their provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, model_validator

from ..config import Frozen, Price
from ..errors import ConfigError
from ..llm import (
    COMPLETION_LEAD_IN,
    TRUNCATING_FINISH,
    Budget,
    CallCache,
    CallSettings,
    Endpoint,
    LLMClient,
    Payload,
    Request,
    Sampling,
    check_anthropic_sampling,
    completion_prompt,
)
from ._base import Idea, JudgeContext
from ._guard import Guard
from ._prompts import PromptTemplate, load_prompt, parse_verdict, template_knobs
from ._protocol import Call, CallResult, VoteJudge
from ._s2 import S2Args

__all__ = ["AnthropicArgs", "LLMArgs", "LLMJudge", "ModelArgs", "RetrievalArgs"]


class RetrievalArgs(Frozen):
    """Related prior-work abstracts shown next to each idea."""

    corpus: str
    """Parquet/JSON/JSONL with id, title, abstract and date or year (HTML is stripped)."""
    k: int = 3
    """Abstracts per idea."""
    max_chars: int = 600
    """Abstract length shown (characters)."""
    max_doc_chars: int = Field(2000, ge=100)
    """Characters of one retrieved paper's line in the prompt (title, year and abstract together); cut
    characters are counted in its `evidence_docs` entry (`truncated_chars`)."""
    max_turn_chars: int = Field(20000, ge=1000)
    """Characters of retrieved text one prompt shows in total (each idea's block at most half of it)."""


class ModelArgs(CallSettings):
    """The model an LLM-backed judge asks and what its calls cost, with how it is asked (the call layer's
    `CallSettings`: concurrency, rate limits, retries, timeouts, circuit breaker, batches). The prompted judges'
    `LLMArgs` and the search agents' `AgentArgs` extend it."""

    model: str
    """Model name as the endpoint knows it."""
    base_url: str | None = None
    """OpenAI-compatible endpoint (vLLM, Ollama, llama.cpp server, LiteLLM); None: the provider's own.
    Part of the call key: the same model name on two servers never shares answers."""
    api_key_env: str | None = None
    """Name of the environment variable holding the key (default OPENAI_API_KEY / ANTHROPIC_API_KEY);
    null for local servers that need none. The key itself is never written anywhere."""
    price: Price | None = None
    """This judge's price in USD per million tokens, overriding `judge.prices` (0 allowed)."""
    local: bool = False
    """A local endpoint (Ollama, llama.cpp, vLLM on your machine): calls cost nothing, so no price is
    needed and `judge.budget_usd` never stops it."""

    @model_validator(mode="after")
    def _price_or_local(self) -> ModelArgs:
        if self.local and self.price is not None and (self.price.input_per_mtok or self.price.output_per_mtok):
            raise ValueError("local: true means the calls cost nothing; drop `price` or set local: false")
        return self

    def resolve_price(self, ctx: JudgeContext) -> Price | None:
        """This judge's price: free when local, else its own `price`, else `judge.prices[model]`. A budget cap
        with no price is a `ConfigError`: the cap could not be kept."""
        if self.local:
            return Price(input_per_mtok=0.0, output_per_mtok=0.0)
        price = self.price if self.price is not None else ctx.prices.get(self.model)
        if ctx.budget is not None and ctx.budget.cap is not None and price is None:
            raise ConfigError(
                f"judge {ctx.name}: judge.budget_usd is set but model '{self.model}' has no price",
                hint=(
                    f"add `{self.model}: {{input_per_mtok: …, output_per_mtok: …}}` under judge.prices, or for a "
                    f"local or free endpoint set `local: true` in judge.judges.{ctx.name}.args "
                    f"(or `price: {{input_per_mtok: 0, output_per_mtok: 0}}`), or remove judge.budget_usd"
                ),
            )
        return price


class LLMArgs(ModelArgs):
    """Arguments of the prompted API LLM judges (`openai`, `anthropic`): the model (`ModelArgs`) and what to ask."""

    api: Literal["chat", "completions"] = "chat"
    """`openai` backend only. chat: /v1/chat/completions with the rendered messages (instruction-tuned
    models). completions: /v1/completions with one plain-text prompt — system and user text, then
    "Answer:" — for base models, which behind a chat endpoint only continue the chat template."""
    prompt: str = "reference-v1"
    """Pairwise template: a packaged name (`novelty_audit/prompts/pairwise-<prompt>.txt`: reference-v1, p1-v1 …
    p5-v1) or a project file (`prompts/my-judge.jinja2` or `.txt`; see prompts/README.md)."""
    pointwise_prompt: str | None = None
    """Pointwise template (packaged `pointwise-<name>.txt`, or a project file); default: the same as `prompt`."""
    reasoning: Literal["brief", "none"] = "brief"
    """brief: short reasoning, then the JSON verdict; none: JSON verdict only."""
    input_form: Literal["text", "plan"] = "text"
    """How each idea is laid out: its text as published, or as a research plan."""
    guard: Guard = Field(default_factory=Guard)
    """Prompt-injection mitigations ({delimit, data_notice, strip_address}; all off): measured by the injection
    probe, part of the config digest when on (docs/design/probe.md)."""
    votes: int = Field(3, ge=1)
    """Votes per order (pairwise) or per idea (pointwise)."""
    orders: Literal["both", "forward", "reverse"] = "both"
    """Presentation orders asked."""
    sampling: Sampling = Field(default_factory=Sampling)
    """Generation settings (all in the call key); `sampling.reasoning_effort` (none | minimal | low | medium | high |
    xhigh | max) is the reasoning budget of reasoning models (a sweep varies it as the knob `reasoning_effort`)."""
    retrieval: RetrievalArgs | S2Args | None = None
    """Show related abstracts per idea: `{corpus: ...}` (local corpus) or `{source: semantic-scholar, ...}`
    (Graph API search, judges/_s2.py); None: off."""


class AnthropicArgs(LLMArgs):
    """The `anthropic` judge's args: `LLMArgs`, checked against what the Messages API can honour when params load
    (`sampling.reasoning_effort` is sent as extended thinking, whose budget `max_tokens` must exceed)."""

    @model_validator(mode="after")
    def _honoured(self) -> AnthropicArgs:
        check_anthropic_sampling(self.sampling)
        return self


class LLMJudge(VoteJudge):
    """An API LLM judge; subclasses name their provider (`backend`, `sdk_module`)."""

    default_key_env: str = ""
    sdk_module: str = ""
    """The SDK package (what a worker must have installed to run this backend)."""
    apis: tuple[str, ...] = ("chat",)
    """The `api` modes this backend speaks."""

    def __init__(self, ctx: JudgeContext, args: LLMArgs):
        super().__init__(ctx, votes=args.votes, orders=args.orders)
        self.args = args
        if args.api not in self.apis:
            raise ConfigError(
                f"params.yaml judge.judges.{ctx.name}.args.api: the {self.backend} backend has no '{args.api}' API",
                hint=f"use one of: {', '.join(self.apis)}",
            )
        self.key_env = args.api_key_env if "api_key_env" in args.model_fields_set else self.default_key_env
        self.templates: dict[str, PromptTemplate] = {"pairwise": load_prompt("pairwise", args.prompt, args.reasoning)}
        if "pointwise" in ctx.tasks:
            name = args.pointwise_prompt or args.prompt
            try:
                self.templates["pointwise"] = load_prompt("pointwise", name, args.reasoning)
            except ConfigError as exc:
                raise ConfigError(
                    f"judge {ctx.name}: {exc.message}",
                    hint="pointwise templates: reference-v1, p1-v1, p2-v1; set args.pointwise_prompt",
                ) from None
        self.price = args.resolve_price(ctx)
        self.budget: Budget = ctx.budget if ctx.budget is not None else Budget(None)
        self.cache = CallCache(ctx.cache_dir / "calls", shared=ctx.shared_cache)
        self.retriever = None
        if args.retrieval is not None:
            from ._retrieval import make_retriever

            self.retriever = make_retriever(args.retrieval, ctx)  # local corpus or Semantic Scholar (_s2.py)
        self.llm = LLMClient(
            Endpoint(self.backend, args.model, args.base_url, args.api, self.key_env),  # type: ignore[arg-type]
            args,
            cache=self.cache,
            budget=self.budget,
            price=self.price,
            who=f"judge {ctx.name}",
            progress=ctx.progress,
            refresh=ctx.refresh,
            classify=lambda request, answer: self._classify(request.tag.task, answer.text, answer.refused, answer.finish_reason),
        )
        """The call layer's client for this judge's endpoint: every call goes through it."""

    # -- the endpoint -------------------------------------------------------------------------------
    @property
    def call_backend(self) -> str:
        """The backend as the call key names it: the API mode is part of it (its prompts differ anyway)."""
        return self.llm.endpoint.backend

    def api_key(self) -> str | None:
        return self.llm.provider.api_key()

    def _client(self) -> Any:
        """A new async client of this judge's endpoint (made inside the event loop that uses it)."""
        return self.llm.provider.client()

    # -- config -------------------------------------------------------------------------------------
    def sampling(self) -> dict[str, Any]:
        return self.args.sampling.model_dump(mode="json")

    def config(self) -> dict[str, Any]:
        a = self.args
        return {
            "backend": self.backend,
            "api": a.api,
            "model": a.model,
            "base_url": a.base_url,
            "prompt": a.prompt,
            "prompt_digest": self.templates["pairwise"].digest,
            "pointwise_prompt": self.templates["pointwise"].name if "pointwise" in self.templates else None,
            "pointwise_prompt_digest": self.templates["pointwise"].digest if "pointwise" in self.templates else None,
            "reasoning": a.reasoning,
            "input_form": a.input_form,
            "votes": a.votes,
            "orders": a.orders,
            "sampling": self.sampling(),
            "retrieval": self.retriever.config() if self.retriever else None,
            **template_knobs(self.templates),  # a project template file: {"prompt_files": {path: sha256}}
            **a.guard.knob(),  # injection mitigations, only when one is on (older configs keep their digest)
        }

    def input_files(self):
        return self.retriever.input_files() if self.retriever else []

    def extra_evidence(self, shown) -> dict[str, str]:
        if self.retriever is None:
            return {}
        return self.retriever.evidence_parts(shown, _slots(shown))

    def evidence_docs(self, ideas) -> list[dict[str, Any]]:
        return self.retriever.evidence_docs(ideas, _slots(ideas)) if self.retriever is not None else []

    def close(self) -> None:
        if self.retriever is not None:
            self.retriever.close()

    def facts(self) -> dict[str, Any]:
        """Run facts: calls, cache hits, retries, cost, summed latency, and why calls failed
        (`errors_by_reason` counts, `error_details` the last full message per reason)."""
        out = dict(self.llm.stats)
        out["errors_by_reason"] = dict(sorted(self.llm.errors.items()))
        out["error_details"] = dict(sorted(self.llm.error_details.items()))
        if self.retriever is not None and self.retriever.facts():
            out["retrieval"] = self.retriever.facts()
        return out

    # -- calls --------------------------------------------------------------------------------------
    def _payload(self, messages: list[dict[str, str]]) -> Payload:
        return completion_prompt(messages) if self.args.api == "completions" else messages

    def _request(self, call: Call, payload: Payload) -> Request:
        prompt = payload if isinstance(payload, str) else None
        return Request(messages=None if prompt is not None else payload, prompt=prompt, sampling=self.args.sampling,
                       replicate=call.vote_index, label=f"{call.task} {call.item_id}", tag=call)  # fmt: skip

    def _render(self, call: Call) -> Payload:
        """The rendered prompt of one call."""
        evidence = self.retriever.blocks(call.shown) if self.retriever else None
        messages = self.templates[call.task].render(call.shown, form=self.args.input_form, evidence=evidence, guard=self.args.guard)
        return self._payload(messages)

    def _prepare(self, call: Call) -> tuple[Payload, str]:
        """(payload, call key) of one call: the rendered prompt and the digest of everything that decides its answer."""
        payload = self._render(call)
        return payload, self.llm.key(self._request(call, payload))

    def run_calls(self, calls: Sequence[Call]) -> list[CallResult]:
        # Rendered only: the engine keys each request once (keying here too cost a second digest per call).
        # The votes of one question share its rendered prompt (the same object), so the engine digests it once.
        rendered: dict[tuple[str, tuple[Idea, ...]], Payload] = {}
        requests = []
        for call in calls:
            payload = rendered.get((call.task, call.shown))
            if payload is None:
                payload = rendered[(call.task, call.shown)] = self._render(call)
            requests.append(self._request(call, payload))
        replies = self.llm.ask(requests)
        return [self._result(r.key, self._reparsed(c, r.entry) if r.cached else r.entry, cached=r.cached) for c, r in zip(calls, replies, strict=True)]

    def _classify(self, task: str, text: str | None, refused: bool, finish_reason: str | None) -> tuple[str, Any, str | None]:
        """(outcome, choice, note) of one answer. In completions mode the prompt ends with the lead-in
        "Answer:", so the continuation completes that line: it is parsed as lead-in + continuation."""
        if self.args.api == "completions" and text is not None:
            text = COMPLETION_LEAD_IN.strip() + text
        parsed = parse_verdict(task, text)
        outcome, choice, note = parsed.outcome, parsed.choice, parsed.note
        if refused and outcome != "valid":
            outcome, note = "refusal", f"provider flagged a refusal (finish_reason={finish_reason})"
        elif outcome != "valid" and finish_reason in TRUNCATING_FINISH:
            outcome = "truncated"
            note = f"cut at max_tokens={self.args.sampling.max_tokens} (finish_reason={finish_reason}) before a verdict: {note}"
        return outcome, choice, note

    def _reparsed(self, call: Call, entry: dict[str, Any]) -> dict[str, Any]:
        """A cached answer judged by this code's parser. The cache keeps what the provider said; reading a
        verdict out of it is harness code, so a parser change applies to cached answers too (and shows up as
        the code digest that moved), instead of replaying an outcome the old parser decided."""
        if "response" not in entry or entry.get("outcome") not in ("valid", "invalid", "truncated"):
            return entry  # errors are never cached; a provider-flagged refusal stays one
        outcome, choice, note = self._classify(call.task, entry["response"], False, entry.get("finish_reason"))
        return {**entry, "outcome": outcome, "choice": choice, "note": note}

    def _result(self, key: str, entry: dict[str, Any], cached: bool) -> CallResult:
        return CallResult(
            outcome=entry["outcome"],
            choice=entry["choice"],
            call_digest=key,
            provider_model=entry.get("provider_model"),
            # No price (and not local), now or when the answer was recorded: its cost is unknown, null, never free.
            cost_usd=None if self.price is None or entry.get("cost_usd", 0.0) is None else float(entry.get("cost_usd") or 0.0),
            latency_s=float(entry.get("latency_s") or 0.0),
            cached=cached,
            detail=entry.get("note"),
            error_reason=entry.get("error_reason"),
        )


def _slots(ideas) -> tuple[str, ...]:
    """Evidence slots of ideas given in pair slot order (idea_0, idea_1) or one idea (pointwise)."""
    return ("idea_0", "idea_1") if len(ideas) == 2 else ("idea",)
