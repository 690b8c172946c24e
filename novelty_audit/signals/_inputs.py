"""The signals stage's input files: pins, the review directory and its index, and accepting changes.

A review file counts only when it is pinned in params.yaml (`signals.markdown`), so the stage identity names
every file it reads. The review directory (`signals.markdown_dir`) is checked against the pins and against its
index (`signals.markdown_index`): a file added, removed or edited there stops the stage with an error naming
it and the command that registers it, `novelty-audit signals --accept`, which writes the pins into params.yaml
keeping its comments (as `novelty-audit pin --accept` does for the benchmark).
"""

from __future__ import annotations

import posixpath
from bisect import bisect_left
from dataclasses import dataclass
from io import StringIO
from pathlib import Path

from ..artifacts import atomic_write_bytes, check_pinned_file, csv_records, digest_file
from ..config import PinnedFile, SignalsParams, round_trip_yaml
from ..errors import BadInputError, ConfigError, PinMismatchError
from ..templates import packaged_file
from ._llm import PROMPT_NAME

__all__ = [
    "ACCEPT_COMMAND",
    "ReviewFiles",
    "SignalsPinChange",
    "accept_signal_pins",
    "check_file_pin",
    "prompt_path",
    "review_files",
    "signal_input_files",
]

ACCEPT_COMMAND = "novelty-audit signals --accept"
_LISTED = 20  # names shown per error before "…"


def _norm(path: str) -> str:
    return posixpath.normpath(Path(path).as_posix())


def _listing(items: list[str]) -> str:
    shown = "\n  ".join(items[:_LISTED])
    return f"\n  {shown}" + ("\n  …" if len(items) > _LISTED else "")


def prompt_path(name: str) -> Path:
    """The file of a prompt shipped in novelty_audit/prompts/ (an input of every stage that sends it)."""
    return packaged_file(f"{name}.txt", missing=f"prompt novelty_audit/prompts/{name}.txt not found")


def check_file_pin(section: str, pin: PinnedFile, root: Path = Path("."), *, accept_hint: str | None = None) -> Path:
    """The file of a pin, after checking its bytes; a mismatch names the file and both digests."""
    path = Path(root) / pin.path
    if not path.is_file():
        what = "is a directory, not a file" if path.is_dir() else "not found"
        raise BadInputError(f"{section}: {pin.path} {what}", hint=f"check {section} in params.yaml")
    fix = f"run `{accept_hint}`" if accept_hint else f"put the new digest in params.yaml {section}"
    check_pinned_file(path, pin.sha256, what=f"{section}: {pin.path}", hint=f"if the change is deliberate, {fix}")
    return path


@dataclass(frozen=True)
class ReviewFiles:
    """The review directory as checked: its review files and the index that lists them (project-relative)."""

    directory: str | None
    files: tuple[str, ...] = ()
    """Every `*.md` under the directory but the ignored ones, sorted."""
    index: str | None = None
    """The index file, read (so an input of the stage) when configured."""

    def holds(self, path: str) -> bool:
        return self.directory is not None and _norm(path).startswith(self.directory + "/")


def _read_index(index: Path, label: str) -> list[tuple[int, dict[str, str]]]:
    try:
        text = index.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{label}: not UTF-8 text (byte {exc.start})") from None
    header: list[str] | None = None
    rows: list[tuple[int, dict[str, str]]] = []
    for start, _end, record in csv_records(text, label, delimiter="\t"):
        if header is None:
            header = [h.strip() for h in record]
            if "file" not in header:
                raise BadInputError(
                    f"{label}: line {start}: the header has no column 'file' (columns: {', '.join(header)})",
                    hint="the first line names the tab-separated columns: file, title, …",
                )
            continue
        if len(record) != len(header):
            raise BadInputError(f"{label}: line {start}: {len(record)} tab-separated field(s) where the header has {len(header)}")
        rows.append((start, {h: v.strip() for h, v in zip(header, record, strict=True)}))
    if header is None:
        raise BadInputError(f"{label}: empty", hint="the first line names the tab-separated columns: file, title, …")
    return rows


def _first_title(path: Path) -> str | None:
    with path.open("rb") as fh:
        for raw in fh:
            line = raw.decode("utf-8", errors="replace").strip()
            if line:
                return " ".join(line[2:].split()) if line.startswith("# ") else None
    return None


