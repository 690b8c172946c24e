"""The generated pool: ideas read from a pinned file or the pin tables, or generated through an LLM (cached)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl

from ..config import GeneratedPoolParams
from ..artifacts import short_id
from ..datasets import normalize_text
from ..errors import BadInputError, ConfigError
from ._strip import GENERATE_PROMPT

__all__ = ["GENERATED_SCHEMA", "generated_from_pin", "generated_from_jsonl", "generate_with_llm"]

GENERATED_SCHEMA = {
    "idea_id": pl.String,
    "title": pl.String,
    "area": pl.String,
    "text": pl.String,
    "origin": pl.String,
    "n_words": pl.Int32,
    "over_word_limit": pl.Boolean,
}


def _idea_id(title: str) -> str:
    return short_id("i-", normalize_text(title))


def _row(title: str, area: str, text: str, origin: str, max_words: int) -> dict[str, Any]:
    n = len(text.split())
    return {"idea_id": _idea_id(title), "title": title, "area": area, "text": text, "origin": origin,
            "n_words": n, "over_word_limit": n > max_words}


def generated_from_pin(ideas: pl.DataFrame, dataset: str, max_words: int) -> pl.DataFrame:
    """The generated ideas (`source == generated`) of a pinned benchmark split."""
    gen = ideas.filter(pl.col("source") == "generated").sort("idea_id")
    if gen.height == 0:
        raise ConfigError(f"pools.generated: dataset {dataset} has no generated ideas", hint="use human-plus-generated, or source: none")
    rows = [_row(r["title"], r["area"], r["text"], f"pin:{dataset}", max_words) for r in gen.iter_rows(named=True)]
    return pl.DataFrame(rows, schema=GENERATED_SCHEMA)


def generated_from_jsonl(path: Path, max_words: int) -> pl.DataFrame:
    """One JSON object per line with string fields area, title, text; a bad line names file, line and field."""
    rows = []
    try:
        content = Path(path).read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise BadInputError(f"{path}: not UTF-8 text (byte {exc.start})", hint="one JSON object per line") from None
    for i, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as exc:
            why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
            raise BadInputError(f"{path}: line {i}: not valid JSON ({why})") from None
        if not isinstance(rec, dict):
            raise BadInputError(f"{path}: line {i}: expected a JSON object with fields area, title, text")
        for field in ("area", "title", "text"):
            if not isinstance(rec.get(field), str) or not rec[field].strip():
                raise BadInputError(f"{path}: line {i}, field {field}: missing or not a non-empty string")
        rows.append(_row(rec["title"].strip(), rec["area"].strip(), " ".join(rec["text"].split()), f"file:{Path(path).name}", max_words))
    df = pl.DataFrame(rows, schema=GENERATED_SCHEMA)
    dup = df.filter(pl.col("idea_id").is_duplicated())
    if dup.height:
        raise BadInputError(f"{path}: duplicate titles {sorted(set(dup['title'].to_list()))[:5]}", hint="titles identify ideas")
    return df.sort("idea_id")


def generate_with_llm(client, areas: list[str], gp: GeneratedPoolParams, *, prompt: str | None = None) -> pl.DataFrame:
    """`gp.per_area` ideas per area through the model; replicate n of an area is call-cache vote index n."""
    from ..signals import load_text_prompt

    template = prompt if prompt is not None else load_text_prompt(GENERATE_PROMPT)
    rows = []
    for area in sorted(set(areas)):
        content = template.replace("{area}", area).replace("{max_words}", str(gp.max_words))
        for n in range(gp.per_area):
            answer = client.complete([{"role": "user", "content": content}], replicate=n).strip()
            lines = [ln.strip() for ln in answer.splitlines() if ln.strip()]
            text = " ".join(" ".join(lines[1:]).split()) if len(lines) > 1 else " ".join(answer.split())
            # Titles follow the benchmark's convention for generated ideas, so ids never collide with papers.
            rows.append(_row(f"LLM-{area}-{n}", area, text, f"llm:{client.spec.model}", gp.max_words))
    return pl.DataFrame(rows, schema=GENERATED_SCHEMA).sort("idea_id")
