"""Preloaded by the fork server that local Dask worker processes fork from (flows/_fanout.py).

Importing this module digests the code of every API judge backend in that server, so each forked worker starts
with the digest its chunks' rows carry instead of parsing the same sources again (~1.5 s of CPU per worker on
a busy 2-core machine). The digest is the one the worker would compute: a forked worker runs the very modules
the server imported. A judge whose `code_modules` differ from the default simply misses this cache and
digests its own modules, as before.
"""

from __future__ import annotations

from ..artifacts import code_digest
from ..judges import JUDGES, LLMJudge

__all__: list[str] = []

for _name in ("openai", "anthropic"):  # the backend table imports a backend's module on first use only
    JUDGES.get(_name)
for _backend in LLMJudge.__subclasses__():
    code_digest(_backend.__module__, "novelty_audit.judges._base")  # Judge.code_modules' default roots
