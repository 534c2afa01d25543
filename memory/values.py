"""Stage-specific values of memory items (paper §3.3, Eq. 4-6).

Every memory item carries two values: Q1 (drafting: how much it helps produce a *feasible*
kernel) and Q2 (refining: how much it helps make a kernel *faster*). After each attempt, every
item that was in the context (and, when refining, the start point) is updated by the
constant-step Monte-Carlo rule

    Q <- Q + alpha * (r - Q)

with the stage's reward:

* drafting: r1 = +1 if the verdict is feasible, else -1 (used raw);
* refining: r2 = -1 if infeasible, else tanh(log b - log latency), b the task's best latency so
  far; r2 is normalised online, PopArt-style (only the target-normalisation half: there is no
  network output to preserve), before it is used.

The paper leaves the normalisation safeguards open. Our choices, and why:

* **Statistics**: Welford running mean/variance over every r2 of the run (global, not per task:
  memory is shared across tasks, so the scale of "good" must be shared too).
* **Warm-up**: the first ``warmup`` (5) rewards pass through un-normalised; a z-score of one or two
  samples is noise.
* **Deviation floor**: sigma >= ``sigma_floor`` (0.1); when every refinement lands at the same
  reward, dividing by ~0 would turn tiny differences into huge ones.
* **Clipping**: r̂2 is clipped to [-``clip``, ``clip``] (3). Together with Q initialised in that
  range and 0 < alpha <= 1, every Q stays in [-clip, clip] (a convex combination of bounded
  numbers), which is what the boundedness/convergence argument needs. Q1 stays in [-1, 1].

**The ledger is the truth.** Each attempt's updates are one JSON line of an append-only file
(written with flush + fsync), keyed by the attempt id. Item values and the normaliser state are a
fold over the ledger, so a run killed at any point resumes consistently: an attempt whose line is
complete is never applied twice, a torn last line (a crash mid-write) is discarded and the attempt
is redone, and a store that mirrors the values (Chroma metadata) can always be rebuilt from it.

**Several processes can share one ledger** (e.g. parallel runs on one memory served by `chroma run`).
Every read-and-append is done under an exclusive ``fcntl.flock`` on ``<ledger>.lock``: first fold the
lines other processes appended since this process last read (it remembers its byte offset), then
compute the entry from that up-to-date state and append it. All processes therefore fold the same
lines in the same (file) order, and every logged ``q_before`` is the value the fold gives at that
line. ``refresh()`` folds new lines without writing. A line torn by a writer that died holding the
lock is cut off by the next process to take the lock (it can only be the tail; truncating the tail
keeps every other process's offset valid).

**The fold is fed bytes** (:class:`ValueFold`): the file's, here, or the lines a process pulls from the
ledger's single owner on a Ray cluster, where flock over a network filesystem is no safe guarantee
(:mod:`evokernel.memory.value_service`: the owner is a ``ValueLedger`` like this one, its clients fold the
lines it sends by byte offset, so they hold exactly the fold of the file).

**Imports**: an entry ``{"attempt_id": "import:...", "stage": "import", "set": {item: {"q1", "q2",
"n1", "n2"}}}`` sets items' values outright (used when a memory is imported from an export file);
it is folded like any other line and, like them, applied at most once.
"""
from __future__ import annotations

import contextlib
import copy
import fcntl
import json
import math
import numbers
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

DRAFT = "draft"  # stage 1, Q1
REFINE = "refine"  # stage 2, Q2
STAGES = (DRAFT, REFINE)
IMPORT = "import"  # a ledger entry that sets values (memory import), not a reward
VALUE_FIELDS = ("q1", "q2", "n1", "n2", "last_r1", "last_r2")


def drafting_reward(feasible: bool) -> float:
    """r1: +1 for a feasible kernel, -1 otherwise."""
    return 1.0 if feasible else -1.0


