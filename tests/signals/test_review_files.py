"""The review directory: every review file there is pinned, listed in the index, or the stage stops naming it.

`novelty-audit signals --accept` writes the pins into params.yaml keeping its comments.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import yaml

from novelty_audit.errors import BadInputError, PinMismatchError
from novelty_audit.params import load_params
from novelty_audit.signals import ACCEPT_COMMAND, accept_signal_pins, review_files, signal_input_files

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "data" / "raw-reviews"

NEW_REVIEW = """# Cached Attention Reuse for Long Context Models

- Avg Score: 6.00
- Decision: Accept (Poster)
- Scores: 6, 6

## Abstract
We reuse attention maps across layers.

## Human Reviews

## Human Reviewer 1

### Rating
6

### Confidence
3

### Strengths
- The idea of reusing cached attention maps across layers is novel and original.

### Weaknesses
- The evaluation uses only two datasets.

### Contribution
3

---
"""
NEW_NAME = "cached-attention-reuse.md"
NEW_TITLE = "Cached Attention Reuse for Long Context Models"


@pytest.fixture
def reviews_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """params.yaml and the shipped review directory (index, SOURCE.md, seven reviews) in a temp cwd."""
    shutil.copy(REPO / "params.yaml", tmp_path / "params.yaml")
    shutil.copytree(SHIPPED, tmp_path / "data" / "raw-reviews")
    shutil.copytree(REPO / "data" / "review-sentences", tmp_path / "data" / "review-sentences")
    monkeypatch.chdir(tmp_path)
    return tmp_path / "data" / "raw-reviews"


def add_review(reviews_dir: Path, *, index_row: bool = True, name: str = NEW_NAME, title: str = NEW_TITLE) -> Path:
    path = reviews_dir / name
    path.write_text(NEW_REVIEW.replace(NEW_TITLE, title), encoding="utf-8")
    if index_row:
        with (reviews_dir / "INDEX.tsv").open("a", encoding="utf-8") as fh:
            fh.write(f"{name}\t{NEW_TITLE}\tPOSITIVE\t6.00\t3.00\t1\t0\t{len(NEW_REVIEW)}\n")
    return path


def signals_params():
    return load_params("params.yaml").signals


@pytest.fixture
def run_cli(run_main):
    """The CLI in this process: (exit code, stdout and stderr as one line of words)."""

    def run(*args: str) -> tuple[int, str]:
        code, out, err = run_main(*args)
        return code, " ".join((out + err).split())

    return run


def test_the_shipped_directory_matches_its_index_and_pins(reviews_dir: Path) -> None:
    files = signal_input_files(signals_params())
    assert len(files["markdown"]) == 7
    assert [p.as_posix() for p in files["index"]] == ["data/raw-reviews/INDEX.tsv"]  # read, so an input
    got = review_files(signals_params())
    assert "data/raw-reviews/SOURCE.md" not in got.files  # listed in signals.markdown_ignore


def test_an_added_review_file_stops_the_stage_naming_it_and_the_accept_command(reviews_dir: Path) -> None:
    add_review(reviews_dir)
    with pytest.raises(PinMismatchError) as err:
        signal_input_files(signals_params())
    assert f"data/raw-reviews/{NEW_NAME}" in str(err.value)
    assert ACCEPT_COMMAND in str(err.value)


def test_a_review_file_not_in_the_index_is_an_error_naming_file_and_index(reviews_dir: Path) -> None:
    add_review(reviews_dir, index_row=False)
    with pytest.raises(BadInputError) as err:
        signal_input_files(signals_params())
    assert f"data/raw-reviews/{NEW_NAME}" in str(err.value) and "INDEX.tsv" in str(err.value)
    with pytest.raises(BadInputError):  # accept cannot guess the index row either
        accept_signal_pins(Path("params.yaml"), signals_params())


def test_an_index_row_without_its_file_is_an_error_naming_the_line(reviews_dir: Path) -> None:
    (reviews_dir / "llm-pretraining-with-continuous-concepts.md").unlink()
    with pytest.raises(BadInputError) as err:
        signal_input_files(signals_params())
    msg = str(err.value)
    assert "INDEX.tsv: line 4, field file" in msg and "llm-pretraining-with-continuous-concepts.md" in msg


def test_an_index_title_that_disagrees_with_the_file_is_an_error(reviews_dir: Path) -> None:
    add_review(reviews_dir, title="Something Else Entirely")
    with pytest.raises(BadInputError) as err:
        signal_input_files(signals_params())
    assert "field title" in str(err.value) and "Something Else Entirely" in str(err.value)


def test_an_index_with_a_bad_row_names_file_and_line(reviews_dir: Path) -> None:
    with (reviews_dir / "INDEX.tsv").open("a", encoding="utf-8") as fh:
        fh.write("only-two\tfields\n")
    with pytest.raises(BadInputError, match=r"INDEX.tsv: line 9: 2 tab-separated field\(s\)"):
        signal_input_files(signals_params())


def test_accept_pins_the_new_file_keeping_comments_and_every_other_line(reviews_dir: Path, run_cli) -> None:
    before = Path("params.yaml").read_text(encoding="utf-8")
    path = add_review(reviews_dir)
    code, out = run_cli("signals", "--accept")
    assert code == 0, out
    assert f"data/raw-reviews/{NEW_NAME}: pinned" in out
    after = Path("params.yaml").read_text(encoding="utf-8")
    added = [line for line in after.splitlines() if line not in before.splitlines()]
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    assert added == [f"    - {{path: data/raw-reviews/{NEW_NAME}, sha256: {digest}}}"]
    assert len(after.splitlines()) == len(before.splitlines()) + 1  # comments and layout kept
    pins = [p.path for p in signals_params().markdown]
    assert pins == sorted(pins)  # inserted in order
    assert len(signal_input_files(signals_params())["markdown"]) == 8
    code, out = run_cli("signals", "--accept")  # nothing moved: params.yaml is not rewritten
    assert "10 signals input files unchanged" in out and Path("params.yaml").read_text(encoding="utf-8") == after


def test_accept_re_pins_an_edited_file_and_drops_the_pin_of_a_deleted_one(reviews_dir: Path, run_cli) -> None:
    edited = reviews_dir / "learning-from-peers-in-reasoning-models.md"
    edited.write_text(edited.read_text(encoding="utf-8") + "\nOne more line.\n", encoding="utf-8")
    with pytest.raises(PinMismatchError, match="novelty-audit signals --accept"):
        signal_input_files(signals_params())
    gone = "context-tuning-for-in-context-optimization.md"
    (reviews_dir / gone).unlink()
    index = reviews_dir / "INDEX.tsv"
    index.write_text("".join(line for line in index.read_text().splitlines(True) if not line.startswith(gone)))
    with pytest.raises(PinMismatchError, match="no longer in data/raw-reviews"):
        signal_input_files(signals_params())
    code, out = run_cli("signals", "--accept")
    assert code == 0, out
    assert f"data/raw-reviews/{gone}: gone" in out and "learning-from-peers-in-reasoning-models.md: re-pinned" in out
    sp = signals_params()
    assert {p.path: p.sha256 for p in sp.markdown}[f"data/raw-reviews/{edited.name}"] == hashlib.sha256(edited.read_bytes()).hexdigest()
    assert len(signal_input_files(sp)["markdown"]) == 6


def test_an_unregistered_file_through_the_cli_exits_2_with_the_fix(reviews_dir: Path, run_cli) -> None:
    add_review(reviews_dir)
    code, out = run_cli("signals")
    assert code == 2
    assert NEW_NAME in out and ACCEPT_COMMAND in out and "Traceback" not in out


def test_without_a_review_directory_only_the_listed_pins_are_read(reviews_dir: Path) -> None:
    doc = yaml.safe_load(Path("params.yaml").read_text(encoding="utf-8"))
    for key in ("markdown_dir", "markdown_index", "markdown_ignore"):
        doc["signals"].pop(key)
    Path("params.yaml").write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    add_review(reviews_dir)
    assert len(signal_input_files(signals_params())["markdown"]) == 7


def test_the_llm_extractors_prompt_is_an_input_only_when_it_is_sent(reviews_dir: Path) -> None:
    from novelty_audit.pools import pools_prompt_files

    sp = signals_params()
    assert signal_input_files(sp)["prompts"] == []
    with_llm = sp.model_copy(update={"extractors": ["rules", "llm"], "llm": sp.llm.model_copy(update={"enabled": True})})
    (prompt,) = signal_input_files(with_llm)["prompts"]
    assert prompt.as_posix().endswith("novelty_audit/prompts/signals-extract-v1.txt") and prompt.is_file()

    pp = load_params("params.yaml").pools
    assert pools_prompt_files(pp) == []
    on = pp.model_copy(update={"strip": pp.strip.model_copy(update={"llm": pp.strip.llm.model_copy(update={"enabled": True})}),
                               "generated": pp.generated.model_copy(update={"source": "llm"})})
    assert [p.name for p in pools_prompt_files(on)] == ["pools-strip-v1.txt", "pools-generate-v1.txt"]
