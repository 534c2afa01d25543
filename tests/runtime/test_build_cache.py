"""The build cache's bounds (evokernel/runtime/build_cache.py): the per-candidate budget, LRU pruning to the
cache-wide cap, and pins that keep an entry another process uses (simulated by a second process)."""
from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from evokernel.runtime import build_cache
from evokernel.runtime.build_cache import CacheCapError, CandidateBudget, Pin

MiB = 1 << 20


def _entry(root: Path, area: str, key: str, nbytes: int, age_s: float = 0.0, out: str = "lib.so") -> Path:
    folder = root / area / key
    folder.mkdir(parents=True)
    (folder / out).write_bytes(b"\1" * nbytes)
    (folder / "facts.json").write_text("{}")
    t = time.time() - age_s
    os.utime(folder, (t, t))
    return folder


def _area_bytes(root: Path) -> int:
    return sum(build_cache.entry_bytes(root / a) for a in build_cache.AREAS)


# --- the per-candidate budget ------------------------------------------------------------------------------


def test_budget_refuses_one_library_over_its_bytes(tmp_path):
    budget = CandidateBudget(libraries=8, mb=16)
    with pytest.raises(CacheCapError, match=r"60\.0 MiB.*at most 8 libraries and 16 MiB"):
        budget.admit(tmp_path / "cpp" / "a", 60 * MiB, None)
    assert budget.charged == {}


def test_budget_refuses_the_library_that_crosses_the_total(tmp_path):
    budget = CandidateBudget(libraries=8, mb=16)
    budget.admit(tmp_path / "a", 10 * MiB, None)
    with pytest.raises(CacheCapError, match="16 MiB in all"):
        budget.admit(tmp_path / "b", 7 * MiB, None)
    budget.admit(tmp_path / "c", 6 * MiB, None)  # what fits still does
    assert budget.used == 16 * MiB


def test_budget_counts_libraries_and_charges_an_entry_once(tmp_path):
    budget = CandidateBudget(libraries=8, mb=16)
    for i in range(8):
        budget.check_count(tmp_path / str(i))
        budget.admit(tmp_path / str(i), 1000, None)
    budget.admit(tmp_path / "3", 1000, None)  # the same library again: already charged
    budget.check_count(tmp_path / "3")
    with pytest.raises(CacheCapError, match="too many native libraries"):
        budget.check_count(tmp_path / "8")
    with pytest.raises(CacheCapError, match="too many native libraries"):
        budget.admit(tmp_path / "8", 1000, None)
    assert len(budget.charged) == 8


def test_the_budget_holds_its_pins_until_released(tmp_path):
    entry = _entry(tmp_path, "cpp", "k" * 32, 10)
    budget = CandidateBudget()
    budget.admit(entry, 10, Pin.take(entry))
    assert not build_cache.evict(entry)
    budget.release()
    assert build_cache.evict(entry) and not entry.exists()


# --- the cache-wide cap --------------------------------------------------------------------------------------


def test_prune_evicts_least_recently_used_down_to_the_cap(tmp_path):
    old = [_entry(tmp_path, "cpp", f"{i:032x}", MiB, age_s=1000 - i) for i in range(6)]
    new = _entry(tmp_path, "inline", "f" * 32, MiB, age_s=0)
    assert build_cache.lookup(old[0], "lib.so") is not None  # used just now: the most recent
    report = build_cache.prune(tmp_path, cap=4 * MiB)
    assert report.evicted == 4 and report.after <= 4 * MiB * build_cache.LOW_WATER
    assert [e.exists() for e in old] == [True, False, False, False, False, True]  # 3 of 7 MiB stay
    assert new.exists()
    assert _area_bytes(tmp_path) == report.after