def review_files(sp: SignalsParams, root: Path = Path(".")) -> ReviewFiles:
    """The review files under `signals.markdown_dir`, checked against the index; every disagreement is listed."""
    if sp.markdown_dir is None:
        if sp.markdown_index is not None:
            raise ConfigError("signals.markdown_index is set but signals.markdown_dir is not")
        return ReviewFiles(directory=None)
    directory = _norm(sp.markdown_dir)
    base = Path(root) / directory
    if not base.is_dir():
        raise BadInputError(f"signals.markdown_dir: {directory} is not a directory", hint="create it or fix the path in params.yaml")
    ignore = {_norm(x) for x in sp.markdown_ignore}
    present = sorted(
        rel for p in base.rglob("*.md") if p.is_file() and (rel := p.relative_to(base).as_posix()) not in ignore
    )
    problems: list[str] = []
    pinned_ignored = sorted(
        pin.path for pin in sp.markdown if _norm(pin.path).startswith(directory + "/")
        and posixpath.relpath(_norm(pin.path), directory) in ignore
    )
    problems += [f"{p}: pinned in signals.markdown and also listed in signals.markdown_ignore" for p in pinned_ignored]
    index_label = None
    if sp.markdown_index is not None:
        index_label = posixpath.join(directory, _norm(sp.markdown_index))
        index = Path(root) / index_label
        if not index.is_file():
            raise BadInputError(
                f"signals.markdown_index: {index_label} not found",
                hint="create it (tab-separated, header line `file<TAB>title`, one row per review file) "
                "or set signals.markdown_index: null",
            )
        listed: dict[str, int] = {}
        for line, row in _read_index(index, index_label):
            name = _norm(row["file"]) if row["file"] else ""
            where = f"{index_label}: line {line}, field file"
            if not name or not name.endswith(".md") or name.startswith("../") or posixpath.isabs(name):
                problems.append(f"{where}: {row['file']!r} is not a .md file inside {directory}")
                continue
            if name in listed:
                problems.append(f"{where}: {name} is listed twice (first at line {listed[name]})")
                continue
            listed[name] = line
            path = base / name
            if not path.is_file():
                problems.append(f"{where}: {name} is listed but {directory}/{name} does not exist (restore it or delete the row)")
                continue
            if name in ignore:
                problems.append(f"{where}: {name} is listed but also in signals.markdown_ignore")
                continue
            title = " ".join(row.get("title", "").split())
            actual = _first_title(path)
            if title and actual is not None and title != actual:
                problems.append(f"{index_label}: line {line}, field title: {title!r}, but {directory}/{name} is titled {actual!r}")
        problems += [
            f"{directory}/{name}: in the review directory but not in {index_label} "
            f"(add a row for it, or list it in signals.markdown_ignore if it is not a review)"
            for name in present
            if name not in listed
        ]
    if problems:
        raise BadInputError(
            f"the review directory {directory} does not match its index:{_listing(problems)}",
            hint=f"after fixing, `{ACCEPT_COMMAND}` pins the review files in params.yaml",
        )
    return ReviewFiles(
        directory=directory, files=tuple(f"{directory}/{name}" for name in present), index=index_label
    )


def _check_pins_cover(sp: SignalsParams, reviews: ReviewFiles) -> None:
    pinned = {_norm(pin.path) for pin in sp.markdown}
    unpinned = [f for f in reviews.files if f not in pinned]
    gone = sorted(
        f"signals.markdown[{i}]: {pin.path}" for i, pin in enumerate(sp.markdown)
        if reviews.holds(pin.path) and _norm(pin.path) not in reviews.files
    )
    if unpinned:
        raise PinMismatchError(
            f"{len(unpinned)} review file(s) in {reviews.directory} are not pinned in params.yaml signals.markdown, "
            f"so the signals stage would ignore them:{_listing(unpinned)}",
            hint=f"run `{ACCEPT_COMMAND}` to pin them (or move them out of {reviews.directory})",
        )
    if gone:
        raise PinMismatchError(
            f"{len(gone)} pinned review file(s) are no longer in {reviews.directory}:{_listing(gone)}",
            hint=f"restore them, or run `{ACCEPT_COMMAND}` to drop their pins",
        )


def signal_input_files(sp: SignalsParams, root: Path = Path(".")) -> dict[str, list[Path]]:
    """Every input file of the signals stage, checked: markdown, openreview, sentences, the review index and,
    with the LLM extractor, its prompt (whose bytes decide the answers)."""
    reviews = review_files(sp, root)
    _check_pins_cover(sp, reviews)
    out: dict[str, list[Path]] = {"markdown": [], "openreview": [], "sentences": [], "index": []}
    for i, pin in enumerate(sp.markdown):
        out["markdown"].append(check_file_pin(f"signals.markdown[{i}]", pin, root, accept_hint=ACCEPT_COMMAND))
    for i, pin in enumerate(sp.openreview):
        out["openreview"].append(check_file_pin(f"signals.openreview[{i}]", pin, root, accept_hint=ACCEPT_COMMAND))
    for name in ("review_sentences_novelty", "review_sentences_other"):
        pin = getattr(sp, name)
        if pin is not None:
            out["sentences"].append(check_file_pin(f"signals.{name}", pin, root, accept_hint=ACCEPT_COMMAND))
    if reviews.index is not None:
        out["index"].append(Path(root) / reviews.index)
    out["prompts"] = [prompt_path(PROMPT_NAME)] if "llm" in sp.extractors else []
    if not (sp.markdown or sp.openreview):
        raise ConfigError(
            "signals: no review files configured",
            hint="set signals.markdown_dir and run `novelty-audit signals --accept`, or list files under signals.openreview",
        )
    if "llm" in sp.extractors and not sp.llm.enabled:
        raise ConfigError("signals.extractors lists 'llm' but signals.llm.enabled is false", hint="enable it or drop 'llm'")
    return out