def refining_reward(feasible: bool, latency_ms: float | None, best_so_far_ms: float) -> float:
    """r2: -1 if infeasible, else tanh(log b - log latency): positive iff faster than the best so far."""
    if not feasible or latency_ms is None or not latency_ms > 0:
        return -1.0
    if not best_so_far_ms > 0:
        raise ValueError(f"best-so-far latency must be positive, got {best_so_far_ms!r}")
    return math.tanh(math.log(best_so_far_ms) - math.log(latency_ms))


@dataclass
class RewardNormalizer:
    """Online normalisation of r2 (Welford) with warm-up, a deviation floor and clipping."""

    warmup: int = 5
    sigma_floor: float = 0.1
    clip: float = 3.0
    n: int = 0
    mean: float = 0.0
    m2: float = 0.0

    @property
    def sigma(self) -> float:
        var = self.m2 / (self.n - 1) if self.n > 1 else 0.0
        return max(math.sqrt(var), self.sigma_floor)

    def normalize(self, r: float) -> float:
        """Fold ``r`` into the statistics, then return its normalised value r̂."""
        if not math.isfinite(r):
            raise ValueError(f"reward must be finite, got {r!r}")
        self.n += 1
        delta = r - self.mean
        self.mean += delta / self.n
        self.m2 += delta * (r - self.mean)
        z = r if self.n <= self.warmup else (r - self.mean) / self.sigma
        return max(-self.clip, min(self.clip, z))


@dataclass
class ItemValue:
    """Q1/Q2 of one memory item, with visit counts and the last reward each stage gave it."""

    q1: float = 0.0
    q2: float = 0.0
    n1: int = 0
    n2: int = 0
    last_r1: float | None = None
    last_r2: float | None = None

    def q(self, stage: str) -> float:
        return self.q1 if stage == DRAFT else self.q2

    def update(self, stage: str, reward: float, alpha: float) -> tuple[float, float]:
        """Q <- Q + alpha (r - Q); returns (Q before, Q after)."""
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}")
        if not 0 < alpha <= 1:
            raise ValueError(f"alpha must be in (0, 1], got {alpha}")
        before = self.q(stage)
        after = before + alpha * (reward - before)
        if stage == DRAFT:
            self.q1, self.n1, self.last_r1 = after, self.n1 + 1, reward
        else:
            self.q2, self.n2, self.last_r2 = after, self.n2 + 1, reward
        return before, after


@dataclass
class ValueState:
    """Item values and the r2 normaliser: everything the ledger folds into."""

    items: dict[str, ItemValue] = field(default_factory=dict)
    normalizer: RewardNormalizer = field(default_factory=RewardNormalizer)
    attempts: set[str] = field(default_factory=set)

    def value(self, item_id: str) -> ItemValue:
        return self.items.setdefault(item_id, ItemValue())


def check_update(stage: str, reward: float, alpha: float) -> tuple[float, float]:
    """(reward, alpha) as floats; ValueError for an update the fold could not apply (before anything is written)."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}")
    if isinstance(reward, bool) or not isinstance(reward, numbers.Real) or not math.isfinite(reward):
        raise ValueError(f"reward must be a finite number, got {reward!r}")
    if isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not 0 < alpha <= 1:
        raise ValueError(f"alpha must be in (0, 1], got {alpha!r}")
    return float(reward), float(alpha)


def clean_values(values: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The rows of an ``import`` entry, checked: item id -> any of q1, q2, n1, n2, last_r1, last_r2."""
    if not isinstance(values, Mapping):
        raise ValueError(f"values must map item ids to value fields, got {type(values).__name__}")
    clean: dict[str, dict[str, Any]] = {}
    for item, vals in values.items():
        if not isinstance(vals, Mapping):
            raise ValueError(f"values of {item!r} must be a mapping of value fields, got {type(vals).__name__}")
        unknown = set(vals) - set(VALUE_FIELDS)
        if unknown:
            raise ValueError(f"unknown value fields for {item!r}: {sorted(unknown)}")
        row: dict[str, Any] = {}
        for k, v in vals.items():
            if v is None:
                if k.startswith("last_"):
                    row[k] = None
                continue
            if k in ("n1", "n2"):
                if int(v) < 0:
                    raise ValueError(f"{item!r}: {k} must be >= 0, got {v!r}")
                row[k] = int(v)
            else:
                fv = float(v)
                if not math.isfinite(fv):
                    raise ValueError(f"{item!r}: {k} must be finite, got {v!r}")
                row[k] = fv
        clean[str(item)] = row
    return clean


