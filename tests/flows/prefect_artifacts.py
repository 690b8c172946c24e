"""Reading what a flow published, for tests (needs the session's Prefect API: the `prefect_api` fixture)."""

from __future__ import annotations

from typing import Any


def latest_artifact(key: str) -> Any:
    """The newest Prefect artifact with `key`; fails the test naming the key when there is none."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[key])), limit=1, sort="CREATED_DESC")
    assert found, f"no artifact {key}"
    return found[0]
