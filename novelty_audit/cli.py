"""The command line: one sub-command calls one library function; no logic lives here."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import orjson
import typer
from rich.console import Console

from .errors import NoveltyAuditError

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Reproducible, auditable evaluation of novelty judges.")
out = Console(highlight=False)
err = Console(stderr=True, highlight=False)

ParamsOpt = Annotated[Path, typer.Option("--params", help="params.yaml to read")]


def _json(value) -> None:
    sys.stdout.write(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode() + "\n")


@app.command()
def stage(
    name: Annotated[str, typer.Argument(help="stage name as declared in dvc.yaml")],
    params: ParamsOpt = Path("params.yaml"),
    force: Annotated[bool, typer.Option(help="compute even if the identity is already known")] = False,
) -> None:
    """Run one pipeline stage (what dvc.yaml calls)."""
    from .pipeline import run_stage

    m = run_stage(name, params_path=params, force=force)
    out.print(f"[bold]{m.stage}[/] identity {m.identity[:16]} · {len(m.outputs)} outputs")


@app.command()
def pin(
    accept: Annotated[bool, typer.Option("--accept", help="re-pin the dataset files to their current sha256")] = False,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Check the dataset pins; with --accept, write the current digests to params.yaml and list what changed."""
    from .datasets import accept_pins, check_pin
    from .params import load_params

    p = load_params(params)
    if not accept:
        for name, dp in sorted(p.pin.datasets.items()):
            check_pin(name, dp)
            out.print(f"{name}: {dp.path} matches its pin {dp.sha256[:16]}")
        return
    changes = accept_pins(params, p, Path(p.store.artifacts) / "pin")
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
def verify(params: ParamsOpt = Path("params.yaml")) -> None:
    """Re-hash every artifact against its manifest; exit 1 naming each mismatching file."""
    from .artifacts import verify_tree
    from .params import load_params

    p = load_params(params)
    checked, bad = verify_tree(Path(p.store.artifacts))
    for m in bad:
        err.print(f"MISMATCH {m.path} (stage {m.stage}): expected {m.expected[:16]}, found {(m.actual or 'missing')[:16]}")
    if bad:
        raise typer.Exit(1)
    out.print(f"verified {checked} artifact files: all match their manifests")


@app.command()
def runs(
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """List the runs ledger."""
    from .artifacts import Store
    from .params import load_params

    recs = Store(load_params(params).store.root).runs()
    if as_json:
        _json([r.model_dump(mode="json") for r in recs])
        return
    from rich.table import Table

    t = Table("run id", "time", "git revision", "stages")
    for r in recs:
        t.add_row(r.run_id, r.time, (r.git_revision or "-")[:12], ", ".join(r.stages))
    out.print(t)


@app.command()
def manifest(
    name: Annotated[str, typer.Argument(help="stage name")],
    params: ParamsOpt = Path("params.yaml"),
) -> None:
    """Print a stage's manifest (content) and its latest run facts (never hashed)."""
    from .artifacts import Store, load_manifest
    from .params import load_params

    p = load_params(params)
    m = load_manifest(Path(p.store.artifacts) / name)
    facts = Store(p.store.root).run_facts(name)
    _json({"manifest": m.model_dump(mode="json"), "manifest_digest": m.digest(), "last_run": facts[-1] if facts else None})


def main(argv: Optional[list[str]] = None) -> None:
    """Entry point: user errors print one message and exit non-zero; bugs keep their traceback."""
    try:
        app(args=argv, standalone_mode=False)
    except NoveltyAuditError as exc:
        err.print(f"[bold red]error:[/] {exc.message}")
        if exc.hint:
            err.print(f"[dim]hint:[/] {exc.hint}")
        sys.exit(exc.exit_code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        err.print("aborted")
        sys.exit(130)
    except Exception as exc:  # click usage errors carry their own exit code
        import click

        if isinstance(exc, click.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        raise


if __name__ == "__main__":
    main()
