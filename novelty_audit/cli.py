"""The command line: one sub-command calls one library function; no logic lives here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import orjson
import typer
from rich.console import Console

from .errors import NoveltyAuditError, storage_error

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Reproducible, auditable evaluation of novelty judges.")
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

ParamsOpt = Annotated[Path, typer.Option("--params", help="params.yaml to read")]


def _seconds(value: Optional[float]) -> Optional[float]:
    # click's FloatRange lets NaN through (it compares false with every bound) and infinity means "forever".
    import math

    if value is not None and not (math.isfinite(value) and value >= 0):
        raise typer.BadParameter(f"{value} is not a finite number of seconds ≥ 0")
    return value


def _json(value) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")


def _table(table) -> None:
    """Print a rich table with every cell whole. Piped or redirected there is no width to fit (rich's 80-column
    default cut judge names and titles with '…'): the table is as wide as its longest cells. In a terminal, a cell
    too long for its column folds onto the next line instead of being cut."""
    for column in table.columns:
        column.overflow = "fold"
    if out.is_terminal:
        out.print(table)
        return
    from rich.measure import Measurement

    wide = Console(highlight=False, width=1_000_000, file=out.file)
    natural = Measurement.get(wide, wide.options, table).maximum
    Console(highlight=False, width=max(natural, 1), file=out.file).print(table)


def _emit(report, as_json: bool) -> None:
    """Print a report object as JSON (`as_dict`) or as its lines for people (`lines`)."""
    if as_json:
        _json(report.as_dict())
        return
    for line in report.lines():
        out.print(line)


@app.command()
def stage(
    name: Annotated[str, typer.Argument(help="stage name as declared in dvc.yaml")],
    params: ParamsOpt = Path("params.yaml"),
    force: Annotated[bool, typer.Option(help="compute even if the identity is already known")] = False,
    wait: Annotated[
        Optional[float],
        typer.Option("--wait", callback=_seconds, help="seconds to wait while another run holds the stage's lock (default 300, or NOVELTY_AUDIT_LOCK_TIMEOUT)"),
    ] = None,
    limit: Annotated[
        Optional[int],
        typer.Option("--limit", min=1, help="judge stage only: judge a seeded subset of N pairs per dataset (overrides judge.limit for this run)"),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option("--dry-run", help="judge stage only: print per judge the calls it would make, how many are cached and the estimated USD; send nothing, write nothing (exit 2 over judge.budget_usd)"),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="with --dry-run: print JSON")] = False,
) -> None:
    """Run one pipeline stage (what dvc.yaml calls)."""
    import os

    from .artifacts import LOCK_TIMEOUT_ENV
    from .pipeline import run_stage

    if dry_run or as_json:
        from .errors import ConfigError
        from .judges import dry_run_stage
        from .pipeline import load_checked_params, stage_out_dir

        if name != "judge" or not dry_run:
            raise ConfigError(f"--dry-run applies to the judge stage only and --json needs --dry-run (got stage '{name}')",
                              hint="novelty-audit stage judge --dry-run [--json]")  # fmt: skip
        p = load_checked_params(params)
        report = dry_run_stage(p, stage_out_dir(p, "pin"), stage_out_dir(p, "probe"), limit=limit)
        _emit(report, as_json)
        report.check_budget()
        return

    if wait is not None:
        os.environ[LOCK_TIMEOUT_ENV] = str(wait)  # this process only: the stage reads it when it takes the lock
    if limit is not None and name != "judge":
        from .errors import ConfigError

        raise ConfigError(f"--limit applies to the judge stage only, not '{name}'", hint="set judge.limit in params.yaml, or run `stage judge --limit N`")
    m = run_stage(name, params_path=params, force=force, hooks={"limit": limit} if limit is not None else None)
    out.print(f"[bold]{m.stage}[/] identity {m.identity[:16]} · {len(m.outputs)} outputs")
    if isinstance(m.summary, dict) and m.summary.get("subset"):
        sub = m.summary["subset"]
        counts = ", ".join(f"{ds} {c['pairs']}/{c['of_pairs']} pairs" for ds, c in sub["datasets"].items())
        out.print(f"subset: judge.limit {sub['limit']} (seed {sub['seed']}): {counts}")
    if not m.complete:
        err.print(f"[yellow]incomplete:[/] {m.incomplete_reason} (the next run asks the failed calls again)")


@app.command()
def pin(
    accept: Annotated[bool, typer.Option("--accept", help="re-pin the dataset files to their current sha256")] = False,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Check the dataset pins; with --accept, write the current digests to params.yaml and list what changed."""
    from .datasets import accept_pins, check_pin
    from .novbench import normalize_novbench
    from .pipeline import load_checked_params

    p = load_checked_params(params)
    if not accept:
        for name, dp in sorted(p.pin.datasets.items()):
            check_pin(name, dp)
            out.print(f"{name}: {dp.path} matches its pin {dp.sha256[:16]}")
        return
    changes = accept_pins(params, p, Path(p.store.artifacts) / "pin", papers=normalize_novbench)
    for c in changes:
        if not c.changed:
            out.print(f"{c.dataset}: {c.path} unchanged")
            continue
        out.print(f"{c.dataset}: {c.path} re-pinned {c.old_sha256[:16]} → {c.new_sha256[:16]}")
        for kind in ("changed", "added", "removed"):
            ids = c.items.get(kind, [])
            if ids:
                out.print(f"  {kind} ({len(ids)}): {', '.join(ids[:20])}{' …' if len(ids) > 20 else ''}")


