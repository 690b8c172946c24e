"""Prompt templates (package data under novelty_audit/prompts/), rendering, and the verdict parser.

A rendered prompt is a list of chat messages; its canonical bytes enter the call key, and the template
files' bytes enter the judge's `prompt_digest`, so changing one character of wording is a different call.

A template is named either by a packaged name (`reference-v1` → `novelty_audit/prompts/pairwise-reference-v1.txt`)
or by a project file (`prompts/my-judge.jinja2`, `prompts/mine.txt`: a ref holding "/" or ending in .txt/.jinja2/
.j2), resolved relative to the project root (the working directory of `dvc repro` and the CLI). A project file's
path and sha256 are a config knob (`prompt_files`), and it is an input of the judge stage.

The parser reads a verdict only where the output contract puts it (the last non-empty line, or the whole
answer as one JSON object) and never from text that names both labels, so an answer that echoes the
format example, or hedges between the ideas, is `invalid` rather than a vote.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import orjson

from ..artifacts import digest_bytes
from ..errors import ConfigError
from ..templates import TemplateSource, is_template_file, packaged, packaged_names
from ..templates import resolve_template as _resolve
from ._base import NEGATIVE, POSITIVE, Idea
from ._guard import Guard

__all__ = [
    "JUDGE_TEMPLATE_PREFIXES",
    "LABELS",
    "Parsed",
    "PromptTemplate",
    "TemplateSource",
    "is_template_file",
    "load_prompt",
    "parse_verdict",
    "prompt_names",
    "render_idea",
    "resolve_template",
    "template_knobs",
]

LABELS = ("A", "B")
FORMAT_VERSION = "v2"
"""Output contracts `format-<reasoning>-v2.txt`. v1 showed `{"answer": "A"}  (or {"answer": "B"})`, which a
model could echo and an older parser read as a vote; v2 shows a placeholder that is no verdict."""
EXAMPLE_VERSION = "v1"
"""Verdict forms `verdict-<task>-v1.txt`, put into the contract at `{{verdict_example}}`."""
JUDGE_TEMPLATE_PREFIXES = ("pairwise-", "pointwise-", "format-", "verdict-", "guard-", "agent-")
"""Prompt files that make up a judge prompt (other stages' prompts share the folder, not the judge's identity)."""


def _read(name: str) -> bytes:
    return packaged(name, hint=f"known: {', '.join(prompt_names())}").data


_REQUIRED: dict[str, tuple[str, ...]] = {"pairwise": ("idea_a", "idea_b"), "pointwise": ("idea",)}
"""A judge template that never shows the idea(s) cannot be a judge prompt: refused when loaded."""
TASK_VARIABLES: dict[str, tuple[str, ...]] = {
    "pairwise": ("idea_a", "idea_b", "evidence", "answer_format"),
    "pointwise": ("idea", "evidence", "answer_format"),
}
"""The variables a judge template may use, per task (the packaged placeholders)."""


def resolve_template(ref: str, *, packaged: str | None = None, root: str | Path | None = None) -> TemplateSource:
    """The judge template `ref` names (`novelty_audit.templates.resolve_template`), a missing packaged one
    listing the judge templates that exist."""
    return _resolve(ref, packaged=packaged, root=root, hint=f"known: {', '.join(prompt_names())}")


def template_knobs(templates: Mapping[str, Any] | Collection[Any]) -> dict[str, Any]:
    """`{"prompt_files": {path: sha256}}` over a judge's templates (PromptTemplate or TemplateSource); empty
    when all are packaged, so judges without a template file keep their config digest."""
    items = templates.values() if isinstance(templates, Mapping) else templates
    files: dict[str, str] = {}
    for t in items:
        files.update(t.knob().get("prompt_files", {}))
    return {"prompt_files": dict(sorted(files.items()))} if files else {}


def prompt_names() -> list[str]:
    """Judge templates shipped with the package (task-variant-version); other stages' prompts are not listed."""
    return packaged_names("pairwise-", "pointwise-")


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
    """sha256 over the exact template, format and verdict-form file bytes."""
    source: TemplateSource | None = None
    """The project file this template was read from; None for a packaged template."""

    @property
    def path(self) -> str | None:
        """The project template file (an input of the judge stage), or None."""
        return self.source.path if self.source is not None else None

    def knob(self) -> dict[str, Any]:
        return self.source.knob() if self.source is not None else {}

    def _evidence(self, evidence: tuple[str, ...] | None) -> str:
        if not evidence:
            return ""
        names = ["Idea A", "Idea B"] if self.task == "pairwise" else ["the idea"]
        blocks = [f"Related prior work for {n}:\n{e}\n" for n, e in zip(names, evidence)]
        return "\n" + "\n".join(blocks)

    def render(
        self, shown: tuple[Idea, ...], *, form: str = "text", evidence: tuple[str, ...] | None = None, guard: Guard | None = None
    ) -> list[dict[str, str]]:
        """Chat messages for one call. `evidence` holds one related-work block per shown idea (or None);
        `guard` applies the judge's injection mitigations (judges/_guard.py) to each idea and the system text."""
        guard = guard if guard is not None and guard.on else None
        if self.source is not None:
            return self._render_file(shown, form, evidence, guard)
        user = self.user.replace("{{answer_format}}", self.answer_format)
        user = user.replace("{{evidence}}", self._evidence(evidence))
        if self.task == "pairwise":
            user = user.replace("{{idea_a}}", render_idea(shown[0], form, guard)).replace("{{idea_b}}", render_idea(shown[1], form, guard))
        else:
            user = user.replace("{{idea}}", render_idea(shown[0], form, guard))
        msgs = [{"role": "user", "content": user}]
        system = guard.system(self.system) if guard is not None else self.system
        if system:
            msgs.insert(0, {"role": "system", "content": system})
        return msgs

    def _render_file(self, shown: tuple[Idea, ...], form: str, evidence: tuple[str, ...] | None, guard: Guard | None) -> list[dict[str, str]]:
        """A project file's sections with the same values the packaged placeholders get (both sections are
        filled, so a file may put {{answer_format}} in its system text)."""
        assert self.source is not None
        values = {"answer_format": self.answer_format, "evidence": self._evidence(evidence)}
        if self.task == "pairwise":
            values.update(idea_a=render_idea(shown[0], form, guard), idea_b=render_idea(shown[1], form, guard))
        else:
            values["idea"] = render_idea(shown[0], form, guard)
        msgs = [{"role": "user", "content": self.source.render(values, self.user)}]
        system = self.source.render(values, self.system) if self.system else ""
        system = guard.system(system) if guard is not None else system
        if system:
            msgs.insert(0, {"role": "system", "content": system})
        return msgs


