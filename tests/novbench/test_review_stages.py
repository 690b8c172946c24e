"""pin → judge (review task) → metrics on a NovBench file, in a throw-away project: expert, import, mock API."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import polars as pl
import pytest
import yaml

from novelty_audit.artifacts import digest_file
from novelty_audit.errors import BadInputError
from novelty_audit.params import load_params

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO / "data" / "novbench" / "Final_data_change.json"


def write_subset(path: Path, n: int, edit: dict[int, dict] | None = None) -> list[dict]:
    records = orjson.loads(SHARED.read_bytes())[:n]
    for i, change in (edit or {}).items():
        records[i] = {**records[i], **change}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(records))
    return records


def write_params(root: Path, datasets: dict[str, Path], generators: dict) -> Path:
    params = {
        "store": {"root": str(root / ".store"), "artifacts": str(root / "artifacts")},
        "pin": {"datasets": {name: {"source": "novbench", "path": str(p), "sha256": digest_file(p)} for name, p in datasets.items()}},
        "judge": {"datasets": [], "tasks": ["review"], "judges": {}, "generators": generators, "progress": False},
        "metrics": {"bootstrap_resamples": 200},
    }
    out = root / "params.yaml"
    out.write_text(yaml.safe_dump(params), encoding="utf-8")
    return out


def run_stages(root: Path, *names: str):
    import stages.judge
    import stages.metrics
    import stages.pin

    p = load_params(root / "params.yaml")
    mods = {"pin": stages.pin, "judge": stages.judge, "metrics": stages.metrics}
    return [mods[n].run(p, root / "artifacts" / n) for n in names]


@pytest.fixture
def nb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_expert_and_an_imported_file_are_pinned_reviewed_and_scored(nb: Path) -> None:
    records = write_subset(nb / "data" / "a.json", 4)
    imported = nb / "gen.jsonl"
    lines = [
        # by the record's own id, text = two of the paper's reference items under one heading
        {"dataset": "nb-a", "paper_id": records[0]["id"], "text": "Positive Novelty Evaluations\n" +
         "\n".join(records[0]["output_format"].split("\n")[1:3])},
        {"dataset": "nb-a", "paper_id": records[1]["id"], "text": "It is novel, I think."},  # no heading: invalid
        {"dataset": "other", "paper_id": "x", "text": "not ours"},  # another dataset's text: ignored
    ]
    imported.write_text("\n".join(json.dumps(x) for x in lines), encoding="utf-8")
    write_params(nb, {"nb-a": nb / "data" / "a.json"},
                 {"expert": {"backend": "expert"}, "mine": {"backend": "import", "args": {"path": str(imported)}}})
    pin, judge, metrics = run_stages(nb, "pin", "judge", "metrics")

    papers = pl.read_parquet(nb / "artifacts/pin/nb-a/papers.parquet")
    assert papers.height == 4 and papers["paper_id"].str.starts_with("np-").all()
    reviews = pl.read_parquet(nb / "artifacts/judge/reviews.parquet")
    assert reviews.height == 8  # 2 generators × 4 papers: the missing and the unreadable ones are rows too
    mine = reviews.filter(pl.col("judge") == "mine").sort("paper_id")
    assert mine["valid"].sum() == 1
    assert set(pl.read_parquet(nb / "artifacts/judge/judges.parquet")["judge"]) >= {"expert", "mine"}

    m = json.loads((nb / "artifacts/metrics/metrics.json").read_text())["nb-a"]
    assert m["expert"]["coverage"] == 1.0 and m["expert"]["dist_acc"] == 1.0
    assert (m["mine"]["n_papers"], m["mine"]["n_invalid"], m["mine"]["n_items"]) == (4, 3, 2)
    assert 0 < m["mine"]["coverage"] < 1
    details = json.loads((nb / "artifacts/metrics/novbench.json").read_text())
    if details["clarity_fs_unavailable"]:
        assert m["expert"]["clarity_fs"] is None and m["expert"]["clarity"] is None


def test_a_second_novbench_file_is_evaluated_with_no_other_change(nb: Path) -> None:
    write_subset(nb / "data" / "a.json", 3)
    write_subset(nb / "data" / "b.json", 2)
    write_params(nb, {"nb-a": nb / "data/a.json", "nb-b": nb / "data/b.json"}, {"expert": {"backend": "expert"}})
    run_stages(nb, "pin", "judge", "metrics")
    m = json.loads((nb / "artifacts/metrics/metrics.json").read_text())
    assert m["nb-a"]["expert"]["n_papers"] == 3 and m["nb-b"]["expert"]["n_papers"] == 2


def test_an_edited_novelty_description_moves_only_the_evidence_digest(nb: Path) -> None:
    write_subset(nb / "data" / "a.json", 2)
    write_params(nb, {"nb-a": nb / "data/a.json"}, {"expert": {"backend": "expert"}})
    run_stages(nb, "pin", "judge")
    before = pl.read_parquet(nb / "artifacts/judge/reviews.parquet").sort("paper_id")
    write_subset(nb / "data" / "a.json", 2, edit={0: {"paper_novelty": "['We cut the description to one sentence.']"}})
    write_params(nb, {"nb-a": nb / "data/a.json"}, {"expert": {"backend": "expert"}})
    run_stages(nb, "pin", "judge")
    after = pl.read_parquet(nb / "artifacts/judge/reviews.parquet").sort("paper_id")
    assert before["paper_id"].to_list() == after["paper_id"].to_list()  # ids follow the title, not the text
    moved = [b != a for b, a in zip(before["evidence_digest"], after["evidence_digest"])]
    assert sum(moved) == 1
    assert before["config_digest"].to_list() == after["config_digest"].to_list()


def test_an_import_naming_an_unknown_paper_is_an_error_naming_file_line_and_field(nb: Path) -> None:
    write_subset(nb / "data" / "a.json", 2)
    bad = nb / "gen.csv"
    bad.write_text("dataset,paper_id,text\nnb-a,nope,hello\n", encoding="utf-8")
    write_params(nb, {"nb-a": nb / "data/a.json"}, {"mine": {"backend": "import", "args": {"path": str(bad)}}})
    run_stages(nb, "pin")
    with pytest.raises(BadInputError, match=r"gen.csv: line 2, field paper_id: 'nope'"):
        run_stages(nb, "judge")


def test_a_bad_record_is_excluded_with_file_item_and_field(nb: Path) -> None:
    write_subset(nb / "data" / "a.json", 3, edit={1: {"output_format": "nothing here"}})
    params = write_params(nb, {"nb-a": nb / "data/a.json"}, {"expert": {"backend": "expert"}})
    with pytest.raises(BadInputError, match=r"item #1 \(id .*\), field output_format: no reference item"):
        run_stages(nb, "pin")
    doc = yaml.safe_load(params.read_text())
    doc["pin"]["on_bad_item"] = "exclude"
    params.write_text(yaml.safe_dump(doc))
    run_stages(nb, "pin")
    assert pl.read_parquet(nb / "artifacts/pin/nb-a/papers.parquet").height == 2
    assert pl.read_parquet(nb / "artifacts/pin/nb-a/exclusions.parquet")["field"].to_list() == ["output_format"]


def test_expert_on_the_shared_set_matches_the_independent_check() -> None:
    """(clarity_kc + clarity_ls) / 3 for expert on the shipped file is about 0.295."""
    from novelty_audit.novbench._metrics import clarity_kc, clarity_ls
    from novelty_audit.novbench._tables import normalize_novbench

    t = normalize_novbench(SHARED, "novbench-change")
    kc, ls = [], []
    for pid in t.papers["paper_id"]:
        items = t.reference_items.filter(pl.col("paper_id") == pid)["text"].to_list()
        sents = t.sentences.filter(pl.col("paper_id") == pid)["text"].to_list()
        kc.append(clarity_kc(items, sents))
        ls.append(clarity_ls(items))
    mean_kc, mean_ls = sum(kc) / len(kc), sum(ls) / len(ls)
    # The check, (kc + ls) / 3 ≈ 0.295, equals ls / 3 alone: by the rule as written kc is 0.785 here
    # (e.g. paper 0: "empathy", "detection" occur in its items), so the check's kc must have come out 0 — as it
    # does when the list-like string field is iterated character by character. We keep the rule as written.
    assert mean_ls / 3 == pytest.approx(0.295, abs=0.002)
    assert mean_kc == pytest.approx(0.785, abs=0.002)
    assert (mean_kc + mean_ls) / 3 == pytest.approx(0.556, abs=0.002)


def test_the_audit_calls_an_edited_novelty_description_evidence_and_shows_both_texts(
    nb: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import shutil

    from mock_llm import MockLLM

    from novelty_audit.artifacts import Store
    from novelty_audit.audit._runs import audit_sides, current_side

    def echo(body: dict, nth: int) -> str:  # a "model" restating the first novelty sentence it was shown
        user = body["messages"][-1]["content"]
        first = user.split("Novelty statements:\n- ", 1)[1].split("\n", 1)[0]
        return f"Positive Novelty Evaluations\n- {first}\n\nNeutral Novelty Evaluations\n\nNegative Novelty Evaluations"

    monkeypatch.setenv("MOCK_API_KEY", "sk-test")
    with MockLLM(answer=echo) as mock:
        gens = {"echo": {"backend": "openai", "args": {"model": "mock", "base_url": mock.base_url,
                                                        "api_key_env": "MOCK_API_KEY", "local": True}}}
        write_subset(nb / "data" / "a.json", 2)
        write_params(nb, {"nb-a": nb / "data/a.json"}, gens)
        run_stages(nb, "pin", "judge")
        shutil.copytree(nb / "artifacts", nb / "before")
        write_subset(nb / "data" / "a.json", 2, edit={0: {"paper_novelty": "['We cut the description to this one sentence.']"}})
        write_params(nb, {"nb-a": nb / "data/a.json"}, gens)
        run_stages(nb, "pin", "judge")
    result = audit_sides(Store(str(nb / ".store")), current_side(nb / "before"), current_side(nb / "artifacts"))
    changes = [c for c in result.changes if c.kind == "review"]
    assert len(changes) == 1  # the other paper's text is the same: no change
    c = changes[0]
    assert (c.dataset, c.judge, c.cause) == ("nb-a", "echo", "evidence")
    assert "novelty_sentences" in str(c.inputs)
    (diff,) = c.evidence.text_diffs  # before/after texts side by side, as a word diff of the generated review
    added = " ".join(t for op, t in diff.ops if op == "+")
    removed = " ".join(t for op, t in diff.ops if op == "-")
    assert "one sentence." in added and "Welivita" in removed
