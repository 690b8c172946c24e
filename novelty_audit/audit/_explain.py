"""Why an evidence change happened, from the rows' `evidence_docs` (docs/design/audit.md "Decisive evidence").

Per slot (idea_0 / idea_1 / idea) a distance judge lists the neighbours its score uses (RND: each with its kNN
density), the documents its leakage filter dropped (`role: dropped`) and one `role: score` entry (the idea's own
density, the corpus digest and size, the embedder id and, pointwise, the threshold). From both sides of a row this
module names what decided the change — a document in or out, a neighbour whose density moved and the share of the
score it moved, kept neighbours' similarities (a refitted TF-IDF), the threshold, a text edit — and the cause it
groups under (`atoms`): one edited idea, one corpus change, the judged subset.

Search agents (judges/agents) list each paper once per query whose results held it, with that `query`: an entry is
then one paper in one query's results, so a paper that entered the results of one query is named with that query
(and a query the agent asked on one side only is said to be new or no longer asked). Rows without `query` (every
other judge, and agent rows written before it existed) read as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..artifacts import digest_obj
from ._model import CorpusChange, CorpusDoc, Decisive, DocMove, LeakageDrop, TextDiff

__all__ = ["SlotEvidence", "read_slots", "Explanation", "explain", "infer_corpus_changes", "group_id", "RowView", "Lookup", "SHOWN"]

SHOWN = 4
"""Decimals the audit shows for scores; a move below half a unit of the last one is said in words."""
_BELOW_SHOWN = 0.5 * 10**-SHOWN
_MOVED_SHOWN = 5
"""Kept neighbours listed per slot when only their similarities moved (largest moves first)."""

Key = tuple[str, str, str]
"""(doc_id, digest, query): one version of one document, in one query's results ("" for judges that do not search)."""
Lookup = Callable[[str, str], str | None]
"""(doc_id, digest) → the document's abstract, or None when no corpus file holds that very text."""


@dataclass(frozen=True)
class SlotEvidence:
    """One slot's evidence as a judge recorded it."""

    neighbours: dict[Key, dict[str, Any]] = field(default_factory=dict)
    dropped: dict[Key, dict[str, Any]] = field(default_factory=dict)
    score: dict[str, Any] | None = None
    corpus: str | None = None
    embedder: str | None = None


