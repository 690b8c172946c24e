"""The shared call cache on a real S3 protocol server (moto's server mode on 127.0.0.1): two checkouts pointed at
one bucket pay once, and a damaged object is never used."""

from __future__ import annotations

import logging
import urllib.request

import orjson
import pytest
from judge_items import make_pairs, make_points
from mock_llm import free_port
from test_shared_cache import KEY, checkout, verdicts
from test_shared_cache_claims import race

boto3 = pytest.importorskip("boto3")
pytest.importorskip("s3fs")
moto_server = pytest.importorskip("moto.server")

BUCKET = "team-novelty-cache"


@pytest.fixture
def s3(monkeypatch):
    """A fresh S3 server on 127.0.0.1 with one bucket; credentials only in the environment, as a team would set them."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing-access")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing-secret")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("MOCK_API_KEY", KEY)
    port = free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    # moto keeps its state per process, not per server: start every test from an empty S3
    urllib.request.urlopen(urllib.request.Request(f"{endpoint}/moto-api/reset", method="POST"), timeout=30).close()
    client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
    client.create_bucket(Bucket=BUCKET)
    try:
        yield client, {"endpoint_url": endpoint}
    finally:
        server.stop()


def objects(client) -> dict[str, bytes]:
    listed = client.list_objects_v2(Bucket=BUCKET).get("Contents", [])
    return {o["Key"]: client.get_object(Bucket=BUCKET, Key=o["Key"])["Body"].read() for o in listed}


def test_two_checkouts_on_one_bucket_pay_once(s3, mock_llm, tmp_path):
    client, options = s3
    url = f"s3://{BUCKET}/novelty"
    pairs, points = make_pairs(3), make_points(2)
    first = checkout(tmp_path / "alice", mock_llm.base_url, url, options).judge(pairs, points)
    paid = mock_llm.count
    stored = objects(client)
    assert len(stored) == paid and all(k.startswith("novelty/calls/") for k in stored)
    assert not any(KEY.encode() in v or b"testing-secret" in v for v in stored.values())

    judge = checkout(tmp_path / "bob", mock_llm.base_url, url, options)
    second = judge.judge(pairs, points)
    assert mock_llm.count == paid, "the second checkout asked the provider again"
    assert judge.facts()["shared_cache_hits"] == paid
    assert verdicts(second) == verdicts(first)


def test_a_damaged_object_is_ignored_and_replaced(s3, mock_llm, tmp_path, caplog):
    client, options = s3
    url = f"s3://{BUCKET}/novelty"
    pairs = make_pairs(1)
    checkout(tmp_path / "alice", mock_llm.base_url, url, options, votes=1).judge(pairs, [])
    paid = mock_llm.count
    name, data = sorted(objects(client).items())[0]
    client.put_object(Bucket=BUCKET, Key=name, Body=data[: len(data) // 2])  # a truncated upload

    with caplog.at_level(logging.WARNING, logger="novelty_audit.llm._shared_cache"):
        checkout(tmp_path / "bob", mock_llm.base_url, url, options, votes=1).judge(pairs, [])
    assert mock_llm.count == paid + 1
    assert any("ignored the entry of" in r.getMessage() for r in caplog.records)
    fixed = orjson.loads(objects(client)[name])  # the fresh answer was written back over it
    assert fixed["key"] == name.rsplit("/", 1)[1].removesuffix(".json")


def test_three_checkouts_on_one_bucket_started_together_pay_each_of_30_calls_once(s3, tmp_path):
    client, options = s3
    paid, outs = race(tmp_path, f"s3://{BUCKET}/novelty", options, checkouts=3)
    assert paid == 30, f"{paid} requests for 30 distinct calls"
    assert outs[0]["verdicts"] == outs[1]["verdicts"] == outs[2]["verdicts"]
    assert sum(o["facts"]["claim_waits"] for o in outs) > 0, "the runs overlapped (else this test proves nothing)"
    stored = objects(client)
    assert len(stored) == 30 and all(k.startswith("novelty/calls/") for k in stored), "entries kept, every claim released"
