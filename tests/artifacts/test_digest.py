"""Canonical digests: independent of key order, row order and float formatting; NaN refused."""

import math

import polars as pl
import pytest

from novelty_audit.artifacts import canonical_bytes, digest_obj, digest_table, short_id
from novelty_audit.errors import NoveltyAuditError


def test_key_order_does_not_change_a_digest():
    assert digest_obj({"a": 1, "b": [1, 2]}) == digest_obj({"b": [1, 2], "a": 1})


def test_floats_are_fixed_strings_inside_identity_payloads():
    assert canonical_bytes({"t": 0.1}) == b'{"t":"0.1"}'
    assert digest_obj({"t": 0.5}) != digest_obj({"t": 0.50000001})


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_floats_are_refused(bad):
    with pytest.raises(NoveltyAuditError):
        digest_obj({"x": bad})


def test_table_digest_ignores_row_order_but_not_content():
    df = pl.DataFrame({"id": ["a", "b", "c"], "v": [1.0, 2.0, None]})
    assert digest_table(df) == digest_table(df.reverse())
    assert digest_table(df) != digest_table(df.with_columns(pl.col("v").fill_null(0.0)))


def test_table_digest_does_not_depend_on_the_parquet_writer(tmp_path):
    df = pl.DataFrame({"id": ["a", "b"], "xs": [["x"], []]})
    df.write_parquet(tmp_path / "a.parquet", compression="zstd")
    df.write_parquet(tmp_path / "b.parquet", compression="snappy", row_group_size=1)
    assert (tmp_path / "a.parquet").read_bytes() != (tmp_path / "b.parquet").read_bytes()
    assert digest_table(pl.read_parquet(tmp_path / "a.parquet")) == digest_table(pl.read_parquet(tmp_path / "b.parquet"))


def test_short_ids_are_prefixed_and_content_derived():
    assert short_id("p-", "i-1", "i-2").startswith("p-")
    assert short_id("p-", "i-1", "i-2") == short_id("p-", "i-1", "i-2")
    assert short_id("p-", "i-1", "i-2") != short_id("p-", "i-2", "i-1")
