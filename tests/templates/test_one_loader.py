"""One loader reads every prompt family's template; the bytes each family puts into its call keys are pinned."""

from __future__ import annotations

from pathlib import Path

import pytest

from novelty_audit.artifacts import canonical_bytes, digest_bytes
from novelty_audit.errors import ConfigError
from novelty_audit.judges import Idea, load_prompt, prompt_names
from novelty_audit.templates import packaged, packaged_file, packaged_names, packaged_text, resolve_template

# sha256 of the template bytes (or, for judges, their prompt digest) as they were before one loader served all.
JUDGE_DIGESTS = {
    ("pairwise", "reference-v1", "brief"): "057240adbb279300c7e1f09234b6bedb4b228e28f384283ba73dd365f9b01698",
    ("pairwise", "reference-v1", "none"): "77c5b557e15f5fd8d778722241ba4735b8cb4e2cf681f506e04162f3ded7d463",
    ("pointwise", "reference-v1", "brief"): "fe5f7af22d7698a723e9f8c5178e48e5282593aff6eaa0804a99e580786d5955",
    ("pointwise", "reference-v1", "none"): "7fb239e9c2d63d6120b0517b6e1e98e48d8cc1917526a6b3ea0ab66c69392ab0",
    ("pairwise", "p3-v1", "brief"): "f56055b23f88a7e838074a1027c49751bdbfa45b83743d6a5cdedf790989e368",
}
FILE_DIGESTS = {
    "signals-extract-v1": "1672c04753b77dfc53c2c2ef349fa2ea1e043023307f8bab0c74eb24fbb53fc7",
    "pools-strip-v1": "c7bb0af114a7fb934d4b4edcc91e16ccb99b2b28a71e0c85b6820ecf34fea2e9",
    "pools-generate-v1": "8706d64676ab75c1aab18fa911f57c918436769e9ba7208c2c49980862f70175",
    "review-zero-v1": "37af727e63aebbe981c0f14ebe93193ce2c86eed80bd8903809de1396f19d921",
    "review-few-v1": "44768709e499f5f0e6f6d7c1ca80b007e0e4e08f3dd9d1e6de3e36fea9e3ed13",
    "review-rag-v1": "037d0ae0da3823b983e3859a41535122a204599d3d21cf74aa2222b26e3e3f39",
}


@pytest.mark.parametrize("task,name,reasoning", sorted(JUDGE_DIGESTS))
def test_judge_prompt_digests_are_unchanged(task: str, name: str, reasoning: str) -> None:
    assert load_prompt(task, name, reasoning).digest == JUDGE_DIGESTS[(task, name, reasoning)]  # type: ignore[arg-type]


@pytest.mark.parametrize("stem", sorted(FILE_DIGESTS))
def test_every_other_familys_template_bytes_are_unchanged(stem: str) -> None:
    src = packaged(f"{stem}.txt")
    assert src.sha256 == FILE_DIGESTS[stem] == digest_bytes(packaged_file(f"{stem}.txt").read_bytes())
    assert packaged_text(stem).encode("utf-8") == src.data and src.path is None and src.knob() == {}


def test_each_family_reads_its_template_through_the_one_loader() -> None:
    from novelty_audit.novbench._genbase import load_template
    from novelty_audit.signals import load_text_prompt, prompt_path

    path, text = load_template("gen", "zero", "v1")
    assert path == packaged_file("review-zero-v1.txt") and digest_bytes(text.encode("utf-8")) == FILE_DIGESTS["review-zero-v1"]
    assert load_text_prompt("signals-extract-v1") == packaged_text("signals-extract-v1")
    assert prompt_path("pools-strip-v1") == packaged_file("pools-strip-v1.txt")


def test_a_rendered_judge_prompt_has_the_pinned_bytes() -> None:
    t = load_prompt("pairwise", "reference-v1")
    ideas = tuple(Idea(idea_id=f"i{n}", title=f"T{n}", text=f"Idea text {n}.", text_digest=f"d{n}") for n in (1, 2))
    assert digest_bytes(canonical_bytes(t.render(ideas))) == RENDERED_REFERENCE


RENDERED_REFERENCE = "d84a8da6d123b8ab376092e55ddd8674f0f1ac85cfa3484053ea45aae43fdea4"


def test_names_list_what_is_packaged_and_a_missing_template_names_its_file(tmp_path: Path) -> None:
    assert prompt_names() == packaged_names("pairwise-", "pointwise-") and "pairwise-reference-v1" in prompt_names()
    assert {"signals-extract-v1", "review-zero-v1", "format-brief-v2"} <= set(packaged_names())
    with pytest.raises(ConfigError, match=r"no prompt template novelty_audit/prompts/nope-v9\.txt"):
        packaged("nope-v9.txt")
    with pytest.raises(ConfigError, match=r"signals\.llm: no such prompt") as err:
        packaged_file("nope-v9.txt", missing="signals.llm: no such prompt", hint="packaged: signals-extract-v1")
    assert err.value.hint == "packaged: signals-extract-v1"
    mine = tmp_path / "prompts" / "mine.txt"
    mine.parent.mkdir()
    mine.write_bytes(b"[user]\r\n{{idea}}\r\n")  # bytes as written, no newline translation
    src = resolve_template("prompts/mine.txt", root=tmp_path)
    assert src.data == mine.read_bytes() and src.knob() == {"prompt_files": {"prompts/mine.txt": src.sha256}}
