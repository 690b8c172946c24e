"""The pinned benchmark normalizes to the published counts; every bad item is named, never dropped."""

from pathlib import Path

import polars as pl
import pytest
import yaml

from novelty_audit.datasets import hub_filename, load_dataset, normalize_pairs, read_pairs
from novelty_audit.errors import BadInputError, PinMismatchError
from novelty_audit.params import DatasetPin, load_params

REPO = Path(__file__).resolve().parents[2]


def _pin(name: str) -> DatasetPin:
    p = load_params(REPO / "params.yaml").pin.datasets[name]
    return p.model_copy(update={"path": str(REPO / p.path)})


@pytest.mark.parametrize(
    "name, pairs, ideas, pos, neg, slot0",
    [("human-only", 154, 299, 154, 145, 84), ("human-plus-generated", 154, 308, 154, 154, 80)],
)
def test_published_counts(name, pairs, ideas, pos, neg, slot0):
    norm = load_dataset(name, _pin(name))
    assert norm.pairs.height == pairs
    assert norm.ideas.height == ideas
    assert norm.ideas["label"].value_counts().sort("label").rows() == [("NEGATIVE", neg), ("POSITIVE", pos)]
    assert norm.pairs.filter(pl.col("gold_slot") == 0).height == slot0
    assert norm.pointwise.height == ideas
    assert norm.exclusions.height == 0


def test_ids_are_content_derived_and_unique():
    norm = load_dataset("human-only", _pin("human-only"))
    assert norm.pairs["pair_id"].n_unique() == 154
    assert norm.ideas["idea_id"].n_unique() == norm.ideas["text_digest"].n_unique() == 299
    # The published slot order is kept as data, and gold points at the POSITIVE idea.
    gold = norm.pairs.join(norm.ideas, left_on="gold_idea_id", right_on="idea_id")
    assert set(gold["label"]) == {"POSITIVE"}


def test_generated_ideas_are_marked_generated():
    norm = load_dataset("human-plus-generated", _pin("human-plus-generated"))
    src = dict(norm.ideas.group_by("source").len().rows())
    assert src == {"human": 154, "generated": 154}


def test_a_pin_mismatch_names_file_expected_and_actual(tmp_path):
    f = tmp_path / "pairwise.yaml"
    f.write_text(Path(_pin("human-only").path).read_text() + "\n")
    with pytest.raises(PinMismatchError) as exc:
        load_dataset("human-only", DatasetPin(path=str(f), sha256="0" * 64))
    msg = str(exc.value)
    assert str(f) in msg and "0" * 64 in msg and "actual" in msg and "pin --accept" in msg


def _entry(winner=1, t0="Idea zero text.", t1="Idea one text.", title0="T0", title1="T1", types=("NEGATIVE", "POSITIVE")):
    def meta(title, typ):
        return {"area": "a", "title": title, "type": typ, "rating": "5.00", "contribution": "2.00",
                "positive_signals": [], "negative_signals": [], "similar_papers_mentioned": []}
    return {"context": "a", "expected_winners": [winner] if winner is not None else [],
            "ideas": {0: t0, 1: t1}, "metadata": {0: meta(title0, types[0]), 1: meta(title1, types[1])}}


def _normalize(tmp_path, data):
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(data))
    return normalize_pairs(read_pairs(f, "yaml"), dataset="x", file=f)


@pytest.mark.parametrize(
    "entry, field, reason",
    [
        (_entry(winner=None), "expected_winners", "exactly one winner"),
        ({**_entry(), "expected_winners": [0, 1]}, "expected_winners", "exactly one winner"),
        ({**_entry(), "ideas": {0: "only one"}}, "ideas.1", "missing idea"),
        (_entry(t1="   "), "ideas.1", "empty text"),
        (_entry(types=("NEGATIVE", "MAYBE")), "metadata.1.type", "unknown label"),
    ],
)
def test_each_bad_item_is_excluded_with_its_field_and_reason(tmp_path, entry, field, reason):
    norm = _normalize(tmp_path, {7: entry, 8: _entry(title0="A", title1="B", t0="a text", t1="b text")})
    assert norm.pairs["source_key"].to_list() == ["8"]
    row = norm.exclusions.row(0, named=True)
    assert (row["item"], row["field"]) == ("7", field)
    assert reason in row["reason"] and row["file"].endswith("bad.yaml")


def test_a_duplicate_pair_is_excluded_naming_the_first(tmp_path):
    norm = _normalize(tmp_path, {1: _entry(), 2: _entry(winner=0, t0="Idea one text.", t1="Idea zero text.",
                                                       title0="T1", title1="T0", types=("POSITIVE", "NEGATIVE"))})
    assert norm.pairs.height == 1
    ex = norm.exclusions.row(0, named=True)
    assert ex["item"] == "2" and "duplicate pair" in ex["reason"] and "item 1" in ex["reason"]


def test_malformed_yaml_names_the_file_and_line(tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text("0:\n  context: [unclosed\n")
    with pytest.raises(BadInputError) as exc:
        read_pairs(f, "yaml")
    assert "broken.yaml" in str(exc.value) and "line" in str(exc.value)


def test_hub_parquet_layout_gives_the_same_tables_as_the_yaml(tmp_path):
    yaml_norm = load_dataset("human-only", _pin("human-only"))
    raw = yaml.safe_load(Path(_pin("human-only").path).read_text())
    rows = []
    for key, e in raw.items():
        row = {"id": int(key), "iclr_area": e["context"], "expected_winner": e["expected_winners"][0]}
        for slot, side in enumerate("ab"):
            m = e["metadata"][slot]
            na = m["rating"] == "N/A"
            row |= {f"idea_{side}": e["ideas"][slot], f"label_{side}": m["type"], f"title_{side}": m["title"],
                    f"idea_source_{side}": "generated" if na else "human",
                    f"rating_{side}": None if na else float(m["rating"]),
                    f"contribution_{side}": None if na else float(m["contribution"]),
                    f"positive_signals_{side}": m["positive_signals"], f"negative_signals_{side}": m["negative_signals"]}
        rows.append(row)
    local = tmp_path / hub_filename("human-only")
    local.parent.mkdir(parents=True)
    pl.DataFrame(rows).write_parquet(local)
    from novelty_audit.artifacts import digest_file

    pin = DatasetPin(source="hf", repo="noystl/novelty-judge-bench", revision="abc123", config="human-only",
                     path=str(local), sha256=digest_file(local))
    hub_norm = load_dataset("human-only", pin)
    for table in ("ideas", "pairs", "pointwise"):
        a, b = getattr(yaml_norm, table), getattr(hub_norm, table)
        assert a.drop("source_key", strict=False).equals(b.drop("source_key", strict=False)), table
