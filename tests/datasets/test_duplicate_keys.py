"""A key written twice in a hand-edited YAML file is an error naming both lines, never a silent overwrite
(a plain YAML load keeps the second entry and drops the first)."""

from pathlib import Path

import pytest
import yaml
from project_copy import REPO

from novelty_audit.config import DuplicateKeyError, safe_load_unique
from novelty_audit.datasets import read_pairs
from novelty_audit.errors import BadInputError, ConfigError
from novelty_audit.params import load_params

SPLIT = Path("data/novelty-judge-bench/human-only/pairwise.yaml")


def first_entry(text: str) -> list[str]:
    """The lines of the split's first pair (`0:` up to the next top-level key)."""
    lines = text.splitlines()
    end = next(i for i, ln in enumerate(lines[1:], 1) if ln and not ln.startswith(" "))
    return lines[:end]


def test_the_loader_reads_what_safe_load_reads_and_refuses_a_repeated_key():
    assert safe_load_unique("a: 1\nb: {c: [1, 2]}\n") == {"a": 1, "b": {"c": [1, 2]}}
    assert safe_load_unique("base: &b {x: 1}\nd:\n  <<: *b\n  x: 2\n") == {"base": {"x": 1}, "d": {"x": 2}}  # merge keys override
    assert safe_load_unique("1: a\n'1': b\n") == {1: "a", "1": "b"}  # distinct keys to YAML, distinct here
    with pytest.raises(DuplicateKeyError) as exc:
        safe_load_unique("a: 1\nb:\n  c: 2\n  c: 3\n")
    assert (exc.value.first_line, exc.value.second_line) == (3, 4) and "'c'" in str(exc.value)


TRICKY = """\
plain: a plain scalar with:colons, 'quotes' and a # comment
folded: >
  one line
  and the next

  a paragraph
literal: |-
  kept
    indented
double: "tab\\there, \\u00e9t\\u00e9, \\"q\\", \\U0001F600"
single: 'it''s'
unicode: Généralisation — “quoted” 🚀
multi: first
  continued plain
numbers: [1, 1.5, 0x1F, 1e3, .nan, -.inf]
other: [yes, no, ~, null, 2026-12-04, '007']
anchor: &a {k: v}
ref: *a
empty:
"""


def test_the_loader_parses_what_the_pure_python_safe_loader_parses():
    """safe_load_unique may use LibYAML's parser: it must read every YAML file the project ships, and the
    constructs hand-written benchmark files use, exactly as PyYAML's own SafeLoader does."""
    paths = [REPO / "params.yaml", REPO / "dvc.yaml", *sorted((REPO / "data").rglob("*.yaml"))]
    assert any(p.parent.name == "human-only" for p in paths), paths  # the benchmark splits are among them
    for path in paths:
        text = path.read_text(encoding="utf-8")
        assert safe_load_unique(text) == yaml.load(text, Loader=yaml.SafeLoader), path
    # repr: .nan != .nan, so compare the documents' text form
    assert repr(safe_load_unique(TRICKY)) == repr(yaml.load(TRICKY, Loader=yaml.SafeLoader))


def test_a_pair_id_written_twice_in_a_split_names_the_file_and_both_lines(project):
    text = SPLIT.read_text(encoding="utf-8")
    entry = first_entry(text)
    n = len(text.splitlines())
    SPLIT.write_text(text + "\n".join(entry).replace("Learning from Peers", "Learning from Strangers") + "\n", encoding="utf-8")
    with pytest.raises(BadInputError) as exc:
        read_pairs(SPLIT, "yaml")
    msg = str(exc.value)
    assert str(SPLIT) in msg and "key 0 appears twice" in msg and f"line 1 and line {n + 1}" in msg, msg


def test_a_key_written_twice_inside_a_pair_is_refused_too(project):
    text = SPLIT.read_text(encoding="utf-8")
    entry = first_entry(text)
    at = next(i for i, ln in enumerate(entry) if ln.strip().startswith("title:"))
    dup = entry[at].replace("Learning from Peers", "Another title")
    SPLIT.write_text(text.replace(entry[at] + "\n", entry[at] + "\n" + dup + "\n", 1), encoding="utf-8")
    with pytest.raises(BadInputError, match=rf"key 'title' appears twice in one mapping, at line {at + 1} and line {at + 2}"):
        read_pairs(SPLIT, "yaml")


def test_pin_accept_refuses_a_split_with_a_repeated_pair_and_leaves_params_alone(project, run_main):
    text = SPLIT.read_text(encoding="utf-8")
    SPLIT.write_text(text + "\n".join(first_entry(text)) + "\n", encoding="utf-8")
    before = (project / "params.yaml").read_bytes()
    code, out, err = run_main("pin", "--accept")
    assert code == 2, (out, err)
    assert str(SPLIT) in err and "appears twice" in err and "line 1 and line" in err and "Traceback" not in err
    assert (project / "params.yaml").read_bytes() == before


def test_a_key_written_twice_in_params_yaml_is_a_config_error_naming_both_lines(project, run_main):
    params = project / "params.yaml"
    lines = params.read_text(encoding="utf-8").splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip().startswith("seed:") and ln.startswith("  "))
    lines.insert(at + 1, lines[at].replace(lines[at].split(":", 1)[1], " 7"))
    params.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"params.yaml: .*key 'seed' appears twice in one mapping, at line {at + 1} and line {at + 2}"):
        load_params(params)
    code, _, err = run_main("judges")
    assert code == 2 and "appears twice" in err and "Traceback" not in err