def _entries(row: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    raw = None if row is None else row.get("evidence_docs")
    if not raw:
        return []
    return list(orjson.loads(raw)) if isinstance(raw, (str, bytes)) else list(raw)


def _parts(row: Mapping[str, Any] | None) -> dict[str, str]:
    raw = None if row is None else row.get("evidence_parts")
    if not raw:
        return {}
    return dict(raw) if isinstance(raw, dict) else dict(orjson.loads(raw))


def read_slots(row: Mapping[str, Any] | None) -> dict[str, SlotEvidence]:
    """The row's evidence by slot. Entries without a `role` are neighbours; the corpus and embedder come from the
    `score` entry, else from the pairwise evidence parts (`idea_0_corpus`, …; digests)."""
    by: dict[str, tuple[dict[Key, dict], dict[Key, dict], list[dict]]] = {}
    for d in _entries(row):
        slot = str(d.get("slot"))
        n, dr, sc = by.setdefault(slot, ({}, {}, []))
        role = d.get("role")
        key = (str(d.get("doc_id")), str(d.get("digest")), str(d.get("query") or ""))
        if role == "dropped":
            dr[key] = d
        elif role == "score":
            sc.append(d)
        elif role is None:
            n[key] = d
    parts = _parts(row)
    out = {}
    for slot in set(by) | {k.split("_corpus")[0] for k in parts if k.endswith("_corpus")}:
        n, dr, sc = by.get(slot, ({}, {}, []))
        score = sc[0] if sc else None
        corpus = score.get("corpus") if score else parts.get(f"{slot}_corpus", parts.get("corpus") if slot == "idea" else None)
        embedder = score.get("embedder") if score else parts.get(f"{slot}_embedder")
        out[slot] = SlotEvidence(n, dr, score, corpus, embedder)
    return out


def _num(x: float | None, places: int = SHOWN) -> str:
    return "—" if x is None else f"{x:.{places}f}"


def _signed(x: float) -> str:
    return f"{x:+.4f}" if abs(x) >= _BELOW_SHOWN else f"{x:+.6f}"


def _year(d: Mapping[str, Any]) -> str:
    return str(d.get("year")) if d.get("year") is not None else "n.d."


def _doc_name(d: Mapping[str, Any]) -> str:
    return f"\"{d.get('title') or d.get('doc_id')}\" ({_year(d)}, id {d.get('doc_id')})"


@dataclass(frozen=True)
class RowView:
    """What `explain` needs to know about one changed row besides its evidence."""

    kind: str
    slots: dict[str, str]
    """slot → idea id (pairwise: idea_0, idea_1; pointwise: idea)."""
    names: dict[str, str]
    """slot → the idea's title, for sentences."""
    scores_before: dict[str, float | None]
    scores_after: dict[str, float | None]
    text_diffs: list[TextDiff]
    text_digests: dict[str, tuple[str | None, str | None]]
    """slot → digest of the idea text before/after (when the pin tables hold it)."""


@dataclass
class Explanation:
    docs: list[DocMove]
    dropped: list[DocMove]
    decisive: list[Decisive]
    atoms: list[list[Any]]
    """The cause(s) the change groups under (canonical, content only)."""


def _contrib(d: float, dx: float, n: int) -> float:
    """An RND neighbour's share of the percentile: below the idea's density counts 1, equal ½, over n neighbours."""
    return ((d < dx) + 0.5 * (d == dx)) / n


class _Slot:
    """Both sides of one slot and the reasons its score moved."""

    def __init__(self, slot: str, name: str, b: SlotEvidence, a: SlotEvidence, prefer: set[str], lookup: Lookup | None):
        self.slot, self.name, self.b, self.a, self.lookup = slot, name, b, a, lookup
        self.entered = [k for k in a.neighbours if k not in b.neighbours]
        self.left = [k for k in b.neighbours if k not in a.neighbours]
        self.kept = [k for k in a.neighbours if k in b.neighbours]
        moved_docs = self.entered + self.left
        preferred = [k for k in moved_docs if k[0] in prefer]
        # The document that decides: one the corpus change added/removed/edited; else what entered (it pushed the
        # others out); else what left.
        self.decisive_docs = set(preferred or self.entered or self.left)
        self.effects: dict[Key, float] = {}
        self.idea_density_effect = 0.0
        self._rnd()

    def _abstract(self, key: Key) -> str | None:
        return self.lookup(key[0], key[1]) if self.lookup is not None else None

    def _queries(self, ev: SlotEvidence) -> set[str]:
        return {k[2] for k in ev.neighbours if k[2]}

    def _rnd(self) -> None:
        """RND: each ranked neighbour's share of the score on each side (needs the densities the judge recorded)."""
        b, a = self.b, self.a
        rb = {k: e["density"] for k, e in b.neighbours.items() if e.get("density") is not None}
        ra = {k: e["density"] for k, e in a.neighbours.items() if e.get("density") is not None}
        dxb = (b.score or {}).get("density")
        dxa = (a.score or {}).get("density")
        if not rb or not ra or dxb is None or dxa is None:
            return
        for k in set(rb) | set(ra):
            before = _contrib(rb[k], dxb, len(rb)) if k in rb else 0.0
            after = _contrib(ra[k], dxa, len(ra)) if k in ra else 0.0
            if k in rb and k in ra and rb[k] == ra[k]:
                self.idea_density_effect += after - before  # the neighbour held still; the idea's density moved
            elif after != before:
                self.effects[k] = after - before

    def moves(self) -> list[DocMove]:
        """Documents in/out of the neighbours, and kept ones whose density (RND) or similarity moved."""
        out = []
        for k, movement in [(k, "entered") for k in self.entered] + [(k, "left") for k in self.left]:
            d = (self.a if movement == "entered" else self.b).neighbours[k]
            side = "after" if movement == "entered" else "before"
            out.append(DocMove(
                slot=self.slot, movement=movement, doc_id=k[0], digest=k[1] or None, title=str(d.get("title") or k[0]),  # type: ignore[arg-type]
                year=d.get("year"), source=d.get("source"), decisive=k in self.decisive_docs,
                rank_before=d.get("rank") if side == "before" else None, rank_after=d.get("rank") if side == "after" else None,
                similarity_before=d.get("similarity") if side == "before" else None,
                similarity_after=d.get("similarity") if side == "after" else None,
                density_before=d.get("density") if side == "before" else None,
                density_after=d.get("density") if side == "after" else None, abstract=self._abstract(k), query=k[2] or None,
            ))  # fmt: skip
        # Kept neighbours: those whose density moved their share of an RND score; when nothing entered or left,
        # those whose similarity or rank moved (a refitted embedder), largest moves first.
        shifted = [k for k in self.kept if k in self.effects]
        if not self.entered and not self.left:
            def delta(k: Key) -> float:
                o, d = self.b.neighbours[k], self.a.neighbours[k]
                return abs((d.get("similarity") or 0.0) - (o.get("similarity") or 0.0))

            sims = [k for k in self.kept if k not in self.effects and
                    (self.b.neighbours[k].get("similarity"), self.b.neighbours[k].get("rank")) !=
                    (self.a.neighbours[k].get("similarity"), self.a.neighbours[k].get("rank"))]
            shifted += sorted(sims, key=lambda k: (-delta(k), k))[:_MOVED_SHOWN]
        for k in shifted:
            o, d = self.b.neighbours[k], self.a.neighbours[k]
            out.append(DocMove(
                slot=self.slot, movement="moved", doc_id=k[0], digest=k[1] or None, title=str(d.get("title") or k[0]),
                year=d.get("year"), source=d.get("source"), rank_before=o.get("rank"), rank_after=d.get("rank"),
                similarity_before=o.get("similarity"), similarity_after=d.get("similarity"),
                density_before=o.get("density"), density_after=d.get("density"), abstract=self._abstract(k),
                query=k[2] or None,
            ))  # fmt: skip
        return out

    def dropped(self) -> list[DocMove]:
        out = []
        keys = list(self.a.dropped) + [k for k in self.b.dropped if k not in self.a.dropped]
        for k in keys:
            movement = "kept" if k in self.a.dropped and k in self.b.dropped else "entered" if k in self.a.dropped else "left"
            d = self.a.dropped.get(k) or self.b.dropped[k]
            o = self.b.dropped.get(k, {})
            out.append(DocMove(
                slot=self.slot, movement=movement, role="dropped", reason=d.get("reason"), doc_id=k[0], digest=k[1] or None,  # type: ignore[arg-type]
                title=str(d.get("title") or k[0]), year=d.get("year"), source=d.get("source"),
                similarity_before=o.get("similarity"), similarity_after=self.a.dropped.get(k, {}).get("similarity"),
                abstract=self._abstract(k), query=k[2] or None,
            ))  # fmt: skip
        return out

    def _search_text(self, k: Key, d: Mapping[str, Any], entered: bool, where: str) -> str:
        """A paper in or out of one search's results, said with the query (and whether the query itself is new)."""
        q = k[2]
        source = f"{d.get('source')} " if d.get("source") else ""
        asked_before, asked_after = q in self._queries(self.b), q in self._queries(self.a)
        if entered:
            how = "was returned by" if asked_before else "was returned by the new"
        else:
            how = "is no longer returned by" if asked_after else "left with the no longer asked"
        return f"{_doc_name(d)} {how} {source}search \"{q}\" for {self.name} ({where})"

    def items(self) -> list[Decisive]:
        """The reasons this slot's score moved, in words (may be empty: nothing recorded moved)."""
        out: list[Decisive] = []
        for k in self.entered + self.left:
            if k not in self.decisive_docs:
                continue
            entered = k in self.a.neighbours
            d = (self.a if entered else self.b).neighbours[k]
            where = f"at rank {d.get('rank')}" + (f", similarity {_num(d.get('similarity'))}" if d.get("similarity") is not None else "")
            if k[2]:
                text = self._search_text(k, d, entered, where)
            else:
                text = f"{_doc_name(d)} {'entered' if entered else 'left'} {self.name}'s neighbours ({where})"
            if entered and d.get("rank") == 0 and not k[2]:
                text += f"; it is now the nearest prior work of {self.name}"
            if not entered and k in self.a.dropped:
                dr = self.a.dropped[k]
                text += f"; the leakage filter now drops it ({dr.get('reason')}, cosine {_num(dr.get('similarity'))})"
            if k in self.effects:
                text += f"; RND {_signed(self.effects[k])}"
            out.append(Decisive(kind="document", slot=self.slot, text=text, doc_id=k[0], title=str(d.get("title") or k[0]),
                                year=d.get("year"), before=None if entered else d.get("similarity"),
                                after=d.get("similarity") if entered else None, effect=self.effects.get(k),
                                abstract=self._abstract(k), query=k[2] or None))
        dxb, dxa = (self.b.score or {}).get("density"), (self.a.score or {}).get("density")
        for k in self.kept:
            if k not in self.effects:
                continue
            o, d = self.b.neighbours[k], self.a.neighbours[k]
            side = "below" if d["density"] < (dxa or 0) else "equal to" if d["density"] == dxa else "above"
            out.append(Decisive(
                kind="density", slot=self.slot, doc_id=k[0], title=str(d.get("title") or k[0]), year=d.get("year"),
                before=o["density"], after=d["density"], effect=self.effects[k], abstract=self._abstract(k),
                text=(f"the density of neighbour {_doc_name(d)} moved {_num(o['density'], 6)} → {_num(d['density'], 6)} "
                      f"({_signed(d['density'] - o['density'])}), now {side} {self.name}'s own ({_num(dxa, 6)}): "
                      f"RND {_signed(self.effects[k])}"),
            ))  # fmt: skip
        if dxb is not None and dxa is not None and dxb != dxa:
            out.append(Decisive(
                kind="density", slot=self.slot, before=dxb, after=dxa, effect=self.idea_density_effect or None,
                text=(f"{self.name}'s own density (mean distance to its nearest documents) moved {_num(dxb, 6)} → {_num(dxa, 6)}"
                      + (f": its rank among the neighbours held still moved RND {_signed(self.idea_density_effect)}"
                         if self.idea_density_effect else "")),
            ))  # fmt: skip
        sims = [(k, self.b.neighbours[k].get("similarity"), self.a.neighbours[k].get("similarity")) for k in self.kept]
        sims = [(k, sb, sa) for k, sb, sa in sims if sb is not None and sa is not None and sb != sa]
        if sims:
            k, sb, sa = max(sims, key=lambda t: (abs(t[2] - t[1]), t[0]))
            d = self.a.neighbours[k]
            text = (f"the similarities of {len(sims)} kept neighbour(s) of {self.name} moved; largest: {_doc_name(d)} "
                    f"{_num(sb, 6)} → {_num(sa, 6)} ({_signed(sa - sb)})")
            if self.b.embedder != self.a.embedder and self.b.embedder and self.a.embedder:
                refit = " (TF-IDF is refitted on the corpus whenever it changes)" if str(self.a.embedder).startswith("tfidf") else ""
                text += f": the embedder changed, {self.b.embedder} → {self.a.embedder}{refit}"
            out.append(Decisive(kind="similarity", slot=self.slot, text=text, doc_id=k[0], title=str(d.get("title") or k[0]),
                                year=d.get("year"), before=sb, after=sa))
        return out


def _order(x: float | None, y: float | None) -> int | None:
    return None if x is None or y is None else (x > y) - (x < y)


def explain(
    view: RowView,
    b: Mapping[str, Any],
    a: Mapping[str, Any],
    *,
    prefer: set[str] | None = None,
    lookup: Lookup | None = None,
    threshold_atoms: Callable[[], list[list[Any]]] | None = None,
    moved_parts: Iterable[str] = (),
) -> Explanation:
    """The documents, drops and decisive reasons of one changed row, and the cause it groups under.

    `prefer`: doc ids the corpus change added/removed/edited (they decide over documents they pushed out).
    `threshold_atoms`: the causes of the pointwise threshold's move (other ideas' score moves, the subset).
    """
    sb, sa = read_slots(b), read_slots(a)
    slots = {s: _Slot(s, view.names.get(s, s), sb.get(s, SlotEvidence()), sa.get(s, SlotEvidence()), prefer or set(), lookup)
             for s in sorted(set(sb) | set(sa) | set(view.slots))}
    docs = sorted((m for s in slots.values() for m in s.moves()),
                  key=lambda m: (m.slot, ["entered", "left", "moved"].index(m.movement), m.query or "",
                                 m.rank_after if m.rank_after is not None else m.rank_before or 0))
    dropped = [m for s in slots.values() for m in s.dropped()]
    moved = {s: view.scores_before.get(s) != view.scores_after.get(s) for s in view.slots}
    text_slots = {t.slot for t in view.text_diffs}

    # Which slots decide: pairwise, those whose move alone reverses the order (else every moved one); pointwise,
    # the score or the threshold, whichever alone flips the prediction (else both).
    chosen: list[str] = []
    threshold: Decisive | None = None
    if view.kind == "pairwise" and any(moved.values()):
        ids = list(view.slots)
        before = [view.scores_before.get(s) for s in ids]
        alone = []
        for i, s in enumerate(ids):
            trial = list(before)
            trial[i] = view.scores_after.get(s)
            if moved[s] and _order(*trial) != _order(*before):
                alone.append(s)
        chosen = alone or [s for s in ids if moved[s]]
    elif view.kind == "pointwise":
        s = "idea"
        cb = (slots[s].b.score or {}).get("threshold") if s in slots else None
        ca = (slots[s].a.score or {}).get("threshold") if s in slots else None
        xb, xa = view.scores_before.get(s), view.scores_after.get(s)
        score_alone = cb is not None and xb is not None and xa is not None and (xa >= cb) != (xb >= cb)
        cut_alone = cb is not None and ca is not None and xb is not None and (xb >= ca) != (xb >= cb)
        if cb is not None and ca is not None and cb != ca and (cut_alone or not score_alone):
            threshold = _threshold_item(view, slots[s], xa)
        if moved.get(s) and (score_alone or not cut_alone):
            chosen = [s]
    if not chosen and threshold is None:
        chosen = [s for s in view.slots if s in text_slots or (s in slots and (slots[s].entered or slots[s].left))]

    decisive: list[Decisive] = []
    for t in view.text_diffs:
        if t.slot in chosen:
            removed = sum(len(w.split()) for op, w in t.ops if op == "-")
            added = sum(len(w.split()) for op, w in t.ops if op == "+")
            decisive.append(Decisive(kind="text", slot=t.slot, title=t.title, text=(
                f"the text of {t.title or t.idea_id or t.slot} was edited ({removed} word(s) removed, {added} added)")))
    for s in chosen:
        if s in slots:
            decisive.extend(slots[s].items())
    if threshold is not None:
        decisive.append(threshold)
    for s in chosen:
        decisive.extend(_score_note(view, s, has_reason=any(d.slot == s for d in decisive)))
    if not decisive:
        decisive = _fallback(view, slots, list(moved_parts))

    return Explanation(docs=docs, dropped=dropped, decisive=decisive,
                       atoms=_atoms(view, slots, chosen, threshold is not None, threshold_atoms, docs, list(moved_parts)))


def _threshold_item(view: RowView, slot: _Slot, score: float | None) -> Decisive:
    b, a = slot.b.score or {}, slot.a.score or {}
    cb, ca = b["threshold"], a["threshold"]
    nb, na = b.get("threshold_of"), a.get("threshold_of")
    how = {"median": "the median of the dataset's pointwise scores", "fixed": "a fixed threshold"}.get(str(a.get("threshold_from")), "the threshold")
    if nb is not None and na is not None and nb != na:
        why = f"it is the median over {na} scored ideas, was over {nb}: the runs judged different ideas (judge.limit)"
    elif a.get("threshold_from") == "median":
        why = f"it is the median of the same {na} ideas' scores, and other ideas' scores moved"
    else:
        why = "the configured threshold changed"
    side = "" if score is None else f"; {view.names.get('idea', 'the idea')}'s score {_num(score, 6)} is now {'at or above' if score >= ca else 'below'} it"
    return Decisive(kind="threshold", slot="idea", before=cb, after=ca,
                    text=f"the pointwise threshold ({how}) moved {_num(cb, 6)} → {_num(ca, 6)}: {why}{side}")


def _score_note(view: RowView, slot: str, has_reason: bool) -> list[Decisive]:
    """A score move too small to show, or one with no recorded reason, said in words."""
    xb, xa = view.scores_before.get(slot), view.scores_after.get(slot)
    if xb is None or xa is None or xb == xa:
        return []
    name = view.names.get(slot, slot)
    small = abs(xa - xb) < _BELOW_SHOWN
    if not small and has_reason:
        return []
    text = f"{name}'s score moved {_num(xb, 6)} → {_num(xa, 6)} ({_signed(xa - xb)})"
    if small:
        text += f", below the {SHOWN} decimals shown"
        others = [s for s in view.slots if s != slot]
        if view.kind == "pairwise" and others:
            ob = view.scores_before.get(others[0])
            if ob is not None:
                text += f"; the margin it reversed was {abs(xb - ob):.6f}"
    if not has_reason:
        text += "; the judge recorded no neighbour, density or similarity move that explains it"
    return [Decisive(kind="score", slot=slot, before=xb, after=xa, text=text)]


def _fallback(view: RowView, slots: dict[str, _Slot], parts: list[str]) -> list[Decisive]:
    """Never empty: documents in/out of any slot, else an edit, else the moved evidence parts by name."""
    out: list[Decisive] = []
    for s in slots.values():
        out.extend(d for d in s.items() if d.kind == "document")
    if out:
        return out
    for t in view.text_diffs:
        what = f"the generated review of {t.title or 'the paper'}" if t.slot == "review" else f"the text of {t.title or t.idea_id or t.slot}"
        out.append(Decisive(kind="text", slot=t.slot, title=t.title, text=f"{what} changed"))
    if out:
        return out
    names = ", ".join(sorted(parts)) or "the evidence digest"
    return [Decisive(kind="parts", text=f"moved evidence: {names}; this judge records no readable detail of it")]


def _atoms(view: RowView, slots: dict[str, _Slot], chosen: list[str], by_threshold: bool,
           threshold_atoms: Callable[[], list[list[Any]]] | None, docs: list[DocMove], parts: list[str]) -> list[list[Any]]:
    atoms: list[list[Any]] = []
    for s in chosen:
        digests = view.text_digests.get(s, (None, None))
        if digests[0] != digests[1] and None not in digests:
            atoms.append(["text", view.slots.get(s), digests[0], digests[1]])
        elif s in slots and slots[s].b.corpus != slots[s].a.corpus and slots[s].a.corpus is not None:
            atoms.append(["corpus", slots[s].b.corpus, slots[s].a.corpus])
        elif s in slots and slots[s].b.embedder != slots[s].a.embedder and slots[s].a.embedder is not None:
            atoms.append(["embedder", slots[s].b.embedder, slots[s].a.embedder])
    if by_threshold and threshold_atoms is not None:
        atoms.extend(threshold_atoms())
    if not atoms:
        # The query joins the atom only for search agents, so other judges' group ids hold.
        entered = sorted({(d.doc_id, d.digest or "", *([d.query] if d.query else [])) for d in docs if d.movement == "entered"})
        left = sorted({(d.doc_id, d.digest or "", *([d.query] if d.query else [])) for d in docs if d.movement == "left"})
        if entered or left:
            atoms.append(["docs", "entered" if entered else "left", [list(k) for k in entered or left]])
    if not atoms:
        for s, (tb, ta) in sorted(view.text_digests.items()):
            if tb != ta and None not in (tb, ta):
                atoms.append(["text", view.slots.get(s), tb, ta])
    if not atoms:
        atoms.append(["parts", sorted(parts)])
    out: list[list[Any]] = []
    for x in atoms:
        if x not in out:
            out.append(x)
    return sorted(out, key=lambda x: orjson.dumps(x))


# -- which corpus documents changed -------------------------------------------------------------------------


@dataclass
class _Side:
    corpus: set[str] = field(default_factory=set)
    embedder: set[str] = field(default_factory=set)
    size: set[int] = field(default_factory=set)


def infer_corpus_changes(
    rows: Iterable[tuple[str, Mapping[str, Any] | None, Mapping[str, Any] | None, Mapping[str, str]]],
    lookup: Lookup | None = None,
) -> list[CorpusChange]:
    """The distance judges' corpus changes, from every row of both sides: (judge, before row, after row, slot → idea id).

    A corpus change is a judge whose corpus digest moved. Its documents: an id listed (as neighbour or leakage
    drop) with another digest on the other side is edited; an id listed only after is added, only before removed,
    ranked by how many neighbour sets it entered (left) and trimmed to the change in corpus size the judges record.
    Judges whose embedder held (MiniLM: a document's vector does not depend on the corpus) are read first: there, a
    document that was never listed can only appear because a document was added or removed."""
    rows = list(rows)
    sides: dict[str, tuple[_Side, _Side]] = {}
    parsed: list[tuple[str, dict[str, SlotEvidence], dict[str, SlotEvidence], Mapping[str, str], bool]] = []
    for judge, b, a, ideas in rows:
        eb, ea = read_slots(b), read_slots(a)
        parsed.append((judge, eb, ea, ideas, b is not None and a is not None))
        pair = sides.setdefault(judge, (_Side(), _Side()))
        for side, ev in ((pair[0], eb), (pair[1], ea)):
            for s in ev.values():
                if s.corpus:
                    side.corpus.add(s.corpus)
                if s.embedder:
                    side.embedder.add(s.embedder)
                if s.score and s.score.get("corpus_docs") is not None:
                    side.size.add(int(s.score["corpus_docs"]))
    moves: dict[tuple[str, str], list[str]] = {}
    for judge, (sb, sa) in sorted(sides.items()):
        if len(sb.corpus) == 1 and len(sa.corpus) == 1 and sb.corpus != sa.corpus:
            moves.setdefault((next(iter(sb.corpus)), next(iter(sa.corpus))), []).append(judge)
    out = []
    for (cb, ca), judges in sorted(moves.items()):
        stable = [j for j in judges if sides[j][0].embedder == sides[j][1].embedder]
        out.append(_corpus_change(cb, ca, judges, stable, [p for p in parsed if p[0] in judges], sides, lookup))
    return out


def _corpus_change(cb: str, ca: str, judges: list[str], stable: list[str], parsed: list, sides: dict, lookup: Lookup | None) -> CorpusChange:
    listed: tuple[dict[str, dict[str, dict]], dict[str, dict[str, dict]]] = ({}, {})  # side → id → digest → entry
    strength: tuple[dict[str, int], dict[str, int]] = ({}, {})  # id → neighbour sets it entered (after) / left (before)
    for judge, eb, ea, _, both in parsed:
        for slot in set(eb) | set(ea):
            b, a = eb.get(slot, SlotEvidence()), ea.get(slot, SlotEvidence())
            for i, ev in enumerate((b, a)):
                for (doc_id, dg, _q), d in [*ev.neighbours.items(), *ev.dropped.items()]:
                    listed[i].setdefault(doc_id, {})[dg] = d
            if both and (not stable or judge in stable):
                for k in (a.neighbours.keys() - b.neighbours.keys()) | (a.dropped.keys() - b.dropped.keys()):
                    strength[1][k[0]] = strength[1].get(k[0], 0) + 1
                for k in (b.neighbours.keys() - a.neighbours.keys()) | (b.dropped.keys() - a.dropped.keys()):
                    strength[0][k[0]] = strength[0].get(k[0], 0) + 1
    edited = sorted(i for i in set(listed[0]) & set(listed[1]) if set(listed[0][i]) != set(listed[1][i]))
    added = sorted((i for i in strength[1] if i not in listed[0]), key=lambda i: (-strength[1][i], i))
    removed = sorted((i for i in strength[0] if i not in listed[1]), key=lambda i: (-strength[0][i], i))
    size_b = next(iter(sides[judges[0]][0].size), None) if len(sides[judges[0]][0].size) == 1 else None
    size_a = next(iter(sides[judges[0]][1].size), None) if len(sides[judges[0]][1].size) == 1 else None
    if size_b is not None and size_a is not None:
        # Trim to what the sizes allow: a document pushed out of every neighbour set it was in looks removed, and
        # one a refitted TF-IDF pulled in looks added; the strongest candidates are kept.
        grew = size_a - size_b
        if grew > 0:
            added, removed = added[:grew], []
        elif grew < 0:
            added, removed = [], removed[:-grew]
        else:  # same size: edits only, or one document replaced by another
            n = 0 if edited else min(1, len(added), len(removed))
            added, removed = added[:n], removed[:n]

    def doc(i: str, side: int) -> CorpusDoc:
        dg, d = sorted(listed[side][i].items())[-1]
        drops: dict[tuple[str, str], tuple[list[str], float | None]] = {}
        kept: dict[str, int] = {}
        for judge, eb, ea, ideas, _ in parsed:
            for slot, ev in (ea if side == 1 else eb).items():
                for (doc_id, g, _q), e in ev.dropped.items():
                    if doc_id == i and g == dg:
                        got = drops.setdefault((judge, str(e.get("reason"))), ([], None))
                        sim = e.get("similarity")
                        best = got[1] if sim is None or (got[1] is not None and got[1] >= sim) else sim
                        drops[(judge, str(e.get("reason")))] = (sorted({*got[0], ideas.get(slot, slot)}), best)
                if any(k[:2] == (i, dg) for k in ev.neighbours):
                    kept[judge] = kept.get(judge, 0) + 1
        return CorpusDoc(
            doc_id=i, title=str(d.get("title") or i), year=d.get("year"), digest=dg or None,
            abstract=lookup(i, dg) if lookup is not None else None,
            dropped_by=[LeakageDrop(judge=j, reason=r, ideas=ideas, similarity=sim) for (j, r), (ideas, sim) in sorted(drops.items())],
            kept_by=dict(sorted(kept.items())),
        )

    return CorpusChange(before=cb, after=ca, judges=sorted(judges), docs_before=size_b, docs_after=size_a,
                        added=[doc(i, 1) for i in added], removed=[doc(i, 0) for i in removed], edited=[doc(i, 1) for i in edited])


def group_id(atoms: list[list[Any]]) -> str:
    """`g-` + 12 hex of the cause: the same cause gives the same id in every audit that shows it."""
    return "g-" + digest_obj(atoms)[:12]
