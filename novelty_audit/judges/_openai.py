"""`openai`: any OpenAI-compatible endpoint (OpenAI, vLLM, Ollama, llama.cpp server, LiteLLM), chat or completions."""

from __future__ import annotations

from typing import Any

import orjson

from ._base import JUDGES, Judge, JudgeContext, parse_args
from ._batch import BatchStatus
from ._llm import Answer, CallFault, LLMArgs, LLMJudge, Payload, RetryableError, expect, json_body, usage_tokens

__all__ = ["OpenAIJudge", "read_openai_answer"]


def read_openai_answer(data: dict[str, Any], *, completions: bool = False) -> Answer:
    """The answer in a chat-completions (or completions) response body; a body without a readable first
    choice is a malformed response (RetryableError)."""
    choices = expect(data, "choices", list)
    if not choices:
        raise RetryableError("malformed response", "response field 'choices' is an empty list")
    choice = choices[0]
    finish = expect(choice, "finish_reason", str, optional=True)
    if completions:
        text, refusal = expect(choice, "text", str), None
    else:
        msg = expect(choice, "message", dict)
        refusal = expect(msg, "refusal", str, optional=True)
        text = expect(msg, "content", str, optional=refusal is not None or finish == "content_filter")
    usage = data.get("usage")
    return Answer(
        text=text if text is not None else refusal,
        refused=bool(refusal) or finish == "content_filter",
        finish_reason=finish,
        input_tokens=usage_tokens(usage, "prompt_tokens"),
        output_tokens=usage_tokens(usage, "completion_tokens"),
        provider_model=data.get("model") if isinstance(data.get("model"), str) else None,
    )


class OpenAIJudge(LLMJudge):
    """Chat completions (or plain completions) through the `openai` SDK with its own retries off (ours
    honour Retry-After). The raw body is read here, so a malformed 200 is a retried fault, not a crash."""

    backend = "openai"
    default_key_env = "OPENAI_API_KEY"
    apis = ("chat", "completions")

    sdk_module = "openai"  # a core dependency, imported only when an API judge is built
    client_class = "AsyncOpenAI"
    default_base_url = "https://api.openai.com/v1"

    def _body(self, payload: Payload) -> tuple[dict[str, Any], dict[str, Any]]:
        """(typed request fields, extra body fields) of one call: the interactive and the batch path send the same."""
        s = self.args.sampling
        body: dict[str, Any] = {"model": self.args.model, "max_tokens": s.max_tokens}
        extra = dict(s.extra)
        completions = isinstance(payload, str)
        body["prompt" if completions else "messages"] = payload
        for name in ("temperature", "top_p", "seed", "reasoning_effort"):
            if getattr(s, name) is not None:
                if completions and name == "reasoning_effort":
                    extra[name] = s.reasoning_effort  # not in the completions signature; servers that know it read it
                else:
                    body[name] = getattr(s, name)
        return body, extra

    async def _send(self, client: Any, payload: Payload) -> Answer:
        body, extra = self._body(payload)
        completions = isinstance(payload, str)
        endpoint = client.completions if completions else client.chat.completions
        raw = await self._request(endpoint.with_raw_response.create(**body, extra_body=extra or None))
        return read_openai_answer(json_body(raw), completions=completions)

    # -- Batch API: one JSONL file of requests, /v1/batches, an output file and an error file ----------
    def _batch_url(self) -> str:
        return "/v1/completions" if self.args.api == "completions" else "/v1/chat/completions"

    async def _batch_submit(self, client: Any, items: list[tuple[str, Payload]]) -> str:
        lines = []
        for key, payload in items:
            body, extra = self._body(payload)
            lines.append(orjson.dumps({"custom_id": key, "method": "POST", "url": self._batch_url(), "body": {**body, **extra}}))
        upload = await self._request(client.files.create(file=("novelty-audit-batch.jsonl", b"\n".join(lines) + b"\n"), purpose="batch"))
        batch = await self._request(
            client.batches.create(input_file_id=upload.id, endpoint=self._batch_url(), completion_window="24h", metadata={"source": "novelty-audit"})
        )
        return batch.id

    async def _batch_status(self, client: Any, batch_id: str) -> BatchStatus:
        batch = await self._request(client.batches.retrieve(batch_id))
        return BatchStatus(done=batch.status in ("completed", "failed", "expired", "cancelled"), state=batch.status)

    async def _batch_results(self, client: Any, batch_id: str) -> dict[str, Answer | CallFault]:
        batch = await self._request(client.batches.retrieve(batch_id))
        out: dict[str, Answer | CallFault] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if not file_id:
                continue
            content = await self._request(client.files.content(file_id))
            for raw in content.content.splitlines():
                if raw.strip():
                    key, got = self._batch_line(raw)
                    if key is not None:
                        out[key] = got
        return out

    def _batch_line(self, raw: bytes) -> tuple[str | None, Answer | CallFault]:
        """One line of an output or error file: the call's answer, or why the provider failed it."""
        try:
            line = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None, RetryableError("malformed response", "batch result line is not JSON")
        key = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(key, str):
            return None, RetryableError("malformed response", "batch result line without custom_id")
        error = line.get("error")
        if isinstance(error, dict):
            # Redact, then cut: a key the provider echoed across the cut would otherwise leave its head behind.
            return key, RetryableError(f"batch: {error.get('code') or 'error'}", self._redact(str(error.get("message") or error))[:300])
        response = line.get("response")
        status = response.get("status_code") if isinstance(response, dict) else None
        if status != 200:
            body = response.get("body") if isinstance(response, dict) else None
            message = body.get("error", {}).get("message") if isinstance(body, dict) and isinstance(body.get("error"), dict) else None
            return key, RetryableError(f"batch: HTTP {status}", self._redact(str(message or body))[:300])
        try:
            return key, read_openai_answer(response.get("body"), completions=self.args.api == "completions")
        except CallFault as fault:
            return key, fault


@JUDGES.register("openai", args=LLMArgs)
def openai_judge(ctx: JudgeContext, **args: Any) -> Judge:
    """An OpenAI-compatible judge (chat or completions; set args.base_url for vLLM, Ollama, llama.cpp, LiteLLM)."""
    return OpenAIJudge(ctx, parse_args(LLMArgs, args, ctx))
