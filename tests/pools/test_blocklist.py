"""The title blocklist: the Ai2 release's paper_blocklist.yaml, pinned, used by default by pool selection and
the rule check; extra titles of one's own can still be listed."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
import yaml

from novelty_audit.artifacts import digest_file
from novelty_audit.config import PinnedFile, TitleBlocklist
from novelty_audit.errors import BadInputError, PinMismatchError
from novelty_audit.params import load_params
from novelty_audit.pools import EVIDENCE_SCHEMA, PoolsParams, blocked_titles, check_benchmark, select_pools

REPO = Path(__file__).resolve().parents[2]
SHIPPED = "data/novelty-judge-bench/paper_blocklist.yaml"


def test_params_pin_the_ai2_blocklist_by_default_and_it_holds_its_13_titles():
    tb = load_params(REPO / "params.yaml").pools.title_blocklist
    assert tb.file is not None and tb.file.path == SHIPPED
    titles = blocked_titles(tb, REPO)
    assert len(titles) == 13
    assert "GeneBreaker: Jailbreak Attacks against DNA Language Models with Pathogenicity Guidance" in titles


def test_extra_titles_are_added_to_the_files_and_a_plain_list_still_reads_as_extra_titles():
    pin = PinnedFile(path=SHIPPED, sha256=digest_file(REPO / SHIPPED))
    titles = blocked_titles(TitleBlocklist(file=pin, titles=["My Own Title"]), REPO)
    assert len(titles) == 14 and titles[-1] == "My Own Title"
    assert PoolsParams.model_validate({"title_blocklist": ["a", "b"]}).title_blocklist == TitleBlocklist(titles=["a", "b"])


def test_an_edited_blocklist_fails_its_pin(tmp_path):
    f = tmp_path / "b.yaml"
    f.write_text("blocked_titles: [x]\n")
    with pytest.raises(PinMismatchError, match="pools.title_blocklist.file"):
        blocked_titles(TitleBlocklist(file=PinnedFile(path="b.yaml", sha256="0" * 64)), tmp_path)


def test_a_blocklist_without_a_list_of_titles_is_an_error_naming_the_field(tmp_path):
    f = tmp_path / "b.yaml"
    f.write_text("titles: [x]\n")
    with pytest.raises(BadInputError, match="field 'blocked_titles'"):
        blocked_titles(TitleBlocklist(file=PinnedFile(path="b.yaml", sha256=digest_file(f))), tmp_path)


def test_a_blocked_title_is_excluded_from_the_pools_and_flagged_by_the_rule_check(tmp_path):
    tb = load_params(REPO / "params.yaml").pools.title_blocklist
    titles = blocked_titles(tb, REPO)
    # Case and spacing differ from the file: titles are compared normalized.
    blocked = "  genebreaker: jailbreak attacks against DNA language models with pathogenicity   guidance"
    row = {"paper_id": "x", "title": blocked, "area": "applications to physical sciences", "decision": "accepted",
           "mean_rating": 8.0, "mean_contribution": 3.5, "n_reviews": 3, "reviews_positive": 3, "reviews_negative": 0,
           "reviews_pure_positive": 3, "reviews_pure_negative": 0}
    evidence = pl.DataFrame([{k: row.get(k) for k in EVIDENCE_SCHEMA}], schema=EVIDENCE_SCHEMA)
    pp = PoolsParams()
    pools, excl, _ = select_pools(evidence, pp, titles)
    assert pools.height == 0 and "title-blocklist" in excl["rule"].to_list()
    pools, excl, _ = select_pools(evidence, pp)  # without the resolved list only explicit titles count
    assert "title-blocklist" not in excl["rule"].to_list()
    ideas = pl.DataFrame([{"idea_id": "i-x", "title": blocked, "area": row["area"], "source": "human", "label": "POSITIVE",
                           "rating": 8.0, "contribution": 3.5, "positive_signals": ["novel"], "negative_signals": [], "text": "t"}])
    pairs = pl.DataFrame(schema={"pair_id": pl.String, "idea_0": pl.String, "idea_1": pl.String, "context": pl.String})
    check = check_benchmark(ideas, pairs, pp, titles)
    assert any(v["rule"] == "title-blocklist" for v in check["violations"])