def import_id(attempt_id: str) -> str:
    """The attempt id of an ``import`` entry (``import:`` prefixed)."""
    if not isinstance(attempt_id, str) or not attempt_id:
        raise ValueError(f"an import needs an id, got {attempt_id!r}")
    return attempt_id if attempt_id.startswith(IMPORT + ":") else f"{IMPORT}:{attempt_id}"


class ValueFold:
    """The fold of ledger lines into a :class:`ValueState`, fed bytes: from the file (:class:`ValueLedger`) or
    from the ledger's owner (:mod:`evokernel.memory.value_service`). ``offset`` counts the bytes folded; only
    complete lines are folded, so ``offset`` is always at a line boundary of the ledger."""

    def __init__(self, normalizer: RewardNormalizer | None = None):
        # the normaliser's configuration (warm-up, floor, clip); its statistics come from the fold
        self._normalizer0 = copy.deepcopy(normalizer or RewardNormalizer())
        self.state = ValueState(normalizer=copy.deepcopy(self._normalizer0))
        self.offset = 0

    def reset(self) -> None:
        self.state = ValueState(normalizer=copy.deepcopy(self._normalizer0))
        self.offset = 0

    def feed(self, data: bytes) -> tuple[int, int, bytes]:
        """Fold the complete lines of ``data`` (the ledger's bytes from ``offset`` on); returns (lines folded,
        lines that are not ledger entries (skipped), the incomplete tail after the last newline (not folded,
        not counted in ``offset``))."""
        end = data.rfind(b"\n")
        complete, tail = data[:end + 1], data[end + 1:]
        folded = bad = 0
        for raw in complete.split(b"\n"):
            if not raw.strip():
                continue
            entry = _parse(raw)
            if entry is None:
                bad += 1
                continue
            self.apply(entry)
            folded += 1
        self.offset += len(complete)
        return folded, bad, tail

    def apply(self, entry: dict[str, Any]) -> None:
        """Fold one entry (a parsed ledger line)."""
        self.state.attempts.add(entry["attempt_id"])
        if entry["stage"] == IMPORT:
            for item, vals in entry["set"].items():
                v = self.state.value(item)
                for k in VALUE_FIELDS:
                    if k in vals:
                        setattr(v, k, vals[k])
            return
        if entry["stage"] == REFINE:
            # replaying the raw rewards in order reproduces the normaliser exactly
            self.state.normalizer.normalize(entry["r"])
        for u in entry["updates"]:
            v = self.state.value(u["item"])
            v.update(entry["stage"], entry["r_hat"], entry["alpha"])

    def entry(self, attempt_id: str, stage: str, reward: float, items: Iterable[str], alpha: float, task: str = "",
              iteration: int = 0) -> dict[str, Any]:
        """The ledger entry of one attempt's reward on top of the current state (the state is not changed):
        every logged ``q_before`` is the fold's value now."""
        reward, alpha = check_update(stage, reward, alpha)
        if not isinstance(attempt_id, str) or not attempt_id:
            raise ValueError(f"an attempt id is required, got {attempt_id!r}")
        if isinstance(items, (str, bytes)):
            raise ValueError(f"items must be a list of item ids, got the string {items!r}")
        ids = list(dict.fromkeys(items))  # each item once, in order
        if not all(isinstance(i, str) and i for i in ids):
            raise ValueError(f"item ids must be non-empty strings, got {ids!r}")
        normalizer = copy.deepcopy(self.state.normalizer)
        r_hat = normalizer.normalize(reward) if stage == REFINE else reward
        updates = []
        for item in ids:
            before = self.state.items[item].q(stage) if item in self.state.items else 0.0
            updates.append({"item": item, "q_before": before, "q_after": before + alpha * (r_hat - before)})
        return {"attempt_id": attempt_id, "task": task, "iteration": iteration, "stage": stage, "r": reward,
                "r_hat": r_hat, "alpha": alpha, "updates": updates}

    # --- reading the state ---------------------------------------------------------------------

    def applied(self, attempt_id: str) -> bool:
        return attempt_id in self.state.attempts

    def get(self, item_id: str) -> ItemValue | None:
        return self.state.items.get(item_id)

    def q(self, item_id: str, stage: str) -> float:
        v = self.state.items.get(item_id)
        return v.q(stage) if v is not None else 0.0

    def values(self) -> dict[str, dict[str, Any]]:
        return {k: asdict(v) for k, v in self.state.items.items()}


