"""A judge prompt may be a project file (prompts/my-judge.jinja2 or .txt) as well as a packaged template name."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import yaml
from judge_items import make_pairs, make_points
from mock_llm import MockLLM

from novelty_audit.errors import ConfigError
from novelty_audit.judges._prompts import load_prompt, resolve_template

KEY = "sk-test-SECRET123"
PACKAGED = Path(__file__).resolve().parents[2] / "novelty_audit" / "prompts"

JINJA = """[system]
You compare two research ideas for novelty.
[user]
First idea:
{{ idea_a }}

Second idea:
{{ idea_b }}
{% if evidence %}Context:{{ evidence }}{% endif %}
{{ answer_format }}
"""

def benchmark_only(raw: dict) -> dict:
    """Pin only the benchmark splits the `project` fixture copies (other sources need their own data)."""
    raw["pin"]["datasets"] = {k: v for k, v in raw["pin"]["datasets"].items() if str(v.get("path", "")).startswith("data/novelty-judge-bench/")}
    return raw


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("MOCK_API_KEY", KEY)


def write(root: Path, rel: str, text: str) -> str:
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    (root / rel).write_text(text, encoding="utf-8")
    return rel


def test_a_copy_of_a_packaged_template_renders_byte_identical_messages(tmp_path):
    rel = write(tmp_path, "prompts/mine.txt", (PACKAGED / "pairwise-reference-v1.txt").read_text(encoding="utf-8"))
    shown = tuple(make_pairs(1)[0].ideas)
    packaged = load_prompt("pairwise", "reference-v1")
    mine = load_prompt("pairwise", rel, root=tmp_path)
    assert mine.path == "prompts/mine.txt" and packaged.path is None
    for evidence in (None, ("- Prior A (2020): x", "- Prior B (2021): y")):
        assert mine.render(shown, evidence=evidence) == packaged.render(shown, evidence=evidence)
    assert mine.digest == packaged.digest  # same bytes: same prompt digest; the file is named by the prompt_files knob
    assert mine.knob() == {"prompt_files": {"prompts/mine.txt": resolve_template(rel, root=tmp_path).sha256}}


def test_a_jinja2_file_fills_every_placeholder_in_both_sections(tmp_path):
    rel = write(tmp_path, "prompts/custom.jinja2", JINJA)
    t = load_prompt("pairwise", rel, root=tmp_path)
    a, b = make_pairs(1)[0].ideas
    plain = t.render((a, b))
    assert plain[0] == {"role": "system", "content": "You compare two research ideas for novelty."}
    assert f"First idea:\n{a.text}\n\nSecond idea:\n{b.text}\n" in plain[1]["content"]
    assert "Context" not in plain[1]["content"] and '{"answer": "<A or B>"}' in plain[1]["content"]
    with_ev = t.render((a, b), evidence=("- P1 (2020): one", "- P2 (2021): two"))[1]["content"]
    assert "Context:\nRelated prior work for Idea A:\n- P1 (2020): one" in with_ev


@pytest.mark.parametrize(
    ("name", "text", "task", "message"),
    [
        ("prompts/typo.jinja2", "[user]\n{{ idea_a }} vs {{ idea_bb }}\n", "pairwise", "prompts/typo.jinja2: undefined variable {{idea_bb}}"),
        ("prompts/typo.txt", "[user]\n{{idea_a}} vs {{idea_b}} {{evidense}}\n", "pairwise", "prompts/typo.txt: undefined variable {{evidense}}"),
        ("prompts/point.txt", "[user]\n{{idea_a}} {{idea_b}}\n", "pointwise", "prompts/point.txt: undefined variable {{idea_a}}, {{idea_b}}"),
        ("prompts/blind.txt", "[user]\nWhich is more novel, A or B?\n", "pairwise", "prompts/blind.txt: never uses {{idea_a}}, {{idea_b}}"),
        ("prompts/nouser.txt", "{{idea_a}} {{idea_b}}\n", "pairwise", "prompts/nouser.txt has no [user] section"),
        ("prompts/broken.jinja2", "[user]\n{{ idea_a }} {% if %}\n", "pairwise", "prompts/broken.jinja2, line 2: Jinja2 syntax error"),
        ("prompts/attr.jinja2", "[user]\n{{ idea_a.summary }} {{ idea_b }}\n", "pairwise", "prompts/attr.jinja2: UndefinedError"),
    ],
)
def test_a_bad_template_file_is_refused_when_loaded_naming_file_and_variable(tmp_path, name, text, task, message):
    write(tmp_path, name, text)
    with pytest.raises(ConfigError) as exc:
        load_prompt(task, name, root=tmp_path)
    assert message in exc.value.message


def test_a_missing_file_or_a_path_leaving_the_project_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="prompt template file prompts/nope.jinja2 does not exist"):
        load_prompt("pairwise", "prompts/nope.jinja2", root=tmp_path)
    with pytest.raises(ConfigError, match="inside the project"):
        load_prompt("pairwise", "../outside.txt", root=tmp_path)
    with pytest.raises(ConfigError, match="no prompt template novelty_audit/prompts/pairwise-nope-v1.txt"):
        load_prompt("pairwise", "nope-v1")  # a bare name is still a packaged template


def test_the_generic_resolver_renders_any_template_strictly(tmp_path):
    write(tmp_path, "prompts/review.txt", "Review {{title}}:\n{{abstract}}\n")
    src = resolve_template("prompts/review.txt", root=tmp_path)
    assert src.render({"title": "T", "abstract": "{{title}} stays literal"}) == "Review T:\n{{title}} stays literal\n"
    with pytest.raises(ConfigError, match=r"prompts/review.txt: undefined variable \{\{abstract\}\}"):
        src.render({"title": "T"})


def test_an_api_judge_with_a_template_file_names_it_in_its_config(build, mock_llm, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "prompts/custom.jinja2", JINJA)
    point = write(tmp_path, "prompts/custom-point.txt", "[user]\nIs this novel?\n{{idea}}\n{{evidence}}\n{{answer_format}}\n")
    judge = build(
        "openai", model="mock", base_url=mock_llm.base_url, api_key_env="MOCK_API_KEY", votes=1,
        prompt="prompts/custom.jinja2", pointwise_prompt=point,
    )  # fmt: skip
    cfg = judge.config()
    assert cfg["prompt"] == "prompts/custom.jinja2" and set(cfg["prompt_files"]) == {"prompts/custom.jinja2", "prompts/custom-point.txt"}
    out = judge.judge(make_pairs(2), make_points(2))
    assert all(r["n_valid"] == 2 for r in out.pairwise) and all(r["n_valid"] == 1 for r in out.pointwise)
    # Pairwise and pointwise calls run concurrently: find the pairwise request by its template, not its arrival.
    sent = [r.body["messages"] for r in mock_llm.requests if "First idea:" in r.body["messages"][-1]["content"]]
    assert sent and all(m[0] == {"role": "system", "content": "You compare two research ideas for novelty."} for m in sent)
    before = judge.config_digest
    (tmp_path / "prompts/custom.jinja2").write_text(JINJA.replace("novelty.", "novelty!"), encoding="utf-8")
    again = build("openai", model="mock", base_url=mock_llm.base_url, api_key_env="MOCK_API_KEY", votes=1,
                  prompt="prompts/custom.jinja2", pointwise_prompt=point)  # fmt: skip
    assert again.config_digest != before


# -- the stage, as a user runs it ----------------------------------------------------------------------


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "MOCK_API_KEY": KEY}
    return subprocess.run([sys.executable, "-m", "novelty_audit.cli", *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def reads_the_system_text(body, nth):
    """A judge swayed by the wording: 'bold' in the system text → A, otherwise B."""
    system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
    return 'Fine.\n{"answer": "%s"}' % ("A" if "bold" in system else "B")


@pytest.mark.slow
def test_editing_one_character_of_the_template_file_is_a_config_change_naming_it(project):
    write(project, "prompts/custom.jinja2", JINJA.replace("You compare", "You bold compare"))
    raw = benchmark_only(yaml.safe_load((project / "params.yaml").read_text()))
    with MockLLM(answer=reads_the_system_text) as mock:
        args = {"model": "mock", "base_url": mock.base_url, "api_key_env": "MOCK_API_KEY", "votes": 1, "orders": "forward",
                "prompt": "prompts/custom.jinja2"}  # fmt: skip
        raw["judge"] = {"datasets": ["human-only"], "tasks": ["pairwise"], "progress": False, "limit": 5,
                        "judges": {"mine": {"backend": "openai", "args": args}}}  # fmt: skip
        (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
        for step in ("pin", "judge"):
            done = cli("stage", step, cwd=project)
            assert done.returncode == 0, done.stdout + done.stderr
        from novelty_audit.params import load_params
        from novelty_audit.pipeline import record_run

        record_run(load_params(project / "params.yaml"), project / "dvc.yaml")
        # one character: "bold" → "bolt"
        write(project, "prompts/custom.jinja2", JINJA.replace("You compare", "You bolt compare"))
        done = cli("stage", "judge", cwd=project)
        assert done.returncode == 0, done.stdout + done.stderr
        record_run(load_params(project / "params.yaml"), project / "dvc.yaml")
    res = cli("audit", "--json", cwd=project)
    assert res.returncode == 0, res.stdout + res.stderr
    changes = orjson.loads(res.stdout)["changes"]
    assert len(changes) == 5 and {c["cause"] for c in changes} == {"config"}
    knobs = {k["name"] for c in changes for k in c["knobs"]}
    assert "prompt_files.prompts/custom.jinja2" in knobs and knobs <= {"prompt_files.prompts/custom.jinja2", "prompt_digest"}


@pytest.mark.slow
def test_a_template_file_outside_the_declared_deps_stops_the_stage_naming_the_line_to_add(project):
    write(project, "elsewhere/custom.jinja2", JINJA)
    raw = benchmark_only(yaml.safe_load((project / "params.yaml").read_text()))
    args = {"model": "mock", "base_url": "http://127.0.0.1:9/v1", "api_key_env": "MOCK_API_KEY", "prompt": "elsewhere/custom.jinja2"}
    raw["judge"] = {"datasets": ["human-only"], "tasks": ["pairwise"], "judges": {"mine": {"backend": "openai", "args": args}}}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    assert cli("stage", "pin", cwd=project).returncode == 0
    done = cli("stage", "judge", cwd=project)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "elsewhere/custom.jinja2" in done.stdout + done.stderr
