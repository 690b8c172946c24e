"""The judge interface, the inputs a judge sees and the verdict rows it returns.

How to add a backend
--------------------
1. Write a module `novelty_audit/judges/_<name>.py` (or a subpackage) with an args model and a factory::

       from ._base import Judge, JudgeContext, IdeaScore, ScoreJudge, parse_args
       from ..errors import require

       def yin(ctx: JudgeContext, **args) -> Judge:
           cfg = parse_args(YinArgs, args, ctx)          # typed, extra="forbid": typos fail early
           st = require("sentence_transformers", extra="embed")   # heavy import inside the factory
           return YinJudge(ctx, cfg, st)

   The factory gets the `JudgeContext` (judge name, seed, cache dir, refresh, prices, budget) and the
   judge's `args:` from params.yaml (`judge.judges.<name>: {backend: distance-yin, args: {...}}`):
   params name → backend name → factory, one hop; nothing else maps names.
2. Declare it once, by a kebab-case name, in the backend table (`_backends.py`)::

       "distance-yin": Lazy("novelty_audit.judges.distance._judge:yin", "novelty_audit.judges.distance._judge:YinArgs"),

   Nothing imports the module until the name is used; the args model is checked when params load, enabled or not.
3. Pick a base class:
   - `ScoreJudge`: the backend scores each idea on its own (distance judges). Implement
     `score_ideas({score key: idea}) -> {score key: IdeaScore}` and `config()` (the key digests the
     idea's text and title, never its id); the base turns scores into pairwise
     verdicts (larger score wins, equal → tie, a missing score → `none`) and pointwise predictions.
   - `VoteJudge` (in `_protocol.py`): the backend answers `Call`s (one item, one presentation order,
     one vote index) with a `CallResult`; the base runs orders × votes, maps each answer back to idea
     ids and aggregates. Controls, API LLMs and the GGUF judge use it. A backend may give slot
     probabilities (`CallResult.probs`, e.g. label logprobs) instead of a hard choice.
   - `Judge`: anything else; implement `judge(pairs, points) -> JudgeOutput` yourself.
4. `input_files()` lists files the judge reads (corpus, imported verdicts): they become stage inputs.
5. `config()` returns every knob that changes how the judge is asked (backend, model, prompt and its
   digest, sampling, votes, orders, reasoning, retrieval, corpus, ...). Its digest is each row's
   `config_digest`. What the judge *saw* goes in `evidence_parts` (idea text digests, retrieved
   evidence, corpus digest); their digest is `evidence_digest`.

Row schemas follow docs/design/tables.md (`PAIRWISE_SCHEMA`, `POINTWISE_SCHEMA`, `JUDGES_SCHEMA`).
"""

from __future__ import annotations

import statistics
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

import orjson
import polars as pl
from pydantic import BaseModel, ValidationError

from ..artifacts import code_digest, digest_bytes, digest_obj
from ..errors import ConfigError

__all__ = [
    "AGENT_COLUMNS",
    "CITATION_KEYS",
    "EVIDENCE_DOC_KEYS",
    "JUDGES_SCHEMA",
    "NEGATIVE",
    "NONE",
    "OUTCOMES",
    "PAIRWISE_SCHEMA",
    "PLANTED_SCHEMA",
    "PLANTED_TABLE",
    "POINTWISE_SCHEMA",
    "POSITIVE",
    "TIE",
    "UNSPECIFIED_REASON",
    "AgentEffort",
    "Idea",
    "IdeaScore",
    "Judge",
    "JudgeContext",
    "JudgeOutput",
    "PairItem",
    "Planted",
    "PointItem",
    "ScoreJudge",
    "evidence_digest",
    "evidence_docs_json",
    "judges_row",
    "pairwise_row",
    "parse_args",
    "pointwise_row",
]


