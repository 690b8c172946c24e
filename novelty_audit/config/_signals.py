"""params.yaml `signals:` — which review files to read, how to extract signals, how to score extractors.

Imported by novelty_audit.params (after Frozen) and re-exported by novelty_audit.signals; living outside
that package keeps every stage's code digest (all import params.py) free of the signals code.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from ._base import Frozen

__all__ = ["PinnedFile", "LLMSpec", "RecoveryParams", "SignalsParams", "EXTRACTOR_IDS"]

EXTRACTOR_IDS = ("rules", "llm")


class PinnedFile(Frozen):
    """One input file and the sha256 its bytes must have."""

    path: str
    """Path relative to the project root."""
    sha256: str
    """Pinned digest of the file's bytes; a mismatch stops the stage."""


class LLMSpec(Frozen):
    """An OpenAI-compatible chat model. The API key is read from the environment, never from here."""

    enabled: bool = False
    """Off by default: the default `dvc repro` stays offline."""
    backend: str = "openai-compatible"
    """Backend name; part of every call-cache key."""
    model: str = "gpt-4o-mini"
    """Model name sent to the endpoint; part of every call-cache key."""
    base_url: str | None = None
    """Endpoint (None: the SDK default). Part of every call-cache key (normalized; never the key)."""
    api_key_env: str = "OPENAI_API_KEY"
    """Name of the environment variable holding the API key."""
    temperature: float = Field(default=0.0, ge=0)
    """Sampling temperature (output-affecting: in the cache key)."""
    max_tokens: int = Field(default=1024, ge=1)
    """Completion budget (output-affecting: in the cache key)."""
    timeout_s: float = Field(default=60.0, gt=0)
    """Per-request timeout; not in the cache key."""
    max_retries: int = Field(default=2, ge=0)
    """Retries on transport errors; not in the cache key."""


class RecoveryParams(Frozen):
    """How an extracted snippet is matched to a signal the benchmark recorded for the same paper."""

    min_similarity: float = Field(default=0.8, ge=0, le=1)
    """difflib ratio on normalized text above which two sentences count as the same (after containment fails)."""
    min_words: int = Field(default=2, ge=1)
    """A containment match needs the shorter text to have at least this many words."""


class SignalsParams(Frozen):
    """params.yaml `signals:`."""

    extractors: list[Literal["rules", "llm"]] = Field(default_factory=lambda: ["rules"])
    """Extractors to run and score; `llm` also needs `llm.enabled: true`."""
    sections: list[Literal["summary", "strengths", "weaknesses", "questions"]] = Field(
        default_factory=lambda: ["strengths", "weaknesses"]
    )
    """Review sections scanned for signals. The summary paraphrases the authors' own claims, so it is off."""
    markdown: list[PinnedFile] = Field(default_factory=list)
    """Review files in the markdown export format (one paper per file), each pinned by its sha256."""
    markdown_dir: str | None = None
    """The review directory: every `*.md` under it (but `markdown_ignore`) must be pinned in `markdown`; an
    unpinned one stops the stage, and `novelty-audit signals --accept` pins it. None: only `markdown` is read."""
    markdown_index: str | None = None
    """Tab-separated index of the review files, relative to `markdown_dir` (column `file`, optional `title`,
    checked against the file's `# <title>` line). It must list exactly the review files there. None: no index."""
    markdown_ignore: list[str] = Field(default_factory=list)
    """Files under `markdown_dir` (relative to it) that are not reviews, e.g. its SOURCE.md."""
    openreview: list[PinnedFile] = Field(default_factory=list)
    """OpenReview API v2 dumps: JSON of submissions fetched with details=replies."""
    review_sentences_novelty: PinnedFile | None = None
    """NovBench novelty sentences ([sentence, "NOVELTY"] pairs): positives for detection scoring."""
    review_sentences_other: PinnedFile | None = None
    """NovBench non-novelty sentences ({text, labels}): negatives for detection scoring."""
    benchmark_datasets: list[str] = Field(default_factory=lambda: ["human-only"])
    """pin datasets whose positive/negative signals score polarity, fill missing areas and are recovered."""
    on_bad_record: Literal["error", "exclude"] = "error"
    """error: stop naming file, record and field; exclude: record the problem in exclusions.parquet and go on."""
    llm: LLMSpec = Field(default_factory=LLMSpec)
    """The LLM extractor's model; calls are cached under the store root."""
    recovery: RecoveryParams = Field(default_factory=RecoveryParams)
    """Matching of extracted snippets to the benchmark's recorded signals."""
    scores_report: str = "reports/signals_scores.json"
    """Where the extractor scores are published (declared as DVC metrics)."""
