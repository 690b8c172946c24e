"""The review server over HTTP (Starlette's TestClient): it shows what the audit library says, appends decisions
through the library only, answers bad input with 400 and the library's message, refuses what another origin sends
or what lacks the page's token, keeps hostile text inert, and pages the audit at real size."""

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


def token(client: TestClient) -> str:
    """The per-server token the page puts in every decision form."""
    found = set(re.findall(r'name="token" value="([^"]+)"', client.get("/").text))
    assert len(found) == 1, found
    return found.pop()


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
    assert html.count('<article class="change') == 4
    for text in ("Gamma", "Delta", "judge-x", "judge-y", "evidence", "config", "unadjudicated", "<ins>", "rewritten"):
        assert text in html, text
    # The decision forms sit only on adjudicable (evidence) changes; the config change is listed apart, collapsed,
    # with the knob that moved.
    assert html.count('class="decide decide-change"') == 4
    start = html.index('<details id="not-adjudicable"')
    other = html[start:html.index("</table>", start)]
    assert other.count('class="other-change"') == 1 and 'data-judge="judge-y"' in other and "m-1 → m-2" in other
    assert "higher score = more novel" in html
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
    assert page.count('<article class="change') == 4 and 'id="not-adjudicable"' not in page
    assert set(re.findall(r'<article[^>]*data-judge="([^"]+)"', page)) == {"judge-x", "judge-yin"}


def test_a_decision_is_appended_through_the_library_and_the_page_shows_it(client, project):
    change = evidence_changes(client)[0]
    res = client.post("/adjudicate", headers={"Accept": "application/json"}, data={
        "change": change["id"], "dataset": change["dataset"], "judge": change["judge"], "pair": change["pair"],
        "from": change["before"], "to": change["after"], "decision": "incorrect", "reason": "paraphrase leak",
        "who": "ana", "token": token(client)})
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
                      data={"group": group["id"], "decision": "correct", "reason": "the edit is right", "who": "bo",
                            "token": token(client)})
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
            "to": change["after"], "decision": "correct", "reason": "", "who": "ana", "token": token(client), field: value}
    res = client.post("/adjudicate", headers={"Accept": "application/json"}, data=form)
    assert res.status_code == 400
    assert message in res.json()["error"]
    assert rows(project) == []


def test_without_scripts_a_form_post_redirects_back_and_an_error_is_a_page(client, project):
    change = evidence_changes(client)[0]
    form = {"dataset": change["dataset"], "judge": change["judge"], "pair": change["pair"], "from": change["before"],
            "to": change["after"], "decision": "unclear", "reason": "", "who": "ana", "back": "/?cause=evidence",
            "token": token(client)}
    ok = client.post("/adjudicate", data=form, follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"].startswith("/?cause=evidence&notice=")
    bad = client.post("/adjudicate", data={**form, "decision": "maybe"}, follow_redirects=False)
    assert bad.status_code == 400 and "Decision not recorded" in bad.text and "maybe" in bad.text
    # An absolute `back` never leaves this server.
    away = client.post("/adjudicate", data={**form, "back": "https://example.org/"}, follow_redirects=False)
    assert away.status_code == 303 and away.headers["location"].startswith("/?notice=")
    assert len(rows(project)) == 2
    # Enter in a text box presses the form's first button, which names no decision: nothing is recorded.
    for f in re.findall(r'<form class="decide.*?</form>', client.get("/").text, flags=re.S):
        first = re.search(r"<button[^>]*>", f).group()
        assert 'type="submit"' in first and "name=" not in first, first
    enter = client.post("/adjudicate", data={k: v for k, v in form.items() if k != "decision"}, follow_redirects=False)
    assert enter.status_code == 400 and "Enter alone never picks one" in enter.text
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
    client = TestClient(app, base_url=LOCAL)
    posted = client.post(
        "/adjudicate", headers={"Origin": "https://evil.example", "Accept": "application/json"},
        data={"group": "x", "decision": "correct", "who": "mallory", "token": token(client)})
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


# ---- hostile requests: refused or neutralised, the file still parses and the audit still runs --------------------

def change_form(client: TestClient, **overrides: str) -> dict[str, str]:
    change = evidence_changes(client)[0]
    return {"dataset": change["dataset"], "judge": change["judge"], "pair": change["pair"], "from": change["before"],
            "to": change["after"], "decision": "incorrect", "reason": "a paraphrase", "who": "ana", "token": token(client),
            **overrides}


@pytest.mark.parametrize(
    ("headers", "without_token", "message"),
    [
        ({"Origin": "http://127.0.0.1:9999"}, False, "cross-origin request from http://127.0.0.1:9999"),
        ({"Origin": "https://127.0.0.1:8765"}, False, "cross-origin request from https://127.0.0.1:8765"),
        ({"Origin": "null"}, False, "cross-origin request from null"),
        ({"Sec-Fetch-Site": "cross-site"}, False, "Sec-Fetch-Site: cross-site"),
        ({"Sec-Fetch-Site": "same-site"}, False, "Sec-Fetch-Site: same-site"),
        ({}, True, "token is missing or stale"),
        ({"Origin": LOCAL, "Sec-Fetch-Site": "same-origin"}, True, "token is missing or stale"),
    ],
)
def test_a_post_from_another_origin_or_without_the_pages_token_is_refused(client, project, headers, without_token, message):
    form = change_form(client)
    if without_token:
        form.pop("token")
    res = client.post("/adjudicate", headers={"Accept": "application/json", **headers}, data=form)
    assert res.status_code == 403, res.text
    assert message in res.json()["error"]
    assert rows(project) == []


def test_a_post_from_the_page_itself_is_accepted(client, project):
    res = client.post("/adjudicate", headers={"Accept": "application/json", "Origin": LOCAL, "Sec-Fetch-Site": "same-origin"},
                      data=change_form(client))
    assert res.status_code == 200, res.text
    assert len(rows(project)) == 1


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("reason", "x" * 1_000_000, "field 'reason': 1000000 characters; at most 4000"),
        ("reason", "nul\x00byte", "U+0000"),
        ("reason", "amount \u202e001$", "U+202E (RIGHT-TO-LEFT OVERRIDE)"),
        ("who", "ana\x07", "U+0007"),
        ("who", "n" * 500, "field 'who': 500 characters; at most 100"),
    ],
)
def test_an_oversized_or_control_character_field_is_a_400_and_nothing_is_written(client, project, field, value, message):
    res = client.post("/adjudicate", headers={"Accept": "application/json"}, data=change_form(client, **{field: value}))
    assert res.status_code == 400, res.text[:300]
    assert message in res.json()["error"]
    assert not (project / "data" / "adjudications.csv").exists()
    assert client.get("/").status_code == 200 and audit_project("params.yaml").result.changes


