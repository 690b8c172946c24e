"""A lean OpenAI-compatible chat server on 127.0.0.1 for benchmarks at paper scale (its own process).

tests/mock_llm.py records every request and counts every distinct body, which is what the tests check and what,
at 100,000+ requests of several KB each, grows the server to gigabytes and slows it. This one keeps nothing:
it reads the body, waits `latency` seconds and answers. The answer is a function of the prompt text and the
model (a sha256 bit), so a rerun asks for the same verdicts and different configurations disagree on some items:

    python benchmarks/_mock.py --port 8765 --latency 0.05
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib

import orjson
from aiohttp import web


def answer(body: dict) -> str:
    """Pairwise: A or B; pointwise: yes or no; chosen by the prompt text and the model, never at random."""
    text = "\n".join(str(m.get("content") or "") for m in body.get("messages", []))
    bit = hashlib.sha256(f"{body.get('model')}\0{text}".encode()).digest()[0]
    if '"answer": "yes"' in text or "<yes or no>" in text:  # the pointwise verdict form (as tests/mock_llm.py)
        return '{"answer": "%s"}' % ("yes" if bit % 2 else "no")
    # Two in three answers "A": the judge's order bias the order-flip metrics should see.
    return '{"answer": "%s"}' % ("A" if bit % 3 else "B")


def app(latency: float) -> web.Application:
    async def chat(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        await asyncio.sleep(latency)
        content = answer(body)
        out = {
            "id": "chatcmpl-bench", "object": "chat.completion", "created": 0, "model": body.get("model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop", "logprobs": None}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 8, "total_tokens": 108},
        }  # fmt: skip
        return web.Response(body=orjson.dumps(out), content_type="application/json")

    application = web.Application()
    application.router.add_post("/v1/chat/completions", chat)
    return application


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--latency", type=float, default=0.05)
    a = ap.parse_args()
    web.run_app(app(a.latency), host="127.0.0.1", port=a.port, print=None, backlog=2048, access_log=None)


if __name__ == "__main__":
    main()