TIE = "tie"
NONE = "none"
POSITIVE = "POSITIVE"
NEGATIVE = "NEGATIVE"
OUTCOMES = ("invalid", "refusal", "error", "truncated", "undecided")
"""Call outcomes that are not a valid vote. A vote list holds idea ids (or `tie` for score judges) or these.
`truncated`: the answer was cut at max_tokens before a verdict could be read (finish_reason length).
`undecided`: an agent reached its last round without a decision (judges/agents): its own outcome, never a vote."""
UNSPECIFIED_REASON = "unspecified"
"""The error reason of a failed call whose backend gave none (e.g. an imported `error` vote)."""

AGENT_COLUMNS: dict[str, pl.DataType] = {
    "n_rounds": pl.Int64,
    "n_queries": pl.Int64,
    "n_tokens": pl.Int64,
    "citations": pl.String,
    "evidence_truncated_chars": pl.Int64,
}
"""Effort and grounding of search agents (judges/agents), summed over a row's decisions; null for other judges.
`evidence_truncated_chars`: characters of fetched text the agent's prompt bounds cut (0: nothing was cut)."""
CITATION_KEYS = ("order", "vote", "title", "doc_id", "retrieved")
"""Keys of one `citations` entry (docs/design/tables.md)."""

PAIRWISE_SCHEMA: dict[str, pl.DataType] = {
    "dataset": pl.String,
    "judge": pl.String,
    "pair_id": pl.String,
    "idea_0": pl.String,
    "idea_1": pl.String,
    "gold_idea_id": pl.String,
    "verdict": pl.String,
    "verdict_forward": pl.String,
    "verdict_reverse": pl.String,
    "votes_forward": pl.List(pl.String),
    "votes_reverse": pl.List(pl.String),
    "n_valid": pl.Int64,
    "n_invalid": pl.Int64,
    "n_refusal": pl.Int64,
    "n_error": pl.Int64,
    "n_truncated": pl.Int64,
    "n_undecided": pl.Int64,
    "error_reasons": pl.List(pl.String),
    "score_0": pl.Float64,
    "score_1": pl.Float64,
    "config_digest": pl.String,
    "evidence_digest": pl.String,
    "evidence_parts": pl.String,
    "code_digest": pl.String,
    "call_digests": pl.List(pl.String),
    "provider_model": pl.String,
    "cost_usd": pl.Float64,
    "evidence_titles": pl.List(pl.String),
    "evidence_docs": pl.String,
    **AGENT_COLUMNS,
}
POINTWISE_SCHEMA: dict[str, pl.DataType] = {
    "dataset": pl.String,
    "judge": pl.String,
    "idea_id": pl.String,
    "gold_label": pl.String,
    "predicted": pl.String,
    "score": pl.Float64,
    "n_valid": pl.Int64,
    "n_invalid": pl.Int64,
    "n_refusal": pl.Int64,
    "n_error": pl.Int64,
    "n_truncated": pl.Int64,
    "n_undecided": pl.Int64,
    "error_reasons": pl.List(pl.String),
    "config_digest": pl.String,
    "evidence_digest": pl.String,
    "code_digest": pl.String,
    "evidence_docs": pl.String,
    "cost_usd": pl.Float64,
    **AGENT_COLUMNS,
}
JUDGES_SCHEMA: dict[str, pl.DataType] = {
    "judge": pl.String,
    "backend": pl.String,
    "config_digest": pl.String,
    "config": pl.String,
}


# -- inputs ------------------------------------------------------------------------------------------


PLANTED_TABLE = "planted.parquet"
"""A probe dataset's planted documents (the probe stage writes it; `judges.load_items` attaches them to ideas)."""
PLANTED_SCHEMA: dict[str, pl.DataType] = {
    "dataset": pl.String,
    "idea_id": pl.String,
    "doc_id": pl.String,
    "title": pl.String,
    "abstract": pl.String,
    "template_id": pl.String,
}


@dataclass(frozen=True)
class Planted:
    """A document the injection probe plants among what a judge retrieves for an idea (docs/design/probe.md)."""

    doc_id: str
    """`probe:<template id>`: how the probe metrics find out whether the judge was shown it."""
    title: str
    abstract: str


