"""The judges' Semantic Scholar retriever (judges/_s2.py) fetches and caches through this layer with the keys it
had before: a store filled by an earlier version is still read, with no request."""

from __future__ import annotations

from novelty_audit.judges._s2 import S2Args, S2Retriever


def test_the_retrievers_cache_keys_are_those_of_its_earlier_versions(tmp_path):
    # Computed by judges/_s2.py at 7d3f97a (before the move) for the query "graph attention".
    golden = {
        "c3f063b6b9ac9f9d29eca4d45852f54ef443d33673715af247221bad371bc813": {},
        "9964f4a8f40367c68c86924712372261d58dd3cd0f7d265868adc77a12670234": {"cutoff": "2024-01-01", "limit": 7},
        "fd6b77223000963a76dfdb71ba137d37c14da9ad19cb1ad40cfefceb02e6a253": {"base_url": "HTTP://Example.org:443/graph//v1/"},
    }
    for key, kw in golden.items():
        r = S2Retriever(S2Args.model_validate({"source": "semantic-scholar", **kw}), tmp_path)
        assert r.responses.key("/paper/search", r._params("graph attention")) == key, kw
