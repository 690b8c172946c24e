"""Reader for OpenReview API v2 dumps: submissions fetched with `details=replies`.

A dump is the JSON body of `GET /notes?invitation=<venue>/-/Submission&details=replies`
(`{"notes": [...], "count": n}`) or a bare list of such notes. API v2 wraps every content
field as `{"value": ...}`. Replies are told apart by their invitation suffix:
`/-/Official_Review`, `/-/Decision`, `/-/Withdrawal`. The decision comes from the Decision
reply when there is one, else from the venue fields (`venueid` ending in
`Withdrawn_Submission` / `Rejected_Submission`, or a venue such as 'ICLR 2026 Poster').
Nothing here fetches anything: dumps are files pinned in params.yaml.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._records import Paper, RecordProblem, Review, parse_score

__all__ = ["parse_openreview_dump"]

_REVIEW_SCORES = ("rating", "confidence", "soundness", "presentation", "contribution")
_REQUIRED_SCORES = ("rating", "contribution")


def _value(content: dict[str, Any], key: str) -> Any:
    v = content.get(key)
    if isinstance(v, dict) and "value" in v:
        return v["value"]
    return v


def _kind(reply: dict[str, Any]) -> str | None:
    """The reply's kind from its invitation suffix; None when the invitations are not a list of strings."""
    invs = reply.get("invitations") or ([reply["invitation"]] if reply.get("invitation") else [])
    if not isinstance(invs, list) or not all(isinstance(inv, str) for inv in invs):
        return None
    for inv in invs:
        tail = str(inv).rsplit("/-/", 1)[-1]
        if tail in ("Official_Review", "Decision", "Withdrawal", "Desk_Rejection"):
            return tail
    return "other"


def _venue_decision(content: dict[str, Any]) -> str | None:
    venueid = str(_value(content, "venueid") or "")
    venue = _value(content, "venue")
    if venueid.endswith("Withdrawn_Submission"):
        return str(venue or "Withdrawn Submission")
    if venueid.endswith("Desk_Rejected_Submission"):
        return str(venue or "Desk Rejected Submission")
    if venueid.endswith("Rejected_Submission"):
        return str(venue or "Reject")
    return str(venue) if venue else None


def parse_openreview_dump(path: Path, *, label: str | None = None) -> tuple[list[Paper], list[RecordProblem]]:
    """Parse one dump into papers; every bad record becomes a problem naming file, note id and field."""
    fname = label or Path(path).as_posix()
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        return [], [RecordProblem(fname, "file", "json", f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", "paper-excluded")]
    except UnicodeDecodeError as exc:
        return [], [RecordProblem(fname, "file", "encoding", f"not UTF-8 text ({exc.reason})", "paper-excluded")]
    except RecursionError:
        return [], [RecordProblem(fname, "file", "json", "nested too deeply to read", "paper-excluded")]
    notes = data.get("notes") if isinstance(data, dict) else data
    if not isinstance(notes, list):
        return [], [RecordProblem(fname, "file", "notes", "expected {'notes': [...]} or a list of submission notes", "paper-excluded")]

    papers: list[Paper] = []
    problems: list[RecordProblem] = []
    for i, note in enumerate(notes):
        nid = str(note.get("id") or f"#{i}") if isinstance(note, dict) else f"#{i}"
        if not isinstance(note, dict) or not isinstance(note.get("content"), dict):
            problems.append(RecordProblem(fname, nid, "content", "a submission note needs a 'content' mapping", "paper-excluded"))
            continue
        content = note["content"]
        title = _value(content, "title")
        if not isinstance(title, str) or not title.strip():
            problems.append(RecordProblem(fname, nid, "title", f"missing or not a string: {title!r}", "paper-excluded"))
            continue
        abstract = _value(content, "abstract")
        if not isinstance(abstract, str) or not abstract.strip():
            problems.append(RecordProblem(fname, nid, "abstract", "missing or empty", "field-missing"))
            abstract = ""
        area = _value(content, "primary_area")
        if area is not None and not isinstance(area, str):
            problems.append(RecordProblem(fname, nid, "primary_area", f"not a string: {area!r}", "field-missing"))
            area = None
        area = area.replace("_", " ").strip() if isinstance(area, str) else None

        details = note.get("details") or {}
        replies = details.get("replies") if isinstance(details, dict) else None
        if not isinstance(replies, list):
            problems.append(
                RecordProblem(fname, nid, "details.replies", "missing: dump the submissions with details=replies", "paper-excluded")
            )
            continue
        decision = None
        reviews: list[Review] = []
        for j, reply in enumerate(replies):
            rid = str(reply.get("id") or f"{nid}/reply#{j}") if isinstance(reply, dict) else f"{nid}/reply#{j}"
            if not isinstance(reply, dict) or not isinstance(reply.get("content"), dict):
                problems.append(RecordProblem(fname, rid, "content", "a reply needs a 'content' mapping"))
                continue
            kind = _kind(reply)
            if kind is None:
                problems.append(RecordProblem(fname, rid, "invitations", "expected a list of invitation ids (strings)"))
                continue
            rc = reply["content"]
            if kind == "Decision":
                decision = _value(rc, "decision")
            elif kind == "Withdrawal" and decision is None:
                decision = "Withdrawn"
            elif kind == "Official_Review":
                review, probs = _review(fname, rid, reply)
                problems.extend(probs)
                if review is not None:
                    reviews.append(review)
        if decision is None:
            decision = _venue_decision(content)
        if decision is None:
            problems.append(RecordProblem(fname, nid, "decision", "no Decision reply and no venue: decision unknown", "field-missing"))
        if not reviews:
            problems.append(RecordProblem(fname, nid, "details.replies", "no usable Official_Review reply", "paper-excluded"))
            continue
        papers.append(
            Paper(
                title=" ".join(title.split()),
                abstract=abstract.strip(),
                area=area,
                decision=str(decision) if decision is not None else None,
                avg_score=None,
                source_file=fname,
                source_format="openreview-v2",
                source_record=nid,
                reviews=tuple(reviews),
            )
        )
    return papers, problems


def _review(fname: str, rid: str, reply: dict[str, Any]) -> tuple[Review | None, list[RecordProblem]]:
    rc = reply["content"]
    problems: list[RecordProblem] = []
    scores: dict[str, float | None] = {}
    bad = False
    for key in _REVIEW_SCORES:
        value, err = parse_score(_value(rc, key))
        required = key in _REQUIRED_SCORES
        if err or (value is None and required):
            problems.append(
                RecordProblem(fname, rid, key, err or "missing", "review-excluded" if required else "field-missing")
            )
            bad = bad or required
        scores[key] = value
    texts: dict[str, str] = {}
    for key in ("summary", "strengths", "weaknesses", "questions"):
        v = _value(rc, key)
        if v is None:
            v = ""
        if not isinstance(v, str):
            problems.append(RecordProblem(fname, rid, key, f"not a string: {type(v).__name__}"))
            bad = True
            v = ""
        texts[key] = v.strip()
    if not (texts["strengths"] or texts["weaknesses"]):
        problems.append(RecordProblem(fname, rid, "strengths/weaknesses", "both empty: nothing to extract from"))
        bad = True
    if bad:
        return None, problems
    sig = reply.get("signatures") or [rid]
    if not isinstance(sig, list) or not isinstance(sig[0], str):
        problems.append(RecordProblem(fname, rid, "signatures", f"expected a list of reviewer ids, found {sig!r:.80}"))
        return None, problems
    reviewer = sig[0].rsplit("/", 1)[-1]
    return Review(reviewer=reviewer, **scores, **texts), problems
