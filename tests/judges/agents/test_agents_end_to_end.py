"""Issue 28 "Done when", per search-agent backend, through the real pin → judge → metrics stages of a small test
project (tests/tiny_project.py, its human-only split cut to two pairs) against the mocks: a scripted LLM that
searches and decides (tests/mock_llm.py), Semantic Scholar (tests/mock_s2.py) and arXiv (tests/mock_arxiv.py).

All three judges run in one project run (one pin, one judge stage, one audit), each checked on its own.

1. Verdict rows, `evidence_docs` with the query that found each paper, and grounded_rate / cost_per_decision_usd /
   queries_per_decision in metrics.json (search-agent also pairwise).
2. A second run asks the LLM and the search API nothing and writes the same verdict bytes.
3. With `refresh: true` the search mock returns one different paper for one query: the audit shows one `evidence`
   change per backend naming that query and that paper, and nothing else changes.

The scripted model decides from what its searches return, as a real one would: a result titled "Same method as
<idea>" makes the idea not novel and is cited (grounded); "Vague method" makes it not novel citing a paper it never
retrieved (ungrounded); otherwise the idea is novel.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest
import yaml
from mock_arxiv import MockArxiv, default_entries, entry
from mock_llm import MockLLM, tool_results
from mock_s2 import MockS2, default_results, paper

KEY_ENV = "E2E_AGENT_KEY"
PRICE = {"input_per_mtok": 2.0, "output_per_mtok": 8.0}
FAST = {"requests_per_second": 1000, "backoff_s": 0.001, "max_backoff_s": 0.01, "max_retries": 1, "timeout_s": 10}
DATASET = "human-only"
KEPT_PAIRS = 2


# -- the project ---------------------------------------------------------------------------------------------


def run(name: str, force: bool = False):
    from novelty_audit.pipeline import run_stage

    return run_stage(name, force=force)


def record() -> None:
    from novelty_audit.params import load_params
    from novelty_audit.pipeline import record_run

    record_run(load_params("params.yaml"))


def cut_to_two_pairs(project: Path) -> None:
    """Keep the first two pairs of the human-only split (re-pinned) and judge only that split."""
    from tiny_project import _sha256, first_entries

    raw = yaml.safe_load((project / "params.yaml").read_text())
    pin = raw["pin"]["datasets"][DATASET]
    path = project / pin["path"]
    path.write_text(first_entries(path.read_text(), KEPT_PAIRS))
    pin["sha256"] = _sha256(path)
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))


def set_judges(project: Path, judges: dict[str, Any]) -> None:
    raw = yaml.safe_load((project / "params.yaml").read_text())
    raw["judge"] = {"datasets": [DATASET], "tasks": ["pairwise", "pointwise"], "progress": False, "judges": judges}
    (project / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False, allow_unicode=True))


# -- the ideas and what the scripted model searches for -----------------------------------------------------


def token(idea_id: str) -> str:
    """A word unique to the idea, carried by every query the model writes for it (the mocks script by it)."""
    return "tok" + re.sub(r"[^a-z0-9]", "", idea_id.lower())[-10:]


def query_for(idea_id: str) -> str:
    return f"prior work {token(idea_id)}"


class Ideas:
    """The pinned ideas of the cut split: which one a prompt is about, and the roles the test gives them."""

    def __init__(self, project: Path):
        df = pl.read_parquet(project / "artifacts/pin" / DATASET / "ideas.parquet").sort("idea_id")
        self.text = dict(zip(df["idea_id"], df["text"]))
        self.title = dict(zip(df["idea_id"], df["title"]))
        ids = list(self.text)
        assert len(ids) >= 3, ids
        self.grounded, self.ungrounded, self.drifting = ids[0], ids[1], ids[2]
        """not novel citing a retrieved paper; not novel citing one it never retrieved; novel until a refreshed
        search returns one different paper for its query."""

    def first_in(self, text: str) -> str:
        """The idea whose text appears first in `text` (idea A of a pairwise prompt)."""
        found = [(text.find(t), i) for i, t in self.text.items() if t in text]
        assert found, f"no pinned idea in the prompt: {text[:200]!r}"
        return min(found)[1]


SAME, VAGUE = "Same method as", "Vague method near"


def decide(shown: str) -> tuple[str, str | None]:
    """(answer, cited title) from the papers a decision was shown."""
    same = re.search(rf"({SAME} tok[a-z0-9]+)", shown)
    if same:
        return "no", same.group(1)
    if VAGUE in shown:
        return "no", "A paper nobody retrieved"
    return "yes", None


def search_agent_answer(ideas: Ideas, body: dict[str, Any]) -> Any:
    user = next(m["content"] for m in body["messages"] if m["role"] == "user")
    idea = ideas.first_in(user)
    if not any(m["role"] == "assistant" for m in body["messages"]):
        return {"content": None, "tool_calls": [{"name": "search", "arguments": {"query": query_for(idea)}}]}
    if "Idea B" in user:  # pairwise: the first idea shown, whatever the searches say
        return 'Idea A has no close precedent.\n{"answer": "A"}'
    answer, cited = decide("\n".join(tool_results(body)))
    return ("Searched the literature.\n" + (f"Prior paper: {cited}\n" if cited else "") + f'{{"answer": "{answer}"}}')


def checker_answer(ideas: Ideas, text: str) -> str:
    if "Write search queries" in text:
        return f'{{"keywords": ["{query_for(ideas.first_in(text))}"], "titles": []}}'
    if "Class: <novel or not novel>" in text:
        same = re.search(rf"\[(\d+)\] Title: {SAME}", text)
        if same:
            return f"Class: not novel\nReview: The idea repeats [{same.group(1)}]."
        if VAGUE in text:
            return "Class: not novel\nReview: Something close exists, though none of these papers is it."
        return "Class: novel\nReview: None of the papers does this."
    raise AssertionError(f"unscripted checker prompt: {text[:200]!r}")


def ai_scientist_answer(ideas: Ideas, body: dict[str, Any]) -> str:
    last = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
    if "(none yet)" in last:
        return f'THOUGHT:\nLet me look.\n\nRESPONSE:\n```json\n{{"Query": "{query_for(ideas.first_in(last))}"}}\n```'
    answer, cited = decide(last)
    if answer == "yes":
        return "THOUGHT:\nNothing close.\n\nRESPONSE:\nDecision made: novel."
    return f"THOUGHT:\nIt was done.\n\nRESPONSE:\nDecision made: not novel.\nCited paper: {cited}"


def scripted(ideas: Ideas) -> Callable[[dict[str, Any], int], Any]:
    def answer(body: dict[str, Any], nth: int) -> Any:
        if body.get("tools"):
            return search_agent_answer(ideas, body)
        text = "\n".join(str(m.get("content") or "") for m in body["messages"])
        if "Decision made: novel" in text:
            return ai_scientist_answer(ideas, body)
        return checker_answer(ideas, text)

    return answer


# -- the backends ---------------------------------------------------------------------------------------------

BACKENDS: dict[str, dict[str, Any]] = {
    "ai-scientist": {"source": "semantic-scholar", "tasks": ("pointwise",), "args": {"max_rounds": 3}},
    "search-agent": {"source": "arxiv", "tasks": ("pairwise", "pointwise"),
                     "args": {"max_queries": 3, "max_rounds": 4, "orders": "forward"}},
    "idea-novelty-checker": {"source": "semantic-scholar", "tasks": ("pointwise",),
                             "args": {"rerank": "none", "k": 3, "candidates": 10, "snippet_chars": 0}},
}


class Mocks:
    def __init__(self, llm: MockLLM, s2: MockS2, arxiv: MockArxiv):
        self.llm, self.s2, self.arxiv = llm, s2, arxiv

    def searches(self) -> int:
        return self.s2.count + self.arxiv.count

    def script(self, ideas: Ideas, *, drift: bool) -> None:
        """Results per idea query: the grounded idea's hold its prior paper, the ungrounded one's a vague one; with
        `drift`, the drifting idea's query returns one different paper (its last default replaced)."""
        for mock, results, make in ((self.s2, default_results, lambda pid, t: paper(pid, t, 2016)),
                                    (self.arxiv, default_entries, lambda pid, t: entry(pid, t, "2016-05-01"))):
            for idea, title in ((ideas.grounded, SAME), (ideas.ungrounded, VAGUE)):
                q = query_for(idea)
                mock.script(token(idea), results(q)[:2] + [make(_pid(mock, idea), f"{title} {token(idea)}")])
            if drift:
                q = query_for(ideas.drifting)
                mock.script(token(ideas.drifting), results(q)[:2] + [make(_pid(mock, ideas.drifting), f"{SAME} {token(ideas.drifting)}")])


