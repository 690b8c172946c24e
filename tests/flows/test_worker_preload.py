"""Local Dask workers preload the SDKs of the enabled API backends, although the backend table imports their
modules lazily."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from project_copy import REPO


def test_worker_preload_names_the_sdk_of_each_enabled_api_backend_in_a_fresh_interpreter():
    # A fresh interpreter: no other test has imported the backend modules that name the SDKs.
    code = textwrap.dedent(
        """
        from flows._fanout import worker_preload
        from novelty_audit.judges import JudgeParams
        jp = JudgeParams.model_validate({"judges": {
            "g": {"backend": "openai", "args": {"model": "m"}},
            "c": {"backend": "anthropic", "args": {"model": "m"}, "enabled": False},
            "r": {"backend": "random"},
        }})
        print(worker_preload(jp)[-1])
        """
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "openai"


def test_the_worker_module_digests_both_api_backends():
    code = "import novelty_audit.orchestration._worker\nfrom novelty_audit.judges import LLMJudge\n" \
           "print(sorted(c.backend for c in LLMJudge.__subclasses__()))"
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "['anthropic', 'openai']"
