"""The review server over HTTP (Starlette's TestClient): it shows what the audit library says, appends decisions
through the library only, and answers bad input with 400 and the library's message."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from novelty_audit.audit import audit_project
from novelty_audit.review import create_app

LOCAL = "http://127.0.0.1:8765"


@pytest.fixture
def client(project: Path) -> TestClient:
    return TestClient(create_app("params.yaml"), base_url=LOCAL)


def rows(project: Path) -> list[dict[str, str]]:
    path = project / "data" / "adjudications.csv"
    return list(csv.DictReader(path.open())) if path.exists() else []


def evidence_changes(client: TestClient) -> list[dict]:
    return [c for c in client.get("/api/audit").json()["changes"] if c["cause"] == "evidence"]


def test_the_json_endpoint_is_the_audit_librarys_json_unchanged(client, project):
    # Compared as JSON text: tuples in the library's dict are lists on the wire.
    assert client.get("/api/audit").json() == json.loads(json.dumps(audit_project("params.yaml").result.to_json()))
    result = audit_project("params.yaml").result
    assert [r["run_id"] for r in client.get("/api/runs").json()["runs"]] == [result.to_run, result.from_run]


def test_the_page_shows_each_change_with_titles_cause_status_and_the_edited_text(client):
    page = client.get("/")
    assert page.status_code == 200
    html = page.text
    assert html.count('<article class="change') == 5
    for text in ("Gamma", "Delta", "judge-x", "judge-y", "evidence", "config", "unadjudicated", "<ins>", "rewritten"):
        assert text in html, text
    # The decision forms sit only on adjudicable (evidence) changes; the config change has none.
    assert html.count('class="decide decide-change"') == 4
    # A group form only where it decides more than one change (the Gamma edit); a group of one is its change.
    assert html.count('class="decide decide-group"') == 1


def test_a_distance_change_shows_the_document_that_decides_it_and_the_scores(client):
    html = client.get("/", params={"judge": "judge-yin"}).text
    card = html[html.index('<article class="change'):html.index("</article>")]
    assert re.search(r"A near-paraphrase of Alpha\s*<strong class=\"decides\">decides the score</strong>", card)
    assert "Learning Alpha from scratch" in card and "0.612 → —" in card and "— → 0.941" in card
    assert "0.388 · 0.301" in card and "0.059 · 0.301" in card
    assert re.search(r"Alpha\s*<span class=\"gold\">★ gold</span>", card)
    assert "✓ correct" in card and "✗ wrong" in card


def test_filters_are_passed_to_the_audit_and_narrow_the_page(client):
    by_judge = client.get("/api/audit", params={"judge": "judge-y"}).json()
    assert [c["judge"] for c in by_judge["changes"]] == ["judge-y"]
    assert by_judge["hidden"] == 4
    page = client.get("/", params={"cause": "evidence"}).text
    assert page.count('<article class="change') == 4
    assert set(re.findall(r'<article[^>]*data-judge="([^"]+)"', page)) == {"judge-x", "judge-yin"}


def test_a_decision_is_appended_through_the_library_and_the_page_shows_it(client, project):
    change = evidence_changes(client)[0]
    res = client.post("/adjudicate", headers={"Accept": "application/json"}, data={
        "change": change["id"], "dataset": change["dataset"], "judge": change["judge"], "pair": change["pair"],
        "from": change["before"], "to": change["after"], "decision": "incorrect", "reason": "paraphrase leak",
        "who": "ana"})
    assert res.status_code == 200, res.text
    (row,) = rows(project)
    assert (row["dataset"], row["judge"], row["pair"], row["from"], row["to"], row["decision"], row["who"], row["reason"]) == (
        change["dataset"], change["judge"], change["pair"], change["before"], change["after"], "incorrect", "ana",
        "paraphrase leak")
    after = {c["id"]: c for c in evidence_changes(client)}
    assert after[change["id"]]["status"] == "incorrect"
    assert "paraphrase leak" in client.get("/").text


def test_a_group_is_decided_at_once_one_row_per_change(client, project):
    doc = client.get("/api/audit").json()
    assert sorted(len(g["changes"]) for g in doc["groups"]) == [1, 1, 2]
    group = max(doc["groups"], key=lambda g: len(g["changes"]))
    res = client.post("/adjudicate", headers={"Accept": "application/json"},
                      data={"group": group["id"], "decision": "correct", "reason": "the edit is right", "who": "bo"})
    assert res.status_code == 200, res.text
    written = rows(project)
    assert len(written) == 2 and {r["decision"] for r in written} == {"correct"}
    members = [c for c in evidence_changes(client) if c["id"] in group["changes"]]
    assert {r["pair"] for r in written} == {c["pair"] for c in members} == {"p-cd", "p-ac"}
    assert {c["status"] for c in members} == {"correct"}
    assert [c["status"] for c in evidence_changes(client) if c["id"] not in group["changes"]] == ["unadjudicated"] * 2


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [("decision", "maybe", "maybe"), ("pair", "p-nope", "p-nope"), ("judge", "judge-nope", "judge-nope"), ("who", "", "who")],
)
def test_bad_input_is_400_with_the_librarys_message_and_nothing_is_appended(client, project, field, value, message):
    change = evidence_changes(client)[0]
    form = {"dataset": change["dataset"], "judge": change["judge"], "pair": change["pair"], "from": change["before"],
            "to": change["after"], "decision": "correct", "reason": "", "who": "ana", field: value}
    res = client.post("/adjudicate", headers={"Accept": "application/json"}, data=form)
    assert res.status_code == 400
    assert message in res.json()["error"]
    assert rows(project) == []


def test_without_scripts_a_form_post_redirects_back_and_an_error_is_a_page(client, project):
    change = evidence_changes(client)[0]
    form = {"dataset": change["dataset"], "judge": change["judge"], "pair": change["pair"], "from": change["before"],
            "to": change["after"], "decision": "unclear", "reason": "", "who": "ana", "back": "/?cause=evidence"}
    ok = client.post("/adjudicate", data=form, follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"].startswith("/?cause=evidence&notice=")
    bad = client.post("/adjudicate", data={**form, "decision": "maybe"}, follow_redirects=False)
    assert bad.status_code == 400 and "Decision not recorded" in bad.text and "maybe" in bad.text
    # An absolute `back` never leaves this server.
    away = client.post("/adjudicate", data={**form, "back": "https://example.org/"}, follow_redirects=False)
    assert away.status_code == 303 and away.headers["location"].startswith("/?notice=")
    assert len(rows(project)) == 2


def test_an_unknown_run_or_filter_value_is_a_400_naming_it(client):
    page = client.get("/", params={"from": "no-such-run"})
    assert page.status_code == 400 and "no-such-run" in page.text
    assert client.get("/api/audit", params={"from": "no-such-run"}).status_code == 400
    bad = client.get("/api/audit", params={"cause": "bogus"})
    assert bad.status_code == 400 and "bogus" in bad.json()["error"]


def test_other_host_names_and_cross_site_posts_are_refused(project):
    app = create_app("params.yaml")
    # A page elsewhere that points its own name at 127.0.0.1 (DNS rebinding) gets no answer.
    assert TestClient(app, base_url="http://evil.example:8765").get("/").status_code == 400
    posted = TestClient(app, base_url=LOCAL).post(
        "/adjudicate", headers={"Origin": "https://evil.example", "Accept": "application/json"},
        data={"group": "x", "decision": "correct", "who": "mallory"})
    assert posted.status_code == 403 and rows(project) == []


def test_every_asset_is_served_from_the_package_and_nothing_points_off_the_machine(client):
    page = client.get("/").text
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', page)
    assert sorted(assets) == ["/static/review.css", "/static/review.js"]
    for text in [page, *(client.get(a).text for a in assets)]:
        assert not re.search(r"https?://(?!127\.0\.0\.1)", text)
    import novelty_audit.review as review

    pkg = Path(review.__file__).parent
    assert (pkg / "static" / "review.js").exists() and (pkg / "templates" / "page.html.j2").exists()