@dataclass(frozen=True)
class Idea:
    """One idea as a judge sees it."""

    idea_id: str
    title: str
    text: str
    text_digest: str
    area: str | None = None
    planted: tuple[Planted, ...] = ()
    """Probe datasets only (the probe stage's planted.parquet): documents put first in every search result or
    retrieved block a judge gets for this idea; empty everywhere else."""


@dataclass(frozen=True)
class PairItem:
    """One pair, ideas in published slot order (`idea_0` was shown first in the benchmark)."""

    dataset: str
    pair_id: str
    idea_0: Idea
    idea_1: Idea
    gold_idea_id: str
    context: str | None = None
    source_key: str | None = None
    """The pair's key in its source file (pairs.parquet `source_key`); imported verdicts may name pairs by it."""

    @property
    def ideas(self) -> tuple[Idea, Idea]:
        return (self.idea_0, self.idea_1)


@dataclass(frozen=True)
class PointItem:
    """One idea judged on its own (pointwise task)."""

    dataset: str
    idea: Idea
    gold_label: str


@dataclass(frozen=True)
class JudgeContext:
    """What every factory receives besides its own args: shared, run-wide settings from params.yaml."""

    name: str
    """The judge id (its key under params.yaml `judge.judges`)."""
    seed: int = 0
    """params `judge.seed`; controls combine it with item ids, never a global seed."""
    cache_dir: Path = Path(".novelty-audit/cache")
    """Root of the judges' caches (`calls/`, `embeddings/`, ...) under the store root."""
    refresh: bool = False
    """Bypass cached answers and record fresh ones (drift checks)."""
    prices: Mapping[str, Any] = field(default_factory=dict)
    """params `judge.prices`: model → price entry (USD per million input/output tokens)."""
    budget: Any = None
    """The run's shared `Budget` (or None: no cap). API judges reserve cost on it before each call."""
    progress: bool = True
    """Show a progress bar for long-running judges."""
    tasks: tuple[str, ...] = ("pairwise", "pointwise")
    """params `judge.tasks`: what this run will ask (a judge may need a template per task)."""
    shared_cache: Any = None
    """The team-shared call cache under `cache_dir/calls` (a `SharedCallCache`, from `store.shared_cache`), or None."""


# -- outputs -----------------------------------------------------------------------------------------


@dataclass
class JudgeOutput:
    """Verdict rows of one judge (dicts following PAIRWISE_SCHEMA / POINTWISE_SCHEMA) and its run facts."""

    pairwise: list[dict[str, Any]] = field(default_factory=list)
    pointwise: list[dict[str, Any]] = field(default_factory=list)
    facts: dict[str, Any] = field(default_factory=dict)
    """calls made, cache hits, cost, seconds: for the run log, never hashed."""
    exclusions: list[dict[str, Any]] = field(default_factory=list)
    """Input rows the judge left out, each {judge, file, row, field, reason} (e.g. imported rows matching no
    pinned pair): content, written to the stage manifest summary."""
    failed_calls: dict[str, str] = field(default_factory=dict)
    """Calls that ended as `error`, each once: call digest → reason. A call shared by several rows (one pair
    in two datasets) is one failure, so the stage counts failures here, not over the rows. Never written."""


def evidence_digest(parts: Mapping[str, str]) -> str:
    """Digest of everything a judge saw, given as {part name: digest}."""
    return digest_obj(dict(parts))


def _parts_json(parts: Mapping[str, str]) -> str:
    return orjson.dumps(dict(parts), option=orjson.OPT_SORT_KEYS).decode()


EVIDENCE_DOC_KEYS = ("slot", "rank", "doc_id", "digest", "title", "year", "similarity", "source")
"""Keys of one `evidence_docs` entry (docs/design/tables.md). Agents add `query` (the search that found it)."""


