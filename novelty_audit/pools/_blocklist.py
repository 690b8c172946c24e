"""The title blocklist: a pinned YAML file (the Ai2 release's paper_blocklist.yaml) plus extra titles."""

from __future__ import annotations

from pathlib import Path

import yaml

from ..config import TitleBlocklist
from ..errors import BadInputError
from ..signals import check_file_pin

__all__ = ["blocked_titles"]

SECTION = "pools.title_blocklist.file"


def blocked_titles(tb: TitleBlocklist, root: Path = Path(".")) -> list[str]:
    """The file's `blocked_titles` (after checking its pin) followed by the extra titles, duplicates dropped."""
    titles: list[str] = []
    if tb.file is not None:
        path = check_file_pin(SECTION, tb.file, root)
        try:
            raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        except yaml.YAMLError as exc:
            raise BadInputError(f"{path}: not valid YAML ({exc})") from None
        listed = raw.get("blocked_titles") if isinstance(raw, dict) else None
        if not isinstance(listed, list) or not all(isinstance(t, str) and t.strip() for t in listed):
            raise BadInputError(
                f"{path}: field 'blocked_titles' must be a list of non-empty titles",
                hint="the Ai2 format: blocked_titles: [\"Title one\", \"Title two\"]",
            )
        titles += listed
    titles += tb.titles
    return list(dict.fromkeys(titles))