@app.command()
def signals(
    accept: Annotated[bool, typer.Option("--accept", help="pin every review file and re-pin changed signals inputs")] = False,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Check the signals inputs (review directory, index, pins); with --accept, write the pins to params.yaml."""
    from .pipeline import load_checked_params
    from .signals import accept_signal_pins, signal_input_files

    p = load_checked_params(params)
    if not accept:
        files = signal_input_files(p.signals)
        out.print(f"{sum(map(len, files.values()))} signals input files match their pins")
        return
    changes = accept_signal_pins(params, p.signals)
    for c in changes:
        old, new = (c.old_sha256 or "")[:16], (c.new_sha256 or "")[:16]
        if c.kind != "unchanged":
            out.print({"added": f"{c.path}: pinned {new}", "removed": f"{c.path}: gone, pin {old} removed",
                       "changed": f"{c.path}: re-pinned {old} → {new}"}[c.kind])
    out.print(f"{sum(c.kind == 'unchanged' for c in changes)} signals input files unchanged")


@app.command()
def candidates(
    action: Annotated[str, typer.Argument(help="add: check, copy to data/candidates/ and pin a file of ideas")],
    file: Annotated[Path, typer.Argument(help="JSONL or CSV with area, title, text (system optional)")],
    name: Annotated[str, typer.Option("--name", help="the set's name: its datasets are NAME and NAME-vs-low")],
    exclude_bad: Annotated[bool, typer.Option("--exclude-bad", help="record bad rows as exclusions instead of refusing the file")] = False,
    max_words: Annotated[Optional[int], typer.Option("--max-words", min=1, help="word limit of a text (default 400)")] = None,
    params: ParamsOpt = Path("params.yaml"),
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Pin a candidate set of ideas under params.yaml pools.candidates.NAME (docs/candidates.md)."""
    from .errors import ConfigError
    from .pools import candidates_add

    if action != "add":
        raise ConfigError(f"candidates: unknown action '{action}'", hint="novelty-audit candidates add FILE --name NAME")
    _emit(candidates_add(file, name, params_path=params, exclude_bad=exclude_bad, max_words=max_words), as_json)


@app.command()
def verify(params: ParamsOpt = Path("params.yaml")) -> None:
    """Check artifacts, declared outputs (reports/ too), dvc.lock's outputs, the store and the caches against their digests; exit 1 naming each bad file."""
    from .verify import verify_project

    report = verify_project(params)
    for note in report.notes:
        out.print(f"note: {note}")
    for p in report.problems:
        err.print(f"BAD {p.line()}")
    if not report.ok:
        err.print(f"{len(report.problems)} problem(s)")
        raise typer.Exit(1)
    out.print(f"verified {report.checked} files (artifacts, published reports, dvc.lock outputs, store, caches): all match their digests")


@app.command()
def embeddings(
    action: Annotated[str, typer.Argument(help="check: recompute the distance judges' pinned vectors files (args.vectors) and compare | build: write the file from the store's cache")],
    out_path: Annotated[Optional[Path], typer.Option("--out", help="build only: the file to write (default: the judges' args.vectors.path)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Shipped embeddings: `check` recomputes every pinned vector and compares (exit 1 on a difference); `build` writes the file."""
    from .errors import BadInputError
    from .judges.distance import build_embeddings, check_embeddings
    from .pipeline import load_checked_params

    if action not in ("check", "build") or (out_path is not None and action != "build"):
        raise BadInputError(f"embeddings {action}{' --out' if out_path is not None else ''}: expected `check` or `build [--out FILE]`")
    p = load_checked_params(params)
    r = check_embeddings(p.judge) if action == "check" else build_embeddings(p.judge, store_root=p.store.root, out=out_path)
    _emit(r, as_json)
    if not r.ok:
        raise typer.Exit(1)


@app.command()
def runs(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """List the runs ledger."""
    from .artifacts import Store
    from .pipeline import load_checked_params

    recs = Store(load_checked_params(params).store.root).runs()
    if as_json:
        _json([r.model_dump(mode="json") for r in recs])
        return
    from rich.table import Table

    t = Table("run id", "time", "git revision", "stages")
    for r in recs:
        t.add_row(r.run_id, r.time, (r.git_revision or "-")[:12], ", ".join(r.stages))
    _table(t)


@app.command()
def manifest(
    name: Annotated[str, typer.Argument(help="stage name")],
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Print a stage's manifest (content) and its latest run facts (never hashed)."""
    from .artifacts import Store, load_manifest
    from .pipeline import load_checked_params

    p = load_checked_params(params)
    m = load_manifest(Path(p.store.artifacts) / name)
    facts = Store(p.store.root).run_facts(name)
    _json({"manifest": m.model_dump(mode="json"), "manifest_digest": m.digest(), "last_run": facts[-1] if facts else None})


@app.command()
def audit(
    from_run: Annotated[Optional[str], typer.Option("--from", help="RUN: run id, git revision, ISO date/time, age (7d) (default: the run before --to)")] = None,
    to_run: Annotated[Optional[str], typer.Option("--to", help="RUN: as --from, or `current` (default: the latest run)")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="window up to now: 7d, 12h, 2w or an ISO date")] = None,
    at: Annotated[Optional[str], typer.Option("--at", help="one day (UTC), e.g. 2026-11-20")] = None,
    dataset: Annotated[Optional[str], typer.Option("--dataset", help="only this dataset")] = None,
    judge: Annotated[Optional[str], typer.Option("--judge", help="only this judge")] = None,
    pair: Annotated[Optional[str], typer.Option("--pair", help="only this item (pair id, idea id or paper id)")] = None,
    cause: Annotated[Optional[str], typer.Option("--cause", help="dataset|config|evidence|harness|provider|spurious")] = None,
    status: Annotated[Optional[str], typer.Option("--status", help="unadjudicated|correct|incorrect|unclear|not-adjudicable")] = None,
    group: Annotated[Optional[str], typer.Option("--group", help="only this group id")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    markdown: Annotated[bool, typer.Option("--markdown", help="print Markdown source")] = False,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Why each verdict changed between two runs: config, evidence, harness, provider, spurious or dataset."""
    from .audit import AuditFilters, audit_project

    filters = AuditFilters(dataset=dataset, judge=judge, pair=pair, cause=cause, status=status, group=group)
    report = audit_project(params, from_run, to_run, filters=filters, since=since, at=at)
    if as_json:
        _json(report.result.to_json())
    elif markdown or not out.is_terminal:
        # Piped or redirected: the Markdown source, whole (rendered at rich's 80-column default, its tables cut
        # judge names and idea titles with '…').
        sys.stdout.write(report.markdown)
    else:
        from rich.markdown import Markdown

        out.print(Markdown(report.markdown))


@app.command()
def judges(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """List the registered judge backends and the judges configured in params.yaml."""
    from .judges import judge_catalog
    from .pipeline import load_checked_params

    jp = load_checked_params(params).judge
    cat = judge_catalog(jp)
    swept = jp.sweep_variants()
    for j in cat["judges"]:  # a sweep's variants say which sweep, base and knob values made them
        j["sweep"] = swept[j["judge"]].model_dump() if j["judge"] in swept else None
        j["datasets"] = jp.datasets_of(j["judge"])
    if as_json:
        _json(cat)
        return
    from rich.table import Table

    t = Table("backend", "description", title="registered backends")
    for name, doc in cat["backends"].items():
        t.add_row(name, doc)
    _table(t)
    t = Table("judge", "backend", "enabled", "sweep", "datasets", "args", title="configured judges (params.yaml judge.judges and judge.sweeps)")
    for j in cat["judges"]:
        sweep = f"{j['sweep']['sweep']} (base {j['sweep']['base']})" if j["sweep"] else ""
        t.add_row(j["judge"], j["backend"], "yes" if j["enabled"] else "no" + (" (optional)" if j["optional"] else ""), sweep,
                  ", ".join(j["datasets"]), orjson.dumps(j["args"]).decode())
    _table(t)


AllowedOpt = Annotated[
    Optional[str], typer.Option("--allowed", help="comma-separated set of allowed verdicts (replaces the default set)")
]
MismatchOpt = Annotated[
    bool, typer.Option("--report-mismatches", help="compare the common ids and list the others instead of failing")
]


@app.command()
def flips(
    before: Annotated[Path, typer.Argument(help="CSV (id,verdict) or JSONL verdicts before")],
    after: Annotated[Path, typer.Argument(help="CSV (id,verdict) or JSONL verdicts after")],
    gold: Annotated[Optional[Path], typer.Option("--gold", help="gold verdicts (id,verdict) for accuracies")] = None,
    allowed: AllowedOpt = None,
    report_mismatches: MismatchOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Compare two verdict files by id: accuracy before/after (with --gold), flips, flip directions."""
    from .metrics import flips_report

    r = flips_report(before, after, gold, allowed=allowed, report_mismatches=report_mismatches)
    _emit(r, as_json)


@app.command()
def export(
    what: Annotated[str, typer.Argument(help="verdicts (one judge's pairwise verdicts) | gold (every pair's gold idea) | "
                                              "adjudications (the decided audit changes, a reference for `quality`) | "
                                              "table (a paper table: `export table metrics|sweeps|probe|paper|candidates --format latex|csv|markdown`)")],
    kind: Annotated[Optional[str], typer.Argument(help="table only: metrics | sweeps | probe (the probe's figures are in metrics.json) | "
                                                       "paper (rows = judges, columns = datasets, strict and soft accuracy) | candidates (win rates of candidate sets)")] = None,
    judge: Annotated[Optional[str], typer.Option("--judge", help="the judge (params.yaml judge.judges name); verdicts only")] = None,
    dataset: Annotated[Optional[str], typer.Option("--dataset", help="one dataset (ids are then pair ids; else <dataset>/<pair id>)")] = None,
    fmt: Annotated[Optional[str], typer.Option("--format", help="csv | jsonl (default: from --out, else csv); table: latex (default) | csv | markdown")] = None,
    out_path: Annotated[Optional[Path], typer.Option("--out", help="file to write (default: <judge|gold>[-<dataset>].<format>)")] = None,
    columns: Annotated[Optional[str], typer.Option("--columns", help="table only: fields to show, comma-separated, or `all` "
                                                                      "(default: a short set; an unknown name lists the available ones)")] = None,
    intervals: Annotated[bool, typer.Option("--intervals", help="table only: show each value's interval (low and high bound)")] = False,
    fit: Annotated[str, typer.Option("--fit", help="table, LaTeX only: textwidth (one-column article) | resize (\\resizebox "
                                                    "to \\textwidth) | wide (table* over two columns)")] = "textwidth",
    from_run: Annotated[Optional[str], typer.Option("--from-run", help="adjudications: the audited runs, as `audit --from`")] = None,
    to_run: Annotated[Optional[str], typer.Option("--to-run", help="adjudications: the audited runs, as `audit --to`")] = None,
    params: ParamsOpt = Path("params.yaml"),
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Write the judge stage's verdicts, or the decided audit changes, as an id,verdict file that `flips` and `quality` read."""
    from .errors import BadInputError
    from .metrics import export_gold, export_verdicts
    from .pipeline import load_checked_params

    if what == "table":
        from .artifacts import Store, check_published_file, read_json
        from .audit import current_run_id
        from .metrics import TABLE_KINDS, paper_table, render_table

        if kind not in TABLE_KINDS:
            raise BadInputError(f"export table {kind or ''}: expected one of {', '.join(TABLE_KINDS)}", hint="e.g. novelty-audit export table metrics --format latex")
        p = load_checked_params(params)
        src = Path(p.store.artifacts) / "metrics" / (f"{kind}.json" if kind in ("sweeps", "candidates") else "metrics.json")
        if not src.is_file():
            raise BadInputError(f"{src}: not found", hint="run the metrics stage first (novelty-audit stage metrics)")
        check_published_file(src, Store(p.store.root))
        pins = {name: getattr(pin, "sha256", None) or getattr(pin, "revision", None) for name, pin in p.pin.datasets.items()}
        pins |= {name: cs.sha256 for name, cs in p.pools.candidates.items()}  # a candidate set: its file's pin
        chosen = [c.strip() for c in columns.split(",") if c.strip()] if columns is not None else None
        table = paper_table(kind, read_json(src), run_id=current_run_id(p.store.artifacts), pins=pins, columns=chosen, intervals=intervals)
        text = render_table(table, fmt or "latex", fit=fit)
        if out_path is None:
            typer.echo(text, nl=False)
        else:
            from .artifacts import atomic_write_bytes

            atomic_write_bytes(out_path, text.encode("utf-8"))
        return
    if columns is not None or intervals or fit != "textwidth":
        raise BadInputError(f"export {what}: --columns, --intervals and --fit are options of `export table`")
    if kind is not None:
        raise BadInputError(f"export {what}: takes no second argument ({kind!r}; only `export table` does)")
    if what == "adjudications":
        from .audit import export_adjudications

        part = judge.replace("/", "~") if judge else None  # a sweep variant's id holds '/': keep the default file in the cwd
        target = out_path or Path(f"adjudications{f'-{part}' if part else ''}{f'-{dataset}' if dataset else ''}.jsonl")
        _emit(export_adjudications(params, target, judge=judge, dataset=dataset, from_run=from_run, to_run=to_run, fmt=fmt), as_json)
        return
    if what not in ("verdicts", "gold"):
        raise BadInputError(f"export {what}: expected verdicts, gold, adjudications or table")
    if (what == "verdicts") != (judge is not None):
        raise BadInputError("export verdicts needs --judge; export gold takes no --judge")
    p = load_checked_params(params)
    table = Path(p.store.artifacts) / "judge" / "verdicts.parquet"
    if table.is_file():  # checked against the judge stage's manifest, as a stage reading it would check it
        from .artifacts import Store, check_published_file

        check_published_file(table, Store(p.store.root))
    target = out_path or Path(f"{judge.replace('/', '~') if judge else 'gold'}{f'-{dataset}' if dataset else ''}.{fmt or 'csv'}")
    if what == "verdicts":
        r = export_verdicts(table, target, judge=judge, dataset=dataset, fmt=fmt)  # type: ignore[arg-type]
    else:
        r = export_gold(table, target, dataset=dataset, fmt=fmt)
    _emit(r, as_json)


@app.command()
def quality(
    prediction: Annotated[Path, typer.Argument(help="CSV (id,verdict) or JSONL predictions")],
    reference: Annotated[Path, typer.Option("--reference", help="reference labels (id,verdict)")],
    repeat: Annotated[Optional[Path], typer.Option("--repeat", help="a repeat run of the same predictions")] = None,
    abstain_label: Annotated[str, typer.Option("--abstain-label", help="the label meaning 'cannot tell'")] = "unknown",
    allowed: AllowedOpt = None,
    report_mismatches: MismatchOpt = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
) -> None:
    """Judgment quality against labelled references with abstention, and stability against a repeat."""
    from .metrics import quality_report

    r = quality_report(
        prediction, reference, repeat, abstain_label=abstain_label, allowed=allowed, report_mismatches=report_mismatches
    )
    _emit(r, as_json)


@app.command()
def adjudicate(
    dataset: Annotated[Optional[str], typer.Argument(help="dataset of the change")] = None,
    judge: Annotated[Optional[str], typer.Argument(help="judge of the change")] = None,
    pair: Annotated[Optional[str], typer.Argument(help="item of the change (pair id, idea id or paper id)")] = None,
    from_verdict: Annotated[Optional[str], typer.Option("--from", help="verdict before (idea id, tie or none)")] = None,
    to_verdict: Annotated[Optional[str], typer.Option("--to", help="verdict after (idea id, tie or none)")] = None,
    decision: Annotated[str, typer.Option("--decision", help="correct | incorrect | unclear")] = "",
    who: Annotated[str, typer.Option("--who", help="who decided")] = "",
    reason: Annotated[str, typer.Option("--reason", help="why")] = "",
    group: Annotated[Optional[str], typer.Option("--group", help="decide every change of this group (instead of DATASET JUDGE PAIR)")] = None,
    from_run: Annotated[Optional[str], typer.Option("--from-run", help="audited runs, as `audit --from`")] = None,
    to_run: Annotated[Optional[str], typer.Option("--to-run", help="audited runs, as `audit --to`")] = None,
    since: Annotated[Optional[str], typer.Option("--since", help="audited runs, as `audit --since`")] = None,
    at: Annotated[Optional[str], typer.Option("--at", help="audited runs, as `audit --at`")] = None,
    when: Annotated[Optional[str], typer.Option("--when", help="ISO date or time (default: today, UTC)")] = None,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Decide an evidence change (or a whole group) of the audit; the row is bound to the change's evidence."""
    from .audit import adjudicate as decide
    from .audit import adjudicate_group
    from .errors import BadInputError

    runs = {"from_run": from_run, "to_run": to_run, "since": since, "at": at}
    if group is not None and dataset is None:
        rows = adjudicate_group(params, group, decision=decision, reason=reason, who=who, when=when, **runs)
    else:
        missing = [n for n, v in (("DATASET", dataset), ("JUDGE", judge), ("PAIR", pair), ("--from", from_verdict),
                                  ("--to", to_verdict)) if v is None]
        if missing:
            raise BadInputError(f"adjudicate: missing {', '.join(missing)}", hint="give DATASET JUDGE PAIR --from X --to Y, or --group ID")
        rows = decide(params, dataset=dataset or "", judge=judge or "", pair=pair or "", from_verdict=from_verdict or "",
                      to_verdict=to_verdict or "", decision=decision, reason=reason, who=who, group=group, when=when, **runs)
    from .pipeline import load_checked_params

    path = load_checked_params(params).audit.adjudications
    out.print(f"appended {len(rows)} decision(s) to {path}")


@app.command()
def review(
    port: Annotated[int, typer.Option("--port", help="port on 127.0.0.1 (0: any free port)")] = 8765,
    host: Annotated[str, typer.Option("--host", help="only 127.0.0.1 is accepted: the page can append decisions")] = "127.0.0.1",
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Serve the audit review page on 127.0.0.1: filter changes, read the evidence, adjudicate (Ctrl-C stops)."""
    from .review import serve

    def ready(url: str) -> None:
        # print + flush: a test (or a script) waits for this line to learn the port.
        print(f"review page: {url}  (Ctrl-C stops)", flush=True)

    serve(params, port=port, host=host, on_ready=ready)


def _terminate(signum: int, frame: object) -> None:
    # SIGTERM (a CI cancel, `timeout`) unwinds like Ctrl-C, so execute_stage removes its temp directory and the
    # stage lock is released; a second SIGTERM during that cleanup ends the process at once.
    import signal

    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise KeyboardInterrupt("terminated (SIGTERM)")


def _usage_error_types() -> tuple[type[Exception], ...]:
    """The exception classes of command-line usage errors (unknown command or option, bad or missing value).

    typer 0.27 and later ship their own copy of click, whose exceptions derive from `typer.TyperException`, not from
    `click.ClickException`; typer 0.25 raises click's own. Both are caught, so a usage error is never a traceback
    (the typer range in pyproject.toml is the one checked).
    """
    types: list[type[Exception]] = []
    if isinstance(getattr(typer, "TyperException", None), type):
        types.append(typer.TyperException)
    try:
        import click

        types.append(click.ClickException)
    except ImportError:  # typer with its own click does not need the package
        pass
    return tuple(types)


def _usage_error(exc: Exception) -> tuple[str, str]:
    """(message, hint) of a usage error: what is wrong, then the command's usage and where its help is."""
    ctx = getattr(exc, "ctx", None)
    command = getattr(ctx, "command_path", None) or "novelty-audit"
    group = getattr(ctx, "command", None) if hasattr(getattr(ctx, "command", None), "list_commands") else None
    message = exc.format_message().strip() if hasattr(exc, "format_message") else str(exc)
    if not message:  # no_args_is_help: the help went to stdout, the error line says why the exit code is 2
        message = "no command given" if group is not None else "no arguments given"
    if group is not None:
        return f"{command}: {message}", f"`{command} COMMAND --help` explains a command; commands: {', '.join(group.list_commands(ctx))}"
    usage = ctx.get_usage().strip() if ctx is not None else f"Usage: {command}"
    return f"{command}: {message}", f"{usage}  (`{command} --help` explains every option)"


def _print_error(message: str, hint: str | None) -> None:
    # Messages and hints carry user text and usage lines such as "[OPTIONS]": printed as text, never as Rich markup.
    from rich.markup import escape

    err.print(f"[bold red]error:[/] {escape(message)}")
    if hint:
        err.print(f"[dim]hint:[/] {escape(hint)}")


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point: user errors print one message and exit non-zero; bugs keep their traceback."""
    import signal
    import threading

    terminated = False
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGTERM)
        if previous in (signal.SIG_DFL, None):

            def on_term(signum: int, frame: object) -> None:
                nonlocal terminated
                terminated = True
                _terminate(signum, frame)

            signal.signal(signal.SIGTERM, on_term)
    try:
        # standalone_mode=False returns an Exit's code instead of raising it.
        # Typer turns Ctrl-C (and so our SIGTERM) into an exit code of 130 after the stage has unwound.
        rv = app(args=argv, standalone_mode=False, prog_name="novelty-audit")
        if terminated or rv == 130:
            raise KeyboardInterrupt
        if isinstance(rv, int) and rv:
            sys.exit(rv)
    except NoveltyAuditError as exc:
        _print_error(exc.message, exc.hint)
        sys.exit(exc.exit_code)
    except _usage_error_types() as exc:
        _print_error(*_usage_error(exc))
        sys.exit(2)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("terminated" if terminated else "aborted")
        sys.exit(143 if terminated else 130)
    except Exception as exc:
        disk = storage_error(exc)  # disk full, read-only, permission denied: one message naming the path, exit 4
        if disk is None:
            raise
        _print_error(disk.message, disk.hint)
        sys.exit(disk.exit_code)


if __name__ == "__main__":
    main()
