"""The review page: a Starlette app over `novelty_audit.audit`.

Routes only parse a request, call an audit function and render its answer; every classification, filter,
group, validation and file write happens in `novelty_audit.audit`, so the CLI, the JSON and the page agree.
"""

from __future__ import annotations

from pathlib import Path
from collections.abc import Mapping
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

if TYPE_CHECKING:
    from ..params import Params

__all__ = ["create_app", "FILTERS", "LOOPBACK_NAMES"]

FILTERS = ("dataset", "judge", "pair", "cause", "status", "group")
"""Query parameters of the page and of /api/audit that narrow the audit (passed to the audit library)."""

LOOPBACK_NAMES = ("127.0.0.1", "localhost")
"""Host headers the server answers to: a page on another site that resolves its own name to 127.0.0.1 (DNS
rebinding) gets 400, so it cannot read the audit or append decisions."""


def _error(exc: NoveltyAuditError) -> dict[str, str | None]:
    return {"error": exc.message, "hint": exc.hint}


class _Review:
    """The state of one server: which params.yaml it reads. Files stay the truth; nothing is cached here."""

    def __init__(self, params: Params) -> None:
        self.params = params
        env = Environment(loader=PackageLoader("novelty_audit.review", "templates"), autoescape=select_autoescape(["j2", "html"]))
        env.filters["short"] = _short
        self.templates = env

    # ---- library calls (the only place the server touches audit data) ----

    def runs(self) -> list[dict[str, Any]]:
        return lib.list_runs(self.params)

    def audit(self, from_run: str | None, to_run: str | None, filters: Mapping[str, str]) -> dict[str, Any]:
        active = {k: v for k, v in filters.items() if v}
        report = lib.audit_project(self.params, from_run or None, to_run or None,
                                   filters=lib.AuditFilters(**active) if active else None)
        return report.result.to_json()

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
        runs: list[dict[str, Any]] = []
        try:
            runs = await run_in_threadpool(self.runs)
            result = await run_in_threadpool(self.audit, from_run, to_run, filters)
        except NoveltyAuditError as exc:
            error = _error(exc)
        html = self.templates.get_template("page.html.j2").render(
            result=result,
            runs=runs,
            selected={"from": from_run, "to": to_run, **filters},
            filters=filters,
            options=_options(result),
            groups=_grouped(result),
            statuses=lib.STATUSES,
            causes=lib.CAUSES,
            decisions=lib.DECISIONS,
            error=error,
            # A fixed text, never the query's: a crafted link cannot put words on the page.
            notice="Decision recorded." if q.get("notice") == "recorded" else "",
            group_query=lambda gid: urlencode({"from": from_run, "to": to_run, "group": gid}),
            here=request.url.path + (("?" + request.url.query) if request.url.query else ""),
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
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).hostname not in LOOPBACK_NAMES:
            # A form on another site posting here (CSRF): browsers name that site in Origin.
            return JSONResponse({"error": f"cross-site request from {origin} refused", "hint": None}, status_code=403)
        ctype = request.headers.get("content-type", "").split(";")[0].strip()
        if ctype != "application/x-www-form-urlencoded":
            return JSONResponse({"error": f"send the form urlencoded, not '{ctype or 'no content type'}'", "hint": None},
                                status_code=415)
        # parse_qsl rather than request.form(): multipart parsing would need python-multipart for nothing.
        form = dict(parse_qsl((await request.body()).decode("utf-8", "replace"), keep_blank_values=True))
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


def _local(url: str | None) -> str:
    """Only redirect within this server (an open redirect would let another page bounce through it)."""
    parts = urlsplit(url or "/")
    if parts.scheme or parts.netloc or not parts.path.startswith("/"):
        return "/"
    return parts.path + (("?" + parts.query) if parts.query else "")


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


def _grouped(result: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The audit's groups in the audit's order (largest first), each with its changes; then the changes that
    belong to no group (not adjudicable), each on its own."""
    if not result:
        return []
    changes = result.get("changes", [])
    by_id = {c.get("id"): c for c in changes}
    out: list[dict[str, Any]] = []
    placed: set[Any] = set()
    for g in result.get("groups", []):
        members = [by_id[cid] for cid in g.get("changes", []) if cid in by_id]
        if members:
            out.append({"id": g["id"], "info": g, "changes": members})
            placed.update(g.get("changes", []))
    out.extend({"id": None, "info": {}, "changes": [c]} for c in changes if c.get("id") not in placed)
    return out


def create_app(params: str | Path | Params = "params.yaml") -> Starlette:
    """The review app for one params.yaml (its store, artifacts and adjudication file)."""
    from ..params import load_params

    p = load_params(params) if isinstance(params, (str, Path)) else params
    review = _Review(p)
    routes = [
        Route("/", review.page, methods=["GET"]),
        Route("/api/runs", review.api_runs, methods=["GET"]),
        Route("/api/audit", review.api_audit, methods=["GET"]),
        Route("/adjudicate", review.post_adjudicate, methods=["POST"]),
        Mount("/static", app=StaticFiles(packages=[("novelty_audit.review", "static")]), name="static"),
    ]
    return Starlette(routes=routes, middleware=[Middleware(TrustedHostMiddleware, allowed_hosts=list(LOOPBACK_NAMES))])
