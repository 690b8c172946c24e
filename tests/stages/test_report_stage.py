"""The report stage: renders metrics.json and the metrics tables (never recomputes), embeds every chart,
is byte-deterministic given its inputs, and writes the latest audit next to it, outside its manifest."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from html.parser import HTMLParser
from pathlib import Path

import orjson
import pytest
from report_inputs import ACCURACY, DATASETS, JUDGES, write_metrics, write_upstream

import stages.report as report_stage
from novelty_audit.artifacts import load_manifest
from novelty_audit.params import Params

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# Locally a missing browser skips; in CI (CI=true, where .ci/system-deps installs it) it fails the test instead.
IN_CI = os.environ.get("CI") == "true"


class _Page(HTMLParser):
    """Every tag with its attributes, and the cells of each table by id."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.tables: dict[str, list[list[str]]] = {}
        self._table: str | None = None
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = {k: v or "" for k, v in attrs}
        self.tags.append((tag, a))
        if tag == "table":
            self._table = a.get("id", "")
            self.tables[self._table] = []
        elif tag == "tr" and self._table is not None:
            self.tables[self._table].append([])
        elif tag in ("td", "th") and self._table is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._table is not None:
            self.tables[self._table][-1].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "table":
            self._table = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def _parse(path: Path) -> _Page:
    page = _Page()
    page.feed(path.read_text(encoding="utf-8"))
    return page


def _build(root: Path):
    dirs = write_upstream(root / "artifacts")
    params = Params(pin={"datasets": {}})
    manifest = report_stage.run(params, root / "artifacts" / "report", inputs=dirs)
    return root, params, dirs, manifest


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory):
    """One report shared by the read-only tests (building it renders every chart)."""
    root = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(root)
        return _build(root)


