"""The "Your ideas" section: each candidate set's win rate against human ideas, from artifacts/metrics/candidates.json.

Per set: one sentence with the result and its band (min–max of the win rate over the judge configurations that are
not controls, ties beside, items), a dot-and-interval chart of the win rate per judge with that band shaded and the
tie rate beside it, and a table (the same rows `novelty-audit export table candidates` writes). Head-to-head sets
follow with their own table. Values are read, never recomputed. Without candidate sets there is no section.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from . import _charts
from ._blocks import Block, Figure, Heading, Para, Table

__all__ = ["CANDIDATES_ID", "candidate_blocks", "result_sentence"]

CANDIDATES_ID = "your-ideas"
_HEADER = ["judge", "win rate vs D+", "win rate vs D- (floor)", "tie rate", "coverage", "pairs"]
_H2H_HEADER = ["judge", "win rate of the first set", "tie rate", "coverage", "pairs"]
_INTRO = ("A candidate set is a file of ideas from an idea-generation system (novelty-audit candidates add). Each idea "
          "meets a human idea of its area from the top of the reviews (D+, the benchmark's high-novelty side) and, as a "
          "floor, one from the bottom (D-). The win rate is the share of pairs whose verdict is the candidate: a tie or "
          "a missing verdict is not a win, and ties are shown on their own. The band is the spread of the win rate over "
          "the judge configurations (controls left out): one number from one judge is one point in it. Intervals: "
          "Wilson, 95%.")

_Figure = Callable[[str, str, str, "Callable[[], Any] | None", str, str], Figure]


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", s)


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * float(x):.0f}%"


def _range(lo: float | None, hi: float | None) -> str:
    if lo is None or hi is None:
        return "—"
    return _pct(lo) if round(100 * lo) == round(100 * hi) else f"{100 * lo:.0f}–{100 * hi:.0f}%"


def _with_interval(d: Mapping[str, Any], m: str) -> str:
    if d.get(m) is None:
        return "—"
    lo, hi = d.get(f"{m}_wilson_low"), d.get(f"{m}_wilson_high")
    return f"{100 * d[m]:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]" if lo is not None and hi is not None else f"{100 * d[m]:.1f}%"


def result_sentence(name: str, entry: Mapping[str, Any], against: str = "top-decile human ideas (D+)") -> str:
    """'NAME wins 31–58% against … across 8 judge configurations; ties 0–12%; floor (D-) 40–70%; 30 items.'"""
    spread = entry.get("all_judges") or {}
    judges = entry.get("judges") or {}
    configs = spread.get("configurations") or []
    n = max((int(d.get("n_pairs", 0)) for d in judges.values()), default=0)
    if not configs:
        return f"{name}: no judge besides the controls judged this set ({n} items)."
    lows = [judges[j]["candidate_win_rate_low"] for j in configs if judges[j].get("candidate_win_rate_low") is not None]
    floor = f"; against bottom human ideas (D-) {_range(min(lows), max(lows))}" if lows else ""
    return (f"{name} wins {_range(spread.get('candidate_win_rate_min'), spread.get('candidate_win_rate_max'))} against "
            f"{against} across {len(configs)} judge configuration{'s' if len(configs) != 1 else ''}; ties "
            f"{_range(spread.get('tie_rate_min'), spread.get('tie_rate_max'))}{floor}; {n} items.")


def candidate_rows(entry: Mapping[str, Any], controls: set[str]) -> list[list[str]]:
    """The table rows of one set: judges first, controls after (the rows of `export table candidates` too)."""
    judges = entry.get("judges") or {}
    order = sorted(judges, key=lambda j: (j in controls, -(judges[j].get("candidate_win_rate") or 0.0), j))
    return [[j + (" (control)" if j in controls else ""), _with_interval(judges[j], "candidate_win_rate"),
             _with_interval(judges[j], "candidate_win_rate_low"), _with_interval(judges[j], "tie_rate"),
             _pct(judges[j].get("coverage")), str(judges[j].get("n_pairs", "—"))] for j in order]


def _set_blocks(name: str, entry: Mapping[str, Any], controls: set[str], figure: _Figure) -> list[Block]:
    slug = _slug(name)
    judges = entry.get("judges") or {}
    spread = entry.get("all_judges") or {}
    band = ((spread["candidate_win_rate_min"], spread["candidate_win_rate_max"])
            if spread.get("candidate_win_rate_min") is not None else None)
    rows = [{"label": j, "kind": "control" if j in controls else "measured", "candidate_win_rate": d["candidate_win_rate"],
             "ci_low": d.get("candidate_win_rate_wilson_low", d["candidate_win_rate"]),
             "ci_high": d.get("candidate_win_rate_wilson_high", d["candidate_win_rate"]), "tie_rate": d.get("tie_rate", 0.0)}
            for j, d in judges.items() if d.get("candidate_win_rate") is not None]
    rows.sort(key=lambda r: (r["kind"] == "control", -r["candidate_win_rate"], r["label"]))
    blocks: list[Block] = [
        Heading(3, f"candidates-{slug}", name),
        Para(result_sentence(name, entry)),
        figure(f"candidates-chart-{slug}", f"Win rate of {name} against D+ human ideas", f"candidates_{slug}",
               (lambda r=rows, b=band: _charts.candidate_chart(r, b)) if rows else None, "no judge judged this set", ""),
        Table(f"candidates-table-{slug}", _HEADER, candidate_rows(entry, controls), cls="nums"),
    ]
    for sweep, s in sorted((entry.get("sweeps") or {}).items()):
        dis = s.get("disagreement_mean")
        blocks.append(Para(f"Sweep {sweep} ({len(s.get('configurations') or [])} configurations): win rate "
                           f"{_range(s.get('candidate_win_rate_min'), s.get('candidate_win_rate_max'))}, ties "
                           f"{_range(s.get('tie_rate_min'), s.get('tie_rate_max'))}; the configurations disagree on "
                           + (f"{_pct(dis)} of pairs on average (at most {_pct(s.get('disagreement_max'))})." if dis is not None
                              else "no common pair (not measured).")))
    return blocks


def candidate_blocks(candidates: Mapping[str, Any], controls: set[str], figure: _Figure) -> list[Block]:
    """The section from candidates.json ({dataset: {kind, judges, sweeps, all_judges}}); [] without candidate sets.
    `controls`: the control judges' names; `figure`: the report's chart renderer."""
    sets = sorted(n for n, e in candidates.items() if e.get("kind") == "candidates")
    h2h = sorted(n for n, e in candidates.items() if e.get("kind") == "head-to-head")
    if not sets and not h2h:
        return []
    blocks: list[Block] = [Heading(2, CANDIDATES_ID, "Your ideas"), Para(_INTRO)]
    for name in sets:
        blocks += _set_blocks(name, candidates[name], controls, figure)
    for name in h2h:
        blocks += [Heading(3, f"candidates-{_slug(name)}", f"{name} (head to head)"),
                   Para(result_sentence(name, candidates[name], against="the other set's ideas of the same area")),
                   Table(f"candidates-table-{_slug(name)}", _H2H_HEADER, [r[:2] + r[3:] for r in candidate_rows(candidates[name], controls)],
                         cls="nums")]
    return blocks
