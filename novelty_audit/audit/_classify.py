"""Classify verdict changes between two verdict tables from their digests.

Pure functions over tables: the ledger audit, the report and the drift watch all call
`classify_changes`. Rows are aligned by (dataset, judge, pair_id), never by position.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson
import polars as pl

from ..artifacts import digest_obj
from ..errors import BadInputError
from ._model import Adjudication, AuditResult, Change, Diff

__all__ = ["classify_changes", "config_knobs", "KEY"]

KEY = ("dataset", "judge", "pair_id")
_DIGESTS = ("config_digest", "evidence_digest", "code_digest", "call_digests", "provider_model", "evidence_parts")


def _records(df: pl.DataFrame, side: str) -> dict[tuple[str, str, str], dict[str, Any]]:
    missing = [c for c in (*KEY, "verdict") if c not in df.columns]
    if missing:
        raise BadInputError(f"{side}: verdict table lacks column(s) {', '.join(missing)}", hint="see docs/design/tables.md")
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    dups: list[str] = []
    for row in df.to_dicts():
        key = (row["dataset"], row["judge"], row["pair_id"])
        if key in out:
            dups.append("/".join(key))
        out[key] = row
    if dups:
        raise BadInputError(
            f"{side}: duplicate verdict key (dataset, judge, pair_id) for {len(dups)} row(s), e.g. {', '.join(sorted(dups)[:5])}",
            hint="each judge must give one verdict per pair and dataset; the verdict table is malformed",
        )
    return out


def _parts(row: Mapping[str, Any]) -> dict[str, str]:
    raw = row.get("evidence_parts")
    if raw is None or raw == "":
        return {}
    if isinstance(raw, dict):
        return {str(k): v for k, v in raw.items()}
    return dict(orjson.loads(raw))


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out or {prefix[:-1]: {}}
    return {prefix[:-1]: value}


def config_knobs(before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> list[Diff]:
    """The knobs whose values differ between two judge configs (nested keys dotted)."""
    a = _flatten(dict(before or {}))
    b = _flatten(dict(after or {}))
    return [Diff(name=k, before=a.get(k), after=b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]


def _changed_inputs(b: Mapping[str, Any], a: Mapping[str, Any]) -> list[Diff]:
    """Evidence parts, code, call keys and provider model that differ, in that order."""
    diffs: list[Diff] = []
    if b.get("evidence_digest") != a.get("evidence_digest") or _parts(b) != _parts(a):
        pb, pa = _parts(b), _parts(a)
        parts = [Diff(name=k, before=pb.get(k), after=pa.get(k)) for k in sorted(set(pb) | set(pa)) if pb.get(k) != pa.get(k)]
        diffs.extend(parts or [Diff(name="evidence", before=b.get("evidence_digest"), after=a.get("evidence_digest"))])
    if b.get("code_digest") != a.get("code_digest"):
        diffs.append(Diff(name="code", before=b.get("code_digest"), after=a.get("code_digest")))
    same_asked = not diffs and b.get("config_digest") == a.get("config_digest")
    calls_b, calls_a = list(b.get("call_digests") or []), list(a.get("call_digests") or [])
    if same_asked and calls_b != calls_a:
        # Call keys follow config and evidence; only listed when those held, where a move means the harness
        # built different requests from the same inputs.
        diffs.append(Diff(name="call_keys", before=digest_obj(calls_b), after=digest_obj(calls_a)))
    if b.get("provider_model") != a.get("provider_model"):
        diffs.append(Diff(name="provider_model", before=b.get("provider_model"), after=a.get("provider_model")))
    return diffs


def _any_digest_moved(b: Mapping[str, Any], a: Mapping[str, Any]) -> bool:
    def norm(v: Any) -> Any:
        return list(v) if isinstance(v, (list, tuple)) else v

    return any(norm(b.get(c)) != norm(a.get(c)) for c in _DIGESTS)


def classify_changes(
    before: pl.DataFrame,
    after: pl.DataFrame,
    *,
    from_run: str = "before",
    to_run: str = "after",
    configs_before: Mapping[str, Mapping[str, Any]] | None = None,
    configs_after: Mapping[str, Mapping[str, Any]] | None = None,
    titles: Mapping[tuple[str, str], str] | None = None,
    adjudications: Mapping[tuple[str, str, str, str, str], Adjudication] | None = None,
) -> AuditResult:
    """Every changed verdict between two verdict tables, with a cause.

    Causes, first match wins: `dataset` (the key is on one side only), `config` (config_digest
    moved; knobs named from the judges' config JSON), `evidence` (evidence_digest moved; inputs
    named from evidence_parts), `harness` (code digest or call keys moved), `provider` (only the
    provider-reported model id moved), `spurious` (same call keys, inputs and provider model).
    `configs_*` map judge → config dict (judges.parquet), `titles` (dataset, idea_id) → title.
    Evidence changes take their status from `adjudications`, keyed by
    (dataset, judge, pair, from verdict, to verdict).
    """
    b_rows = _records(before, f"{from_run} verdicts")
    a_rows = _records(after, f"{to_run} verdicts")
    titles = titles or {}
    adjudications = adjudications or {}
    changes: list[Change] = []
    compared = 0
    quiet_moves = 0

    def pair_titles(row: Mapping[str, Any]) -> tuple[str, str]:
        ds = row["dataset"]
        ids = (row.get("idea_0"), row.get("idea_1"))
        return tuple(titles.get((ds, i), i or "?") for i in ids)  # type: ignore[return-value]

    for key in sorted(set(b_rows) | set(a_rows)):
        b, a = b_rows.get(key), a_rows.get(key)
        ds, judge, pair = key
        if b is None or a is None:
            present = a if b is None else b
            changes.append(
                Change(
                    dataset=ds,
                    judge=judge,
                    pair=pair,
                    titles=pair_titles(present),
                    before=None if b is None else b["verdict"],
                    after=None if a is None else a["verdict"],
                    cause="dataset",
                    inputs=[Diff(name="pair", before="absent" if b is None else "present", after="absent" if a is None else "present")],
                    status="not-adjudicable",
                )
            )
            continue
        compared += 1
        if b["verdict"] == a["verdict"]:
            quiet_moves += _any_digest_moved(b, a)
            continue
        inputs = _changed_inputs(b, a)
        common = {"dataset": ds, "judge": judge, "pair": pair, "titles": pair_titles(a), "before": b["verdict"], "after": a["verdict"]}
        if b.get("config_digest") != a.get("config_digest"):
            knobs = config_knobs((configs_before or {}).get(judge), (configs_after or {}).get(judge))
            if not knobs:
                # The judges table did not explain the move (absent or identical): say so rather than guess.
                knobs = [Diff(name="config_digest", before=b.get("config_digest"), after=a.get("config_digest"))]
            changes.append(Change(**common, cause="config", knobs=knobs, inputs=inputs or None, status="not-adjudicable"))
            continue
        names = {d.name for d in inputs}
        if names - {"code", "call_keys", "provider_model"}:
            adj = adjudications.get((ds, judge, pair, str(b["verdict"]), str(a["verdict"])))
            status = adj.current.decision if adj else "unadjudicated"
            changes.append(Change(**common, cause="evidence", inputs=inputs, status=status, adjudication=adj))
        elif names & {"code", "call_keys"}:
            changes.append(Change(**common, cause="harness", inputs=inputs, status="not-adjudicable"))
        elif "provider_model" in names:
            changes.append(Change(**common, cause="provider", inputs=inputs, status="not-adjudicable"))
        else:
            changes.append(Change(**common, cause="spurious", inputs=[], status="not-adjudicable"))

    return AuditResult(
        from_run=from_run, to_run=to_run, compared=compared, unchanged_with_changed_digests=quiet_moves, changes=changes
    )