def evidence_docs_json(docs: Sequence[Mapping[str, Any]]) -> str:
    """The `evidence_docs` column: canonical JSON of the documents a verdict rests on, ordered by (slot, rank).

    A readable view of what `evidence_parts` digests; it never enters `evidence_digest`."""
    out = []
    for d in docs:
        missing = [k for k in EVIDENCE_DOC_KEYS if k not in d]
        if missing:
            raise ValueError(f"evidence_docs entry {dict(d)!r} lacks {missing}")
        if "query" in d and not (d["query"] is None or isinstance(d["query"], str)):
            raise ValueError(f"evidence_docs entry {dict(d)!r}: query must be a string or null")
        sim = d["similarity"]
        out.append({**d, "similarity": None if sim is None else round(float(sim), 6)})
    # Agents rank within each query's results: the query orders entries of one slot before the rank does.
    out.sort(key=lambda d: (str(d["slot"]), str(d.get("query") or ""), int(d["rank"])))
    return orjson.dumps(out, option=orjson.OPT_SORT_KEYS).decode()


@dataclass(frozen=True)
class AgentEffort:
    """A search agent's effort and citations over one row's decisions (the AGENT_COLUMNS)."""

    rounds: int
    queries: int
    tokens: int
    citations: tuple[Mapping[str, Any], ...]
    """One entry per NEGATIVE pointwise decision, or per pairwise decision that cites (CITATION_KEYS)."""
    truncated_chars: int = 0
    """Characters of fetched text the prompt bounds cut, over the row's decisions."""

    def columns(self) -> dict[str, Any]:
        for c in self.citations:
            if set(c) != set(CITATION_KEYS):
                raise ValueError(f"citations entry {dict(c)!r} must have exactly the keys {CITATION_KEYS}")
        cites = sorted(self.citations, key=lambda c: (str(c["order"] or ""), int(c["vote"])))
        return {
            "n_rounds": int(self.rounds),
            "n_queries": int(self.queries),
            "n_tokens": int(self.tokens),
            "citations": orjson.dumps(cites, option=orjson.OPT_SORT_KEYS).decode(),
            "evidence_truncated_chars": int(self.truncated_chars),
        }


def _agent_columns(agent: AgentEffort | None) -> dict[str, Any]:
    return agent.columns() if agent is not None else dict.fromkeys(AGENT_COLUMNS)


A = TypeVar("A", bound=BaseModel)


def parse_args(model: type[A], args: Mapping[str, Any], ctx: JudgeContext | str) -> A:
    """Validate a judge's `args:` against its typed model; errors name the judge and the field."""
    name = ctx if isinstance(ctx, str) else ctx.name
    try:
        return model.model_validate(dict(args))
    except ValidationError as exc:
        lines = [f"params.yaml judge.judges.{name}.args: invalid"]
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            lines.append(f"  {loc}: {err['msg']}")
        raise ConfigError("\n".join(lines), hint=f"allowed args: {', '.join(model.model_fields)}") from None