@pytest.fixture
def fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A report of its own, for tests that run the stage again."""
    monkeypatch.chdir(tmp_path)
    return _build(tmp_path)


def test_every_chart_is_embedded_and_nothing_is_fetched(built):
    root, _, _, manifest = built
    page = _parse(root / "reports" / "report.html")
    svgs = [r.path for r in manifest.outputs if r.path.endswith(".svg")]
    imgs = [a for t, a in page.tags if t == "img"]
    assert len(svgs) >= 5 and len(imgs) == len(svgs)
    assert all(a["src"].startswith("data:image/svg+xml;base64,") for a in imgs)
    for tag, attrs in page.tags:
        assert tag not in ("script", "link", "iframe"), tag
        if "src" in attrs:
            assert attrs["src"].startswith("data:"), (tag, attrs["src"][:80])
        if "href" in attrs:
            # Links only: within the page, to the files published beside it, or to a published source.
            assert attrs["href"].startswith(("#", "audit.", "drift.md", "https://")), attrs["href"]


def test_the_judge_table_shows_metrics_json_values_with_their_intervals(built):
    root, *_ = built
    tables = _parse(root / "reports" / "report.html").tables
    for ds in DATASETS:
        header, *body = tables[f"judges-{ds}"]
        assert header[:2] == ["judge", "strict accuracy"]
        assert {r[0] for r in body} == set(JUDGES)
    header, *body = tables["judges-human-only"]
    gpt = dict(zip(header, next(r for r in body if r[0] == "gpt-p3")))
    # 0.4091 is not what the verdicts would give: the report shows metrics.json, it does not recompute.
    assert gpt["strict accuracy"] == f"{ACCURACY['gpt-p3']:.3f} [{ACCURACY['gpt-p3'] - 0.05:.3f}, {ACCURACY['gpt-p3'] + 0.05:.3f}]"
    assert gpt["failed calls (inv./trunc./ref./err.)"] == "2/0/0/1" and gpt["order flip rate"] == "0.450"
    assert dict(zip(header, next(r for r in body if r[0] == "gpt-p1")))["failed calls (inv./trunc./ref./err.)"] == "2/3/0/0"


def test_failed_calls_are_listed_per_judge_with_their_reason_and_never_a_latency(built):
    root, *_ = built
    rows = _parse(root / "reports" / "report.html").tables["error-reasons"]
    assert rows[0] == ["judge", "dataset", "task", "error reason", "failed calls"]
    assert rows[1:] == [["gpt-p3", ds, "pairwise", "connection refused", "1"] for ds in DATASETS]
    md = (root / "reports" / "report.md").read_text()
    assert "| gpt-p3 | human-only | pairwise | connection refused | 1 |" in md
    assert "latency" not in md and "n error by reason" not in md


def test_distance_judges_list_the_nearest_prior_work_titles(built):
    root, *_ = built
    rows = _parse(root / "reports" / "report.html").tables["nearest-prior-work"]
    # Every verdict here is correct with the same margin: the closest call comes first, then by pair id.
    assert rows[1][:6] == ["human-only", "distance-yin", "closest call", "Idea 0A", "Idea 0A (score 0.310)", "Prior 0a-1; Prior 0a-2"]
    assert len(rows) == 1 + 3 * len(DATASETS)  # report.nearest_pairs per dataset


def test_prompt_sensitivity_and_flip_matrices_are_rendered(built):
    root, *_ = built
    html = (root / "reports" / "report.html").read_text()
    page = _parse(root / "reports" / "report.html")
    assert page.tables["prompt-sensitivity"][1][:2] == ["human-only", "openai/gpt-x"]
    for ds in DATASETS:
        assert f'id="flip-matrix-{ds}"' in html


def test_the_report_is_byte_identical_when_forced_again_and_published_as_a_copy(fresh):
    root, params, dirs, first = fresh
    before = {p.name: p.read_bytes() for p in (root / "reports").glob("report.*")}
    again = report_stage.run(params, root / "artifacts" / "report", inputs=dirs, force=True)
    assert again.digest() == first.digest()
    for rec in again.outputs:
        assert (root / "reports" / rec.path).read_bytes() == (root / "artifacts" / "report" / rec.path).read_bytes()
    assert before == {p.name: p.read_bytes() for p in (root / "reports").glob("report.*")}


def test_the_latest_audit_is_published_but_not_part_of_the_manifest(built):
    root, *_ = built
    manifest = load_manifest(root / "artifacts" / "report")
    assert not any("audit" in r.path or "drift" in r.path for r in manifest.outputs)
    assert (root / "reports" / "audit.md").exists()
    # So is the drift watch's history per judge (the drift ledger is a run fact too).
    assert "nothing to compare" in (root / "reports" / "drift.md").read_text()
    assert orjson.loads((root / "reports" / "audit.json").read_bytes()) is None  # no earlier run to compare with


def test_an_input_change_changes_the_report(fresh):
    root, params, dirs, first = fresh
    write_metrics(dirs["metrics"], cost=True)
    second = report_stage.run(params, root / "artifacts" / "report", inputs=dirs)
    assert second.identity != first.identity
    assert "Cost from metrics.json" in (root / "reports" / "report.md").read_text()


def test_the_audit_next_to_the_report_compares_the_last_ledger_run_with_the_current_outputs(tmp_path, monkeypatch):
    from synthetic_runs import Ledger, World

    monkeypatch.chdir(tmp_path)
    ledger = Ledger(tmp_path)
    ledger.record(World())
    ledger.write(World().with_verdict("judge-x", "p-cd", "tie"))  # the current run, not yet recorded
    write_metrics(tmp_path / "artifacts" / "metrics")
    params = Params(pin={"datasets": {}})
    inputs = {u: tmp_path / "artifacts" / u for u in report_stage.UPSTREAM}
    report_stage.run(params, tmp_path / "artifacts" / "report", inputs=inputs)
    audit = orjson.loads((tmp_path / "reports" / "audit.json").read_bytes())
    assert audit["to"] == "current" and [c["pair"] for c in audit["changes"]] == ["p-cd"]
    assert audit["changes"][0]["cause"] == "spurious"
    assert "p-cd" not in (tmp_path / "reports" / "report.html").read_text()


# -- in a real browser ------------------------------------------------------------------------------

_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
          "--no-first-run", "--host-resolver-rules=MAP * ~NOTFOUND"]


@pytest.mark.skipif(not IN_CI and not CHROMIUM.exists(), reason="/usr/bin/chromium is absent (Debian package chromium)")
def test_chromium_renders_the_report_offline(built, tmp_path):
    root, *_ = built
    url = (root / "reports" / "report.html").resolve().as_uri()
    base = [str(CHROMIUM), *_FLAGS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*base, "--dump-dom", url], capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'id="judges-human-only"' in dom.stdout and dom.stdout.count("<img") >= 5
    shot = tmp_path / "report.png"
    res = subprocess.run([*base, "--window-size=1200,2400", f"--screenshot={shot}", url], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and shot.stat().st_size > 20_000, res.stderr[-2000:]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wd(port: int, method: str, path: str, body: dict | None = None) -> dict:
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method,
                                 data=None if body is None else json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


@pytest.mark.skipif(not IN_CI and not (CHROMIUM.exists() and CHROMEDRIVER.exists()), reason="chromium and chromium-driver are not installed")
def test_every_chart_decodes_as_an_image_in_chromium(built, tmp_path):
    root, *_ = built
    port = _free_port()
    driver = subprocess.Popen([str(CHROMEDRIVER), f"--port={port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120  # generous: chromedriver starts slowly on a busy machine
        while True:
            try:
                _wd(port, "GET", "/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        caps = {"capabilities": {"alwaysMatch": {"goog:chromeOptions": {
            "binary": str(CHROMIUM), "args": [*_FLAGS, f"--user-data-dir={tmp_path / 'wd-profile'}"]}}}}
        sid = _wd(port, "POST", "/session", caps)["value"]["sessionId"]
        try:
            _wd(port, "POST", f"/session/{sid}/url", {"url": (root / "reports" / "report.html").resolve().as_uri()})
            script = "return Array.from(document.images).map(i => [i.alt, i.complete && i.naturalWidth > 0]);"
            images = _wd(port, "POST", f"/session/{sid}/execute/sync", {"script": script, "args": []})["value"]
            assert len(images) >= 5 and all(ok for _, ok in images), images
            rows = _wd(port, "POST", f"/session/{sid}/execute/sync",
                       {"script": "return document.querySelectorAll('table[id^=\"judges-\"] tbody tr').length;", "args": []})["value"]
            assert rows == len(JUDGES) * len(DATASETS)
        finally:
            _wd(port, "DELETE", f"/session/{sid}")
    finally:
        driver.terminate()
        driver.wait(timeout=30)
    shutil.rmtree(tmp_path / "wd-profile", ignore_errors=True)


def test_without_metrics_the_stage_says_which_stage_to_run_first(tmp_path, monkeypatch):
    from novelty_audit.errors import ManifestMismatchError

    monkeypatch.chdir(tmp_path)
    with pytest.raises(ManifestMismatchError, match="metrics.json: not found") as err:
        report_stage.run(Params(pin={"datasets": {}}), tmp_path / "artifacts" / "report")
    assert "metrics stage first" in err.value.hint