def _pid(mock: Any, idea: str) -> str:
    n = int(hashlib.sha256(token(idea).encode()).hexdigest(), 16) % 90000 + 10000
    return f"1605.{n:05d}" if isinstance(mock, MockArxiv) else f"same-{token(idea)}"


def judges_params(m: Mocks, backends: list[str], *, refresh: bool = False) -> dict[str, Any]:
    out = {}
    for name in backends:
        spec = BACKENDS[name]
        base_url = m.arxiv.base_url if spec["source"] == "arxiv" else m.s2.base_url
        search = {"source": spec["source"], "base_url": base_url, **FAST, **({"refresh": True} if refresh else {})}
        out[name] = {"backend": name, "args": {"model": "mock-agent", "base_url": m.llm.base_url, "api_key_env": KEY_ENV,
                                               "backoff_s": 0.01, "price": PRICE, "search": search, **spec["args"]}}
    return out


@pytest.fixture
def world(tiny: Path, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "sk-e2e-SECRET")
    cut_to_two_pairs(tiny)
    run("pin")
    ideas = Ideas(tiny)
    with MockLLM(answer=scripted(ideas)) as llm, MockS2() as s2, MockArxiv() as arxiv:
        yield tiny, ideas, Mocks(llm, s2, arxiv)


# -- the test --------------------------------------------------------------------------------------------------


