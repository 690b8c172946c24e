"""The `review` task: generators write a three-section novelty evaluation per NovBench paper.

Every generator gives exactly one row per (dataset, paper): an output that cannot be parsed is kept with
`valid = false` (counted invalid by the metrics, never dropped). Backends here: `expert` (the reference
items themselves, the study's "expert as model" row) and `import` (texts from a CSV/JSONL file); the API
backends live in `_llmgen.py` (through the call layer, `novelty_audit.llm`); the local GGUF model (`gguf`) is in
`_ggufgen.py`. What all generators share (the row, the args check, the prompts) is in `_genbase.py`, below them all.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from ..artifacts import csv_records, digest_file
from ..config import Frozen, GeneratorSpec, JudgeParams
from ..errors import BadInputError, ConfigError
from ._genbase import REVIEW_KEYS, REVIEWS_SCHEMA, Generator, generator_args, review_row
from ._papers import Paper
from ._parse import render_items

__all__ = ["REVIEWS_SCHEMA", "REVIEW_KEYS", "Generator", "ExpertGenerator", "ImportGenerator", "build_generators", "review_row"]

class ExpertGenerator(Generator):
    """The reference items as a generator's output: the study's "expert as model" row (coverage = dist_acc = 1)."""

    backend = "expert"

    def generate(self, papers: Sequence[Paper]) -> list[dict[str, Any]]:
        return [
            review_row(self, p, text=render_items(p.reference), items=p.reference, valid=True,
                       evidence_parts={"reference": p.reference_digest, "novelty_sentences": p.novelty_digest})
            for p in papers
        ]


class ImportArgs(Frozen):
    path: str
    """CSV (header: dataset, paper_id, text) or JSONL ({"dataset", "paper_id", "text"}) of generated evaluations.
    paper_id is the pinned paper id (np-…) or the record's own `id` in the NovBench file."""


class ImportGenerator(Generator):
    """Generated texts from a file. A paper the file lacks gets an empty, invalid row (counted, not dropped)."""

    backend = "import"

    def __init__(self, name: str, args: ImportArgs):
        super().__init__(name)
        self.path = Path(args.path)
        if not self.path.is_file():
            raise BadInputError(f"judge.generators.{name}.args.path: {self.path} not found")
        self.sha256 = digest_file(self.path)
        self._records = self._read()

    def config(self) -> dict[str, Any]:
        # The file's content decides every text: a new file is a new configuration of this generator.
        return {"backend": self.backend, "path": self.path.as_posix(), "file_sha256": self.sha256}

    def input_files(self) -> list[Path]:
        return [self.path]

    def _read(self) -> list[tuple[str, dict[str, str]]]:
        text = self.path.read_text(encoding="utf-8")
        label = self.path.as_posix()
        out: list[tuple[str, dict[str, str]]] = []
        if self.path.suffix.lower() in (".jsonl", ".ndjson"):
            for n, line in enumerate(text.splitlines(), start=1):
                if not line.strip():
                    continue
                try:
                    rec = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise BadInputError(f"{label}: line {n}: not JSON ({exc})") from None
                if not isinstance(rec, dict):
                    raise BadInputError(f"{label}: line {n}: expected an object")
                out.append((f"line {n}", rec))
        else:
            rows = list(csv_records(text, label))
            if not rows:
                raise BadInputError(f"{label}: empty file", hint="expected a header: dataset,paper_id,text")
            header = [h.strip() for h in rows[0][2]]
            for first, _, fields in rows[1:]:
                if len(fields) != len(header):
                    raise BadInputError(f"{label}: line {first}: {len(fields)} fields, header has {len(header)}")
                out.append((f"line {first}", dict(zip(header, fields))))
        for where, rec in out:
            for fld in ("dataset", "paper_id", "text"):
                if not isinstance(rec.get(fld), str):
                    raise BadInputError(f"{label}: {where}, field {fld}: missing or not a string",
                                        hint="columns: dataset, paper_id, text")
        return out

    def generate(self, papers: Sequence[Paper]) -> list[dict[str, Any]]:
        label = self.path.as_posix()
        by_key: dict[tuple[str, str], Paper] = {}
        for p in papers:
            by_key[(p.dataset, p.paper_id)] = p
            by_key.setdefault((p.dataset, p.source_id), p)
        datasets = {p.dataset for p in papers}
        texts: dict[tuple[str, str], str] = {}
        for where, rec in self._records:
            if rec["dataset"] not in datasets:
                continue  # another dataset's texts (e.g. one not pinned in this run): not ours to judge
            p = by_key.get((rec["dataset"], rec["paper_id"]))
            if p is None:
                raise BadInputError(f"{label}: {where}, field paper_id: {rec['paper_id']!r} is not a paper of dataset {rec['dataset']}")
            if (p.dataset, p.paper_id) in texts:
                raise BadInputError(f"{label}: {where}, field paper_id: a second text for paper {rec['paper_id']!r} of {rec['dataset']}")
            texts[(p.dataset, p.paper_id)] = rec["text"]
        return [review_row(self, p, text=texts.get((p.dataset, p.paper_id), ""), evidence_parts={"novelty_sentences": p.novelty_digest})
                for p in papers]


def build_generators(jp: JudgeParams, *, store_root: str | Path, budget: Any = None) -> list[Generator]:
    """Every enabled generator, sorted by id."""
    out: list[Generator] = []
    for name, spec in sorted(jp.generators.items()):
        if not spec.enabled:
            continue
        out.append(_build_one(name, spec, jp, store_root, budget))
    return out


def _build_one(name: str, spec: GeneratorSpec, jp: JudgeParams, store_root: str | Path, budget: Any) -> Generator:
    if spec.backend == "expert":
        if spec.args:
            raise ConfigError(f"params.yaml judge.generators.{name}.args: the expert generator takes no args")
        return ExpertGenerator(name)
    if spec.backend == "import":
        return ImportGenerator(name, generator_args(name, ImportArgs, spec.args))
    if spec.backend == "gguf":
        from ._ggufgen import build_gguf_generator

        return build_gguf_generator(name, spec, jp, store_root=store_root)
    from ._llmgen import build_llm_generator

    return build_llm_generator(name, spec, jp, store_root=store_root, budget=budget)
