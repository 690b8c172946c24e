"""A test project with the probe catalogue, a small probe and a scripted gullible judge on the mock server."""

from __future__ import annotations

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
