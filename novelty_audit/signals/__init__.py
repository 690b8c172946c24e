"""Signals: originality claims extracted from peer reviews, and how well each extractor finds them."""

from ..config import EXTRACTOR_IDS, LLMSpec, PinnedFile, RecoveryParams, SignalsParams
from ._build import SignalsOutput, build_signals, recorded_signals
from ._extract import (
    CALL_FAILED,
    EXCLUSION_SCHEMA,
    PAPER_SCHEMA,
    REJECTION_SCHEMA,
    REVIEW_SCHEMA,
    SNIPPET_SCHEMA,
    extractor_id,
    llm_snippets,
    rule_snippets,
)
from ._llm import CallStats, ChatAnswer, ChatClient, LLMExtraction, extract_messages, llm_extract, load_text_prompt, parse_json_answer
from ._inputs import (
    ACCEPT_COMMAND,
    ReviewFiles,
    SignalsPinChange,
    accept_signal_pins,
    check_file_pin,
    prompt_path,
    review_files,
    signal_input_files,
)
from ._markdown import parse_markdown_reviews
from ._openreview import parse_openreview_dump
from ._records import Paper, RecordProblem, Review, classify_decision, paper_id_for, parse_score
from ._rules import EXCLUDED_LABELS, RULES_VERSION, RuleDecision, classify_sentence
from ._score import RECOVERY_SCHEMA, detection_scores, load_review_sentences, match_signal, polarity_scores, recovery_scores
from ._text import match_key, sentence_spans, sentences

__all__ = [
    "SignalsOutput",
    "build_signals",
    "check_file_pin",
    "recorded_signals",
    "signal_input_files",
    "ACCEPT_COMMAND",
    "ReviewFiles",
    "SignalsPinChange",
    "accept_signal_pins",
    "review_files",
    "prompt_path",
    "EXTRACTOR_IDS",
    "LLMSpec",
    "PinnedFile",
    "RecoveryParams",
    "SignalsParams",
    "CALL_FAILED",
    "EXCLUSION_SCHEMA",
    "PAPER_SCHEMA",
    "REJECTION_SCHEMA",
    "REVIEW_SCHEMA",
    "SNIPPET_SCHEMA",
    "extractor_id",
    "llm_snippets",
    "rule_snippets",
    "CallStats",
    "ChatAnswer",
    "ChatClient",
    "LLMExtraction",
    "extract_messages",
    "llm_extract",
    "load_text_prompt",
    "parse_json_answer",
    "parse_markdown_reviews",
    "parse_openreview_dump",
    "Paper",
    "RecordProblem",
    "Review",
    "classify_decision",
    "paper_id_for",
    "parse_score",
    "EXCLUDED_LABELS",
    "RULES_VERSION",
    "RuleDecision",
    "classify_sentence",
    "RECOVERY_SCHEMA",
    "detection_scores",
    "load_review_sentences",
    "match_signal",
    "polarity_scores",
    "recovery_scores",
    "match_key",
    "sentence_spans",
    "sentences",
]
