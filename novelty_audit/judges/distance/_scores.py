"""Distance-to-prior-work scores, vectorised over ideas × corpus.

All vectors are L2-normalized, so cosine = dot product and cosine distance = 1 − cosine.
Larger scores mean "farther from prior work", i.e. more novel.

- **Yin**: `1 − max_j cos(x, c_j)` over the idea's admissible corpus documents.
- **kNN density**: mean cosine distance from the idea to its `k` nearest admissible documents
  (fewer when fewer remain).
- **RND (relative neighbour density)**: let `dens(v)` be the kNN density of `v` (for a corpus
  document: over the other admissible corpus documents, itself excluded). Let `N_m(x)` be the
  idea's `m` nearest admissible documents. Then
  `RND(x) = (#{j ∈ N_m(x): dens(j) < dens(x)} + ½·#{j ∈ N_m(x): dens(j) = dens(x)}) / |N_m(x)|`,
  the mid-rank percentile of the idea's density among its neighbours' densities, in [0, 1].
  0.5 means the idea sits in a region as crowded as its neighbours'; 1 means sparser than all.
  It corrects kNN density for the local crowding of the field (a dense field makes every idea
  look close to something).

**Leakage filter** (per idea): a corpus document is not admissible when its normalized title
equals the idea's, or its cosine to the idea is ≥ `near_duplicate`; documents dated after the
cutoff are removed from the corpus before any score (see `after_cutoff`). Every drop is
returned as a `Drop` record. Corpus documents' own densities obey the same rules (self, same
title, near-duplicates excluded), so RND compares like with like.

Scores and densities are rounded to `DECIMALS` places: BLAS may differ in the last bits across
batch shapes, and a verdict must not flip on them. Equal rounded scores are a tie.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "DECIMALS",
    "Drop",
    "Neighbours",
    "after_cutoff",
    "cosine_matrix",
    "nearest",
    "nearest_blocked",
    "doc_densities",
    "BLOCK_DOCS",
    "yin_scores",
    "knn_scores",
    "corpus_densities",
    "rnd_scores",
    "parse_cutoff",
]

DECIMALS = 6


@dataclass(frozen=True)
class Drop:
    """One neighbour the leakage filter removed for one idea (row and column of the similarity matrix).
    Documents after the cutoff are not `Drop`s: they leave the corpus before any idea is scored."""

    idea: int
    doc: int
    reason: str
    """own-title | near-duplicate"""
    cosine: float | None


@dataclass(frozen=True)
class Neighbours:
    """Each idea's nearest admissible documents, nearest first; -1 / NaN pad rows with fewer."""

    index: np.ndarray
    """(n_ideas, m) int64 corpus row indices."""
    cosine: np.ndarray
    """(n_ideas, m) float64 cosines, NaN where padded."""
    drops: list[Drop]

    def count(self) -> np.ndarray:
        return (self.index >= 0).sum(axis=1)


def parse_cutoff(value: str | int | None) -> datetime.date | None:
    """`YYYY`, `YYYY-MM` or `YYYY-MM-DD` → the last day that is still on or before the cutoff."""
    if value is None or value == "":
        return None
    parts = str(value).strip().split("-")
    try:
        y = int(parts[0])
        if len(parts) == 1:
            return datetime.date(y, 12, 31)
        m = int(parts[1])
        if len(parts) == 2:
            nxt = datetime.date(y + (m == 12), m % 12 + 1, 1)
            return nxt - datetime.timedelta(days=1)
        return datetime.date(y, m, int(parts[2]))
    except (ValueError, IndexError):
        raise ValueError(f"cutoff {value!r} is not YYYY, YYYY-MM or YYYY-MM-DD") from None


