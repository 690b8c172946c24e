"""`novelty-audit audit` read through a pipe or from a file (no terminal) prints its Markdown source: titles and judge
names whole (rendered at rich's 80-column default, its tables cut them with '…')."""

from __future__ import annotations

import pytest
from worlds import DocLedger, DocWorld, doc, write_params

LONG_TITLE = "Sonifying weather radar time series into multi-voice music scores with attention over storm cells"


@pytest.fixture
def ledger(tmp_path, monkeypatch):
    ledger = DocLedger(tmp_path)
    write_params(tmp_path)
    monkeypatch.chdir(tmp_path)
    return ledger
    ledger = DocLedger(tmp_path)
    write_params(tmp_path)
    monkeypatch.chdir(tmp_path)
    return ledger


def test_audit_piped_prints_its_markdown_with_titles_whole(ledger, run_main):
    before = DocWorld()
    ledger.record(before)
    neighbours = {**before.neighbours, "i-a": [doc("n1", LONG_TITLE, similarity=0.93, year=2024)]}
    ledger.record(before.edit(neighbours=neighbours).with_verdict("judge-x", "p-ab", "i-b"))
    code, out, err = run_main("audit")
    assert code == 0, err
    _, markdown, _ = run_main("audit", "--markdown")
    assert out == markdown and "…" not in out
    assert LONG_TITLE in out and "judge-x" in out
