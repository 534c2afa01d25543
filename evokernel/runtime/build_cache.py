"""The native build cache: what a build leaves on disk, bounded per candidate and as a whole.

Every native build (the cpu backend's ``load_cpp`` and ``load_inline`` libraries, the verifier's pybind11 binding
objects, ascend-sim's runtime object and kernel/host libraries) is kept as one *entry*, a folder
``<cache>/<area>/<key>/`` holding the library (or object) and its facts file; ``<key>`` is a hash of everything
that determines the build (native_build.py). The cache is shared by every run, every verifier of a pool and the
user's own ``load_cpp`` calls on the host; nothing in it is needed once its process has loaded it, so it may be
pruned at any time, except an entry a process is using. Two bounds, each by construction:

* **per candidate** (:class:`CandidateBudget`, one per verdict): at most ``CANDIDATE_LIBRARIES`` libraries and
  ``CANDIDATE_MB`` MiB in all. A build over the budget is refused (a compile failure that names the cap) before it
  is published: nothing of it stays. Red-team round 7 left 60 MiB per verdict with one zero-initialised array,
  480 MiB with eight module-level ``load_cpp`` calls (the build's file size limit bounds each file, not what a
  verdict leaves). Honest candidates are far below: measured on this project's cache, a ``load_cpp`` library is
  15 KiB (median; largest 1.9 MiB), a ``load_inline`` one 0.24 MiB (largest 0.8 MiB), an ascend-sim kernel or
  host library 0.44 MiB.
* **as a whole** (:func:`prune`): the build areas together hold at most ``$EVOKERNEL_BUILD_CACHE_MB`` MiB
  (default 2048); over it, the least recently used entries are evicted (down to 90% of the cap). The cache is not
  walked on every build: every publish adds its bytes to a running size shared by all processes
  (``<cache>/build_cache.size``, under an flock) and a walk happens when it crosses the cap, at a process's first
  use of the cache, and after every ``RECOUNT_EVERY`` publishes of a process (to count what the running size
  missed).

Concurrency (several verifiers of a pool, Ray workers, the user's Python share one cache): an entry in use is
*pinned*, a shared ``flock`` on its folder held by :class:`Pin` (a build holds one on its work folder from its
creation, and the lock follows the folder when it is published by an atomic rename). Eviction takes the exclusive
lock without waiting (a pinned entry is skipped), renames the folder out of the way (a lookup from then on misses
and builds again) and deletes it. A lookup pins the folder first and then checks that the name still refers to
the folder it locked, so an entry evicted between the two is a miss, never a library deleted under its reader.
Only the build areas (``AREAS``) are touched: the cache folder also holds model weights and server state.

Importable without torch.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

# the build areas under the cache folder (every _build_into_cache call names one)
AREAS = ("cpp", "inline", "binding", "ascend_sim/runtime", "ascend_sim/kernels", "ascend_sim/hosts")
CAP_ENV = "EVOKERNEL_BUILD_CACHE_MB"
DEFAULT_CAP_MB = 2048
LOW_WATER = 0.9  # a prune evicts down to this fraction of the cap (not to just under it: fewer prunes)
CANDIDATE_LIBRARIES = 8
CANDIDATE_MB = 16
STALE_WORK_S = 3600.0  # a work folder (``<key>.<random>``) this old and not pinned is a dead build's leftover
EVICTED = ".evicted-"  # prefix of an entry being deleted (never a key)


class CacheCapError(Exception):
    """A build refused by a cap of the cache (native_build turns it into a CompileError naming the cap)."""


def cap_bytes() -> int:
    """The cache-wide cap: ``$EVOKERNEL_BUILD_CACHE_MB`` MiB (default 2048; 0 turns pruning off)."""
    raw = os.environ.get(CAP_ENV, "").strip()
    if not raw:
        return DEFAULT_CAP_MB << 20
    try:
        mb = float(raw)
    except ValueError:
        raise ValueError(f"{CAP_ENV}={raw!r}: expected a number of MiB (0: no cap)") from None
    if mb < 0:
        raise ValueError(f"{CAP_ENV}={raw!r}: expected a number of MiB >= 0 (0: no cap)")
    return int(mb * (1 << 20))


# --- pins ---------------------------------------------------------------------------------------------------

class Pin:
    """A shared lock on an entry's (or a work) folder: eviction leaves it alone while the pin is open."""

    def __init__(self, fd: int):
        self._fd: int | None = fd

    @classmethod
    def take(cls, folder: Path) -> "Pin | None":
        """Pin ``folder`` if it exists (and is still the folder of that name once locked); None otherwise."""
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_SH)  # waits only while an evictor holds it (a rename)
            now, locked = os.stat(folder), os.fstat(fd)
            if (now.st_ino, now.st_dev) != (locked.st_ino, locked.st_dev):
                raise FileNotFoundError(folder)  # evicted (renamed away) between open and lock
        except OSError:
            os.close(fd)
            return None
        return cls(fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # releases the lock
            self._fd = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # noqa: BLE001 - at interpreter exit; the kernel drops the lock with the descriptor
            pass


def lookup(entry: Path, out_name: str) -> Pin | None:
    """The entry pinned, if it holds ``out_name``; marks it used (its folder's mtime: the LRU order)."""
    pin = Pin.take(entry)
    if pin is None:
        return None
    if not (entry / out_name).exists():
        pin.close()
        return None
    try:
        os.utime(entry)
    except OSError:
        pass
    return pin


def entry_bytes(folder: Path) -> int:
    """What an entry (or a work folder) holds on disk: the apparent size of its files."""
    total = 0
    try:
        with os.scandir(folder) as it:
            for e in it:
                try:
                    if e.is_dir(follow_symlinks=False):
                        total += entry_bytes(Path(e.path))
                    else:
                        total += e.stat(follow_symlinks=False).st_size
                except OSError:
                    continue
    except OSError:
        return 0
    return total


def evict(folder: Path) -> bool:
    """Delete ``folder`` unless it is pinned; True when it was evicted."""
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return False
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # in use
        try:
            now, locked = os.stat(folder), os.fstat(fd)
        except OSError:
            return False
        if (now.st_ino, now.st_dev) != (locked.st_ino, locked.st_dev):
            return False
        gone = folder.with_name(f"{EVICTED}{folder.name}-{uuid.uuid4().hex[:8]}")
        try:
            os.rename(folder, gone)  # from here on a lookup misses
        except OSError:
            return False
    finally:
        os.close(fd)
    shutil.rmtree(gone, ignore_errors=True)
    return True


# --- the cache-wide cap -------------------------------------------------------------------------------------

@dataclass
class PruneReport:
    before: int = 0  # bytes in the build areas before
    after: int = 0
    evicted: int = 0
    pinned: int = 0  # entries that would have gone but were in use


def prune(root: Path, cap: int | None = None) -> PruneReport:
    """Evict least recently used entries of the build areas under ``root`` while they hold more than ``cap``
    bytes (default :func:`cap_bytes`; 0: no cap); removes dead builds' work folders on the way."""
    cap = cap_bytes() if cap is None else cap
    report = PruneReport()
    entries: list[tuple[float, int, Path]] = []
    now = time.time()
    for area in AREAS:
        folder = root / area
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            path = folder / name
            try:
                mtime = os.stat(path).st_mtime
            except OSError:
                continue
            if name.startswith(EVICTED):  # an evictor died mid-delete
                if now - mtime > STALE_WORK_S:
                    shutil.rmtree(path, ignore_errors=True)
                continue
            size = entry_bytes(path)
            if "." in name:  # a work folder: pinned by its build while it runs
                if now - mtime > STALE_WORK_S and evict(path):
                    continue
                report.before += size
                continue
            entries.append((mtime, size, path))
            report.before += size
    total = report.before
    if cap and total > cap:
        target = int(cap * LOW_WATER)
        for _, size, path in sorted(entries, key=lambda e: e[0]):
            if total <= target:
                break
            if evict(path):
                total -= size
                report.evicted += 1
            else:
                report.pinned += 1
    report.after = total
    return report


SIZE_FILE = "build_cache.size"  # <cache>/build_cache.size: the build areas' bytes, kept by every process
RECOUNT_EVERY = 256  # publishes after which a process walks the cache again (what the running size missed)
_COUNTS: dict[str, int] = {}  # cache root -> builds this process published since it last walked it
_COUNTS_LOCK = threading.Lock()


def _size(root: Path, delta: int, absolute: bool = False) -> int:
    """Add ``delta`` to the cache's running size (or set it, ``absolute``), under an flock; returns it."""
    root.mkdir(parents=True, exist_ok=True)
    fd = os.open(root / SIZE_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            total = int(os.read(fd, 64).decode() or 0)
        except ValueError:
            total = 0
        total = delta if absolute else max(0, total + delta)
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, str(total).encode())
        return total
    finally:
        os.close(fd)


def note_use(root: Path, published: int | None) -> PruneReport | None:
    """Called on every lookup (``published`` None) and publish (its bytes). The first use of ``root`` in a process
    walks it (prunes, and sets the running size); a publish adds its bytes to the running size (one small locked
    file, no walk) and prunes when that crosses the cap, or after RECOUNT_EVERY publishes of this process (what
    the running size missed: another version's builds, folders deleted by hand)."""
    key = str(root)
    with _COUNTS_LOCK:
        first = key not in _COUNTS
        if first:
            _COUNTS[key] = 0
        if published is not None:
            _COUNTS[key] += 1
        due = first or _COUNTS[key] >= RECOUNT_EVERY
        if due:
            _COUNTS[key] = 0
    cap = cap_bytes()
    if not due and published is not None:
        due = bool(cap) and _size(root, published) > cap
    if not due:
        return None
    report = prune(root, cap)
    _size(root, report.after, absolute=True)  # publishes racing the walk are counted at the next one
    return report


# --- the per-candidate cap ----------------------------------------------------------------------------------

class CandidateBudget:
    """What one candidate's builds may leave in the cache: at most ``libraries`` entries, ``mb`` MiB in all.

    Counted whether a build is fresh or found in the cache (the verdict must not depend on what earlier candidates
    left), once per entry. It also keeps the candidate's entries pinned until it is dropped (the end of the verdict):
    a library is read (or run, ascend-sim's host library) after the build returns."""

    def __init__(self, libraries: int = CANDIDATE_LIBRARIES, mb: int = CANDIDATE_MB):
        self.libraries = libraries
        self.limit = mb << 20
        self.charged: dict[str, int] = {}  # entry folder -> bytes
        self._pins: list[Pin] = []
        self._lock = threading.Lock()  # ascend-sim builds the host library beside a kernel library

    @property
    def used(self) -> int:
        return sum(self.charged.values())

    def _describe(self) -> str:
        return (f"a candidate's native builds may leave at most {self.libraries} libraries and "
                f"{self.limit >> 20} MiB in all in the verifier's build cache")

    def check_count(self, entry: Path) -> None:
        """Before building: refuse a new library once the candidate has its ``libraries``."""
        with self._lock:
            if str(entry) not in self.charged and len(self.charged) >= self.libraries:
                raise CacheCapError(f"too many native libraries: {self._describe()} (build each one once, at "
                                    "import; put several functions in one source)")

    def admit(self, entry: Path, nbytes: int, pin: Pin | None) -> None:
        """Charge an entry of ``nbytes`` (raises CacheCapError over the caps) and keep its pin."""
        with self._lock:
            if str(entry) not in self.charged:
                if len(self.charged) >= self.libraries:
                    raise CacheCapError(f"too many native libraries: {self._describe()} (build each one once, at "
                                        "import; put several functions in one source)")
                if self.used + nbytes > self.limit:
                    raise CacheCapError(
                        f"the built library is {nbytes / 2**20:.1f} MiB and the candidate's earlier ones "
                        f"{self.used / 2**20:.1f} MiB: {self._describe()} (no huge arrays in the source: allocate "
                        "large buffers at run time)")
                self.charged[str(entry)] = nbytes
            if pin is not None:
                self._pins.append(pin)

    def release(self) -> None:
        with self._lock:
            for pin in self._pins:
                pin.close()
            self._pins.clear()