def test_prune_touches_only_the_build_areas(tmp_path):
    weights = tmp_path / "models" / "model.gguf"
    weights.parent.mkdir()
    weights.write_bytes(b"\0" * (2 * MiB))
    _entry(tmp_path, "ascend_sim/kernels", "a" * 32, MiB, age_s=100)
    report = build_cache.prune(tmp_path, cap=MiB // 2)
    assert report.evicted == 1 and weights.exists()


def test_no_cap_no_pruning(tmp_path):
    e = _entry(tmp_path, "cpp", "a" * 32, MiB, age_s=100)
    assert build_cache.prune(tmp_path, cap=0).evicted == 0 and e.exists()


def test_the_cap_is_a_setting(monkeypatch):
    monkeypatch.delenv(build_cache.CAP_ENV, raising=False)
    assert build_cache.cap_bytes() == 2048 * MiB
    monkeypatch.setenv(build_cache.CAP_ENV, "300")
    assert build_cache.cap_bytes() == 300 * MiB
    monkeypatch.setenv(build_cache.CAP_ENV, "lots")
    with pytest.raises(ValueError, match=build_cache.CAP_ENV):
        build_cache.cap_bytes()


def test_a_dead_builds_work_folder_goes_a_running_one_stays(tmp_path):
    dead = tmp_path / "cpp" / ("a" * 32 + ".x1")
    running = tmp_path / "cpp" / ("b" * 32 + ".x2")
    for folder in (dead, running):
        folder.mkdir(parents=True)
        (folder / "kernel.o").write_bytes(b"\0" * 1000)
        t = time.time() - 2 * build_cache.STALE_WORK_S
        os.utime(folder, (t, t))
    pin = Pin.take(running)  # its build holds it
    build_cache.prune(tmp_path, cap=1 << 40)
    assert not dead.exists() and running.exists()
    pin.close()


def _pin_in_another_process(folder: str, ready, done) -> None:
    pin = Pin.take(Path(folder))
    assert pin is not None
    ready.set()
    done.wait(30)
    pin.close()


def test_eviction_never_removes_an_entry_another_process_uses(tmp_path):
    used = _entry(tmp_path, "cpp", "a" * 32, MiB, age_s=1000)  # the oldest: first in line
    other = _entry(tmp_path, "cpp", "b" * 32, MiB, age_s=500)
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_pin_in_another_process, args=(str(used), ready, done))
    proc.start()
    try:
        assert ready.wait(60)
        report = build_cache.prune(tmp_path, cap=MiB // 2)
        assert used.exists() and (used / "lib.so").stat().st_size == MiB
        assert not other.exists() and report.pinned == 1
    finally:
        done.set()
        proc.join(30)
    assert build_cache.prune(tmp_path, cap=MiB // 2).evicted == 1 and not used.exists()


def test_a_lookup_of_an_evicted_entry_misses(tmp_path):
    entry = _entry(tmp_path, "cpp", "a" * 32, 10)
    fd = os.open(entry, os.O_RDONLY | os.O_DIRECTORY)  # a reader that opened it just before the eviction
    try:
        assert build_cache.evict(entry)
        assert build_cache.lookup(entry, "lib.so") is None
        # and one that locks the folder after the evictor renamed it sees that it is gone
        os.makedirs(entry)
        (entry / "lib.so").write_bytes(b"new")
        import fcntl
        fcntl.flock(fd, fcntl.LOCK_SH)
        assert os.fstat(fd).st_ino != os.stat(entry).st_ino
    finally:
        os.close(fd)
    assert build_cache.lookup(entry, "lib.so") is not None  # the rebuilt entry is found


def test_publishes_keep_a_running_size_and_prune_when_it_crosses_the_cap(tmp_path, monkeypatch):
    monkeypatch.setenv(build_cache.CAP_ENV, "2")
    for i in range(4):
        _entry(tmp_path, "cpp", f"{i:032x}", MiB, age_s=100 - i)
    build_cache._COUNTS.pop(str(tmp_path), None)
    assert build_cache.note_use(tmp_path, None) is not None  # the process's first use: walked and pruned
    size = int((tmp_path / build_cache.SIZE_FILE).read_text())
    assert size == _area_bytes(tmp_path) <= 2 * MiB * build_cache.LOW_WATER
    assert build_cache.note_use(tmp_path, 1000) is None  # under the cap: no walk, the size follows
    assert int((tmp_path / build_cache.SIZE_FILE).read_text()) == size + 1000
    _entry(tmp_path, "cpp", "e" * 32, MiB)  # (published, say, by another process)
    report = build_cache.note_use(tmp_path, MiB)
    assert report is not None and report.evicted >= 1 and _area_bytes(tmp_path) <= 2 * MiB


def test_the_running_size_is_recounted(tmp_path, monkeypatch):
    monkeypatch.setenv(build_cache.CAP_ENV, "100")
    build_cache._COUNTS.pop(str(tmp_path), None)
    build_cache.note_use(tmp_path, None)
    _entry(tmp_path, "inline", "a" * 32, MiB)  # a build the running size never heard of
    for _ in range(build_cache.RECOUNT_EVERY - 1):
        assert build_cache.note_use(tmp_path, 0) is None
    assert build_cache.note_use(tmp_path, 0) is not None
    assert int((tmp_path / build_cache.SIZE_FILE).read_text()) == _area_bytes(tmp_path) > MiB