def pairwise_row(
    judge: Judge,
    pair: PairItem,
    *,
    verdict: str,
    verdict_forward: str | None,
    verdict_reverse: str | None,
    votes_forward: list[str] | None,
    votes_reverse: list[str] | None,
    counts: Mapping[str, int],
    score_0: float | None,
    score_1: float | None,
    evidence_parts: Mapping[str, str],
    call_digests: Sequence[str] = (),
    provider_model: str | None = None,
    cost_usd: float | None = 0.0,
    evidence_titles: Sequence[str] = (),
    error_reasons: Sequence[str] = (),
    evidence_docs: Sequence[Mapping[str, Any]] = (),
    agent: AgentEffort | None = None,
) -> dict[str, Any]:
    """One verdicts.parquet row; judge-level columns (config, code digests) come from `judge`.

    `error_reasons`: one short reason per failed call (outcome `error`), stored sorted. `agent`: a search
    agent's effort and citations (None: the agent columns are null). Run facts such as latency never enter
    a row: the table is hashed and must be identical for identical answers."""
    allowed = {pair.idea_0.idea_id, pair.idea_1.idea_id, TIE, NONE}
    for v in (verdict, verdict_forward, verdict_reverse):
        if v is not None and v not in allowed:
            raise ValueError(f"verdict {v!r} for pair {pair.pair_id} names neither idea, tie nor none")
    return {
        "dataset": pair.dataset,
        "judge": judge.name,
        "pair_id": pair.pair_id,
        "idea_0": pair.idea_0.idea_id,
        "idea_1": pair.idea_1.idea_id,
        "gold_idea_id": pair.gold_idea_id,
        "verdict": verdict,
        "verdict_forward": verdict_forward,
        "verdict_reverse": verdict_reverse,
        "votes_forward": votes_forward,
        "votes_reverse": votes_reverse,
        "n_valid": int(counts.get("valid", 0)),
        "n_invalid": int(counts.get("invalid", 0)),
        "n_refusal": int(counts.get("refusal", 0)),
        "n_error": int(counts.get("error", 0)),
        "n_truncated": int(counts.get("truncated", 0)),
        "n_undecided": int(counts.get("undecided", 0)),
        "error_reasons": _reasons(error_reasons, counts, f"pair {pair.pair_id}"),
        "score_0": score_0,
        "score_1": score_1,
        "config_digest": judge.config_digest,
        "evidence_digest": evidence_digest(evidence_parts),
        "evidence_parts": _parts_json(evidence_parts),
        "code_digest": judge.code_digest,
        "call_digests": list(call_digests),
        "provider_model": provider_model,
        "cost_usd": None if cost_usd is None else float(cost_usd),
        "evidence_titles": list(evidence_titles),
        "evidence_docs": evidence_docs_json(evidence_docs),
        **_agent_columns(agent),
    }


def pointwise_row(
    judge: Judge,
    item: PointItem,
    *,
    predicted: str,
    score: float | None,
    counts: Mapping[str, int],
    evidence_parts: Mapping[str, str],
    error_reasons: Sequence[str] = (),
    evidence_docs: Sequence[Mapping[str, Any]] = (),
    cost_usd: float | None = 0.0,
    agent: AgentEffort | None = None,
) -> dict[str, Any]:
    """One pointwise.parquet row (`error_reasons`, `evidence_docs`, `cost_usd`, `agent` as in `pairwise_row`)."""
    if predicted not in (POSITIVE, NEGATIVE, NONE):
        raise ValueError(f"pointwise prediction {predicted!r} for idea {item.idea.idea_id} is not POSITIVE/NEGATIVE/none")
    return {
        "dataset": item.dataset,
        "judge": judge.name,
        "idea_id": item.idea.idea_id,
        "gold_label": item.gold_label,
        "predicted": predicted,
        "score": score,
        "n_valid": int(counts.get("valid", 0)),
        "n_invalid": int(counts.get("invalid", 0)),
        "n_refusal": int(counts.get("refusal", 0)),
        "n_error": int(counts.get("error", 0)),
        "n_truncated": int(counts.get("truncated", 0)),
        "n_undecided": int(counts.get("undecided", 0)),
        "error_reasons": _reasons(error_reasons, counts, f"idea {item.idea.idea_id}"),
        "config_digest": judge.config_digest,
        "evidence_digest": evidence_digest(evidence_parts),
        "code_digest": judge.code_digest,
        "evidence_docs": evidence_docs_json(evidence_docs),
        "cost_usd": None if cost_usd is None else float(cost_usd),
        **_agent_columns(agent),
    }


def _reasons(reasons: Sequence[str], counts: Mapping[str, int], what: str) -> list[str]:
    n_error = int(counts.get("error", 0))
    if reasons and len(reasons) != n_error:
        raise ValueError(f"{what}: {len(reasons)} error reasons for {n_error} failed call(s)")
    # A backend that gives no reasons still gets one entry per failed call, so counts and reasons agree.
    return sorted(reasons) if reasons else [UNSPECIFIED_REASON] * n_error