@dataclass(frozen=True)
class SignalsPinChange:
    """One pin `signals --accept` looked at: added (old None), removed (new None), changed or unchanged."""

    section: str
    """Where the pin lives in params.yaml: signals.markdown, signals.openreview, signals.review_sentences_novelty, …"""
    path: str
    old_sha256: str | None
    new_sha256: str | None

    @property
    def kind(self) -> str:
        if self.old_sha256 is None:
            return "added"
        if self.new_sha256 is None:
            return "removed"
        return "unchanged" if self.old_sha256 == self.new_sha256 else "changed"


def _current(section: str, pin: PinnedFile, root: Path) -> str:
    path = Path(root) / pin.path
    if not path.is_file():
        raise BadInputError(f"{section}: {pin.path} not found", hint=f"restore it or remove it from params.yaml {section}")
    return digest_file(path)


def _plan(sp: SignalsParams, root: Path) -> list[SignalsPinChange]:
    reviews = review_files(sp, root)
    changes: list[SignalsPinChange] = []
    pinned: set[str] = set()
    for i, pin in enumerate(sp.markdown):
        pinned.add(_norm(pin.path))
        if reviews.holds(pin.path) and _norm(pin.path) not in reviews.files:
            changes.append(SignalsPinChange("signals.markdown", pin.path, pin.sha256, None))
        else:
            changes.append(SignalsPinChange("signals.markdown", pin.path, pin.sha256, _current(f"signals.markdown[{i}]", pin, root)))
    for f in reviews.files:
        if f not in pinned:
            changes.append(SignalsPinChange("signals.markdown", f, None, digest_file(Path(root) / f)))
    for i, pin in enumerate(sp.openreview):
        changes.append(SignalsPinChange("signals.openreview", pin.path, pin.sha256, _current(f"signals.openreview[{i}]", pin, root)))
    for name in ("review_sentences_novelty", "review_sentences_other"):
        pin = getattr(sp, name)
        if pin is not None:
            changes.append(SignalsPinChange(f"signals.{name}", pin.path, pin.sha256, _current(f"signals.{name}", pin, root)))
    return changes


def _write(params_path: Path, changes: list[SignalsPinChange]) -> None:
    from ruamel.yaml.comments import CommentedMap, CommentedSeq

    yaml = round_trip_yaml()
    doc = yaml.load(params_path.read_text(encoding="utf-8"))
    section = doc.get("signals") if isinstance(doc, dict) else None
    if not isinstance(section, dict):
        raise ConfigError(f"{params_path}: no signals: section to write the pins into")
    for c in changes:
        if c.kind not in ("changed", "removed", "added"):
            continue
        if c.section in ("signals.markdown", "signals.openreview"):
            key = c.section.split(".", 1)[1]
            seq = section.get(key)
            if seq is None:
                seq = section[key] = CommentedSeq()
            if not isinstance(seq, list):
                raise ConfigError(f"{params_path}: {c.section} is not a list")
            at = next((j for j, item in enumerate(seq) if isinstance(item, dict) and _norm(str(item.get("path"))) == _norm(c.path)), None)
            if c.kind == "removed" and at is not None:
                del seq[at]
            elif c.kind == "changed" and at is not None:
                seq[at]["sha256"] = c.new_sha256
            elif c.kind == "added":
                item = CommentedMap([("path", c.path), ("sha256", c.new_sha256)])
                item.fa.set_flow_style()  # one line per pin, like the hand-written ones
                if not seq and isinstance(seq, CommentedSeq):
                    seq.fa.set_block_style()  # `markdown: []` becomes a block list
                paths = [str(x.get("path")) if isinstance(x, dict) else "" for x in seq]
                seq.insert(bisect_left(paths, c.path), item)
            else:
                raise ConfigError(f"{params_path}: cannot find the {c.section} entry for {c.path}")
        else:
            entry = section.get(c.section.split(".", 1)[1])
            if not isinstance(entry, dict):
                raise ConfigError(f"{params_path}: cannot find {c.section}")
            entry["sha256"] = c.new_sha256
    buf = StringIO()
    yaml.dump(doc, buf)
    atomic_write_bytes(params_path, buf.getvalue().encode("utf-8"))


def accept_signal_pins(params_path: Path, sp: SignalsParams, root: Path = Path(".")) -> list[SignalsPinChange]:
    """Pin every review file of the review directory and re-pin every changed signals input in params.yaml.

    The index must already list exactly the review files (its rows carry what only a person can say, such as
    the title); files gone from the directory and from the index lose their pins. params.yaml is rewritten
    only when a pin moves, keeping its comments and layout.
    """
    changes = _plan(sp, root)
    if any(c.kind != "unchanged" for c in changes):
        _write(Path(params_path), changes)
    return changes
