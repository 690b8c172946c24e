"""The rule-based extractor calls a sentence a signal only when it judges originality."""

from __future__ import annotations

import pytest

from novelty_audit.signals import EXCLUDED_LABELS, classify_sentence, sentence_spans, sentences

POSITIVE = [
    "The idea of representing credit assignment as a learned graph over states is novel.",
    "To my knowledge, this is the first work to propagate credit along learned causal edges between states.",
    "The paper presents an original and clearly articulated approach to expanding reasoning potential in foundation models.",
    "I have not seen this specific on-demand recall framing in prior work.",
    "This paper introduces a fresh perspective on data augmentation for offline RL.",
    "The hierarchical refinement of sketches has not been explored before.",
    "Such pretraining innovations remain rare in the field",
]
NEGATIVE = [
    "The novelty of the work is limited.",
    "The biggest weakness of this paper is its lack of novelty.",
    "I appreciate the simplicity of the proposed idea, but it seems somewhat too incremental to merit a full-paper submission.",
    "The method is essentially the same as bootstrapped DQN with randomized priors.",
    "This is a straightforward combination of existing techniques.",
    "Similar ideas have already been explored in SAC's automatic temperature tuning.",
    "it seems that it was already known that classifiers benefit from training on more diverse data.",
    "I don't see any significant mathematical novelty in this work.",
    "The asymmetric-information setup is not novel.",
]
# One example per excluded category of the issue: none of these is a signal.
EXCLUDED = {
    "quality or clarity praise": ("The paper is clearly written and easy to follow, with strong experiments.", "no-originality-claim"),
    "method description": ("The method encodes each state with a transformer and routes messages between paths every T tokens.", "no-originality-claim"),
    "missing citations": ("The authors should cite [2], which introduced a novel memory module for agents.", "citation-complaint"),
    "missing related work": ("Related work on graph exploration is missing, e.g. the novel method of [3].", "citation-complaint"),
    "presentation": ("The novelty of the method is not clearly explained in the introduction.", "presentation-complaint"),
    "weak results": ("The improvements over the baselines are marginal and within noise.", "no-originality-claim"),
    "weak results, incremental gains": ("The method only brings incremental improvements on AIME.", "no-originality-claim"),
    "hedged": ("I cannot judge the novelty of this work since I am not familiar with the literature.", "hedged"),
    "hedged, other wording": ("I am not an expert in this area, so it is hard for me to assess the novelty.", "hedged"),
    "question": ("Is the proposed routing novel compared to mixture-of-agents?", "question"),
    "domain term": ("The model generalizes to novel views of unseen scenes.", "no-originality-claim"),
}


@pytest.mark.parametrize("sentence", POSITIVE)
def test_originality_claims_are_positive(sentence: str) -> None:
    assert classify_sentence(sentence).polarity == "positive"


@pytest.mark.parametrize("sentence", NEGATIVE)
def test_non_novelty_conclusions_are_negative(sentence: str) -> None:
    assert classify_sentence(sentence).polarity == "negative"


@pytest.mark.parametrize("category", sorted(EXCLUDED))
def test_excluded_categories_are_not_signals(category: str) -> None:
    sentence, label = EXCLUDED[category]
    decision = classify_sentence(sentence)
    assert decision.polarity is None
    assert decision.rule == label
    assert label in EXCLUDED_LABELS


def test_a_citation_complaint_that_concludes_non_novelty_is_negative() -> None:
    s = "The paper does not cite [1], which already proposed the same idea, so the contribution is limited."
    assert classify_sentence(s).polarity == "negative"


def test_negation_of_a_positive_word_never_counts_as_positive() -> None:
    assert classify_sentence("The approach is not particularly novel.").polarity == "negative"
    assert classify_sentence("Nothing new is proposed.").polarity == "negative"


def test_sentence_spans_are_verbatim_slices_without_list_markers() -> None:
    text = "- 1. Limited novelty, e.g. see [1]. The method is close to ensembling.\n2.The novelty of the work is limited."
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == sentences(text)
    assert sentences(text) == [
        "Limited novelty, e.g. see [1].",
        "The method is close to ensembling.",
        "The novelty of the work is limited.",
    ]