def after_cutoff(years: Sequence[int], dates: Sequence[str | None], cutoff: str | int | None) -> np.ndarray:
    """Boolean mask of documents certainly dated after the cutoff.

    A cutoff is expanded to its last day (2024 → 2024-12-31, 2025-09 → 2025-09-30). A document's
    partial date is expanded to its first day (year 2025 → 2025-01-01), so a document is removed
    only when it is known to come after the cutoff: with year-only corpora, give a year cutoff.
    """
    limit = parse_cutoff(cutoff)
    out = np.zeros(len(years), dtype=bool)
    if limit is None:
        return out
    for i, (y, d) in enumerate(zip(years, dates)):
        if d:
            parts = [int(p) for p in d.split("-")] + [1, 1]
            first = datetime.date(parts[0], parts[1], parts[2])
        else:
            first = datetime.date(int(y), 1, 1)
        out[i] = first > limit
    return out


def cosine_matrix(queries, corpus) -> np.ndarray:
    """Dense (n_queries, n_corpus) float64 cosines from normalized dense or sparse rows."""
    if isinstance(queries, np.ndarray) and isinstance(corpus, np.ndarray):
        return _products(queries, corpus)
    sims = queries @ corpus.T
    if hasattr(sims, "toarray"):
        sims = sims.toarray()
    return np.asarray(sims, dtype=np.float64)


def _products(queries: np.ndarray, corpus: np.ndarray) -> np.ndarray:
    """`queries @ corpus.T` of dense rows, multiplied in float64 (widening float32 is exact).

    A float32 GEMM may round a cell differently depending on where it falls in the product: OpenBLAS on an
    AVX-512 EPYC gave identical corpus rows different cosines, and a block of the corpus other cosines than
    the whole matrix, so the neighbours (ties between duplicates, the cut, the near-duplicate line) depended
    on the block layout and the CPU. The float64 kernels gave every cell the same value in every shape there.
    """
    return np.asarray(queries, dtype=np.float64) @ np.asarray(corpus, dtype=np.float64).T


def nearest(
    sims: np.ndarray,
    m: int,
    *,
    idea_titles: Sequence[str] | None = None,
    doc_titles: Sequence[str] | None = None,
    near_duplicate: float | None = 0.95,
    exclude_self: bool = False,
    row_offset: int = 0,
    log: bool = True,
) -> Neighbours:
    """The `m` nearest admissible documents of every row of `sims`.

    Titles must already be normalized (`normalize_title`); an empty idea title matches nothing.
    `exclude_self` drops column `row_offset + i` from row i (corpus-vs-corpus densities), not logged.
    """
    n, c = sims.shape
    masked = sims.copy()
    drops: list[Drop] = []
    if exclude_self:
        rows = np.arange(n)
        cols = rows + row_offset
        ok = cols < c
        masked[rows[ok], cols[ok]] = -np.inf
    if idea_titles is not None and doc_titles is not None:
        by_title = _columns_by_title(doc_titles)
        for i, t in enumerate(idea_titles):
            for j in by_title.get(t, ()) if t else ():
                if exclude_self and j == i + row_offset:
                    continue
                if np.isfinite(masked[i, j]):
                    if log:
                        drops.append(Drop(i, j, "own-title", float(sims[i, j])))
                    masked[i, j] = -np.inf
    if near_duplicate is not None:
        ii, jj = np.nonzero(masked >= near_duplicate)
        if log:
            drops.extend(Drop(int(i), int(j), "near-duplicate", float(sims[i, j])) for i, j in zip(ii, jj))
        masked[ii, jj] = -np.inf
    return _top(masked, m, drops)


def _columns_by_title(doc_titles: Sequence[str]) -> dict[str, list[int]]:
    """Corpus columns per normalized title (an empty title matches nothing)."""
    by_title: dict[str, list[int]] = {}
    for j, t in enumerate(doc_titles):
        if t:
            by_title.setdefault(t, []).append(j)
    return by_title


