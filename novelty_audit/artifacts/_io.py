"""Atomic writes: temp file in the target directory, fsync, then rename.

A crash at any point leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import csv
import fcntl
import io
import itertools
import os
import re
import tempfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import polars as pl

from ._digest import canonical

__all__ = ["temp_prefix", "atomic_write_bytes", "write_all", "exclusive_update", "write_json", "read_json", "write_table", "read_table", "csv_records"]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# mkstemp/mkdtemp create owner-only files and directories; published artifacts get the usual modes instead.
_FILE_MODE = 0o666 & ~_umask()
_DIR_MODE = 0o777 & ~_umask()


def temp_prefix(name: str) -> str:
    """`.<name>.<pid>.`: temp names carry the writer's pid so `clean_stale_temps` can tell a dead writer's leftovers."""
    return f".{name}.{os.getpid()}."


def atomic_write_bytes(path: str | Path, data: bytes, *, fsync: bool = True) -> Path:
    """Write `data` to a temp file beside `path` and rename it over `path`: readers see the old bytes or the
    new ones, never a part, whatever happens to the writer. `fsync=False` skips flushing to the disk before
    the rename, for files that check themselves on read (after a power loss such a file may be empty or old,
    and its reader sees that and treats it as missing); everything else is synced."""
    path = Path(path)
    fd, tmp = _create_temp(path)
    try:
        # os.write on the descriptor, not a file object: open() adds fstat and isatty calls, and each system
        # call hands the GIL over, which showed in the call cache's writer thread.
        try:
            write_all(fd, data)
            if fsync:
                os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        _name_path(exc, path)
        raise
    return path


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data` to the descriptor (`os.write` may write fewer than it was given)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _name_path(exc: BaseException, path: Path) -> None:
    """Name the file an OSError of a write was about (os.write and Parquet writers name none), so a full disk
    is reported with the path the user must make room for."""
    if isinstance(exc, OSError) and exc.filename is None:
        exc.filename = str(path)


_temp_seq = itertools.count()


def _create_temp(path: Path) -> tuple[int, str]:
    """A new temp file `.<name>.<pid>.<thread>-<n>.tmp` beside `path`, created with the usual mode. Cheaper
    than `tempfile.mkstemp` (no random names, no chmod), which showed in the call cache's per-answer cost;
    O_EXCL still refuses a leftover of a dead process that had the same pid."""
    prefix = f"{path.parent}/{temp_prefix(path.name)}{threading.get_native_id()}-"
    for _ in range(1000):
        tmp = f"{prefix}{next(_temp_seq)}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue
        except FileNotFoundError:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            _name_path(exc, path)
            raise
    raise FileExistsError(f"no free temp name beside {path}")


@contextmanager
def exclusive_update(path: str | Path) -> Iterator[None]:
    """Hold an exclusive flock on the side file `<path>.lock` for a read-modify-write of `path`: one writer at
    a time across processes, while readers (who never lock) see the old file or the new one, since the
    caller replaces `path` with `atomic_write_bytes`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_name(path.name + ".lock"), "a+b") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        yield


def write_json(path: str | Path, value: Any, *, canonical_floats: bool = False) -> Path:
    """Write records as sorted-key JSON (indented for people; the bytes are still deterministic)."""
    payload = canonical(value) if canonical_floats else value
    data = orjson.dumps(payload, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY)
    return atomic_write_bytes(path, data + b"\n")


def read_json(path: str | Path) -> Any:
    return orjson.loads(Path(path).read_bytes())


def write_table(path: str | Path, df: pl.DataFrame) -> Path:
    """Write a Parquet table atomically. Statistics are off so bytes depend on content only."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=temp_prefix(path.name), suffix=".tmp")
    except OSError as exc:
        _name_path(exc, path)
        raise
    os.close(fd)
    try:
        df.write_parquet(tmp, compression="zstd", statistics=False)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, _FILE_MODE)
        os.replace(tmp, path)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        _name_path(exc, path)
        if (os_error := _polars_os_error(exc)) is not None:
            raise OSError(os_error, os.strerror(os_error), str(path)) from exc
        raise
    return path


def _polars_os_error(exc: BaseException) -> int | None:
    """The errno of an I/O failure polars reports as its own error ("... (os error 28)"), or None."""
    if isinstance(exc, pl.exceptions.PolarsError):
        found = re.search(r"\(os error (\d+)\)", str(exc))
        if found:
            return int(found.group(1))
    return None


def read_table(path: str | Path) -> pl.DataFrame:
    return pl.read_parquet(path)


def csv_records(text: str, label: str, *, delimiter: str = ",", hint: str | None = None) -> Iterator[tuple[int, int, list[str]]]:
    """(first line, last line, fields) of every non-blank record of a CSV/TSV text, in file order.

    strict: an unterminated quote is an error naming the line where its record starts, instead of a value
    that silently runs on and swallows the rows after it. Errors are BadInputError naming `label`.
    """
    from ..errors import BadInputError

    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    end = 0  # last physical line consumed; a record starts on the line after it
    while True:
        start = end + 1
        try:
            record = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            what = "a quoted value is never closed (unbalanced quote)" if "end of data" in str(exc) else str(exc)
            raise BadInputError(f"{label}: line {start}: {what}", hint=hint) from None
        end = reader.line_num
        if record and any(v.strip() for v in record):
            yield start, end, record
