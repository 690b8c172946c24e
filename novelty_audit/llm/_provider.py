"""A provider's API behind one small interface: build the SDK client, send one request, read its answer,
and (where the provider has one) its batch API. Everything around a request — cache, retries, limits,
budget — is the engine's (`_engine.py`); a provider only speaks its wire format."""

from __future__ import annotations

import importlib
import os
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from ..config import CallSettings
from ..errors import ConfigError
from ._faults import Answer, CallFault, FatalCallError, RetryableError, connection_fault, retry_after
from ._types import Endpoint, Request

__all__ = ["BatchStatus", "Provider"]


@dataclass(frozen=True)
class BatchStatus:
    """A provider batch's state: `done` once its results can be read (whatever became of each request)."""

    done: bool
    state: str
    """The provider's status word (validating, in_progress, finalizing, completed, ended, failed, expired, ...)."""


class Provider(ABC):
    """One endpoint's wire format. Subclasses name their SDK and client class and implement `send`."""

    name: str = ""
    sdk_module: str = ""
    """The SDK package, imported only when a provider of this kind is made."""
    client_class: str = ""
    """Its async client class, built with our retries (the SDK's own are off so Retry-After is honoured once)."""
    default_base_url: str = ""
    """The provider's own endpoint, passed explicitly when base_url is None: the SDKs would otherwise
    follow an environment variable (OPENAI_BASE_URL, ANTHROPIC_BASE_URL), sending calls elsewhere under a
    call key that still says `<backend>:default`."""
    apis: tuple[str, ...] = ("chat",)
    """The `api` modes this provider speaks."""

    def __init__(self, endpoint: Endpoint, settings: CallSettings, who: str):
        self.endpoint = endpoint
        self.settings = settings
        self.who = who
        self.key_env = endpoint.key_env
        self.sdk = importlib.import_module(self.sdk_module)

    # -- keys and redaction ------------------------------------------------------------------------
    def api_key(self) -> str | None:
        """The key from the environment (None when the endpoint needs none); ConfigError when it is missing."""
        if not self.key_env:
            return None
        key = os.environ.get(self.key_env)
        if not key:
            raise ConfigError(
                f"{self.who}: environment variable {self.key_env} is not set",
                hint=f"export {self.key_env}=… (keys are read from the environment only), or disable the judge",
            )
        return key

    def redact(self, text: str) -> str:
        """`text` with the key replaced by ***."""
        key = os.environ.get(self.key_env) if self.key_env else None
        return text.replace(key, "***") if key else text

    # -- the client --------------------------------------------------------------------------------
    def client(self) -> Any:
        """A new async client (made inside the event loop that uses it)."""
        s, e = self.settings, self.endpoint
        timeout = self.sdk.Timeout(s.timeout_s, connect=min(s.connect_timeout_s, s.timeout_s))
        cls = getattr(self.sdk, self.client_class)
        return cls(api_key=self.api_key() or "no-key", base_url=e.base_url or self.default_base_url or None, max_retries=0, timeout=timeout)

    async def probe(self, timeout_s: float) -> str | None:
        """Whether the endpoint answers at all: a GET of `<base url>/models` (free; listed by OpenAI, Anthropic
        and the OpenAI-compatible servers). None when any HTTP answer came (a 401 or 404 too: the server is up),
        else why not ("no answer within 10 s", "connection refused", ...)."""
        import httpx

        base = (self.endpoint.base_url or self.default_base_url).rstrip("/")
        try:
            async with httpx.AsyncClient(timeout=timeout_s) as http:
                await http.get(f"{base}/models")
        except httpx.TimeoutException:
            return f"no answer within {timeout_s:g} s"
        except httpx.HTTPError as exc:
            return connection_fault(exc, timeout_s).reason
        except Exception:  # noqa: BLE001  a probe that cannot even be sent (an odd URL) proves nothing: not hung
            return None
        return None

    async def aclose(self, client: Any) -> None:
        close = getattr(client, "close", None)
        if close is not None:
            await close()

    @abstractmethod
    async def send(self, client: Any, request: Request) -> Answer:
        """Send one request (through `call`) and read its body (with `json_body`/`expect`); raise
        RetryableError / FatalCallError for a failed attempt, ConfigError for auth problems."""

    async def call(self, pending: Any) -> Any:
        """Await an SDK call, turning its errors into call faults (or ConfigError when the user must act)."""
        sdk = self.sdk
        try:
            return await pending
        except sdk.AuthenticationError:
            raise ConfigError(f"{self.who}: the endpoint rejected the key from {self.key_env}", hint="check the key and base_url") from None
        except (sdk.PermissionDeniedError, sdk.NotFoundError) as exc:
            raise ConfigError(
                f"{self.who}: {type(exc).__name__} for model '{self.endpoint.model}' ({exc.status_code})",
                hint="check the model name and base_url (and api: completions needs an endpoint that serves /v1/completions)",
            ) from None
        except sdk.APIConnectionError as exc:  # includes the SDK's timeout error
            raise connection_fault(exc, self.settings.timeout_s) from None
        except sdk.APIStatusError as exc:
            status = exc.status_code
            # Redact, then cut: cut first, a key the server echoed across the cut would leave its head behind.
            detail = f"{type(exc).__name__}: {self.redact(str(exc))[:300]}"
            if status == 429 or status >= 500 or status in (408, 409):
                raise RetryableError(f"HTTP {status}", detail, retry_after=retry_after(exc)) from None
            raise FatalCallError(f"HTTP {status}", detail) from None

    # -- batch API (a provider that has one implements these) ----------------------------------------
    async def batch_submit(self, client: Any, items: list[tuple[str, Request]]) -> str:
        """Submit one batch of (call key → request), the key as the request's custom id; return the batch id."""
        raise ConfigError(f"{self.who}: the {self.name} backend has no batch API", hint="remove `batch: true`")

    async def batch_status(self, client: Any, batch_id: str) -> BatchStatus:
        raise NotImplementedError

    async def batch_results(self, client: Any, batch_id: str) -> dict[str, Answer | CallFault]:
        """call key → `Answer`, or a `CallFault` for a request the provider failed."""
        raise NotImplementedError
