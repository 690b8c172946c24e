"""The review page: a Starlette app over `novelty_audit.audit`.

Routes only parse a request, call an audit function and render its answer; every classification, filter,
group, validation and file write happens in `novelty_audit.audit`, so the CLI, the JSON and the page agree.
"""

from __future__ import annotations

import hmac
import secrets
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from .. import audit as lib
from ..errors import NoveltyAuditError
from ._pages import layout, page_number

if TYPE_CHECKING:
    from ..params import Params

__all__ = ["create_app", "FILTERS", "LOOPBACK_NAMES", "PAGE_KEYS"]

FILTERS = ("dataset", "judge", "pair", "cause", "status", "group")
"""Query parameters of the page and of /api/audit that narrow the audit (passed to the audit library)."""

LOOPBACK_NAMES = ("127.0.0.1", "localhost")
"""Host headers the server answers to: a page on another site that resolves its own name to 127.0.0.1 (DNS
rebinding) gets 400, so it cannot read the audit or append decisions."""

PAGE_KEYS = ("from", "to", *FILTERS, "page")
"""The page's own query parameters: the only ones a redirect or link back to the page carries."""

_DEFAULT_PORTS = {"http": 80, "https": 443}


def _error(exc: NoveltyAuditError) -> dict[str, str | None]:
    return {"error": exc.message, "hint": exc.hint}


class _Review:
    """The state of one server: which params.yaml it reads. Files stay the truth; nothing is cached here."""

    def __init__(self, params: Params) -> None:
        self.params = params
        # A per-server secret in every form: a page elsewhere cannot read it (same-origin policy), so it cannot post
        # a decision even from a browser that sends no Origin. A restart makes open pages reload (their token is stale).
        self.token = secrets.token_urlsafe(32)
        env = Environment(loader=PackageLoader("novelty_audit.review", "templates"), autoescape=select_autoescape(["j2", "html"]))
        env.filters["short"] = _short
        env.filters["when"] = _when
        self.templates = env

    # ---- library calls (the only place the server touches audit data) ----

    def runs(self) -> list[dict[str, Any]]:
        return lib.list_runs(self.params)

    def audit(self, from_run: str | None, to_run: str | None, filters: Mapping[str, str]) -> dict[str, Any]:
        return self.audit_and_tally(from_run, to_run, filters)[0]

    def audit_and_tally(
        self, from_run: str | None, to_run: str | None, filters: Mapping[str, str]
    ) -> tuple[dict[str, Any], dict[str, dict[str, int]]]:
        """(the audit JSON, decisions per judge over the changes shown)."""
        active = {k: v for k, v in filters.items() if v}
        report = lib.audit_project(self.params, from_run or None, to_run or None,
                                   filters=lib.AuditFilters(**active) if active else None)
        return report.result.to_json(), lib.decisions_per_judge(report.result)

    def adjudicate(self, form: Mapping[str, str]) -> list[dict[str, str]]:
        """One change (dataset, judge, pair, from, to) or, with `group`, every change of that group."""
        common = {"decision": form.get("decision", ""), "reason": form.get("reason", ""), "who": form.get("who", ""),
                  "from_run": form.get("from_run") or None, "to_run": form.get("to_run") or None}
        if form.get("group"):
            return lib.adjudicate_group(self.params, form["group"], **common)
        return lib.adjudicate(self.params, dataset=form.get("dataset", ""), judge=form.get("judge", ""),
                              pair=form.get("pair", ""), from_verdict=form.get("from", ""), to_verdict=form.get("to", ""),
                              **common)

    # ---- routes ----

    async def page(self, request: Request) -> Response:
        q = request.query_params
        from_run, to_run = q.get("from", ""), q.get("to", "")
        filters = {k: q.get(k, "") for k in FILTERS}
        error = None
        result: dict[str, Any] | None = None
        tally: dict[str, dict[str, int]] = {}
        runs: list[dict[str, Any]] = []
        number = 1
        try:
            number = page_number(q.get("page"))
            runs = await run_in_threadpool(self.runs)
            result, tally = await run_in_threadpool(self.audit_and_tally, from_run, to_run, filters)
        except NoveltyAuditError as exc:
            error = _error(exc)
        view = layout(result, number)
        selected = {"from": from_run, "to": to_run, **filters}

        def page_link(n: int) -> str:
            return _page_url({**selected, "page": str(n) if n > 1 else ""})

        here = page_link(view.number)
        html = self.templates.get_template("page.html.j2").render(
            result=result,
            runs=runs,
            selected=selected,
            filters=filters,
            options=_options(result),
            view=view,
            tally=tally,
            tally_columns=lib.TALLY_COLUMNS,
            statuses=lib.STATUSES,
            causes=lib.CAUSES,
            decisions=lib.DECISIONS,
            error=error,
            # A fixed text, never the query's: a crafted link cannot put words on the page.
            notice="Decision recorded." if q.get("notice") == "recorded" else "",
            group_query=lambda gid: urlencode({"from": from_run, "to": to_run, "group": gid}),
            page_link=page_link,
            here=here,
            token=self.token,
        )
        return HTMLResponse(html, status_code=400 if error else 200)

    async def api_runs(self, request: Request) -> Response:
        try:
            return JSONResponse({"runs": await run_in_threadpool(self.runs)})
        except NoveltyAuditError as exc:
            return JSONResponse(_error(exc), status_code=400)

    async def api_audit(self, request: Request) -> Response:
        q = request.query_params
        try:
            doc = await run_in_threadpool(self.audit, q.get("from", ""), q.get("to", ""), {k: q.get(k, "") for k in FILTERS})
        except NoveltyAuditError as exc:
            return JSONResponse(_error(exc), status_code=400)
        return JSONResponse(doc)

    async def post_adjudicate(self, request: Request) -> Response:
        """Append a decision (one change, or a whole group with `group`) through the audit library.

        Form fields (urlencoded; the page's script sends the same form): dataset, judge, pair, from,
        to — or group —, decision, reason, who, from_run, to_run, back. JSON answer when the client asks for it;
        otherwise a redirect back to the page, so the page works with scripts off.
        """
        refused = _foreign(request)
        if refused:
            # A page elsewhere posting here (CSRF), another port of 127.0.0.1 included: a different origin.
            return JSONResponse({"error": refused, "hint": "decide from the review page itself"}, status_code=403)
        ctype = request.headers.get("content-type", "").split(";")[0].strip()
        if ctype != "application/x-www-form-urlencoded":
            return JSONResponse({"error": f"send the form urlencoded, not '{ctype or 'no content type'}'", "hint": None},
                                status_code=415)
        # parse_qsl rather than request.form(): multipart parsing would need python-multipart for nothing. Bytes that
        # are not UTF-8 become U+FFFD and are then judged by the library like any other character.
        form = dict(parse_qsl((await request.body()).decode("utf-8", "replace"), keep_blank_values=True))
        if not hmac.compare_digest(form.get("token", "").encode(), self.token.encode()):
            return JSONResponse({"error": "the form's token is missing or stale: this decision did not come from this server's page",
                                 "hint": "reload the review page and decide again"}, status_code=403)
        wants_json = "application/json" in request.headers.get("accept", "")
        try:
            written = await run_in_threadpool(self.adjudicate, form)
        except NoveltyAuditError as exc:
            if wants_json:
                return JSONResponse(_error(exc), status_code=400)
            html = self.templates.get_template("error.html.j2").render(error=_error(exc), back=_local(form.get("back")))
            return HTMLResponse(html, status_code=400)
        if wants_json:
            return JSONResponse({"ok": True, "written": written})
        back = _local(form.get("back"))
        sep = "&" if "?" in back else "?"
        return RedirectResponse(back + sep + urlencode({"notice": "recorded"}), status_code=303)


