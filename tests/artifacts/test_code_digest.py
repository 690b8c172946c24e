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


def test_imports_are_found_in_every_kind_of_block_and_references_only_in_string_literals(tmp_path):
    from novelty_audit.artifacts._code import _imports_of

    source = tmp_path / "mod.py"
    source.write_text(
        "def f(y, z, w, q):\n"
        "    try:\n"
        "        import novelty_audit.a\n"
        "    except ImportError:\n"
        "        from novelty_audit import b\n"
        "    else:\n"
        "        pass\n"
        "    finally:\n"
        "        from novelty_audit.c import x\n"
        "    match y:\n"
        "        case 1:\n"
        "            import novelty_audit.d\n"
        "    with z:\n"
        "        for _ in w:\n"
        "            while q:\n"
        "                if q:\n"
        "                    import novelty_audit.e\n"
        "                else:\n"
        "                    import novelty_audit.f\n"
        "class K:\n"
        "    async def g(self, m):\n"
        "        async with m:\n"
        "            import novelty_audit.g\n"
        "REFS = {'k': ['novelty_audit.h.i:attr']}\n"
        "# 'novelty_audit.comment:attr' is a comment, not a reference\n"
        "import os, polars\n"
    )
    found = _imports_of("novelty_audit.zz", source, source.read_bytes(), lambda package: {})
    assert found == {"novelty_audit", "novelty_audit.a", "novelty_audit.b", "novelty_audit.c", "novelty_audit.c.x",
                     "novelty_audit.d", "novelty_audit.e", "novelty_audit.f", "novelty_audit.g", "novelty_audit.h",
                     "novelty_audit.h.i"}  # fmt: skip
