"""Prompt templates (package data under novelty_audit/prompts/), rendering, and the tolerant verdict parser.

A rendered prompt is a list of chat messages; its canonical bytes enter the call key, and the template
files' bytes enter the judge's `prompt_digest`, so changing one character of wording is a different call.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources
from typing import Literal

import orjson

from ..artifacts import digest_bytes
from ..errors import ConfigError
from ._base import NEGATIVE, POSITIVE, Idea

__all__ = ["LABELS", "Parsed", "PromptTemplate", "load_prompt", "parse_verdict", "prompt_names", "render_idea"]

LABELS = ("A", "B")
_EXAMPLES = {"pairwise": '{"answer": "A"}  (or {"answer": "B"})', "pointwise": '{"answer": "yes"}  (or {"answer": "no"})'}


def _read(name: str) -> bytes:
    try:
        return resources.files("novelty_audit").joinpath("prompts", name).read_bytes()
    except FileNotFoundError:
        raise ConfigError(
            f"no prompt template novelty_audit/prompts/{name}",
            hint=f"known: {', '.join(prompt_names())}",
        ) from None


def prompt_names() -> list[str]:
    """Judge templates shipped with the package (task-variant-version); other stages' prompts are not listed."""
    root = resources.files("novelty_audit").joinpath("prompts")
    return sorted(p.name[: -len(".txt")] for p in root.iterdir() if p.name.endswith(".txt") and p.name.startswith(("pairwise-", "pointwise-")))


@dataclass(frozen=True)
class PromptTemplate:
    """One task template with its output contract."""

    task: Literal["pairwise", "pointwise"]
    name: str
    """Variant with version, e.g. reference-v1."""
    reasoning: Literal["brief", "none"]
    system: str
    user: str
    answer_format: str
    digest: str
    """sha256 over the exact template and format file bytes."""

    def render(self, shown: tuple[Idea, ...], *, form: str = "text", evidence: tuple[str, ...] | None = None) -> list[dict[str, str]]:
        """Chat messages for one call. `evidence` holds one related-work block per shown idea (or None)."""
        user = self.user.replace("{{answer_format}}", self.answer_format)
        if evidence:
            names = ["Idea A", "Idea B"] if self.task == "pairwise" else ["the idea"]
            blocks = [f"Related prior work for {n}:\n{e}\n" for n, e in zip(names, evidence)]
            user = user.replace("{{evidence}}", "\n" + "\n".join(blocks))
        else:
            user = user.replace("{{evidence}}", "")
        if self.task == "pairwise":
            user = user.replace("{{idea_a}}", render_idea(shown[0], form)).replace("{{idea_b}}", render_idea(shown[1], form))
        else:
            user = user.replace("{{idea}}", render_idea(shown[0], form))
        msgs = [{"role": "user", "content": user}]
        if self.system:
            msgs.insert(0, {"role": "system", "content": self.system})
        return msgs


def render_idea(idea: Idea, form: str) -> str:
    """`text`: the idea text as published. `plan`: the same content laid out as a research plan."""
    if form == "text":
        return idea.text
    if form == "plan":
        area = f"Area: {idea.area}\n" if idea.area else ""
        return f"Research plan\n{area}Proposal:\n{idea.text}"
    raise ConfigError(f"unknown idea form '{form}'", hint="use text or plan")


def load_prompt(task: Literal["pairwise", "pointwise"], name: str, reasoning: Literal["brief", "none"] = "brief") -> PromptTemplate:
    """Load `prompts/<task>-<name>.txt` and the output contract `prompts/format-<reasoning>-v1.txt`."""
    body = _read(f"{task}-{name}.txt")
    fmt = _read(f"format-{reasoning}-v1.txt")
    text = body.decode("utf-8")
    if "[user]" not in text:
        raise ConfigError(f"prompt {task}-{name}.txt has no [user] section")
    head, user = text.split("[user]", 1)
    system = head.replace("[system]", "", 1).strip()
    answer_format = fmt.decode("utf-8").strip().replace("{{verdict_example}}", _EXAMPLES[task])
    return PromptTemplate(
        task=task,
        name=name,
        reasoning=reasoning,
        system=system,
        user=user.strip("\n"),
        answer_format=answer_format,
        digest=digest_bytes(body + b"\0" + fmt),
    )


# -- parsing -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Parsed:
    """A parsed answer: a choice (0/1 for pairwise, POSITIVE/NEGATIVE for pointwise) or a note on what failed."""

    outcome: Literal["valid", "invalid", "refusal"]
    choice: int | str | None
    note: str | None = None


_REFUSAL = re.compile(
    r"\b(I can(?:no|')t (?:help|assist|comply|do that|provide)|I(?:'m| am) (?:not able|unable) to (?:help|assist|comply|evaluate)|"
    r"I (?:must|have to) (?:decline|refuse)|I won't (?:help|assist))",
    re.IGNORECASE,
)
_OBJ = re.compile(r"\{[^{}]*\}", re.DOTALL)
_KEYS = ("answer", "verdict", "more_novel", "novel", "choice")


def _value_to_choice(task: str, value: object) -> int | str | None:
    if isinstance(value, bool) and task == "pointwise":
        return POSITIVE if value else NEGATIVE
    if not isinstance(value, str):
        return None
    v = value.strip().strip(".").strip().lower()
    v = re.sub(r"^idea\s+", "", v)
    if task == "pairwise":
        return {"a": 0, "b": 1}.get(v)
    return {"yes": POSITIVE, "no": NEGATIVE, "novel": POSITIVE, "not novel": NEGATIVE, "positive": POSITIVE, "negative": NEGATIVE}.get(v)


def _loads(candidate: str) -> object:
    try:
        return orjson.loads(candidate)
    except orjson.JSONDecodeError:
        # Common near-JSON: single quotes, trailing commas.
        fixed = re.sub(r",\s*}", "}", candidate.replace("'", '"'))
        return orjson.loads(fixed)


def parse_verdict(task: Literal["pairwise", "pointwise"], text: str | None) -> Parsed:
    """Read the verdict from the last JSON object in `text`; fall back to an `answer: X` line.

    Never guesses: when no verdict can be read the outcome is `invalid` with a note saying why; a text
    that declines without any verdict is a `refusal`.
    """
    if not text or not text.strip():
        return Parsed("invalid", None, "empty response")
    notes = []
    for m in reversed(list(_OBJ.finditer(text))):
        try:
            obj = _loads(m.group(0))
        except orjson.JSONDecodeError as exc:
            notes.append(f"unparseable JSON {m.group(0)[:60]!r}: {exc}")
            continue
        if not isinstance(obj, dict):
            continue
        for key in _KEYS:
            if key in obj:
                choice = _value_to_choice(task, obj[key])
                if choice is not None:
                    return Parsed("valid", choice)
                notes.append(f"key {key!r} has unusable value {str(obj[key])[:40]!r}")
                break
        else:
            notes.append(f"JSON object without a verdict key: {m.group(0)[:60]!r}")
    line = re.search(r"(?im)^\W*(?:final\s+)?(?:answer|verdict)\W*[:=]\s*\W*(idea\s+)?([A-Za-z ]+?)\W*$", text)
    if line:
        choice = _value_to_choice(task, line.group(2))
        if choice is not None:
            return Parsed("valid", choice, "; ".join(notes) or None)
    if _REFUSAL.search(text):
        return Parsed("refusal", None, "declined without a verdict")
    notes.append("no verdict found")
    return Parsed("invalid", None, "; ".join(notes))
