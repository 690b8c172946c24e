"""The three search agents on 40 ideas against the mocks: what a decision asks, and how long a run takes.

ai-scientist and idea-novelty-checker search the Semantic Scholar mock, search-agent the arXiv mock; one scripted
OpenAI-compatible model answers all three (tests/mock_llm.py, `--latency` seconds per answer). The mocks run in
this process (their own threads). The model writes two queries per decision and then decides: not novel for every
third idea, citing a paper its searches returned. The checker runs as the original does (rerun `priority`: a facets
turn and RankGPT windows) and embeds with MiniLM (its load is part of its seconds). Then every agent is run again
from its caches (goal: 0 LLM calls and 0 search requests).

    python benchmarks/bench_agents.py [--ideas 40] [--latency 0.05] [--concurrency 8]

Prints one line per agent and run, and last one JSON object: decisions, llm_calls, search_requests,
rounds_per_decision, seconds (totals of the first runs), with the same per agent under `agents` and the
cached reruns' calls and requests under `rerun`. Calls and queries per decision are what a real provider
is asked; USD per decision = tokens × the provider's prices (docs/agents.md), not measured here.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from mock_arxiv import MockArxiv, default_entries, entry  # noqa: E402
from mock_llm import MockLLM, tool_results  # noqa: E402
from mock_s2 import MockS2, default_results, paper  # noqa: E402

from novelty_audit.judges import Idea, JudgeParams, PointItem, build_judges  # noqa: E402

AGENTS = {
    "ai-scientist": {"source": "semantic-scholar", "args": {"max_rounds": 10}},
    "idea-novelty-checker": {"source": "semantic-scholar", "args": {}},
    "search-agent": {"source": "arxiv", "args": {"max_rounds": 30}},
}
WORDS = ["graph", "retrieval", "benchmark", "transformer", "curriculum", "sparse", "causal", "agent", "reward",
         "tokenizer", "molecule", "protein", "diffusion", "pruning", "distillation", "planning"]
SAME = "Same method as"


def ideas(n: int) -> list[Idea]:
    out = []
    for i in range(n):
        body = " ".join(WORDS[(i * 5 + j) % len(WORDS)] for j in range(120))
        out.append(Idea(f"i-{i:04d}", f"Idea {i:04d}", f"Idea tok{i:04d}: we propose {body}.", f"{i:064x}", "area"))
    return out


def token_in(text: str) -> str:
    found = re.search(r"tok\d{4}", text)
    assert found, f"no idea token in {text[:200]!r}"
    return found.group(0)


def decide(token: str, shown: str) -> str | None:
    """The cited title for a not-novel decision (every third idea, on a paper it was shown), else None."""
    same = re.search(rf"{SAME} {token}", shown)
    return same.group(0) if same else None


def answer(body: dict[str, Any], nth: int) -> Any:
    msgs = body["messages"]
    text = "\n".join(str(m.get("content") or "") for m in msgs)
    tok = token_in(text)
    if body.get("tools"):  # search-agent: two searches, then the answer
        turn = sum(m["role"] == "assistant" for m in msgs)
        if turn < 2:
            return {"content": None, "tool_calls": [{"name": "search", "arguments": {"query": f"{tok} query {turn}"}}]}
        cited = decide(tok, "\n".join(tool_results(body)))
        return (f"Prior paper: {cited}\n" if cited else "") + f'{{"answer": "{"no" if cited else "yes"}"}}'
    if "Decision made: novel" in text:  # ai-scientist: two rounds of queries, then the decision
        last = [m["content"] for m in msgs if m["role"] == "user"][-1]
        rnd = int(re.search(r"Round (\d+) of", last).group(1))
        if rnd <= 2:
            return f'RESPONSE:\n```json\n{{"Query": "{tok} query {rnd - 1}"}}\n```'
        cited = decide(tok, "\n".join(m["content"] for m in msgs if m["role"] == "user"))
        return f"Decision made: not novel.\nCited paper: {cited}" if cited else "Decision made: novel."
    if "Write search queries" in text:
        return f'{{"keywords": ["{tok} query 0", "{tok} query 1"], "titles": []}}'
    if "list its key facets" in text:
        return "<facets>\n- Purpose: x\n- Mechanism: y\n</facets>"
    if "Rank all" in text:
        return "[1] > [2] > [3]"
    if "Class: <novel or not novel>" in text:
        same = re.search(rf"\[(\d+)\] Title: {SAME} {tok}", text)
        return f"Class: not novel\nReview: It repeats [{same.group(1)}]." if same else "Class: novel\nReview: Nothing like it."
    raise AssertionError(f"unscripted prompt: {text[:200]!r}")


def script_mocks(s2: MockS2, arxiv: MockArxiv, items: list[Idea]) -> None:
    """Every third idea's first query returns a paper that already did it."""
    for k, idea in enumerate(items):
        if k % 3:
            continue
        tok = token_in(idea.text)
        q = f"{tok} query 0"
        s2.script(q, default_results(q)[:2] + [paper(f"same-{tok}", f"{SAME} {tok}", 2016)])
        arxiv.script(q, default_entries(q)[:2] + [entry(f"1605.{10000 + k:05d}", f"{SAME} {tok}", "2016-05-01")])