def judges_row(judge: Judge) -> dict[str, Any]:
    """One judges.parquet row: every knob as a sorted-key JSON string."""
    return {
        "judge": judge.name,
        "backend": judge.backend,
        "config_digest": judge.config_digest,
        "config": orjson.dumps(judge.config(), option=orjson.OPT_SORT_KEYS).decode(),
    }


# -- the interface -----------------------------------------------------------------------------------

_CODE_DIGESTS: dict[tuple[str, ...], str] = {}
_CODE_DIGESTS_LOCK = threading.Lock()


class Judge(ABC):
    """A configured judge. Built by its registered factory from params; judges pairs and single ideas."""

    backend: str = ""
    """The registered backend name; set by the subclass (class attribute) or the factory."""

    def __init__(self, ctx: JudgeContext):
        self.ctx = ctx
        self.name = ctx.name

    @abstractmethod
    def config(self) -> dict[str, Any]:
        """Every knob that decides how the judge is asked (must include `backend`). JSON-able values only."""

    @property
    def config_digest(self) -> str:
        return digest_obj(self.config())

    def code_modules(self) -> tuple[str, ...]:
        """Modules whose source decides this judge's verdicts (their import closure is digested)."""
        return (type(self).__module__, "novelty_audit.judges._base")

    @property
    def code_digest(self) -> str:
        mods = self.code_modules()
        # Source files do not change within a process; digest each closure once. Judges run in threads
        # (flows, the call-cache writer): the lock makes every thread see the one digest, computed once.
        with _CODE_DIGESTS_LOCK:
            if mods not in _CODE_DIGESTS:
                _CODE_DIGESTS[mods] = code_digest(*mods).digest
            return _CODE_DIGESTS[mods]

    @abstractmethod
    def judge(self, pairs: Sequence[PairItem], points: Sequence[PointItem]) -> JudgeOutput:
        """Return exactly one pairwise row per pair and one pointwise row per item, in input order."""

    def input_files(self) -> list[Path]:
        """Files the judge reads besides the pinned datasets (a corpus, imported verdicts). They become
        inputs of the judge stage, so editing one reruns it. Paths as configured (relative to the project)."""
        return []

    def close(self) -> None:
        """Release clients, models or pools (default: nothing)."""


class IdeaScore(NamedTuple):
    """A score judge's answer for one idea. A larger score means more novel."""

    score: float | None
    """None: the backend could not score this idea (counted as `invalid`, never a win)."""
    evidence_titles: tuple[str, ...] = ()
    """What the score rests on, e.g. the nearest prior-work titles."""
    evidence_parts: Mapping[str, str] = {}
    """{part name: digest} of what was used beyond the idea text (e.g. {"corpus": ..., "neighbours": ...})."""
    evidence_docs: tuple[Mapping[str, Any], ...] = ()
    """The documents the score rests on (`evidence_docs` entries without `slot`; ScoreJudge fills the slot)."""


