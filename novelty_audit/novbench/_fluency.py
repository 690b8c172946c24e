"""clarity_fs's language model: perplexity of a text under the local GGUF Gemma 3 270M (extra `gguf`).

The study used distilgpt2; this is a different model, so its name (file name + sha256 prefix) enters the
metrics' config digest and the report says which model it was. Perplexities are cached by (model id, text
digest) in one checked JSON file per model under `<cache>/fluency/`, so a rerun evaluates nothing twice.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..artifacts import digest_file, digest_obj, read_json, write_json
from ..errors import require
from ..judges import resolve_gguf
from ..judges.distance import text_digest
from ..progress import Progress

__all__ = ["GgufFluency", "perplexity_from_logits"]

_lock = threading.Lock()


def perplexity_from_logits(logits: np.ndarray, tokens: Sequence[int]) -> float:
    """exp(mean negative log-likelihood of tokens[1:]), logits[i] predicting tokens[i + 1]."""
    if len(tokens) < 2:
        return math.inf
    x = np.asarray(logits[: len(tokens) - 1], dtype=np.float64)
    top = x.max(axis=1, keepdims=True)
    log_z = (top + np.log(np.exp(x - top).sum(axis=1, keepdims=True)))[:, 0]
    lp = x[np.arange(len(tokens) - 1), np.asarray(tokens[1:])] - log_z
    return float(np.exp(-lp.mean()))


class GgufFluency:
    """Perplexities under a GGUF causal LM (default: the packaged gemma3-270m), fixed threads and seed."""

    def __init__(self, cache_root: Path, model: str = "gemma3-270m", *, n_ctx: int = 512, threads: int = 2):
        llama_cpp = require("llama_cpp", extra="gguf")
        self.path = resolve_gguf(model, Path(cache_root))
        self.name = f"{self.path.name}@{digest_file(self.path)[:16]}"
        self.n_ctx = n_ctx
        self._llm = llama_cpp.Llama(model_path=str(self.path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                                    logits_all=True, seed=0, verbose=False)
        self._file = Path(cache_root) / "fluency" / f"{digest_obj([self.name, n_ctx])[:16]}.json"
        self._cache: dict[str, float] = {}
        if self._file.exists():
            try:
                got = read_json(self._file)
                if got.get("model") == self.name and got.get("checksum") == digest_obj(got.get("values")):
                    self._cache = {k: float(v) for k, v in got["values"].items()}
            except Exception:  # noqa: BLE001  a damaged cache is recomputed, never used
                self._cache = {}

    def _one(self, text: str) -> float:
        tokens = self._llm.tokenize(text.encode("utf-8"), add_bos=True)[: self.n_ctx]
        self._llm.reset()
        self._llm.eval(tokens)
        return perplexity_from_logits(np.asarray(self._llm.scores[: len(tokens)]), tokens)

    def perplexities(self, texts: Sequence[str]) -> list[float]:
        with _lock:
            missing = {text_digest(t): t for t in texts if text_digest(t) not in self._cache}
            # ~3 s per text on 2 busy cores: a NovBench set's items take minutes the first time.
            bar = Progress(f"NovBench clarity_fs ({self.path.name})", len(missing), len(missing) > 3, unit="texts", verb="scored")
            try:
                for d, t in sorted(missing.items()):
                    self._cache[d] = round(self._one(t), 6)
                    bar.advance()
            finally:
                bar.close()
            if missing:
                values = dict(sorted(self._cache.items()))
                write_json(self._file, {"model": self.name, "values": values, "checksum": digest_obj(values)})
            return [self._cache[text_digest(t)] for t in texts]