class FoldReader:
    """Reading a ledger's values from its fold (``self.fold``): shared by the file's ledger and the remote one."""

    fold: ValueFold

    def get(self, item_id: str) -> ItemValue | None:
        """The item's values (as of the last read), or None if no attempt has touched it."""
        return self.fold.get(item_id)

    def q(self, item_id: str, stage: str) -> float:
        """Q of the item for ``stage`` (0 for an item never used)."""
        return self.fold.q(item_id, stage)

    def values(self) -> dict[str, dict[str, Any]]:
        return self.fold.values()


class ValueLedger(FoldReader):
    """Append-only record of value updates, one JSON line per attempt; see the module docstring."""

    def __init__(self, path: str | Path, alpha: float = 0.1, normalizer: RewardNormalizer | None = None):
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.alpha = alpha
        self.fold = ValueFold(normalizer)
        self.torn_lines = 0
        self._inode: int | None = None
        self._tlock = threading.RLock()
        self._depth = 0
        self._lock_file: Any = None
        if self.path.exists():
            self.refresh()

    @property
    def state(self) -> ValueState:
        return self.fold.state

    @property
    def generation(self) -> int | None:
        """Which version of the file ``offset`` counts bytes of (its inode: a rewrite replaces the file)."""
        return self._inode

    # --- locking and folding ------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Exclusive lock across processes (flock on the lock file) and threads; re-entrant."""
        with self._tlock:
            if self._depth == 0:
                self.lock_path.parent.mkdir(parents=True, exist_ok=True)
                f = open(self.lock_path, "a")
                try:
                    fcntl.flock(f.fileno(), fcntl.LOCK_EX)
                except BaseException:
                    f.close()
                    raise
                self._lock_file = f
            self._depth += 1
            try:
                yield
            finally:
                self._depth -= 1
                if self._depth == 0:
                    f, self._lock_file = self._lock_file, None
                    fcntl.flock(f.fileno(), fcntl.LOCK_UN)
                    f.close()

    def _reset(self) -> None:
        self.fold.reset()
        self._inode = None

    def refresh(self) -> int:
        """Fold the entries appended (by any process) since this ledger last read the file; returns
        how many were folded."""
        if not self.path.exists() and self.fold.offset == 0:
            return 0
        with self._locked():
            return self._catch_up()

    def _catch_up(self) -> int:
        """Fold new complete lines; the lock must be held."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            if self.fold.offset:
                self._reset()  # the ledger was removed: values start over, as a fresh process would
            return 0
        if self._inode is not None and (st.st_ino != self._inode or st.st_size < self.fold.offset):
            self._reset()  # replaced or shrunk behind our back: fold from the start
        self._inode = st.st_ino
        if st.st_size == self.fold.offset:
            return 0
        start = self.fold.offset
        with self.path.open("rb") as f:
            f.seek(start)
            data = f.read()
        folded, bad, tail = self.fold.feed(data)
        if tail.strip():
            # a writer died mid-line (we hold the lock, so nobody is writing now): that attempt was not
            # applied; cutting the tail off keeps every other reader's offset valid
            self.torn_lines += 1
        if tail:
            os.truncate(self.path, self.fold.offset)
        if bad:
            # a torn line followed by more lines (written by an older version without the tail check):
            # rewrite without it so the file is all valid JSON again
            self.torn_lines += bad
            self._rewrite_valid()
        return folded

    def _rewrite_valid(self) -> None:
        good = [raw for raw in self.path.read_bytes().split(b"\n") if raw.strip() and _parse(raw) is not None]
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_bytes(b"".join(line + b"\n" for line in good))
        os.replace(tmp, self.path)
        st = os.stat(self.path)
        self._inode, self.fold.offset = st.st_ino, st.st_size

    def _append(self, entry: dict[str, Any]) -> None:
        """Write one line durably at the end of the file; the lock must be held and the state caught up."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("ab") as f:
            f.write((json.dumps(entry) + "\n").encode())
            f.flush()
            os.fsync(f.fileno())
            end = f.tell()
        self._inode = os.stat(self.path).st_ino
        self.fold.offset = end

    def lines_since(self, offset: int, generation: int | None) -> tuple[int | None, int, bytes]:
        """The ledger's complete lines after byte ``offset`` of file version ``generation``, caught up first:
        ``(generation, start, data)``. ``start`` is ``offset``, or 0 (with every line) when ``offset`` is not a
        line boundary of the current file (another version, past its end, mid-line): the reader then folds
        from scratch."""
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"offset must be a byte offset >= 0, got {offset!r}")
        with self._locked():
            self._catch_up()
            end = self.fold.offset
            if not end:
                return self.generation, 0, b""
            start = offset
            if generation != self.generation or offset > end:
                start = 0
            with self.path.open("rb") as f:
                if start:
                    f.seek(start - 1)
                    if f.read(1) != b"\n":
                        start = 0
                f.seek(start)
                data = f.read(end - start)
            return self.generation, start, data

    # --- public API ---------------------------------------------------------------------------

    def applied(self, attempt_id: str) -> bool:
        """Whether this attempt is in the ledger (as of the last read; ``record`` re-reads first)."""
        return self.fold.applied(attempt_id)

    def record(self, attempt_id: str, stage: str, reward: float, items: Iterable[str], task: str = "",
               iteration: int = 0, alpha: float | None = None) -> dict[str, Any] | None:
        """Apply one attempt's reward to every item used (step ``alpha``, default this ledger's); returns the
        ledger entry, or None if this attempt was already applied (a resumed run, or another process
        recorded it)."""
        reward, alpha = check_update(stage, reward, self.alpha if alpha is None else alpha)
        with self._locked():
            self._catch_up()
            if self.applied(attempt_id):
                return None
            # compute first, write the line durably, then change the in-memory state: a failed write
            # leaves the state as it was, matching the ledger
            entry = self.fold.entry(attempt_id, stage, reward, items, alpha, task, iteration)
            self._append(entry)
            self.fold.apply(entry)
            return entry

    def set_values(self, attempt_id: str, values: Mapping[str, Mapping[str, Any]], task: str = "") -> dict[str, Any] | None:
        """Set items' values outright (an ``import`` entry): ``values`` maps item id to any of q1, q2, n1,
        n2, last_r1, last_r2. Returns the entry, or None if ``attempt_id`` was already applied."""
        attempt_id = import_id(attempt_id)
        clean = clean_values(values)
        with self._locked():
            self._catch_up()
            if self.applied(attempt_id):
                return None
            entry = {"attempt_id": attempt_id, "task": task, "iteration": 0, "stage": IMPORT, "set": clean}
            self._append(entry)
            self.fold.apply(entry)
            return entry



def _parse(raw: bytes) -> dict[str, Any] | None:
    """A ledger line as a dict, or None if it is torn or not a ledger entry."""
    try:
        entry = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError):
        return None
    if not isinstance(entry, dict) or "attempt_id" not in entry:
        return None
    stage = entry.get("stage")
    if stage == IMPORT:
        return entry if isinstance(entry.get("set"), dict) else None
    if stage not in STAGES or not isinstance(entry.get("updates"), list):
        return None
    return entry