def _foreign(request: Request) -> str | None:
    """Why a POST is refused as coming from another origin, or None.

    Browsers say where a request comes from: `Sec-Fetch-Site` (anything but same-origin — a page on another port
    of 127.0.0.1 is `same-site`, not same-origin) and `Origin`, which must equal this server's scheme, host and
    port. A request without either header (curl, an old browser) still needs the form token."""
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return f"cross-origin request refused (Sec-Fetch-Site: {site[:40]})"
    origin = request.headers.get("origin")
    if origin is None:
        return None
    o = urlsplit(origin)
    try:
        theirs = (o.scheme, o.hostname, o.port or _DEFAULT_PORTS.get(o.scheme))
    except ValueError:  # a port that is not a number
        theirs = None
    ours = (request.url.scheme, request.url.hostname, request.url.port or _DEFAULT_PORTS.get(request.url.scheme))
    if theirs != ours:
        return f"cross-origin request from {origin[:100]} refused (this page is {ours[0]}://{ours[1]}:{ours[2]})"
    return None


def _page_url(values: Mapping[str, str]) -> str:
    """A link to the page: the path `/` and the page's own non-empty query parameters, re-encoded."""
    query = urlencode([(k, values[k]) for k in PAGE_KEYS if values.get(k)])
    return "/" + ("?" + query if query else "")


def _local(url: str | None) -> str:
    """Where to send the browser back to: always this page (`/`) with its own query parameters, rebuilt.

    Never the given string itself: `/\\evil.example` or `//evil.example` would leave the server (browsers read a
    backslash as a slash), and any other path here is not a page."""
    parts = urlsplit(url or "/")
    if parts.scheme or parts.netloc or parts.path != "/":
        return "/"
    return _page_url(dict(parse_qsl(parts.query)))


def _when(value: Any) -> str:
    """A decision's time for people: `2026-11-29 14:05 UTC` (a date alone stays a date)."""
    text = "" if value is None else str(value)
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return text
    if len(text) <= 10:
        return text
    zone = " UTC" if t.utcoffset() is not None and not t.utcoffset() else (t.strftime(" %z") if t.tzinfo else "")
    return t.strftime("%Y-%m-%d %H:%M") + zone


def _short(value: Any) -> str:
    """A 64-hex digest as its first 12 characters (as in the Markdown audit); anything else as text."""
    if value is None:
        return "—"
    s = str(value)
    return s[:12] if len(s) == 64 and all(c in "0123456789abcdef" for c in s) else s


def _options(result: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """Suggestions for the free-text filters: the values present in the shown audit."""
    out: dict[str, set[str]] = {"dataset": set(), "judge": set(), "pair": set(), "group": set()}
    for ch in (result or {}).get("changes", []):
        for k in out:
            if ch.get(k):
                out[k].add(str(ch[k]))
    return {k: sorted(v) for k, v in out.items()}


def create_app(params: str | Path | Params = "params.yaml") -> Starlette:
    """The review app for one params.yaml (its store, artifacts and adjudication file)."""
    from ..pipeline import load_checked_params

    p = load_checked_params(params) if isinstance(params, (str, Path)) else params
    review = _Review(p)
    routes = [
        Route("/", review.page, methods=["GET"]),
        Route("/api/runs", review.api_runs, methods=["GET"]),
        Route("/api/audit", review.api_audit, methods=["GET"]),
        Route("/adjudicate", review.post_adjudicate, methods=["POST"]),
        Mount("/static", app=StaticFiles(packages=[("novelty_audit.review", "static")]), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_NAMES))])
