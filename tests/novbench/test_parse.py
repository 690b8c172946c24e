"""The three-section parser: sections open on header lines, `- ` lines are items, short/None/empty items skip."""

from __future__ import annotations

from novelty_audit.novbench._parse import Item, label_counts, parse_evaluation, render_items
from novelty_audit.novbench._tables import read_list_field

REFERENCE = """Positive Novelty Evaluations
- The method is the first to combine two tasks.
- None

Neutral Novelty Evaluations
- short one
- The contribution lies in combining both tasks.

Negative Novelty Evaluations
-
- The baseline compared is not novel enough."""


def test_items_are_read_per_section_in_text_order() -> None:
    parsed = parse_evaluation(REFERENCE)
    assert parsed.valid
    assert parsed.items == (
        Item("positive", "The method is the first to combine two tasks."),
        Item("neutral", "The contribution lies in combining both tasks."),
        Item("negative", "The baseline compared is not novel enough."),
    )


def test_none_empty_and_short_items_are_skipped_with_their_reason() -> None:
    skipped = {(text, reason) for _, text, reason in parse_evaluation(REFERENCE).skipped}
    assert skipped == {("None", "item is None"), ("short one", "item shorter than 10 characters"), ("", "empty item")}


def test_exactly_ten_characters_is_kept() -> None:
    parsed = parse_evaluation("Negative Novelty Evaluations\n- 0123456789\n- 012345678")
    assert [i.text for i in parsed.items] == ["0123456789"]


def test_model_decorated_headers_still_open_sections() -> None:
    parsed = parse_evaluation("## **Positive Novelty Evaluations:**\n- A genuinely new benchmark design.\n"
                              "negative novelty evaluations\n- The loss is a known variant of focal loss.")
    assert [i.label for i in parsed.items] == ["positive", "negative"]


def test_text_without_any_section_header_is_invalid_not_dropped() -> None:
    parsed = parse_evaluation("I think the paper is quite novel.\n- but this is an orphan item line")
    assert not parsed.valid and parsed.items == ()
    assert parsed.skipped[0][2] == "item before any section header"
    assert not parse_evaluation("").valid and not parse_evaluation(None).valid


def test_a_header_with_no_items_is_valid_and_empty() -> None:
    parsed = parse_evaluation("Positive Novelty Evaluations\n- None")
    assert parsed.valid and parsed.items == ()


def test_render_then_parse_round_trips_and_counts_labels() -> None:
    items = parse_evaluation(REFERENCE).items
    assert parse_evaluation(render_items(items)).items == items
    assert label_counts(items) == "positive=1 neutral=1 negative=1"


def test_list_like_strings_of_the_release_are_read_even_when_not_valid_literals() -> None:
    assert read_list_field("['a b', 'c']") == (["a b", "c"], "literal")
    # an unescaped apostrophe and a missing closing quote, as in the shipped file
    got, how = read_list_field("['We improve the model's recall.', 'Our contributions: (1) a corpus.]")
    assert how == "split"
    assert got == ["We improve the model's recall.", "Our contributions: (1) a corpus."]
    assert read_list_field(["x"]) == (["x"], "literal")
