"""Reader for the markdown review export (one paper per file).

Layout: `# <title>`, header bullets (`- Avg Score:`, `- Decision:`, `- Scores:`), `## Abstract`,
`## Human Reviews`, then one `## Human Reviewer <n>` block per review whose `### <Field>`
subsections hold rating, confidence, summary, strengths, weaknesses, questions, soundness,
presentation and contribution. A review ends at the next reviewer heading; a trailing `---`
rule belongs to the layout, not to the last field.
"""

from __future__ import annotations

import re
from pathlib import Path

from ._records import Paper, RecordProblem, Review, parse_score

__all__ = ["parse_markdown_reviews", "REQUIRED_REVIEW_FIELDS"]

REQUIRED_REVIEW_FIELDS = ("rating", "contribution", "strengths", "weaknesses")
_REVIEWER = re.compile(r"^## (Human Reviewer \S+|Reviewer \S+)\s*$", re.M)
_H2 = re.compile(r"^## (.+?)\s*$", re.M)
_H3 = re.compile(r"^### (.+?)\s*$", re.M)
_BULLET = re.compile(r"^- ([A-Za-z ]+):\s*(.*?)\s*$")
_RULE = re.compile(r"\n\s*---\s*$")


def _sections(text: str, heading: re.Pattern[str]) -> list[tuple[str, str]]:
    marks = list(heading.finditer(text))
    out = []
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        out.append((m.group(1).strip(), text[m.end() : end]))
    return out


def _clean(body: str) -> str:
    return _RULE.sub("", body.strip("\n")).strip()


def parse_markdown_reviews(path: Path, *, label: str | None = None) -> tuple[Paper | None, list[RecordProblem]]:
    """Parse one exported review file. Returns the paper (None if unusable) and every problem found.

    A review with a bad or missing required field is dropped with a problem naming it; a file
    without a title or without any usable review yields no paper.
    """
    fname = label or Path(path).as_posix()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return None, [
            RecordProblem(fname, "file", "encoding", f"not UTF-8 text ({exc.reason} at byte {exc.start})", "paper-excluded")
        ]
    text = text.replace("\r\n", "\n")
    problems: list[RecordProblem] = []
    first = text.lstrip("\n").split("\n", 1)[0]
    if not first.startswith("# ") or not first[2:].strip():
        return None, [RecordProblem(fname, "paper", "title", "the first line must be '# <title>'", "paper-excluded")]
    title = first[2:].strip()

    head_end = _H2.search(text)
    header = text[: head_end.start()] if head_end else text
    bullets: dict[str, str] = {}
    for line in header.splitlines():
        m = _BULLET.match(line.strip())
        if m:
            bullets[m.group(1).strip().lower()] = m.group(2)
    avg, err = parse_score(bullets.get("avg score"))
    if err:
        problems.append(RecordProblem(fname, "paper", "Avg Score", err, "field-missing"))
    decision = bullets.get("decision") or None
    if decision is None:
        problems.append(RecordProblem(fname, "paper", "Decision", "no '- Decision:' line: decision unknown", "field-missing"))

    h2 = dict((name.lower(), body) for name, body in _sections(text, _H2) if not _REVIEWER.match(f"## {name}"))
    abstract = _clean(h2.get("abstract", ""))
    if not abstract:
        problems.append(RecordProblem(fname, "paper", "Abstract", "missing or empty '## Abstract' section", "field-missing"))

    reviews: list[Review] = []
    blocks = _sections(text, _REVIEWER)
    for name, body in blocks:
        fields = {k.lower(): _clean(v) for k, v in _sections(body, _H3)}
        bad = False
        scores: dict[str, float | None] = {}
        for key in ("rating", "confidence", "soundness", "presentation", "contribution"):
            raw = fields.get("rating number", fields.get("rating")) if key == "rating" else fields.get(key)
            value, err = parse_score(raw)
            required = key in REQUIRED_REVIEW_FIELDS
            if err or (value is None and required):
                reason = err or f"missing '### {key.capitalize()}' value"
                problems.append(RecordProblem(fname, name, key.capitalize(), reason, "review-excluded" if required else "field-missing"))
                bad = bad or required
            scores[key] = value
        for key in ("strengths", "weaknesses"):
            if key not in fields:
                problems.append(RecordProblem(fname, name, key.capitalize(), f"missing '### {key.capitalize()}' section"))
                bad = True
        if bad:
            continue
        reviews.append(
            Review(
                reviewer=name,
                rating=scores["rating"],
                confidence=scores["confidence"],
                soundness=scores["soundness"],
                presentation=scores["presentation"],
                contribution=scores["contribution"],
                summary=fields.get("summary", ""),
                strengths=fields.get("strengths", ""),
                weaknesses=fields.get("weaknesses", ""),
                questions=fields.get("questions", ""),
            )
        )
    if not reviews:
        problems.append(RecordProblem(fname, "paper", "reviews", "no usable '## Human Reviewer <n>' section", "paper-excluded"))
        return None, problems
    paper = Paper(
        title=title,
        abstract=abstract,
        area=None,
        decision=decision,
        avg_score=avg,
        source_file=fname,
        source_format="markdown",
        source_record=Path(path).name,
        reviews=tuple(reviews),
    )
    return paper, problems