def _top(masked: np.ndarray, m: int, drops: list[Drop]) -> Neighbours:
    """The m best admissible cells of every row of `masked` (excluded cells are -inf), nearest first."""
    n, c = masked.shape
    m = min(m, c)
    if m <= 0 or n == 0:
        return Neighbours(np.full((n, 0), -1, np.int64), np.full((n, 0), np.nan), drops)
    part = np.argpartition(-masked, m - 1, axis=1)[:, :m] if m < c else np.tile(np.arange(c), (n, 1))
    vals = np.take_along_axis(masked, part, axis=1)
    if m < c:
        part, vals = _settle_cut_ties(masked, part, vals, m)
    # Nearest first; equal cosines by corpus row so the order never depends on the partition.
    order = np.lexsort((part, -vals), axis=1)
    idx = np.take_along_axis(part, order, axis=1)
    val = np.take_along_axis(vals, order, axis=1)
    bad = ~np.isfinite(val)
    idx[bad] = -1
    val[bad] = np.nan
    drops.sort(key=lambda d: (d.idea, d.doc))
    return Neighbours(idx.astype(np.int64), val, drops)


def _settle_cut_ties(masked: np.ndarray, part: np.ndarray, vals: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Which of several cells equal to a row's m-th best value are kept is the partition's choice; make it the
    lowest corpus rows', as `nearest` promises (duplicate abstracts tie exactly). Rows without such a tie
    (nearly all) are left as they are."""
    cut = vals.min(axis=1)
    tied = np.isfinite(cut) & ((masked == cut[:, None]).sum(axis=1) > (vals == cut[:, None]).sum(axis=1))
    for r in np.flatnonzero(tied):
        above = np.flatnonzero(masked[r] > cut[r])
        equal = np.flatnonzero(masked[r] == cut[r])[: m - len(above)]
        part[r] = np.concatenate([above, equal])
        vals[r] = masked[r, part[r]]
    return part, vals


BLOCK_DOCS = 65_536
"""Corpus documents per block of the exact neighbour search: (ideas × block) float64 cells at a time."""
SEED_DOCS = 8_192
"""Documents of the float32 corpus search's first block, ranked in full to seed each row's threshold."""


def _merge(idx_a: np.ndarray, val_a: np.ndarray, idx_b: np.ndarray, val_b: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """The m best of two candidate lists per row, by (cosine descending, corpus row ascending) — `nearest`'s order."""
    idx = np.concatenate([idx_a, idx_b], axis=1)
    val = np.concatenate([val_a, val_b], axis=1)
    key = np.where(idx >= 0, val, -np.inf)
    order = np.lexsort((np.where(idx >= 0, idx, np.iinfo(np.int64).max), -key), axis=1)[:, :m]
    idx, val = np.take_along_axis(idx, order, axis=1), np.take_along_axis(val, order, axis=1)
    bad = idx < 0
    val[bad] = np.nan
    return idx, val


def _title_cells(idea_titles: Sequence[str] | None, doc_titles: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray]:
    """(idea row, corpus column) of every cell whose document carries the idea's normalized title, by column.

    One pass over the corpus titles with a set of the (few) idea titles, instead of indexing every corpus title."""
    if idea_titles is None or doc_titles is None:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    rows_of: dict[str, list[int]] = {}
    for i, t in enumerate(idea_titles):
        if t:
            rows_of.setdefault(t, []).append(i)
    pairs = [(i, j) for j, t in enumerate(doc_titles) if t in rows_of for i in rows_of[t]]
    if not pairs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    cells = np.array(pairs, dtype=np.int64)
    return cells[:, 0], cells[:, 1]


def _blocked_float32(queries: np.ndarray, corpus: np.ndarray, m: int, *, title_cells: tuple[np.ndarray, np.ndarray],
                     near_duplicate: float | None, block: int, self_cols: np.ndarray | None = None,
                     log: bool = True) -> Neighbours:
    """The blocked search over a float32 corpus with a running threshold per row.

    The first block is ranked in full (`_top`). Afterwards a cell can only enter a row's m best when its cosine
    is above the row's current m-th best (an equal cosine loses: its corpus row is larger), so each later block
    costs one product and one comparison, and only the few cells above the threshold are merged — no partition
    over ideas × block cells. Every near-duplicate (≥ `near_duplicate`) is above the threshold (which is an
    admissible cosine, < `near_duplicate`), so it is still found and logged; own-title cells (`title_cells`, from
    `_title_cells`) are masked in the block they fall in. Cosines are float64 products (`_products`), as in
    `cosine_matrix`, so neighbours, cosines and drops are those of `nearest(cosine_matrix(queries, corpus), m,
    ...)`. `self_cols[i]`: a corpus column row i never takes (a document's own row, for its density), masked
    before anything else and not logged; `log=False` records no drops.
    """
    n, n_c = queries.shape[0], corpus.shape[0]
    t_rows, t_cols = title_cells
    drops: list[Drop] = []
    idx = np.full((n, 0), -1, np.int64)
    val = np.full((n, 0), np.nan)
    # A small first block seeds the thresholds: ranking it in full is the one partition this search pays for.
    seed = min(block, max(SEED_DOCS, 8 * m))
    for c0 in [0, *range(seed, n_c, block)]:
        c1 = min(n_c, seed if c0 == 0 else c0 + block)
        sims = _products(queries, corpus[c0:c1])
        if self_cols is not None:
            mine = np.flatnonzero((self_cols >= c0) & (self_cols < c1))
            sims[mine, self_cols[mine] - c0] = -np.inf
        here = (t_cols >= c0) & (t_cols < c1)
        ti, tj = t_rows[here], t_cols[here] - c0
        ok = np.isfinite(sims[ti, tj]) & log
        drops.extend(Drop(int(i), int(j) + c0, "own-title", float(sims[i, j])) for i, j in zip(ti[ok], tj[ok]))
        sims[ti, tj] = -np.inf
        if c0 == 0:
            nb = _nearest_masked(sims, m, near_duplicate, drops if log else [])
            idx, val = nb.index, nb.cosine
            continue
        # A row with fewer than m neighbours so far takes every finite cell (threshold -inf).
        last = val[:, m - 1] if idx.shape[1] == m else np.full(n, np.nan)
        thr = np.where(np.isfinite(last), last, -np.inf)
        ii, jj = np.nonzero(sims > thr[:, None])
        cos = sims[ii, jj]
        if near_duplicate is not None:
            dup = cos >= near_duplicate
            if log:
                drops.extend(Drop(int(i), int(j) + c0, "near-duplicate", float(c)) for i, j, c in zip(ii[dup], jj[dup], cos[dup]))
            ii, jj, cos = ii[~dup], jj[~dup], cos[~dup]
        idx, val = _merge_cells(idx, val, ii, jj + c0, cos, m)
    drops.sort(key=lambda d: (d.idea, d.doc))
    return Neighbours(idx.astype(np.int64), val, drops)


def _nearest_masked(sims: np.ndarray, m: int, near_duplicate: float | None, drops: list[Drop]) -> Neighbours:
    """`_top` of one block whose own-title cells are already -inf: near-duplicates dropped and logged."""
    if near_duplicate is not None:
        ii, jj = np.nonzero(sims >= near_duplicate)
        drops.extend(Drop(int(i), int(j), "near-duplicate", float(sims[i, j])) for i, j in zip(ii, jj))
        sims[ii, jj] = -np.inf
    return _top(sims, m, [])


def _merge_cells(idx: np.ndarray, val: np.ndarray, rows: np.ndarray, cols: np.ndarray, cos: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row's m best of its current neighbours and the new (row, col, cosine) cells, in `nearest`'s order."""
    n = idx.shape[0]
    have = idx >= 0
    r_old = np.broadcast_to(np.arange(n)[:, None], idx.shape)[have]
    all_r = np.concatenate([r_old, rows])
    all_c = np.concatenate([idx[have], cols])
    all_v = np.concatenate([val[have], cos])
    order = np.lexsort((all_c, -all_v, all_r))
    all_r, all_c, all_v = all_r[order], all_c[order], all_v[order]
    start = np.searchsorted(all_r, np.arange(n))
    rank = np.arange(len(all_r)) - start[all_r]
    keep = rank < m
    out_i = np.full((n, m), -1, np.int64)
    out_v = np.full((n, m), np.nan)
    out_i[all_r[keep], rank[keep]] = all_c[keep]
    out_v[all_r[keep], rank[keep]] = all_v[keep]
    return out_i, out_v


def nearest_blocked(
    queries,
    corpus,
    m: int,
    *,
    idea_titles: Sequence[str] | None = None,
    doc_titles: Sequence[str] | None = None,
    near_duplicate: float | None = 0.95,
    block: int = BLOCK_DOCS,
) -> Neighbours:
    """`nearest(cosine_matrix(queries, corpus), m, ...)` in bounded memory: the corpus is searched in blocks of
    `block` rows and each block's m best are merged, so memory is O(ideas × block), not O(ideas × corpus).

    Exact: the same neighbours, cosines and drops as the unblocked search (a corpus of at most `block`
    documents takes the unblocked path itself).
    """
    n_c = corpus.shape[0]
    if n_c <= block:
        return nearest(cosine_matrix(queries, corpus), m, idea_titles=idea_titles, doc_titles=doc_titles, near_duplicate=near_duplicate)
    if isinstance(corpus, np.ndarray) and isinstance(queries, np.ndarray) and corpus.dtype == np.float32:
        return _blocked_float32(queries, corpus, m, title_cells=_title_cells(idea_titles, doc_titles),
                                near_duplicate=near_duplicate, block=block)  # fmt: skip
    idx: np.ndarray | None = None
    val: np.ndarray | None = None
    drops: list[Drop] = []
    for c0 in range(0, n_c, block):
        c1 = min(n_c, c0 + block)
        titles = None if doc_titles is None else doc_titles[c0:c1]
        nb = nearest(cosine_matrix(queries, corpus[c0:c1]), m, idea_titles=idea_titles, doc_titles=titles, near_duplicate=near_duplicate)
        drops.extend(Drop(d.idea, d.doc + c0, d.reason, d.cosine) for d in nb.drops)
        bi = np.where(nb.index >= 0, nb.index + c0, -1)
        idx, val = (bi, nb.cosine) if idx is None else _merge(idx, val, bi, nb.cosine, m)
    assert idx is not None and val is not None
    drops.sort(key=lambda d: (d.idea, d.doc))
    return Neighbours(idx.astype(np.int64), val, drops)


def doc_densities(corpus, rows: np.ndarray, k: int, *, doc_titles: Sequence[str] | None = None,
                  near_duplicate: float | None = 0.95, block: int = BLOCK_DOCS, row_block: int = 512) -> np.ndarray:
    """`corpus_densities(corpus, k, ...)[rows]` without computing the other rows' densities: for a corpus too
    large for all n² similarities, only the documents RND ranks an idea among. Same definition (itself, its
    own title and near-duplicates excluded); blocked over rows and corpus, so memory stays bounded."""
    rows = np.asarray(rows, dtype=np.int64)
    out = np.empty(len(rows), dtype=np.float64)
    n_c = corpus.shape[0]
    dense = isinstance(corpus, np.ndarray) and corpus.dtype == np.float32
    if dense:  # the rows' own-title cells, found in one pass over the corpus titles for all row blocks
        t_rows, t_cols = _title_cells(None if doc_titles is None else [doc_titles[r] for r in rows], doc_titles)
    for r0 in range(0, len(rows), row_block):
        rs = rows[r0 : r0 + row_block]
        q = corpus[rs]
        own = None if doc_titles is None else [doc_titles[r] for r in rs]
        if dense:
            mine = (t_rows >= r0) & (t_rows < r0 + len(rs))
            nb = _blocked_float32(q, corpus, k, title_cells=(t_rows[mine] - r0, t_cols[mine]), near_duplicate=near_duplicate,
                                  block=block, self_cols=rs, log=False)  # fmt: skip
            out[r0 : r0 + len(rs)] = knn_scores(nb, k)
            continue
        idx: np.ndarray | None = None
        val: np.ndarray | None = None
        for c0 in range(0, n_c, block):
            c1 = min(n_c, c0 + block)
            sims = cosine_matrix(q, corpus[c0:c1])
            inside = np.flatnonzero((rs >= c0) & (rs < c1))
            sims[inside, rs[inside] - c0] = -np.inf  # itself
            nb = nearest(sims, k, idea_titles=own, doc_titles=None if doc_titles is None else doc_titles[c0:c1],
                         near_duplicate=near_duplicate, log=False)  # fmt: skip
            bi = np.where(nb.index >= 0, nb.index + c0, -1)
            idx, val = (bi, nb.cosine) if idx is None else _merge(idx, val, bi, nb.cosine, k)
        assert idx is not None and val is not None
        out[r0 : r0 + len(rs)] = knn_scores(Neighbours(idx, val, []), k)
    return out


def _round(x: np.ndarray) -> np.ndarray:
    return np.round(x, DECIMALS)


def yin_scores(nb: Neighbours) -> np.ndarray:
    """1 − the nearest admissible cosine; NaN when an idea has no admissible document."""
    return _round(1.0 - nb.cosine[:, 0]) if nb.cosine.shape[1] else np.full(nb.cosine.shape[0], np.nan)


def knn_scores(nb: Neighbours, k: int) -> np.ndarray:
    """Mean cosine distance to the k nearest admissible documents (fewer if fewer remain)."""
    dist = 1.0 - nb.cosine[:, :k]
    with np.errstate(invalid="ignore"):
        counts = np.sum(np.isfinite(dist), axis=1)
        total = np.nansum(dist, axis=1)
        out = np.where(counts > 0, total / np.maximum(counts, 1), np.nan)
    return _round(out)


def corpus_densities(corpus_vectors, k: int, *, doc_titles: Sequence[str] | None = None,
                     near_duplicate: float | None = 0.95, block_cells: int = 1 << 24) -> np.ndarray:
    """kNN density of every corpus document against the rest of the corpus.

    Computed in row blocks of at most `block_cells` similarity cells, so memory stays bounded
    for large corpora.
    """
    n = corpus_vectors.shape[0]
    out = np.empty(n, dtype=np.float64)
    rows = max(1, block_cells // max(n, 1))
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        sims = cosine_matrix(corpus_vectors[start:stop], corpus_vectors)
        nb = nearest(sims, k, idea_titles=None if doc_titles is None else doc_titles[start:stop], doc_titles=doc_titles,
                     near_duplicate=near_duplicate, exclude_self=True, row_offset=start, log=False)
        out[start:stop] = knn_scores(nb, k)
    return out


def rnd_scores(idea_density: np.ndarray, nb: Neighbours, doc_density: np.ndarray) -> np.ndarray:
    """Mid-rank percentile of each idea's density among its neighbours' densities (NaN if none)."""
    idx = nb.index
    valid = idx >= 0
    neigh = np.where(valid, doc_density[np.where(valid, idx, 0)], np.nan)
    mine = idea_density[:, None]
    below = np.sum(valid & (neigh < mine), axis=1)
    equal = np.sum(valid & (neigh == mine), axis=1)
    count = valid.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(count > 0, (below + 0.5 * equal) / np.maximum(count, 1), np.nan)
    out[~np.isfinite(idea_density)] = np.nan
    return _round(out)
