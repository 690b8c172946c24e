"""Typed models of params.yaml, one section per stage.

params.yaml is the only configuration source. Every model forbids unknown keys so a typo
fails when the file is loaded, not halfway through a paid run. A stage's params digest
covers only the sections it reads (`section_payload`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SerializerFunctionWrapHandler, ValidationError, field_validator, model_serializer, model_validator

from .config import (
    DATASET_NAMES,
    AuditParams,
    FlowsParams,
    Frozen,
    JudgeParams,
    MetricsParams,
    PoolsParams,
    ProbeParams,
    ReportParams,
    SignalsParams,
    check_name,
    safe_load_unique,
)
from .errors import ConfigError

__all__ = [
    "Frozen",
    "StoreParams",
    "DatasetPin",
    "VariantOf",
    "PublishedPin",
    "PinParams",
    "Params",
    "load_params",
    "load_raw_params",
    "section_payload",
    "DATASET_NAMES",
    "FlowsParams",
]


class StoreParams(Frozen):
    root: str = ".novelty-audit"
    """Content-addressed store: objects, stored manifests, run log, runs ledger, call caches."""
    artifacts: str = "artifacts"
    """Where stage output directories live (one per stage, as declared in dvc.yaml)."""
    shared_cache: str | None = None
    """A call cache shared by a team (fsspec URL: a directory, s3://bucket/prefix, gs://bucket/prefix) under the
    local one: calls found there are not paid again. Where answers are kept never decides them, so this is not
    in any stage identity (docs/design/cache.md)."""
    shared_cache_options: dict[str, Any] = Field(default_factory=dict)
    """fsspec options of that filesystem without secrets (e.g. {endpoint_url: http://minio:9000}); credentials
    come from the environment (AWS_ACCESS_KEY_ID, ...)."""

    @model_validator(mode="after")
    def _no_secret_options(self) -> "StoreParams":
        words = ("secret", "password", "token", "key", "credential")
        bad = sorted(k for k in self.shared_cache_options if any(w in k.lower() for w in words))
        if bad:
            raise ValueError(
                f"store.shared_cache_options.{bad[0]}: secrets are read from the environment only, never from params.yaml "
                "(e.g. AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY for s3://)"
            )
        return self


class PublishedPin(Frozen):
    """A study's published results for one pinned dataset, shown beside its measured rows ("published, not rerun")."""

    path: str
    """The published file (NovBench: a `result_dict_*.json` of the release)."""
    sha256: str
    """Pinned digest of its bytes; the pin stage checks it like the dataset's own."""
    data: Literal["original", "change", "del"]
    """Which of the file's data sets this dataset is: only those rows are shown beside it (a NovBench result file
    holds the original, change and del sets' rows)."""


class VariantOf(Frozen):
    """The pinned split another split is a further version of (docs/sweeps.md, "Which base split")."""

    split: str
    """The original split, a pinned pairwise split: a sweep's `dataset` variant on this split is compared with its
    base judged there (reports/sweeps.json `compared_on`)."""
    paired: bool
    """true: both splits hold the same two papers per pair (same titles, so the same pair and idea ids; e.g. the
    plan-format rewrite), compared item by item; false: different ideas (e.g. regenerated low sides), compared as
    two independent samples (no disagreement, no McNemar)."""


class DatasetPin(Frozen):
    """One benchmark split and where it comes from."""

    source: Literal["yaml", "parquet", "hf", "novbench"] = "yaml"
    """yaml/parquet: a local file with the benchmark schema; hf: the Hub release at a pinned revision;
    novbench: a NovBench-format JSON file (papers for the generative `review` task, docs/design/novbench.md)."""
    path: str
    """Local file (yaml/parquet), or for hf the local cache path the pinned Parquet file is stored at."""
    sha256: str
    """Pinned digest of the file's bytes; a mismatch stops the pin stage."""
    repo: str | None = None
    """hf only: dataset repository, e.g. noystl/novelty-judge-bench."""
    revision: str | None = None
    """hf only: the commit to download; required so the pin can never float."""
    config: str | None = None
    """hf only: the dataset config (human-only | human-plus-generated)."""
    published: PublishedPin | None = None
    """novbench only: the study's published results for this dataset (docs/design/novbench.md); null: none shown."""
    variant_of: VariantOf | None = None
    """A further split of another pinned split: `{split: <name>, paired: true|false}`; null: an original split
    (a sweep's `dataset` variant on it is compared with its base on the same split)."""

    @model_validator(mode="after")
    def _hf_needs_revision(self) -> "DatasetPin":
        if self.source == "hf" and not (self.repo and self.revision and self.config):
            raise ValueError("source 'hf' needs repo, revision and config")
        if self.published is not None and self.source != "novbench":
            raise ValueError("published: only a novbench dataset takes published results here (the Ai2 splits' "
                             "published figures are rows of report.published naming their dataset)")
        if self.variant_of is not None and self.source == "novbench":
            raise ValueError("variant_of: only a pairwise split is a variant of another split")
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        if isinstance(out, dict) and self.published is None:
            out.pop("published", None)  # pins without published results keep the params digest they had before
        if isinstance(out, dict) and self.variant_of is None:
            out.pop("variant_of", None)  # so do original splits
        return out


class PinParams(Frozen):
    datasets: dict[str, DatasetPin]
    on_bad_item: Literal["error", "exclude"] = "error"
    """error: stop and list every bad item; exclude: drop them into exclusions.parquet and go on."""

    @field_validator("datasets")
    @classmethod
    def _names(cls, v: dict[str, DatasetPin]) -> dict[str, DatasetPin]:
        for name in v:
            check_name(name, "a dataset")  # it names rows, headings and files of every later stage
        return v

    @model_validator(mode="after")
    def _variant_of_pinned(self) -> "PinParams":
        for name, pin in self.datasets.items():
            of = pin.variant_of
            if of is None:
                continue
            target = self.datasets.get(of.split)
            if of.split == name or target is None or target.source == "novbench":
                raise ValueError(f"pin.datasets.{name}.variant_of.split: '{of.split}' is not another pinned pairwise split")
        return self

    def compared_with(self, split: str) -> tuple[str, bool]:
        """The split a sweep's `dataset` variant on `split` is compared with its base on, and whether item by item:
        its `variant_of` (split, paired), or the split itself, paired, for an original split."""
        pin = self.datasets.get(split)
        of = pin.variant_of if pin is not None else None
        return (of.split, of.paired) if of is not None else (split, True)


class Params(BaseModel):
    """The whole params.yaml."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    store: StoreParams = Field(default_factory=StoreParams)
    pin: PinParams
    probe: ProbeParams = Field(default_factory=ProbeParams)
    judge: JudgeParams = Field(default_factory=JudgeParams)
    flows: FlowsParams = Field(default_factory=FlowsParams)
    audit: AuditParams = Field(default_factory=AuditParams)
    metrics: MetricsParams = Field(default_factory=MetricsParams)
    report: ReportParams = Field(default_factory=ReportParams)
    signals: SignalsParams = Field(default_factory=SignalsParams)
    pools: PoolsParams = Field(default_factory=PoolsParams)

    @model_validator(mode="after")
    def _judge_datasets_pinned(self) -> "Params":
        # A split a judge or a sweep's `dataset` knob names must be a pinned pairwise split: caught when params
        # load, naming it, rather than as a missing table once the judge stage runs.
        pairwise = sorted(n for n, d in self.pin.datasets.items() if d.source != "novbench")
        clash = sorted(set(self.pools.dataset_names()) & set(self.pin.datasets))
        if clash:
            raise ValueError(f"pools: dataset name(s) {', '.join(clash)} are pinned splits too (pin.datasets): rename the candidate set")
        pairwise += self.pools.dataset_names()  # the pools stage's pair sets
        named = [(f"judge.sweeps.{s}.vary.dataset", ds) for s, sw in self.judge.sweeps.items() for ds in sw.datasets()]
        named += [(f"judge.judges.{j}.datasets", ds) for j, spec in self.judge.judges.items()
                  if "/" not in j for ds in spec.datasets or ()]
        for where, ds in named:
            if ds not in pairwise:
                raise ValueError(f"{where}: '{ds}' is not a pinned pairwise split or a pools dataset ({', '.join(pairwise)})")
        # A `dataset` variant is compared with its base on the split its own split is a variant of: the base must be
        # asked there (named rather than added silently: it may be a paid judge's extra split).
        for vid, v in self.judge.sweep_variants().items():
            if "dataset" not in v.knobs:
                continue
            split, _ = self.pin.compared_with(v.knobs["dataset"])
            if split not in self.judge.datasets_of(v.base):
                raise ValueError(
                    f"judge.sweeps.{v.sweep}.vary.dataset: '{v.knobs['dataset']}' is compared with base '{v.base}' on "
                    f"'{split}' (pin.datasets.{v.knobs['dataset']}.variant_of), which '{v.base}' is not asked about: "
                    f"add '{split}' to judge.datasets or to judge.judges.{v.base}.datasets")
        return self


def load_raw_params(path: str | Path = "params.yaml") -> dict[str, Any]:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: no such params file", hint="run from the project root")
    if path.is_dir():
        raise ConfigError(f"{path}: is a directory, not a params file", hint="pass the YAML file, e.g. --params params.yaml")
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{path}: line {line}: byte 0x{data[exc.start]:02x} at offset {exc.start} is not UTF-8",
            hint="save the file as UTF-8 (DVC reads params.yaml as UTF-8 too)",
        ) from None
    try:
        raw = safe_load_unique(text) or {}  # a duplicate key names both lines instead of keeping the last
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML ({exc})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{path}: the top level must be a mapping of sections")
    return raw


def load_params(path: str | Path = "params.yaml") -> Params:
    """Parse and validate params.yaml against the section models; errors name the section and field.

    The judges' backend args are checked by the judge registry, which sits above this module:
    `novelty_audit.pipeline.load_checked_params` does both, and every command and flow loads params with it."""
    raw = load_raw_params(path)
    try:
        params = Params.model_validate(raw)
    except ValidationError as exc:
        lines = [f"{path}: invalid parameters"]
        for err in exc.errors():
            loc = ".".join(str(p) for p in err["loc"])
            lines.append(f"  {loc}: {err['msg']}")
        raise ConfigError(
            "\n".join(lines), hint=f"fix the field(s) named above in {path} (each section's fields are documented in novelty_audit/config)"
        ) from None
    return params


def section_payload(params: Params, *sections: str) -> dict[str, Any]:
    """The exact parameter values a stage reads, for its params digest."""
    return {s: getattr(params, s).model_dump(mode="python") for s in sections}
