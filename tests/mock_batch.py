"""A scripted provider batch server on 127.0.0.1 (OpenAI Batch API and Anthropic Message Batches), for tests only.

OpenAI: `POST /v1/files` (multipart JSONL upload, purpose=batch), `POST /v1/batches`, `GET /v1/batches/{id}`
(validating → in_progress → finalizing → completed, one step per poll), `GET /v1/files/{id}/content` (the
input, output and error files). Anthropic: `POST /v1/messages/batches`, `GET /v1/messages/batches/{id}`
(in_progress → ended), `GET /v1/messages/batches/{id}/results` (JSONL).

Answers are those of the interactive mock (`mock_llm.default_answer`, same usage counts), so a batch run and an
interactive run see the same texts. Scripting:

    mock.hold = True           # batches stay in progress until set back to False
    mock.fail_match = "XFAIL"  # batch requests whose prompt contains it fail (OpenAI: error file; Anthropic: errored)
    mock.refuse_batches = True # batch creation answers HTTP 500

The interactive routes (`/v1/chat/completions`, `/v1/completions`, `/v1/messages`) answer too, so calls a batch
failed can be asked one by one (`counters["interactive_requests"]`).

`mock.counters` counts uploads, batches created, polls, result downloads and requests answered.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import orjson
from aiohttp import web
from mock_llm import LoopbackServer, _prompt_text, default_answer, free_port

__all__ = ["MockBatch"]

OPENAI_STEPS = ("validating", "in_progress", "finalizing", "completed")


class MockBatch(LoopbackServer):
    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.hold = False
        self.fail_match: str | None = None
        self.refuse_batches = False
        """Answer every batch creation (OpenAI upload, Anthropic create) with HTTP 500."""
        self.counters: Counter = Counter()
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """OpenAI-style /v1 root."""
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        """Anthropic-style root (the SDK appends /v1/...)."""
        return f"http://127.0.0.1:{self.port}"

    # -- answers --------------------------------------------------------------------------------------
    def _answer(self, body: dict[str, Any], anthropic: bool) -> tuple[int, dict[str, Any]]:
        """(HTTP status, response body) of one request, as the interactive mock would answer it."""
        self.counters["requests_answered"] += 1
        text = _prompt_text(body)
        if self.fail_match and self.fail_match in text:
            return 500, {"error": {"message": "server exploded", "type": "server_error"}}
        content = default_answer(body, 0)
        n_in, n_out = max(1, len(text) // 4), max(1, len(content) // 4)
        model = f"mock-{body.get('model')}"
        if anthropic:
            return 200, {
                "id": "msg_b", "type": "message", "role": "assistant", "model": model,
                "content": [{"type": "text", "text": content}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": n_in, "output_tokens": n_out},
            }  # fmt: skip
        if "prompt" in body:
            choice = {"index": 0, "text": content, "finish_reason": "stop", "logprobs": None}
            kind = "text_completion"
        else:
            choice = {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop", "logprobs": None}
            kind = "chat.completion"
        return 200, {
            "id": "chatcmpl-b", "object": kind, "created": 0, "model": model, "choices": [choice],
            "usage": {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out},
        }  # fmt: skip

    # -- OpenAI ---------------------------------------------------------------------------------------
    async def _upload(self, request: web.Request) -> web.Response:
        form = await request.post()
        if self.refuse_batches:
            self.counters["refused"] += 1
            return web.json_response({"error": {"message": "batch service down", "type": "server_error"}}, status=500)
        data = form["file"].file.read()
        with self._lock:
            fid = f"file-{len(self.files) + 1}"
            self.files[fid] = data
            self.counters["files_uploaded"] += 1
        return web.json_response({"id": fid, "object": "file", "bytes": len(data), "created_at": 0, "filename": "batch.jsonl", "purpose": form.get("purpose")})

    async def _file_content(self, request: web.Request) -> web.Response:
        fid = request.match_info["fid"]
        with self._lock:
            self.counters["file_downloads"] += 1
            data = self.files.get(fid)
        if data is None:
            return web.json_response({"error": {"message": "no such file"}}, status=404)
        return web.Response(body=data, content_type="application/octet-stream")

    async def _create(self, request: web.Request) -> web.Response:
        req = orjson.loads(await request.read())
        with self._lock:
            bid = f"batch_{len(self.batches) + 1}"
            self.batches[bid] = {"id": bid, "object": "batch", "endpoint": req["endpoint"], "input_file_id": req["input_file_id"],
                                 "completion_window": req["completion_window"], "status": "validating", "created_at": 0,
                                 "output_file_id": None, "error_file_id": None, "metadata": req.get("metadata")}  # fmt: skip
            self.counters["batches_created"] += 1
            return web.json_response(self.batches[bid])

    def _complete_openai(self, b: dict[str, Any]) -> None:
        out, err = [], []
        for raw in self.files[b["input_file_id"]].splitlines():
            if not raw.strip():
                continue
            line = orjson.loads(raw)
            status, body = self._answer(line["body"], anthropic=False)
            item = {"id": f"req_{len(out) + len(err)}", "custom_id": line["custom_id"], "response": {"status_code": status, "request_id": "r", "body": body}, "error": None}
            (out if status == 200 else err).append(orjson.dumps(item))
        for name, lines in (("output_file_id", out), ("error_file_id", err)):
            if lines:
                fid = f"file-{len(self.files) + 1}"
                self.files[fid] = b"\n".join(lines) + b"\n"
                b[name] = fid

    async def _retrieve(self, request: web.Request) -> web.Response:
        bid = request.match_info["bid"]
        with self._lock:
            self.counters["polls"] += 1
            b = self.batches[bid]
            if not self.hold and b["status"] != "completed":
                b["status"] = OPENAI_STEPS[OPENAI_STEPS.index(b["status"]) + 1]
                if b["status"] == "completed":
                    self._complete_openai(b)
            return web.json_response(b)

    # -- Anthropic ------------------------------------------------------------------------------------
    async def _a_create(self, request: web.Request) -> web.Response:
        req = orjson.loads(await request.read())
        if self.refuse_batches:
            self.counters["refused"] += 1
            return web.json_response({"type": "error", "error": {"type": "api_error", "message": "batch service down"}}, status=500)
        with self._lock:
            bid = f"msgbatch_{len(self.batches) + 1}"
            self.batches[bid] = {"id": bid, "type": "message_batch", "processing_status": "in_progress", "created_at": "2026-01-01T00:00:00Z",
                                 "expires_at": "2026-01-02T00:00:00Z", "ended_at": None, "results_url": None, "cancel_initiated_at": None,
                                 "archived_at": None, "request_counts": {"processing": len(req["requests"]), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
                                 "_requests": req["requests"]}  # fmt: skip
            self.counters["batches_created"] += 1
            return web.json_response(self._public(self.batches[bid]))

    @staticmethod
    def _public(b: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in b.items() if not k.startswith("_")}

    async def _a_retrieve(self, request: web.Request) -> web.Response:
        bid = request.match_info["bid"]
        with self._lock:
            self.counters["polls"] += 1
            b = self.batches[bid]
            if not self.hold and b["processing_status"] != "ended":
                lines = []
                for r in b["_requests"]:
                    status, body = self._answer(r["params"], anthropic=True)
                    if status == 200:
                        result = {"type": "succeeded", "message": body}
                    else:
                        result = {"type": "errored", "error": {"type": "error", "error": {"type": "api_error", "message": body["error"]["message"]}}}
                    lines.append(orjson.dumps({"custom_id": r["custom_id"], "result": result}))
                b["_results"] = b"\n".join(lines) + b"\n"
                b["processing_status"] = "ended"
                b["ended_at"] = "2026-01-01T00:01:00Z"
                b["results_url"] = f"{self.root_url}/v1/messages/batches/{bid}/results"
            return web.json_response(self._public(b))

    async def _a_results(self, request: web.Request) -> web.Response:
        with self._lock:
            self.counters["file_downloads"] += 1
            data = self.batches[request.match_info["bid"]]["_results"]
        return web.Response(body=data, content_type="application/binary")

    # -- the interactive endpoints (calls a batch failed may be asked one by one) ---------------------
    async def _interactive(self, request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        with self._lock:
            self.counters["interactive_requests"] += 1
            fail, self.fail_match = self.fail_match, None  # `fail_match` scripts the batch only
            try:
                status, out = self._answer(body, anthropic=request.path.endswith("/messages"))
            finally:
                self.fail_match = fail
        return web.json_response(out, status=status)

    # -- server ---------------------------------------------------------------------------------------
    def _app(self) -> web.Application:
        app = web.Application(client_max_size=1 << 28)
        for path in ("/v1/chat/completions", "/v1/completions", "/v1/messages"):
            app.router.add_post(path, self._interactive)
        app.router.add_post("/v1/files", self._upload)
        app.router.add_get("/v1/files/{fid}/content", self._file_content)
        app.router.add_post("/v1/batches", self._create)
        app.router.add_get("/v1/batches/{bid}", self._retrieve)
        app.router.add_post("/v1/messages/batches", self._a_create)
        app.router.add_get("/v1/messages/batches/{bid}", self._a_retrieve)
        app.router.add_get("/v1/messages/batches/{bid}/results", self._a_results)
        return app
