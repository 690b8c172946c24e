"""A stage's code digest covers every module whose code decides its outputs, lazy imports included."""

from __future__ import annotations

from novelty_audit.artifacts import code_digest
from novelty_audit.judges import BACKENDS


def test_a_lazy_export_puts_only_its_defining_module_in_the_importers_digest():
    # stages/pin.py imports TABLE_KEYS and normalize_novbench from the novbench face (resolved on first use).
    modules = code_digest("stages.pin").modules
    assert "novelty_audit.novbench._tables" in modules and "novelty_audit.novbench._parse" in modules
    assert "novelty_audit.novbench._report" not in modules and "novelty_audit.judges" not in modules


def test_the_judge_stage_digest_covers_every_backend_module_of_the_lazy_table():
    modules = code_digest("stages.judge").modules
    for entry in BACKENDS.values():
        for ref in (entry.factory, entry.args):
            assert ref is None or ref.partition(":")[0] in modules, ref


def test_the_pin_stage_digest_holds_no_judge_code():
    # The judges' args check happens where params.yaml is loaded (pipeline.load_checked_params), not in a stage.
    assert not [m for m in code_digest("stages.pin").modules if m.startswith(("novelty_audit.judges", "novelty_audit.pipeline"))]
