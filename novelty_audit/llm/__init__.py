"""The one LLM call layer: every request the project sends to a model provider goes through here.

Given an `Endpoint` (provider, model, base URL, API), `CallSettings` (concurrency, rate limits, retries,
timeouts, circuit breaker, batches), a `CallCache` and a `Budget`, an `LLMClient` asks `Request`s (a
conversation or a completions prompt, sampling, replicate index, tools) and returns one `Reply` each: an
answer — fresh or from the cache, possibly with tool calls — or a classified `Failure`. It owns concurrency,
rate limits, retries with backoff, the circuit breaker, the budget, the call cache and the shared cache,
provider batch APIs, key redaction, SIGTERM/SIGINT holding, progress lines and the error taxonomy. Callers
(judges, extractors, generators, agents) keep their prompts, parsing and protocols.

    llm = LLMClient(Endpoint("openai", "gpt-4o-mini"), CallSettings(), cache=CallCache(root / "calls"))
    [reply] = llm.ask([Request(messages=[{"role": "user", "content": "Hello"}])])
    reply.text if reply.ok else reply.failure.reason

See docs/design/llm-call-layer.md.
"""

from ..config import CallSettings, Price
from ._budget import Budget
from ._cache import CallCache, CallClaim, call_key, endpoint_id, verify_call_cache
from ._engine import Classify, LLMClient, plain_classify, run_coro
from ._faults import TRUNCATING_FINISH, Answer, CallFault, FatalCallError, RetryableError, ToolCall, connection_fault, json_body
from ._openai import read_openai_answer
from ._anthropic import THINKING_BUDGETS, check_anthropic_sampling, read_anthropic_answer
from ._providers import PROVIDERS
from ._shared_cache import SharedCallCache, redact_url
from ._types import (
    COMPLETION_LEAD_IN,
    Endpoint,
    Failure,
    Payload,
    Reply,
    Request,
    Sampling,
    Tool,
    completion_prompt,
    tool_result,
)

__all__ = [
    "COMPLETION_LEAD_IN",
    "PROVIDERS",
    "THINKING_BUDGETS",
    "check_anthropic_sampling",
    "TRUNCATING_FINISH",
    "Answer",
    "Budget",
    "CallCache",
    "CallClaim",
    "CallFault",
    "CallSettings",
    "Classify",
    "Endpoint",
    "Failure",
    "FatalCallError",
    "LLMClient",
    "Payload",
    "Price",
    "Reply",
    "Request",
    "RetryableError",
    "Sampling",
    "SharedCallCache",
    "Tool",
    "ToolCall",
    "call_key",
    "completion_prompt",
    "connection_fault",
    "endpoint_id",
    "json_body",
    "plain_classify",
    "read_anthropic_answer",
    "read_openai_answer",
    "redact_url",
    "run_coro",
    "tool_result",
    "verify_call_cache",
]