def render_idea(idea: Idea, form: str, guard: Guard | None = None) -> str:
    """`text`: the idea text as published. `plan`: the same content laid out as a research plan. With a
    `guard`, the idea text passes through its mitigations first (the plan's own lines are the harness's)."""
    text = guard.idea(idea.text, idea.text_digest) if guard is not None else idea.text
    if form == "text":
        return text
    if form == "plan":
        area = f"Area: {idea.area}\n" if idea.area else ""
        return f"Research plan\n{area}Proposal:\n{text}"
    raise ConfigError(f"unknown idea form '{form}'", hint="use text or plan")


def load_prompt(
    task: Literal["pairwise", "pointwise"], name: str, reasoning: Literal["brief", "none"] = "brief", *, root: str | Path | None = None
) -> PromptTemplate:
    """Load `prompts/<task>-<name>.txt` (or the project file `name`, see `resolve_template`), the output
    contract `prompts/format-<reasoning>-v2.txt` and the verdict form `prompts/verdict-<task>-v1.txt` shown in it.

    A project file is checked when loaded, before any call: it must have a [user] section, show the
    idea(s) of its task and use no variable but the task's placeholders (`TASK_VARIABLES`)."""
    src = resolve_template(name, packaged=f"{task}-{name}.txt", root=root)
    body = src.data
    fmt_name, example_name = f"format-{reasoning}-{FORMAT_VERSION}.txt", f"verdict-{task}-{EXAMPLE_VERSION}.txt"
    fmt = _read(fmt_name)
    example = _read(example_name)
    text = body.decode("utf-8")
    if "[user]" not in text:
        raise ConfigError(f"prompt {src.label} has no [user] section", hint="start the user text with a line [user] (and the system text, if any, with [system])")
    if src.path is not None:
        try:
            src.check(TASK_VARIABLES[task], required=_REQUIRED[task])
        except ConfigError as exc:
            # One file may serve as the pairwise and (by default) the pointwise template: say which use failed.
            raise ConfigError(f"{exc.message} (used as the {task} template)", hint=exc.hint) from None
    if "{{verdict_example}}" not in fmt.decode("utf-8"):
        raise ConfigError(f"prompt {fmt_name} has no {{{{verdict_example}}}} placeholder")
    head, user = text.split("[user]", 1)
    system = head.replace("[system]", "", 1).strip()
    answer_format = fmt.decode("utf-8").strip().replace("{{verdict_example}}", example.decode("utf-8").strip())
    if src.jinja:
        # A trial render now, with and without evidence, so a template that fails only when filled in
        # (attribute access, a refused operation) fails when the judge is built rather than mid-run.
        for evidence in ("", "\nRelated prior work: ..."):
            sample = {v: f"<{v}>" for v in TASK_VARIABLES[task]} | {"evidence": evidence, "answer_format": answer_format}
            src.render(sample, head)
            src.render(sample, user)
    return PromptTemplate(
        task=task,
        name=name,
        reasoning=reasoning,
        system=system,
        user=user.strip("\n"),
        answer_format=answer_format,
        digest=digest_bytes(body + b"\0" + fmt + b"\0" + example),
        source=src if src.path is not None else None,
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
_FENCE = re.compile(r"^\s*```[\w-]*\s*$")
_ANSWER_LINE = re.compile(r"^[\W_]*(?:my\s+)?(?:final\s+)?(?:answer|verdict)[*_\s]*[:=][*_\s]*(.*?)[\s.*_`]*$", re.IGNORECASE)
# What may stand around the one JSON object of the verdict line: a lead-in such as "Final answer:" and
# markup, but no words (an echoed "(or {...})" or "A or B" must not pass).
_LEAD = re.compile(r"^[\W_]*(?:(?:my\s+)?(?:final\s+)?(?:answer|verdict)[\W_]*)?$", re.IGNORECASE)
_TRAIL = re.compile(r"^[\s.*_`]*$")
_BARE_LEAD = re.compile(r"^[\W_]*(?:my\s+)?(?:final\s+)?(?:answer|verdict)[*_\s]*[:=][*_\s]*$", re.IGNORECASE)
"""A line that is only a lead-in, `Answer:` with nothing after it: the label may follow on the next line."""


def _value_to_choice(task: str, value: object) -> int | str | None:
    if isinstance(value, bool) and task == "pointwise":
        return POSITIVE if value else NEGATIVE
    if not isinstance(value, str):
        return None
    v = value.strip().strip(".*`\"'“”‘’").strip().lower()
    v = re.sub(r"^idea\s+", "", v)
    if task == "pairwise":
        return {"a": 0, "b": 1}.get(v)
    return {"yes": POSITIVE, "no": NEGATIVE, "novel": POSITIVE, "not novel": NEGATIVE, "positive": POSITIVE, "negative": NEGATIVE}.get(v)


_QUOTES = "\"'“”‘’`*_"
_LEADING_LABEL = {
    "pairwise": re.compile(rf"^[{_QUOTES}]*(?:idea\s+)?[{_QUOTES}]*([AB])[{_QUOTES}]*(?:[.,;:!)]+\s*|\s+|$)(.*)$", re.IGNORECASE),
    "pointwise": re.compile(rf"^[{_QUOTES}]*(yes|no|not novel|novel|positive|negative)[{_QUOTES}]*(?:[.,;:!)]+\s*|\s+|$)(.*)$", re.IGNORECASE),
}
# What in the rest of an answer could be another vote (or an echoed "A or B" / "<A|B>" format): any label as a word.
_OTHER_VOTE = {
    "pairwise": re.compile(r"\b[AB]\b|[<>{}\[\]|/]"),
    "pointwise": re.compile(r"\b(?:yes|no|not|novel|positive|negative)\b|[<>{}\[\]|/]", re.IGNORECASE),
}


def _leading_label(task: str, value: str) -> int | str | None:
    """The label an answer value starts with, when nothing after it could be another vote: `"B".`, ` "A"`,
    `"B". This answer is the most novel…`, `"B" (a.k.a. B)` (what a small base model writes after `Answer:`). None
    otherwise: a placeholder or an echoed format (`A or B`, `<A|B>`, `"A" (or "B")`) has a second label or its
    markup."""
    m = _LEADING_LABEL[task].match(value.strip())
    if m is None:
        return None
    label = m.group(1)
    if task == "pairwise" and label.islower() and m.group(2):
        return None  # "a new method…": the article, not the label
    choice = _value_to_choice(task, label)
    # The same label said again (`"B" (a.k.a. B)`) is no second vote; another label or any markup is.
    if any(_value_to_choice(task, o.group(0)) != choice for o in _OTHER_VOTE[task].finditer(m.group(2))):
        return None
    return choice


def _loads(candidate: str) -> object:
    try:
        return orjson.loads(candidate)
    except orjson.JSONDecodeError:
        # Common near-JSON: single quotes, trailing commas.
        fixed = re.sub(r",\s*}", "}", candidate.replace("'", '"'))
        return orjson.loads(fixed)


def _object_choices(task: str, obj: object, notes: list[str]) -> list[int | str] | None:
    """The choices a parsed JSON object states under verdict keys; None when it is not a verdict object."""
    if not isinstance(obj, dict):
        return None
    keys = [k for k in _KEYS if k in obj]
    if not keys:
        return None
    choices = []
    for key in keys:
        choice = _value_to_choice(task, obj[key])
        if choice is None:
            notes.append(f"key {key!r} has unusable value {str(obj[key])[:40]!r}")
        else:
            choices.append(choice)
    return choices


def _stated_choices(task: str, text: str) -> set[int | str]:
    """Every verdict the answer states anywhere: in JSON objects with a verdict key and in `answer: X` lines."""
    found: set[int | str] = set()
    for m in _OBJ.finditer(text):
        try:
            found.update(_object_choices(task, _loads(m.group(0)), []) or [])
        except orjson.JSONDecodeError:
            continue
    for line in text.splitlines():
        m = _ANSWER_LINE.match(line.strip())
        if m and not m.group(1).lstrip().startswith("{"):
            choice = _value_to_choice(task, m.group(1))
            if choice is not None:
                found.add(choice)
    return found


def _whole_object(task: str, text: str, notes: list[str]) -> tuple[bool, int | str | None]:
    """(the answer is one JSON object, its choice). Code fences around it are tolerated."""
    lines = [ln for ln in text.strip().splitlines() if not _FENCE.match(ln)]
    body = "\n".join(lines).strip()
    if not (body.startswith("{") and body.endswith("}")):
        return False, None
    try:
        obj = _loads(body)
    except orjson.JSONDecodeError:
        return False, None
    choices = _object_choices(task, obj, notes)
    if choices is None:
        notes.append(f"JSON object without a verdict key: {body[:60]!r}")
        return True, None
    return True, (choices[0] if len(set(choices)) == 1 else None)


def _last_line(task: str, text: str, notes: list[str]) -> int | str | None:
    """The verdict on the last non-empty line: exactly one JSON object (after an optional lead-in such as
    `Final answer:`), or an `answer: X` line."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not _FENCE.match(ln)]
    if not lines:
        return None
    line = lines[-1]
    objs = list(_OBJ.finditer(line))
    if len(objs) > 1:
        notes.append(f"several JSON objects on the last line: {line[:80]!r}")
        return None
    if len(objs) == 1:
        m = objs[0]
        if not (_LEAD.match(line[: m.start()]) and _TRAIL.match(line[m.end():])):
            notes.append(f"the last line holds more than the verdict object: {line[:80]!r}")
            return None
        try:
            obj = _loads(m.group(0))
        except orjson.JSONDecodeError as exc:
            notes.append(f"unparseable JSON {m.group(0)[:60]!r}: {exc}")
            return None
        choices = _object_choices(task, obj, notes)
        if choices is None:
            notes.append(f"JSON object without a verdict key: {m.group(0)[:60]!r}")
            return None
        return choices[0] if len(set(choices)) == 1 else None
    m = _ANSWER_LINE.match(line)
    if m:
        choice = _value_to_choice(task, m.group(1))
        if choice is None:
            choice = _leading_label(task, m.group(1))
        if choice is None:
            notes.append(f"answer line with unusable value {m.group(1)[:40]!r}")
        return choice
    if len(lines) == 1:  # the whole answer is one label, quoted or punctuated: `"B".`
        m = _LEADING_LABEL[task].match(line)
        if m and not m.group(2):
            return _value_to_choice(task, m.group(1))
    return None


def _label_below_lead_in(task: str, text: str) -> str:
    """`text` with a bare lead-in line (`Answer:`) joined to the last non-empty line when that line is the
    label below it: a base model continuing a completions prompt that ends with "Answer:" often starts its
    continuation with a newline, so "Answer:\\nA." means "Answer: A.". Joined only when the last line by itself
    holds no verdict and the answer is not one JSON object, so no answer that parsed before reads otherwise."""
    lines = text.splitlines()
    kept = [i for i, ln in enumerate(lines) if ln.strip() and not _FENCE.match(ln)]
    if len(kept) < 2:
        return text
    lead, last = lines[kept[-2]].strip(), lines[kept[-1]].strip()
    if not _BARE_LEAD.match(lead) or _OBJ.search(last) or _ANSWER_LINE.match(last) or _whole_object(task, text, [])[0]:
        return text
    return "\n".join([*lines[: kept[-2]], f"{lead} {last}"])


def parse_verdict(task: Literal["pairwise", "pointwise"], text: str | None) -> Parsed:
    """Read the verdict where the output contract puts it: the whole answer as one JSON object, or the last
    non-empty line (one JSON object, or `answer: X`). Tolerated: code fences, single quotes, trailing
    commas, `Idea B`, a lead-in such as `Final answer:`, and the label on the last line below a bare
    `Answer:` line (blank lines between allowed: what a base model writes after a completions prompt).

    Never guesses: an answer that states both labels anywhere (e.g. an echoed `{"answer": "A"} (or
    {"answer": "B"})`), a placeholder such as `<A or B>`, or a verdict anywhere but in the contract's
    position is `invalid` with a note saying why; a text that declines without a verdict is a `refusal`.
    (Whether an answer without a verdict was cut at max_tokens, outcome `truncated`, is the engine's call:
    it knows the finish reason.)
    """
    if not text or not text.strip():
        return Parsed("invalid", None, "empty response")
    notes: list[str] = []
    text = _label_below_lead_in(task, text)
    stated = _stated_choices(task, text)
    if len(stated) > 1:
        return Parsed("invalid", None, "the answer states both labels; no single verdict")
    whole, choice = _whole_object(task, text, notes)
    if not whole:
        choice = _last_line(task, text, notes)
    if choice is not None:
        return Parsed("valid", choice)
    if _REFUSAL.search(text):
        return Parsed("refusal", None, "declined without a verdict")
    notes.append("no verdict in the contract's position (last line or a single JSON object)")
    return Parsed("invalid", None, "; ".join(notes))
