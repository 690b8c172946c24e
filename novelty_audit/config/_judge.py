"""params.yaml `judge:` — which judges run, on which datasets and tasks, with which shared settings.

Imported by novelty_audit.params (after Frozen) and re-exported by novelty_audit.judges; living outside
that package keeps every stage's code digest (all import params.py) free of the judges' code.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ConfigDict, Field, SerializerFunctionWrapHandler, ValidationError, ValidationInfo, field_validator, model_serializer, model_validator

from ._base import DATASET_NAMES, SLUG, Frozen, check_name
from ._sweeps import SweepSpec, SweepVariant, expand_sweeps

DEFAULT_MAX_VARIANTS = 500
"""`judge.max_variants`' default: a few hundred judges, more than the study's grids (6 backbones × ~20 settings)."""

__all__ = ["CallKnobs", "CallSettings", "GeneratorSpec", "JudgeParams", "JudgeSpec", "Price", "check_call_knobs"]


class CallSettings(Frozen):
    """How a model endpoint is asked: concurrency, rate limits, timeouts, retries, the circuit breaker and provider
    batches. The one owner of these knobs and their bounds: the call layer (`novelty_audit.llm`) runs on it, the API
    judges' args extend it, and params.yaml is checked against it when it loads (`check_call_knobs`), so a
    negative timeout is refused naming its field before anything is sent. None of these enters a call key."""

    concurrency: int = Field(default=8, ge=1)
    """Requests in flight at once for this judge (backoff waits do not hold a slot)."""
    requests_per_minute: float | None = Field(default=None, gt=0)
    """Request rate limit; None: unlimited."""
    tokens_per_minute: float | None = Field(default=None, gt=0)
    """Token rate limit (prompt bytes + max_tokens as the estimate); None: unlimited."""
    max_retries: int = Field(default=5, ge=0)
    """Retries on 429, 5xx, timeouts, connection errors and malformed responses before the call ends as `error`."""
    timeout_s: float = Field(default=120.0, gt=0)
    """Per-request timeout: how long a request may go without a byte of its answer (a long reasoning call
    answers only when done, so this is its whole time)."""
    connect_timeout_s: float = Field(default=10.0, gt=0)
    """Time to open a connection (capped at timeout_s): an endpoint that cannot be reached counts toward
    the circuit breaker after this long, not after the whole request timeout. Also the time a probe
    (`hung_after_s`) has to be answered."""
    hung_after_s: float | None = Field(default=40.0, gt=0)
    """After this long with requests out and nothing at all heard from the endpoint, it is probed (GET
    `<base_url>/models`, which costs nothing; `connect_timeout_s` to answer). Any HTTP answer means it is up
    and slow: requests keep their whole `timeout_s`, so long reasoning calls are never cut. No answer means it
    is hung: the requests out end as `timeout` and the circuit opens (needs `circuit_breaker` > 0). With the
    defaults a hung endpoint is given up after about 50 s. null: no probe (requests wait out `timeout_s`)."""
    backoff_s: float = Field(default=1.0, ge=0)
    """First retry delay; doubles per retry (a Retry-After header takes precedence when longer)."""
    max_backoff_s: float = Field(default=60.0, ge=0)
    """Longest retry delay."""
    circuit_breaker: int = Field(default=5, ge=0)
    """After this many consecutive calls without an answer (connection refused or reset, connect or read
    timeout) the endpoint counts as down: nothing more is sent to it in this run and the remaining calls end
    as `error` with reason "circuit open" (they are asked again next run). An endpoint that answers, even
    with an error, is up. 0: never give up early."""
    batch: bool = False
    """Send the calls not yet cached as provider batches (OpenAI Batch API, Anthropic Message Batches) at the
    batch price instead of one request each; answers land in the same call cache under the same keys, so
    verdicts equal an interactive run's. The batch id is recorded in the store before polling: a killed run
    resumes the same batch (docs/design/judging.md, "Provider batches")."""
    batch_discount: float = Field(default=0.5, gt=0, le=1)
    """Batch price as a share of the interactive price (both providers charge half today)."""
    batch_poll_s: float = Field(default=30.0, ge=0)
    """Seconds between status polls of a running batch."""
    batch_max_wait_s: float = Field(default=24 * 3600.0, ge=0)
    """How long this run polls; a batch still running then ends its calls as `error` ("batch pending") and
    the next run resumes polling it (never resubmits)."""
    batch_failures: Literal["interactive", "next-batch"] = "interactive"
    """What happens to calls a batch failed (OpenAI error file, Anthropic errored/expired results):
    interactive: asked at once, one request each, at the interactive price; next-batch: left as `error`
    (not cached), so the next run submits them in a new batch."""
    batch_max_requests: int = Field(default=50000, ge=1)
    """Calls per batch (the providers' limits: OpenAI 50,000, Anthropic 100,000); more make several batches."""

    def knobs(self) -> dict[str, Any]:
        """These settings alone (an args model extending this one holds more)."""
        return {name: getattr(self, name) for name in CallSettings.model_fields}


class CallKnobs(CallSettings):
    """`CallSettings`' bounds plus `votes ≥ 1`, checked on every judge's and generator's `args` when params.yaml
    loads, whatever the backend: a negative timeout or `votes: 0` is refused naming the field
    (`judge.judges.<id>.args.timeout_s`) instead of hanging or dividing by zero mid-run. The backend's own args
    model still decides which knobs it takes; other args pass here."""

    model_config = ConfigDict(extra="allow", frozen=True)
    votes: int | None = Field(default=None, ge=1)


def check_call_knobs(args: dict[str, Any]) -> dict[str, Any]:
    """`args` as written, after checking the call knobs it sets against their bounds (ValidationError if not)."""
    # Checked, not converted: the args stay as written, so params digests do not move. Only the knobs it sets
    # are checked; a backend that takes none of them (a control, a distance judge) passes untouched.
    CallKnobs.model_validate({k: v for k, v in args.items() if k in CallKnobs.model_fields})
    return args


class JudgeSpec(Frozen):
    """One configured judge: a registered backend and its typed args."""

    backend: str
    """Registered backend name (`novelty-audit judges` lists them), e.g. always-first, openai, distance-yin."""
    enabled: bool = True
    """Disabled judges stay configured, listed and validated, but do not run; API judges ship disabled."""
    optional: bool = False
    """Leave the judge out (recorded in the stage summary) when its optional extra is not installed."""
    refresh: bool = False
    """Bypass this judge's call cache and record fresh answers (drift checks); run the stage with --force."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Backend arguments, validated by the backend's own typed model when params load (enabled or not)."""
    datasets: list[str] | None = None
    """Pinned pairwise splits this judge is asked about instead of judge.datasets (a sweep's `dataset` variant
    sets one); null: judge.datasets. Its probe runs only on probe datasets derived from one of these."""

    @field_validator("args")
    @classmethod
    def _knobs(cls, v: dict[str, Any]) -> dict[str, Any]:
        return check_call_knobs(v)

    @field_validator("datasets")
    @classmethod
    def _dataset_names(cls, v: list[str] | None) -> list[str] | None:
        for i, name in enumerate(v or ()):
            check_name(name, f"datasets.{i}")
        return v

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        if isinstance(out, dict) and self.datasets is None:
            out.pop("datasets", None)  # judges without their own datasets keep the params digest they had before
        return out


class GeneratorSpec(Frozen):
    """One NovBench review generator (judge.generators.<id>)."""

    backend: Literal["expert", "import", "openai", "anthropic", "gguf"]
    """expert: the reference items themselves (the study's "expert as model" row); import: texts from a
    CSV/JSONL file (dataset, paper_id, text); openai/anthropic: an API model through the judges' call engine;
    gguf: a local GGUF model through llama-cpp-python (extra `gguf`; default gemma3-270m)."""
    enabled: bool = True
    """Disabled generators stay configured but do not run (API generators ship disabled)."""
    args: dict[str, Any] = Field(default_factory=dict)
    """Backend arguments (import: path; API: model, mode zero|few|rag, k, sampling, … — see docs/design/novbench.md)."""

    @field_validator("args")
    @classmethod
    def _knobs(cls, v: dict[str, Any]) -> dict[str, Any]:
        return check_call_knobs(v)


class Price(Frozen):
    """What a model costs, in USD per million tokens."""

    input_per_mtok: float = Field(ge=0)
    """USD per million prompt tokens."""
    output_per_mtok: float = Field(ge=0)
    """USD per million completion tokens."""


class JudgeParams(Frozen):
    """The judge stage: judges × datasets × tasks."""

    datasets: list[str] = Field(default_factory=lambda: list(DATASET_NAMES))
    """Pinned datasets to judge (names under pin.datasets)."""
    tasks: list[Literal["pairwise", "pointwise", "review"]] = Field(default_factory=lambda: ["pairwise", "pointwise"])
    """pairwise: which of two ideas is more novel; pointwise: is this idea novel; review: generators write a
    novelty evaluation of every paper of every NovBench dataset (pin source `novbench`; docs/design/novbench.md)."""
    probe_datasets: list[str] = Field(default_factory=list)
    """Probe datasets of the probe stage to judge too (pairwise only), e.g. [human-only:injection]; each must be
    derived from a split in `datasets` (its clean verdicts are the comparison). Empty: no probe."""
    probe_judges: list[str] | None = None
    """Judges that run the probe datasets; null: every enabled judge (API judges only when enabled, so the
    default run stays offline). A probe costs each API judge one call per probe pair, order and vote."""
    seed: int = 0
    """Seed for seeded judges (random control); combined with item ids, never a global seed."""
    limit: int | None = Field(default=None, ge=1)
    """Judge only a seeded subset of N pairs per dataset (smoke runs); pointwise then judges the ideas of those
    pairs. The same N, seed and pairs give the same subset (pairs ranked by sha256 of seed and pair id,
    so splits holding the same pairs keep the same subset). null: every pair. `novelty-audit stage judge --limit N` sets it for one run."""
    refresh: bool = False
    """Bypass every judge's call cache (drift checks); run the stage with --force."""
    budget_usd: float | None = Field(default=None, ge=0)
    """Cap on the cost of new (uncached) API calls in one stage run; the run stops before exceeding it (0: no paid call)."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Model name → price. An API judge whose model has no price (here or in its args.price) records the cost of its
    calls as unknown: null in verdict rows, metrics.json and sweeps.json, "unknown" in the report, never 0; the dry
    run names it; with budget_usd set it is refused (the cap could not be kept)."""
    progress: bool = True
    """Show a progress bar for API judges (stderr only)."""
    on_error: Literal["fail", "record"] = "fail"
    """What a run with failed calls does. Either way its outputs are published (marked incomplete) and the
    next run asks the failed calls again. fail: the stage then exits 3, so `dvc repro` does not record it and
    reruns it next time. record: exit 0; DVC then treats the stage as done until an input changes."""
    judges: dict[str, JudgeSpec] = Field(default_factory=dict)
    """Judge id → spec. The id names the judge in every output table."""
    generators: dict[str, GeneratorSpec] = Field(default_factory=dict)
    """NovBench `review` task: generator id → spec (expert | import | openai | anthropic | gguf). The id names the
    generator in reviews.parquet and metrics.json; args are checked by novelty_audit.novbench when the stage runs."""
    sweeps: dict[str, SweepSpec] = Field(default_factory=dict)
    """Sweep name → {base | bases, mode, vary}: each variant becomes a judge `<sweep>/<knob>=<value>` (with
    `bases`: `<sweep>/<base>/<knob>=<value>`) under `judges` when params load (config/_sweeps.py, docs/sweeps.md).
    Empty by default (a sweep of API judges calls APIs)."""
    max_variants: int = Field(default=DEFAULT_MAX_VARIANTS, ge=1, strict=True)
    """Most judges one sweep, and all sweeps together, may make; checked from the value counts before anything is
    expanded, so a mistyped grid is refused at once (naming the sweep and its size) instead of filling memory."""

    @model_validator(mode="before")
    @classmethod
    def _expand_sweeps(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data.get("sweeps"):
            return data
        if not isinstance(data["sweeps"], dict):
            return data  # the field's own validation names the problem
        limit = data.get("max_variants", DEFAULT_MAX_VARIANTS)
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            return data  # the field's own validation names it; nothing is expanded without a valid limit
        sweeps: dict[str, SweepSpec] = {}
        for name, raw in data["sweeps"].items():
            check_name(name, "judge.sweeps: a sweep")  # before the name is printed in any other message
            try:
                sweeps[name] = SweepSpec.model_validate(raw)
            except ValidationError as exc:
                why = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg'].removeprefix('Value error, ')}" for e in exc.errors())
                raise ValueError(f"judge.sweeps.{name}: {why}") from None
        _check_sizes(sweeps, limit)
        judges = {k: v.model_dump(mode="python") if isinstance(v, JudgeSpec) else v for k, v in (data.get("judges") or {}).items()}
        declared = {k: v for k, v in judges.items() if "/" not in str(k)}
        variants, info = expand_sweeps(sweeps, declared, JudgeSpec.model_validate)
        for vid, spec in judges.items():
            if "/" not in str(vid):
                continue
            if vid not in variants:
                raise ValueError(f"judge id '{vid}': '/' is reserved for the variants of judge.sweeps")
            # A dump of loaded params holds the variants already; anything else under that id is a clash.
            if JudgeSpec.model_validate(spec) != JudgeSpec.model_validate(variants[vid]):
                v = info[vid]
                what = ", ".join(f"knob {k} value {x!r}" for k, x in v.knobs.items())
                raise ValueError(f"judge.sweeps.{v.sweep}: {what}: variant id '{vid}' clashes with a judge declared under judge.judges")
        return {**data, "judges": {**judges, **variants}}

    @model_serializer(mode="wrap")
    def _dump(self, handler: SerializerFunctionWrapHandler) -> Any:
        out = handler(self)
        if isinstance(out, dict) and not self.sweeps:
            out.pop("sweeps", None)  # a run without sweeps keeps the params digest it had before sweeps existed
        if isinstance(out, dict) and self.max_variants == DEFAULT_MAX_VARIANTS:
            out.pop("max_variants", None)  # likewise for the default limit (it decides no result)
        return out

    def datasets_of(self, judge: str) -> list[str]:
        """The pinned splits `judge` is asked about: its own `datasets` (a `dataset` variant: that split) or
        judge.datasets. A sweep's base is not asked on its dataset variants' splits: each variant is compared
        with it on the split its split is a variant of (`pin.datasets.<split>.variant_of`, checked when params load)."""
        spec = self.judges.get(judge)
        return list(spec.datasets) if spec is not None and spec.datasets is not None else list(self.datasets)

    def run_datasets(self) -> list[str]:
        """Every pinned split a run reads: judge.datasets, then the others an enabled judge is asked about."""
        out = list(self.datasets)
        for name, spec in self.judges.items():
            if spec.enabled:
                out += [d for d in self.datasets_of(name) if d not in out]
        return out

    def sweep_variants(self) -> dict[str, SweepVariant]:
        """Generated judge id → its sweep, base and knob values (empty without sweeps)."""
        if not self.sweeps:
            return {}
        declared = {k: v.model_dump(mode="python") for k, v in self.judges.items() if "/" not in k}
        return expand_sweeps(self.sweeps, declared, JudgeSpec.model_validate)[1]

    @field_validator("datasets", "probe_datasets", "generators")
    @classmethod
    def _names(cls, v: Any, info: ValidationInfo) -> Any:
        for name in v:  # dataset names, generator ids
            check_name(name, info.field_name or "name")
        return v

    @field_validator("judges")
    @classmethod
    def _kebab_ids(cls, v: dict[str, JudgeSpec]) -> dict[str, JudgeSpec]:
        for name in v:
            check_name(name, "judge id")
            sweep, slash, rest = name.partition("/")  # a sweep variant: <sweep>/[<base>/]<knob>=<value>[,…]
            if not SLUG.fullmatch(sweep) or (slash and not rest):
                raise ValueError(f"judge id '{name}' must be lowercase letters, digits, '.', '_' or '-'")
        return v

    @model_validator(mode="after")
    def _probe_names(self) -> "JudgeParams":
        from ._probe import PROBE_SUFFIX

        for ds in self.probe_datasets:
            split = ds[: -len(PROBE_SUFFIX)] if ds.endswith(PROBE_SUFFIX) else None
            if split is None or split not in self.datasets:
                raise ValueError(f"probe_datasets: '{ds}' must be '<split>{PROBE_SUFFIX}' for a split listed in judge.datasets")
        unknown = sorted(set(self.probe_judges or ()) - set(self.judges))
        if unknown:
            raise ValueError(f"probe_judges: {', '.join(unknown)} not under judge.judges")
        return self


def _check_sizes(sweeps: dict[str, SweepSpec], limit: int) -> None:
    """Refuse a sweep (or all sweeps together) that would make more than `limit` judges, from the value counts."""
    for name, sweep in sweeps.items():
        size = sweep.size()
        if size > limit:
            counts = " × ".join(str(len(v)) for v in sweep.vary.values()) if sweep.mode == "grid" else \
                " + ".join(str(len(v)) for v in sweep.vary.values())
            bases = len(sweep.base_ids())
            raise ValueError(f"judge.sweeps.{name}: {size:,} variants ({sweep.mode}: {counts} values"
                             f"{f', × {bases} bases' if bases > 1 else ''}) exceed judge.max_variants {limit:,}; "
                             "vary fewer values, split the sweep, or raise judge.max_variants")
    total = sum(s.size() for s in sweeps.values())
    if total > limit:
        raise ValueError(f"judge.sweeps: {total:,} variants in all ({len(sweeps)} sweeps) exceed judge.max_variants "
                         f"{limit:,}; drop a sweep or raise judge.max_variants")