class ScoreJudge(Judge):
    """A judge that scores each idea independently; pairwise and pointwise verdicts follow from the scores.

    Pairwise: the larger score wins, equal scores tie, a missing score gives `none` (counted `invalid`).
    Votes are a single entry (`votes_forward`: [winner id | tie | invalid]); there is no reverse order.
    Pointwise: `score` is the raw score; `predicted` is POSITIVE when score ≥ the threshold, where the
    threshold is `self.threshold`, or when that is None the median score of the dataset's pointwise ideas.

    Scores are looked up by content, never by idea id: `score_key(idea)` digests everything about the
    idea that decides its score (the judge's config fixes the rest), ideas with equal keys are scored
    once, and one idea id holding different texts in two datasets gets two scores. A row's
    `idea_*_text` evidence is the sha256 of the very text that was scored.
    """

    threshold: float | None = None

    def score_key(self, idea: Idea) -> str:
        """Digest of what decides this idea's score besides the judge's config: by default its exact
        text and its title (a leakage filter may compare titles). Override to drop what is not used."""
        return digest_obj({"text": digest_bytes(idea.text.encode("utf-8")), "title": idea.title})

    @abstractmethod
    def score_ideas(self, ideas: Mapping[str, Idea]) -> dict[str, IdeaScore]:
        """Score each idea of {score key: idea}; return {score key: IdeaScore} covering every key."""

    def _scores(self, ideas: Sequence[Idea]) -> tuple[dict[str, IdeaScore], dict[Idea, str]]:
        """(scores by score key, score key of each distinct idea value)."""
        unique: dict[str, Idea] = {}
        key_of: dict[Idea, str] = {}
        for i in ideas:
            if i not in key_of:
                key_of[i] = self.score_key(i)
                unique.setdefault(key_of[i], i)
        scores = self.score_ideas(unique) if unique else {}
        missing = [k for k in unique if k not in scores]
        if missing:
            ids = sorted({unique[k].idea_id for k in missing})
            raise RuntimeError(f"judge {self.name}: score_ideas returned no entry for {len(missing)} idea(s): {ids[:5]}")
        return scores, key_of

    def judge(self, pairs: Sequence[PairItem], points: Sequence[PointItem]) -> JudgeOutput:
        ideas = [i for p in pairs for i in p.ideas] + [pt.idea for pt in points]
        scores, key_of = self._scores(ideas)

        def score(idea: Idea) -> IdeaScore:
            return scores[key_of[idea]]

        def text(idea: Idea) -> str:
            return digest_bytes(idea.text.encode("utf-8"))

        out = JudgeOutput()
        for pair in pairs:
            s0, s1 = score(pair.idea_0), score(pair.idea_1)
            if s0.score is None or s1.score is None:
                verdict, counts = NONE, {"invalid": 1}
                vote = "invalid"
            else:
                verdict = pair.idea_0.idea_id if s0.score > s1.score else pair.idea_1.idea_id if s1.score > s0.score else TIE
                counts, vote = {"valid": 1}, verdict
            parts = {"idea_0_text": text(pair.idea_0), "idea_1_text": text(pair.idea_1)}
            for slot, s in (("idea_0", s0), ("idea_1", s1)):
                parts.update({f"{slot}_{k}": v for k, v in s.evidence_parts.items()})
            titles = list(s0.evidence_titles) + list(s1.evidence_titles)
            docs = [{**d, "slot": slot} for slot, s in (("idea_0", s0), ("idea_1", s1)) for d in s.evidence_docs]
            out.pairwise.append(
                pairwise_row(
                    self, pair, verdict=verdict, verdict_forward=verdict, verdict_reverse=None,
                    votes_forward=[vote], votes_reverse=None, counts=counts,
                    score_0=s0.score, score_1=s1.score, evidence_parts=parts, evidence_titles=titles,
                    evidence_docs=docs,
                )
            )  # fmt: skip
        by_dataset: dict[str, list[float]] = {}
        for pt in points:
            s = score(pt.idea).score
            if s is not None:
                by_dataset.setdefault(pt.dataset, []).append(s)
        for pt in points:
            s = score(pt.idea)
            parts = {"idea_text": text(pt.idea), **s.evidence_parts}
            if s.score is None:
                predicted, counts = NONE, {"invalid": 1}
            else:
                cut = self.threshold if self.threshold is not None else statistics.median(by_dataset[pt.dataset])
                predicted, counts = (POSITIVE if s.score >= cut else NEGATIVE), {"valid": 1}
            docs = [{**d, "slot": "idea"} for d in s.evidence_docs]
            out.pointwise.append(
                pointwise_row(self, pt, predicted=predicted, score=s.score, counts=counts, evidence_parts=parts, evidence_docs=docs)
            )
        return out


Task = Literal["pairwise", "pointwise"]