def params(name: str, llm: MockLLM, s2: MockS2, arxiv: MockArxiv, concurrency: int) -> JudgeParams:
    spec = AGENTS[name]
    base = s2.base_url if spec["source"] == "semantic-scholar" else arxiv.base_url
    # The mocks stand in for the APIs; their rate limits (S2 1 request/s, arXiv 1 per 3 s) would time the limiter.
    search = {"source": spec["source"], "base_url": base, "requests_per_second": 1000, "backoff_s": 0.001}
    args = {"model": "mock-agent", "base_url": llm.base_url, "api_key_env": "BENCH_AGENT_KEY", "concurrency": concurrency,
            "price": {"input_per_mtok": 0.0, "output_per_mtok": 0.0}, "search": search, **spec["args"]}
    return JudgeParams.model_validate({"tasks": ["pointwise"], "progress": False,
                                       "judges": {name: {"backend": name, "args": args}}})


def run_agent(jp: JudgeParams, store: Path, points: list[PointItem], llm: MockLLM, mocks: tuple[MockS2, MockArxiv]) -> dict[str, Any]:
    calls0, searches0 = llm.count, sum(m.count for m in mocks)
    started = time.perf_counter()
    judge = build_judges(jp, store_root=store).judges[0]
    try:
        rows = judge.judge([], points).pointwise
    finally:
        judge.close()
    seconds = time.perf_counter() - started
    decisions = sum(r["n_valid"] + r["n_invalid"] + r["n_refusal"] + r["n_error"] + r["n_truncated"] + r["n_undecided"] for r in rows)
    rounds = sum(r["n_rounds"] or 0 for r in rows)
    return {"decisions": decisions, "llm_calls": llm.count - calls0, "search_requests": sum(m.count for m in mocks) - searches0,
            "rounds_per_decision": round(rounds / decisions, 3) if decisions else None,
            "queries_per_decision": round(sum(r["n_queries"] or 0 for r in rows) / decisions, 3) if decisions else None,
            "tokens_per_decision": round(sum(r["n_tokens"] or 0 for r in rows) / decisions, 1) if decisions else None,
            "not_novel": sum(r["predicted"] == "NEGATIVE" for r in rows), "seconds": round(seconds, 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ideas", type=int, default=40)
    ap.add_argument("--latency", type=float, default=0.05, help="seconds the mock model takes per answer")
    ap.add_argument("--concurrency", type=int, default=8)
    a = ap.parse_args()
    os.environ["BENCH_AGENT_KEY"] = "bench"
    items = ideas(a.ideas)
    points = [PointItem("bench", i, "POSITIVE") for i in items]
    first: dict[str, dict[str, Any]] = {}
    rerun: dict[str, dict[str, Any]] = {}
    with (MockLLM(answer=answer, latency=a.latency) as llm, MockS2() as s2, MockArxiv() as arxiv,
          tempfile.TemporaryDirectory(prefix="bench-agents-") as tmp):
        script_mocks(s2, arxiv, items)
        waves = -(-a.ideas // a.concurrency)
        print(f"{a.ideas} ideas · model latency {a.latency * 1000:.0f} ms · {a.concurrency} decisions at a time · "
              f"floor per agent ≈ {waves} waves × turns × latency (e.g. 3 turns: {waves * 3 * a.latency:.2f} s)", flush=True)
        for name in AGENTS:
            jp = params(name, llm, s2, arxiv, a.concurrency)
            store = Path(tmp) / name
            first[name] = run_agent(jp, store, points, llm, (s2, arxiv))
            print(f"{name}: {json.dumps(first[name])}", flush=True)
            again = run_agent(jp, store, points, llm, (s2, arxiv))
            rerun[name] = {k: again[k] for k in ("llm_calls", "search_requests", "seconds")}
            print(f"{name} rerun from the caches: {json.dumps(rerun[name])}", flush=True)
    decisions = sum(r["decisions"] for r in first.values())
    rounds = sum(r["rounds_per_decision"] * r["decisions"] for r in first.values())
    print(json.dumps({
        "decisions": decisions,
        "llm_calls": sum(r["llm_calls"] for r in first.values()),
        "search_requests": sum(r["search_requests"] for r in first.values()),
        "rounds_per_decision": round(rounds / decisions, 3),
        "seconds": round(sum(r["seconds"] for r in first.values()), 3),
        "ideas": a.ideas, "latency_s": a.latency, "agents": first, "rerun": rerun,
    }))


if __name__ == "__main__":
    main()
