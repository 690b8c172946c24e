"""`export table probe`: the injection probe's attack success per judge and family as a paper table, from the
probe datasets' figures in metrics.json, with the rounding, Wilson intervals and caption rules of the other tables."""

from __future__ import annotations

import csv
import io
import json

import pytest
import yaml
from test_sweep_run import check_latex_tabular, in_percent, numbers

from novelty_audit.pipeline import run_stage

PROBE = "human-only:injection"


@pytest.fixture
def probed(tiny):
    raw = yaml.safe_load((tiny / "params.yaml").read_text())
    raw["judge"].update(datasets=["human-only"], probe_datasets=[PROBE], tasks=["pairwise"],
                        judges={"always-first": {"backend": "always-first"}, "random": {"backend": "random"}})
    raw["judge"].pop("generators", None)
    (tiny / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    for stage in ("pin", "probe", "judge", "metrics"):
        run_stage(stage)
    return tiny


def test_export_table_probe_is_a_well_formed_tabular_whose_values_and_wilson_intervals_match_metrics_json(probed, run_main):
    metrics = json.loads((probed / "artifacts/metrics/metrics.json").read_text())
    code, tex, err = run_main("export", "table", "probe", "--format", "latex", "--intervals")
    assert code == 0, err
    _, *body = check_latex_tabular(tex)
    code, text, err = run_main("export", "table", "probe", "--format", "csv")  # the same rows in the same order, full names
    assert code == 0, err
    header, *records = list(csv.reader(io.StringIO(text)))
    assert header[:5] == ["dataset", "judge", "n_probes", "n_eligible", "attack_success_rate"]
    assert "attack_success_rate_instruction" in header and header[-1] == "length_control_rate"
    assert [(r[0], r[1]) for r in records] == [(PROBE, "always-first"), (PROBE, "random")] == [(PROBE, r[0]) for r in body]
    assert all("attack_success_rate_wilson_low" in metrics[PROBE][j] for j in ("always-first", "random"))  # not vacuous
    for r, rec in zip(body, records):
        m, cells = metrics[rec[0]][rec[1]], dict(zip(header[1:], r))  # LaTeX: the dataset heads its rows
        assert numbers(cells["n_probes"]) == [m["n_probes"]] and numbers(cells["n_eligible"]) == [m["n_eligible"]]
        for name in header[4:]:
            if name not in m:
                assert cells[name] == "--"  # undefined (no eligible probe of that family): the table's missing mark
                continue
            want = in_percent(m[name], m[f"{name}_wilson_low"], m[f"{name}_wilson_high"])
            assert numbers(cells[name]) == pytest.approx(want, abs=0.05), (r[0], name)  # percent, one decimal
    pin = yaml.safe_load((probed / "params.yaml").read_text())["pin"]["datasets"]["human-only"]["sha256"]
    assert f"{PROBE} (from human-only {pin[:12]})" in tex and "Wilson intervals" in tex  # the caption names the split's pin
    code, md, err = run_main("export", "table", "probe", "--format", "markdown")
    assert code == 0 and sum(line.startswith("| ") for line in md.splitlines()) == len(body) + 1, err
    code, csv_text, err = run_main("export", "table", "probe", "--format", "csv")
    assert code == 0 and csv_text.splitlines()[0].startswith("dataset,judge,n_probes"), err
    # The metrics table keeps to the measured splits: a probe dataset is never a row there.
    code, tex, _ = run_main("export", "table", "metrics", "--format", "latex")
    assert code == 0 and "injection" not in tex.split(r"\begin{tabular}")[1]
