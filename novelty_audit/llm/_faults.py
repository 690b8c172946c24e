"""The error taxonomy of one call, and reading a provider's response body.

Every attempt that fails raises a `CallFault` with a short stable `reason` (no host, port, key or time:
"HTTP 500", "timeout", "connection refused", "malformed response", ...) and a full `detail` for the run
facts. `RetryableError` is retried with backoff; `FatalCallError` ends the call. User errors (a rejected key,
an unknown model, the budget cap) are not faults: they raise `ConfigError` / `BudgetExceededError` and stop
the run. A call that still fails after its retries ends as a `Failure` (see `Reply`), never an exception.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

__all__ = [
    "TRUNCATING_FINISH",
    "Answer",
    "CallFault",
    "FatalCallError",
    "RetryableError",
    "ToolCall",
    "connection_fault",
    "error_entry",
    "expect",
    "json_body",
    "retry_after",
    "usage_tokens",
]

TRUNCATING_FINISH = ("length", "max_tokens")
"""finish_reason (OpenAI) / stop_reason (Anthropic) values of an answer cut at max_tokens."""


@dataclass(frozen=True)
class ToolCall:
    """One tool call the model asked for: its id (echoed in the tool result), the tool's name and the
    arguments exactly as the provider sent them (a JSON string)."""

    id: str
    name: str
    arguments: str

    def as_dict(self) -> dict[str, str]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class Answer:
    """One provider response, reduced to what callers keep."""

    text: str | None
    refused: bool
    """The provider flagged a refusal (refusal field, content filter, stop reason)."""
    finish_reason: str | None
    input_tokens: int | None
    """None when the response reported no usage (the call is then charged its worst case)."""
    output_tokens: int | None
    provider_model: str | None
    tool_calls: tuple[ToolCall, ...] = ()
    """Tools the model asked to call (empty: a plain answer)."""
    thinking: tuple[dict[str, Any], ...] = ()
    """Anthropic's extended-thinking blocks as sent (`thinking` with its signature, `redacted_thinking`): a turn that
    called tools must hand them back unchanged with its tool results (the Messages API's rule)."""


class CallFault(Exception):
    """One failed attempt: `reason` is a short stable category (no host, port, key or time), `detail` the
    full message for the run facts."""

    def __init__(self, reason: str, detail: str | None = None, *, retry_after: float | None = None, connection: bool = False):
        super().__init__(detail or reason)
        self.reason = reason
        self.detail = detail or reason
        self.retry_after = retry_after
        self.connection = connection
        """No answer came from the endpoint (refused, reset, connect or read timeout): counts toward the
        circuit breaker. A hung endpoint accepts connections and answers nothing, so a timeout counts too."""


class RetryableError(CallFault):
    """A transient failure (429, 5xx, timeout, connection, malformed 200): retried with backoff."""


class FatalCallError(CallFault):
    """A failure that retrying cannot fix for this call (e.g. 400): the call ends as `error`."""


def json_body(raw: Any) -> dict[str, Any]:
    """The JSON object of an HTTP 200 response: an SDK raw response (`with_raw_response`) or the HTTP response
    itself; anything else is a malformed response, retried like a 500."""
    http = getattr(raw, "http_response", raw)  # the same attribute on both SDKs' raw responses; the body is already read
    content = http.content
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError as exc:
        ctype = http.headers.get("content-type", "no content type")
        raise RetryableError("malformed response", f"HTTP 200 body is not JSON ({ctype}, {len(content)} bytes): {exc}") from None
    if not isinstance(data, dict):
        raise RetryableError("malformed response", f"HTTP 200 body is JSON {type(data).__name__}, not an object")
    return data


def expect(obj: Any, name: str, kind: type | tuple[type, ...], *, optional: bool = False) -> Any:
    """`obj[name]` if it has the expected type (None allowed when optional), else a malformed response."""
    value = obj.get(name) if isinstance(obj, dict) else None
    if value is None and optional:
        return None
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        got = "missing" if value is None else type(value).__name__
        raise RetryableError("malformed response", f"response field '{name}' is {got}, expected {_kind_name(kind)}")
    return value


def _kind_name(kind: type | tuple[type, ...]) -> str:
    return " or ".join(k.__name__ for k in kind) if isinstance(kind, tuple) else kind.__name__


def usage_tokens(usage: Any, name: str) -> int | None:
    """A token count from a usage object, or None when absent or not a count."""
    value = usage.get(name) if isinstance(usage, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def connection_fault(exc: BaseException, timeout_s: float) -> RetryableError:
    """A fault for an SDK connection error, its reason read from the underlying cause (refused, reset, ...).

    The detail names the exception the reason was read from, not the end of the chain: `__context__` also
    links exceptions that were merely being handled when the real cause was raised (an unrelated
    "RuntimeError: no running event loop" deep in an HTTP library), which say nothing about this call."""
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and len(chain) < 12 and e not in chain:
        chain.append(e)
        e = e.__cause__ or e.__context__

    def first(test) -> BaseException | None:
        # the deepest match: the library's own exception (httpcore's ReadTimeout), not the SDK's wrapper of it
        return next((c for c in reversed(chain) if test(c)), None)

    def named(*names: str) -> BaseException | None:
        return first(lambda c: type(c).__name__ in names)

    def detail(cause: BaseException | None) -> str:
        head = f"{type(exc).__name__}: {exc}"
        return head if cause is None or cause is exc else f"{head} ({type(cause).__name__}: {cause})"

    if (c := first(lambda c: isinstance(c, ConnectionRefusedError))) is not None:
        return RetryableError("connection refused", detail(c), connection=True)
    if (c := first(lambda c: isinstance(c, ConnectionResetError))) is not None:
        return RetryableError("connection reset", detail(c), connection=True)
    if (c := named("ConnectTimeout")) is not None:
        return RetryableError("connect timeout", f"no connection within {timeout_s} s: {detail(c)}", connection=True)
    if (c := named("ReadTimeout", "WriteTimeout", "PoolTimeout", "TimeoutException", "APITimeoutError")) is not None:
        # Connected, then nothing within the timeout: a hung endpoint looks exactly like this, so it counts
        # toward the breaker (a server that is slow but answers resets the streak with each answer).
        return RetryableError("timeout", f"no answer within {timeout_s} s: {detail(c)}", connection=True)
    if (c := named("RemoteProtocolError")) is not None:
        # The server accepted the connection: it is up, if unwell, so this does not count toward the breaker.
        return RetryableError("connection dropped", detail(c))
    if (c := named("gaierror")) is not None:
        return RetryableError("name resolution failed", detail(c), connection=True)
    # Otherwise the operating system's error if there is one, else the immediate cause.
    cause = next((c for c in chain if isinstance(c, OSError)), chain[1] if len(chain) > 1 else None)
    return RetryableError("connection error", detail(cause), connection=True)


def retry_after(exc: Any) -> float | None:
    """The Retry-After header of an SDK status error, in seconds, or None."""
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


def error_entry(reason: str, detail: str, attempts: int) -> dict[str, Any]:
    """The entry of a call that ended without an answer (never cached)."""
    return {"outcome": "error", "choice": None, "error_reason": reason, "note": detail, "attempts": attempts, "cost_usd": 0.0, "latency_s": 0.0}
