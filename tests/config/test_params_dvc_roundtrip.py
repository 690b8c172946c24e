"""params.yaml survives DVC's own YAML round trip: `dvc exp run -S section.key=value` rewrites the file through
ruamel.yaml (flow mappings re-wrapped at 80 columns, quotes dropped) and then reads it back with its own parser.
A construct that does not survive (a quoted `a:b` inside a flow sequence becomes a plain scalar DVC refuses) closes
`dvc exp` to every user, so every params.yaml this checkout ships is checked here, and later additions with it."""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
from project_copy import REPO

from novelty_audit.params import load_params, load_raw_params, section_payload

dvc_yaml = pytest.importorskip("dvc.utils.serialize._yaml")


def dvc_set(path: Path, dotted: str, value: object) -> None:
    """What `dvc exp run -S dotted=value` does to params.yaml: modify it through DVC's round-trip parser and dump."""
    with dvc_yaml.modify_yaml(str(path)) as doc:
        *parents, last = dotted.split(".")
        node = doc
        for key in parents:
            node = node[key]
        node[last] = value


def test_the_shipped_params_survive_dvc_s_round_trip_with_only_the_set_value_changed(tmp_path: Path):
    before = load_raw_params(REPO / "params.yaml")
    copy_ = tmp_path / "params.yaml"
    shutil.copy(REPO / "params.yaml", copy_)
    dvc_set(copy_, "judge.seed", 7)

    text = copy_.read_text()
    assert dvc_yaml.parse_yaml(text, str(copy_)) is not None  # DVC's own reader accepts what it wrote
    after = load_raw_params(copy_)
    expected = copy.deepcopy(before)
    expected["judge"]["seed"] = 7
    assert after == expected


def test_a_round_trip_that_sets_a_value_back_leaves_every_stage_s_params_payload_unchanged(tmp_path: Path):
    copy_ = tmp_path / "params.yaml"
    shutil.copy(REPO / "params.yaml", copy_)
    seed = load_raw_params(copy_)["judge"]["seed"]
    dvc_set(copy_, "judge.seed", seed)
    shipped, rewritten = load_params(REPO / "params.yaml"), load_params(copy_)
    sections = ("store", "pin", "probe", "judge", "audit", "metrics", "report", "signals", "pools", "flows")
    for section in sections:
        assert section_payload(rewritten, section) == section_payload(shipped, section), section


def test_the_construct_that_broke_dvc_exp_is_one_dvc_refuses_after_its_round_trip(tmp_path: Path):
    """The check above can fail: a quoted `a:b` item of a flow sequence loses its quotes and DVC refuses the file."""
    bad = tmp_path / "params.yaml"
    bad.write_text('judge:\n  seed: 1\n  probe_datasets: ["human-only:injection"]\n')
    dvc_set(bad, "judge.seed", 7)
    with pytest.raises(dvc_yaml.YAMLFileCorruptedError):
        dvc_yaml.parse_yaml(bad.read_text(), str(bad))
