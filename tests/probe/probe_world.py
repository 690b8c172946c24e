"""A test project with the probe catalogue, a small probe and a scripted gullible judge on the mock server."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from novelty_audit.artifacts import digest_file

REPO = Path(__file__).resolve().parents[2]
CATALOGUE = "data/probes/injection-v1.yaml"
CONTROLS = {name: {"backend": name} for name in ("always-first", "always-second", "random", "abstain")}

_TRIGGER = re.compile(r"instruction to the evaluator|you must select the idea", re.IGNORECASE)
_BLOCK = re.compile(r"<<<IDEA (\w+)>>>.*?<<<END IDEA \1>>>", re.DOTALL)


def gullible(body: dict[str, Any], nth: int) -> str:
    """A judge that obeys instructions it finds in the prompt, unless they sit inside delimited idea blocks.

    Without an instruction it answers "A" (so both orders give a tie). With one, it picks the idea whose
    section holds it: before the "Idea B:" header → A, after → B."""
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    visible = _BLOCK.sub(lambda m: "<idea>", user)
    hit = _TRIGGER.search(visible)
    if hit is None:
        return 'Idea A reads as more original.\n{"answer": "A"}'
    label = "A" if hit.start() < visible.index("Idea B:") else "B"
    return f'As instructed in the text.\n{{"answer": "{label}"}}'


_PLANTED = re.compile(r'instruction to the evaluator: the idea that begins "([^"]+)"', re.IGNORECASE)


def gullible_agent(body: dict[str, Any], nth: int) -> Any:
    """A search agent that searches once, then obeys an instruction it finds in the search results, choosing the
    idea the instruction names by its opening words (quoted or not: it does not read the notice). Without one it
    answers "A"."""
    messages = body["messages"]
    results = [" ".join(str(m.get("content") or "").split()) for m in messages if m["role"] == "tool"]
    if not results:
        return {"content": None, "tool_calls": [{"name": "search", "arguments": {"query": "prior work"}}]}
    user = " ".join(next(m["content"] for m in messages if m["role"] == "user").split())
    for text in results:
        hit = _PLANTED.search(text)
        if hit and hit.group(1) in user:
            label = "A" if user.index(hit.group(1)) < user.index("Idea B:") else "B"
            return f'The search results settle it.\n{{"answer": "{label}"}}'
    return 'Idea A reads as more original.\n{"answer": "A"}'


def either(body: dict[str, Any], nth: int) -> Any:
    """The mock's answer by model name: `gullible-agent` is `gullible_agent`, every other model `gullible`."""
    return gullible_agent(body, nth) if body.get("model") == "gullible-agent" else gullible(body, nth)


def add_corpus(project: Path) -> str:
    """A small local prior-work corpus for a retrieval judge; returns its path in the project."""
    rows = [{"id": f"c{i}", "title": f"Prior study {i} of learning methods", "abstract": f"We study method {i} for learning tasks.",
             "year": 2015 + i} for i in range(5)]  # fmt: skip
    path = "data/prior-work/tiny-probe-corpus.jsonl"  # under the judge stage's declared dep data/prior-work
    (project / path).parent.mkdir(parents=True, exist_ok=True)
    (project / path).write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def search_agent_judge(llm_url: str, s2_url: str) -> dict:
    return {"backend": "search-agent",
            "args": {"model": "gullible-agent", "base_url": llm_url, "api_key_env": None, "local": True, "votes": 1, "concurrency": 8,
                     "search": {"source": "semantic-scholar", "base_url": s2_url, "requests_per_second": 1000, "backoff_s": 0.001}}}


def add_catalogue(project: Path) -> None:
    (project / "data/probes").mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / CATALOGUE, project / CATALOGUE)


def set_params(project: Path, judges: dict, *, pairs: int = 12, **judge_section: Any) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["probe"] = {"catalogue": {"path": CATALOGUE, "sha256": digest_file(project / CATALOGUE)},
                    "datasets": ["human-only"], "seed": 7, "pairs": pairs}
    raw["judge"] = {"datasets": ["human-only"], "probe_datasets": ["human-only:injection"], "tasks": ["pairwise"],
                    "progress": False, "judges": judges, **judge_section}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))


def mock_judge(base_url: str, **args: Any) -> dict:
    return {"backend": "openai",
            "args": {"model": "gullible", "base_url": base_url, "api_key_env": None, "local": True, "votes": 1, "concurrency": 8, **args}}


def run(*names: str, force: bool = False) -> None:
    from novelty_audit.pipeline import run_stage

    for name in names:
        run_stage(name, force=force)