def read(project: Path) -> tuple[bytes, bytes]:
    j = project / "artifacts/judge"
    return (j / "verdicts.parquet").read_bytes(), (j / "pointwise.parquet").read_bytes()


def check_rows(project: Path, ideas: Ideas, backend: str, metrics: dict[str, Any]) -> None:
    """Verdicts, evidence with queries and the agent metrics of one backend's first run."""
    points = pl.read_parquet(project / "artifacts/judge/pointwise.parquet").filter(pl.col("judge") == backend)
    rows = {r["idea_id"]: r for r in points.iter_rows(named=True)}
    assert set(rows) == set(ideas.text), backend
    assert {i: r["predicted"] for i, r in rows.items()} == {
        i: ("NEGATIVE" if i in (ideas.grounded, ideas.ungrounded) else "POSITIVE") for i in ideas.text}, backend
    for i, r in rows.items():
        assert (r["n_valid"], r["n_undecided"], r["n_error"]) == (1, 0, 0), r
        assert r["n_queries"] >= 1 and r["n_rounds"] >= 2 and r["n_tokens"] > 0 and r["cost_usd"] > 0, r
        docs = [d for d in orjson.loads(r["evidence_docs"]) if d.get("role") != "dropped"]
        assert docs and {d["query"] for d in docs} == {query_for(i)}, (backend, docs)
        assert all(d["source"] == BACKENDS[backend]["source"] and d["doc_id"] for d in docs), (backend, docs)
    cites = {i: orjson.loads(r["citations"]) for i, r in rows.items()}
    assert [c["retrieved"] for c in cites[ideas.grounded]] == [True], backend
    assert cites[ideas.grounded][0]["title"] == f"{SAME} {token(ideas.grounded)}", backend
    assert [c["retrieved"] for c in cites[ideas.ungrounded]] == [False], backend
    assert cites[ideas.drifting] == [], backend
    d = metrics[backend]
    decisions = sum(r["n_valid"] for r in rows.values())
    assert d["grounded_rate"] == 0.5, backend
    assert d["queries_per_decision"] == pytest.approx(sum(r["n_queries"] for r in rows.values()) / decisions), backend
    assert d["cost_per_decision_usd"] == pytest.approx(sum(r["cost_usd"] for r in rows.values()) / decisions), backend
    assert d["rounds_per_decision"] >= 2 and d["n_undecided"] == 0, backend
    if "pairwise" in BACKENDS[backend]["tasks"]:
        verdicts = pl.read_parquet(project / "artifacts/judge/verdicts.parquet").filter(pl.col("judge") == backend)
        assert verdicts.height == KEPT_PAIRS and verdicts["verdict"].to_list() == verdicts["idea_0"].to_list()
        assert d["pairwise_queries_per_decision"] == 1.0 and "pairwise_cost_per_decision_usd" in d
    else:
        assert not any(k.startswith("pairwise_") for k in d), "a pointwise-only agent asked no pair"


@pytest.mark.slow
def test_every_agent_runs_end_to_end_reruns_from_its_caches_and_shows_search_drift_as_evidence(world):
    project, ideas, m = world
    backends = list(BACKENDS)
    m.script(ideas, drift=False)
    set_judges(project, judges_params(m, backends))
    run("judge")
    run("metrics")
    record()
    asked, searched = m.llm.count, m.searches()
    assert asked > 0 and m.s2.count > 0 and m.arxiv.count > 0

    # 1. verdicts, evidence with queries, the agent metrics — per backend
    metrics = orjson.loads((project / "artifacts/metrics/metrics.json").read_bytes())[DATASET]
    for backend in backends:
        check_rows(project, ideas, backend, metrics)

    # 2. a second run: nothing asked, the same bytes
    before = read(project)
    run("judge", force=True)
    assert (m.llm.count, m.searches()) == (asked, searched), "the rerun asked the LLM or the search API"
    assert read(project) == before

    # 3. refresh: one query returns one different paper; the audit names it, nothing else changes
    m.script(ideas, drift=True)
    set_judges(project, judges_params(m, backends, refresh=True))
    run("judge")
    run("metrics")
    record()
    from novelty_audit.audit import audit_project

    res = audit_project("params.yaml").result
    assert res.membership == []
    assert sorted((c.kind, c.judge, c.pair, c.before, c.after, c.cause) for c in res.changes) == [
        ("pointwise", b, ideas.drifting, "POSITIVE", "NEGATIVE", "evidence") for b in sorted(backends)]
    new, query = f"{SAME} {token(ideas.drifting)}", query_for(ideas.drifting)
    for change in res.changes:
        moved = [(d.movement, d.title, d.query) for d in change.evidence.docs if d.movement in ("entered", "left")]
        assert [(t, q) for mv, t, q in moved if mv == "entered"] == [(new, query)], (change.judge, moved)
        assert all(q == query for _, _, q in moved), (change.judge, moved)
        (why,) = [w for w in change.evidence.decisive if w.kind == "document"]
        assert f'"{new}"' in why.text and f'search "{query}"' in why.text and why.query == query, (change.judge, why.text)
