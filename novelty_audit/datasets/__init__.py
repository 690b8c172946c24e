"""Benchmark datasets: readers for YAML and Hub Parquet, validation, canonical tables, pins."""

from ._normalize import EXCLUSION_SCHEMA, IDEA_SCHEMA, PAIR_SCHEMA, POINT_SCHEMA, Exclusion, Normalized, normalize_pairs, normalize_text
from ._pin import PapersReader, PinChange, accept_pins, check_pin, fetch_pinned, hub_filename, load_dataset
from ._records import RawPair, read_pairs

__all__ = [
    "EXCLUSION_SCHEMA",
    "IDEA_SCHEMA",
    "PAIR_SCHEMA",
    "POINT_SCHEMA",
    "Exclusion",
    "Normalized",
    "normalize_pairs",
    "normalize_text",
    "PapersReader",
    "PinChange",
    "accept_pins",
    "check_pin",
    "fetch_pinned",
    "hub_filename",
    "load_dataset",
    "RawPair",
    "read_pairs",
]
