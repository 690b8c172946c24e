"""While the judges run, what was alive before them is left out of the cycle collector's passes (gc.freeze);
afterwards the process collects as before, and a freeze made by someone else is left as it was."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest
import yaml

from novelty_audit.judges._controls import ControlJudge
from novelty_audit.judges._run import frozen_heap
from novelty_audit.pipeline import run_stage


class Node:
    def __init__(self) -> None:
        self.me = self  # a reference cycle: only the cycle collector frees it


@pytest.fixture(autouse=True)
def collector_as_found():
    enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    assert frozen == 0, "another test left objects frozen"
    yield
    gc.unfreeze()
    (gc.enable if enabled else gc.disable)()


def test_objects_alive_before_are_frozen_inside_and_collected_again_after():
    before = Node()
    gone = weakref.ref(before)
    with frozen_heap():
        assert gc.get_freeze_count() > 0
        del before
        gc.collect()
        assert gone() is not None  # frozen: a full pass does not walk it, so its cycle is not freed yet
    assert gc.get_freeze_count() == 0
    gc.collect()
    assert gone() is None


def test_garbage_made_inside_is_collected_inside():
    with frozen_heap():
        made = Node()
        gone = weakref.ref(made)
        del made
        gc.collect()
        assert gone() is None


def test_a_freeze_made_by_someone_else_is_left_as_it_was():
    gc.freeze()
    later = Node()  # made after their freeze: theirs to leave unfrozen
    with frozen_heap():
        assert any(o is later for o in gc.get_objects()), "nothing more was frozen"
    assert gc.get_freeze_count() > 0, "their freeze was not undone"


def test_a_collector_turned_off_is_left_off_and_nothing_is_frozen():
    gc.disable()
    with frozen_heap():
        assert gc.get_freeze_count() == 0
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_an_error_inside_still_unfreezes():
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("a judge failed")
    assert gc.get_freeze_count() == 0


def test_the_judge_stage_runs_its_judges_with_the_heap_frozen_and_leaves_nothing_frozen(pinned_tiny, monkeypatch):
    root, _ = pinned_tiny
    raw = yaml.safe_load((Path(root) / "params.yaml").read_text())
    judges = {"first": {"backend": "always-first"}, "second": {"backend": "always-second"}}
    raw["judge"] = {"datasets": ["human-only"], "tasks": ["pairwise"], "progress": False, "judges": judges}
    (Path(root) / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    made: list[Node] = []  # one object each judge makes and keeps alive, as its rows are
    frozen_when_judging: list[tuple[int, bool]] = []
    judge = ControlJudge.judge

    def recording(self, *args, **kwargs):
        earlier_frozen = bool(made) and not any(o is made[-1] for o in gc.get_objects())
        frozen_when_judging.append((gc.get_freeze_count(), earlier_frozen))
        made.append(Node())
        return judge(self, *args, **kwargs)

    monkeypatch.setattr(ControlJudge, "judge", recording)
    run_stage("judge")
    (count_1, _), (count_2, first_ones_frozen) = frozen_when_judging
    assert count_1 > 0 and count_2 > 0
    assert first_ones_frozen, "what the first judge made was frozen before the second ran"
    assert gc.get_freeze_count() == 0