def test_a_formula_leading_reason_or_name_is_stored_inert_and_shown_as_typed(client, project):
    reason = '=HYPERLINK("http://evil.example","click")\nsecond line'
    res = client.post("/adjudicate", headers={"Accept": "application/json"}, data=change_form(client, reason=reason, who="@ana"))
    assert res.status_code == 200, res.text
    with (project / "data" / "adjudications.csv").open(newline="") as fh:
        (cells,) = list(csv.reader(fh))[1:]
    assert cells[6] == "'" + reason and cells[7] == "'@ana"
    change = next(c for c in evidence_changes(client) if c["adjudication"])
    assert (change["adjudication"]["reason"], change["adjudication"]["who"]) == (reason, "@ana")
    page = client.get("/")
    assert page.status_code == 200 and "=HYPERLINK(&#34;http://evil.example&#34;" in page.text


def test_a_damaged_adjudication_file_is_an_error_page_naming_its_row_never_a_500(client, project):
    page_token = token(client)
    path = project / "data" / "adjudications.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    header = "dataset,judge,pair,from,to,decision,reason,who,when,evidence_before,evidence_after,group"
    # What the unbounded writer left: a 1 MB reason, over the CSV reader's field limit, in row 1.
    path.write_text(f"{header}\nhuman-only,judge-x,p-ab,i-a,i-b,incorrect,{'y' * 1_000_000},ana,2026-11-29,e,f,\n")
    page = client.get("/")
    assert page.status_code == 400 and "row 1 (line 2) cannot be read" in page.text and "field larger than field limit" in page.text
    api = client.get("/api/audit")
    assert api.status_code == 400 and "row 1 (line 2)" in api.json()["error"]
    # The page could not be shown, so its token is taken from the app as a form on an older page would carry it.
    form = {"dataset": "human-only", "judge": "judge-x", "pair": "p-ab", "from": "i-a", "to": "i-b", "decision": "incorrect",
            "who": "ana", "token": page_token}
    res = client.post("/adjudicate", headers={"Accept": "application/json"}, data=form)
    assert res.status_code == 400 and "row 1 (line 2)" in res.json()["error"]


@pytest.mark.parametrize("back", ["/\\evil.example", "//evil.example/", "https://evil.example/", "/static/../x", "javascript:alert(1)"])
def test_the_error_pages_link_and_the_redirect_stay_on_this_page(client, project, back):
    bad = client.post("/adjudicate", data=change_form(client, decision="maybe", back=back), follow_redirects=False)
    assert bad.status_code == 400
    assert re.findall(r'<a href="([^"]*)" id="back"', bad.text) == ["/"]
    ok = client.post("/adjudicate", data=change_form(client, back=back), follow_redirects=False)
    assert ok.status_code == 303 and ok.headers["location"] == "/?notice=recorded"


def test_the_back_link_keeps_only_the_pages_own_query(client):
    ok = client.post("/adjudicate", data=change_form(client, back="/?cause=evidence&page=2&x=<script>"), follow_redirects=False)
    assert ok.headers["location"] == "/?cause=evidence&page=2&notice=recorded"


# ---- the page at real size -----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_500_changes_are_listed_in_pages_and_config_changes_apart(big_project):
    client = TestClient(create_app("params.yaml"), base_url=LOCAL)
    seen: list[str] = []
    first = client.get("/")
    assert first.status_code == 200
    assert "page 1 of 20" in first.text and "changes 1–25 of 500" in first.text and 'rel="next" href="/?page=2"' in first.text
    assert len(first.content) < 250_000  # 500 cards on one page were megabytes
    for n in range(1, 21):
        html = client.get("/", params={"page": n}).text
        ids = re.findall(r'<article class="change[^>]*data-change="([^"]+)"', html)
        assert len(ids) == 25, n
        seen += ids
        # The not-adjudicable changes: collapsed, one line each, on every page.
        assert re.search(r'<details id="not-adjudicable" >\s*<summary>3 change\(s\) not adjudicable', html)
    assert len(set(seen)) == 500
    # A group cut by the page break says so on both sides; its form decides the whole group.
    page1, page2 = client.get("/").text, client.get("/", params={"page": 2}).text
    assert "4 of its 7 changes on this page; more on the next" in page1
    assert "(continued)" in page2 and "whole group (7 changes)" in page2
    # Beyond the last page: the last page; not a number: a 400 naming it.
    assert "page 20 of 20" in client.get("/", params={"page": 99}).text
    bad = client.get("/", params={"page": "two"})
    assert bad.status_code == 400 and "page &#39;two&#39; is not a page number" in bad.text
