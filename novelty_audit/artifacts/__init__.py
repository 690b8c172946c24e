"""Artifacts: canonical digests, atomic writes, manifests, the content-addressed store and verify."""

from ._code import CodeDigest, code_digest
from ._digest import (
    canonical,
    canonical_bytes,
    digest_bytes,
    check_pinned_file,
    digest_file,
    digest_obj,
    digest_rows,
    digest_table,
    row_digests,
    short_id,
)
from ._dvc import DeclaredStage, LockedOut, declared_stages, dvc_md5, locked_outs, uncovered_inputs
from ._io import atomic_write_bytes, csv_records, read_json, read_table, temp_prefix, write_all, write_json, write_table
from ._lock import LOCK_TIMEOUT_ENV, file_lock, stage_lock
from ._manifest import MANIFEST_NAME, FileRecord, StageManifest, file_record, load_manifest, tool_versions, write_manifest
from ._stage import StageInput, StageResult, execute_stage, stage_identity
from ._published import publish_copy, published_records, record_published
from ._store import RunRecord, Store
from ._temps import clean_stale_temps
from ._verify import Mismatch, PublishedInputs, check_published_file, verify_tree

__all__ = [
    "CodeDigest",
    "code_digest",
    "canonical",
    "canonical_bytes",
    "digest_bytes",
    "check_pinned_file",
    "digest_file",
    "digest_obj",
    "digest_rows",
    "digest_table",
    "row_digests",
    "short_id",
    "DeclaredStage",
    "declared_stages",
    "uncovered_inputs",
    "LockedOut",
    "locked_outs",
    "dvc_md5",
    "stage_lock",
    "file_lock",
    "LOCK_TIMEOUT_ENV",
    "clean_stale_temps",
    "temp_prefix",
    "publish_copy",
    "published_records",
    "record_published",
    "atomic_write_bytes",
    "csv_records",
    "read_json",
    "read_table",
    "write_all",
    "write_json",
    "write_table",
    "MANIFEST_NAME",
    "FileRecord",
    "StageManifest",
    "file_record",
    "load_manifest",
    "tool_versions",
    "write_manifest",
    "StageInput",
    "StageResult",
    "execute_stage",
    "stage_identity",
    "RunRecord",
    "Store",
    "Mismatch",
    "verify_tree",
    "PublishedInputs",
    "check_published_file",
]
