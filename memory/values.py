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
"""
from __future__ import annotations

import copy
import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable

DRAFT = "draft"  # stage 1, Q1
REFINE = "refine"  # stage 2, Q2
STAGES = (DRAFT, REFINE)


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


class ValueLedger:
    """Append-only record of value updates, one JSON line per attempt; see the module docstring."""

    def __init__(self, path: str | Path, alpha: float = 0.1, normalizer: RewardNormalizer | None = None):
        self.path = Path(path)
        self.alpha = alpha
        self.state = ValueState(normalizer=normalizer or RewardNormalizer())
        self.torn_lines = 0
        if self.path.exists():
            self._replay()

    def _replay(self) -> None:
        with self.path.open("rb") as f:
            lines = f.read().split(b"\n")
        good: list[bytes] = []
        for raw in lines:
            if not raw.strip():
                continue
            try:
                entry = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError):
                self.torn_lines += 1  # a crash mid-write: that attempt was not applied
                continue
            self._fold(entry)
            good.append(raw)
        if self.torn_lines:
            # rewrite without the torn line so later appends start on a clean line
            tmp = self.path.with_suffix(self.path.suffix + ".tmp")
            tmp.write_bytes(b"".join(line + b"\n" for line in good))
            os.replace(tmp, self.path)

    def _fold(self, entry: dict[str, Any]) -> None:
        self.state.attempts.add(entry["attempt_id"])
        if entry["stage"] == REFINE:
            # replaying the raw rewards in order reproduces the normaliser exactly
            self.state.normalizer.normalize(entry["r"])
        for u in entry["updates"]:
            v = self.state.value(u["item"])
            v.update(entry["stage"], entry["r_hat"], entry["alpha"])

    def applied(self, attempt_id: str) -> bool:
        return attempt_id in self.state.attempts

    def record(self, attempt_id: str, stage: str, reward: float, items: Iterable[str], task: str = "",
               iteration: int = 0) -> dict[str, Any] | None:
        """Apply one attempt's reward to every item used; returns the ledger entry, or None if this
        attempt was already applied (a resumed run)."""
        if self.applied(attempt_id):
            return None
        if stage not in STAGES:
            raise ValueError(f"unknown stage {stage!r}")
        ids = list(dict.fromkeys(items))  # each item once, in order
        # compute first, write the line durably, then change the in-memory state: a failed write
        # leaves the state as it was, matching the ledger
        normalizer = copy.deepcopy(self.state.normalizer)
        r_hat = normalizer.normalize(reward) if stage == REFINE else reward
        updates = []
        for item in ids:
            before = self.state.items[item].q(stage) if item in self.state.items else 0.0
            updates.append({"item": item, "q_before": before, "q_after": before + self.alpha * (r_hat - before)})
        entry = {"attempt_id": attempt_id, "task": task, "iteration": iteration, "stage": stage, "r": reward,
                 "r_hat": r_hat, "alpha": self.alpha, "updates": updates}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(entry) + "\n")
            f.flush()
            os.fsync(f.fileno())
        self.state.normalizer = normalizer
        for item in ids:
            self.state.value(item).update(stage, r_hat, self.alpha)
        self.state.attempts.add(attempt_id)
        return entry

    def values(self) -> dict[str, dict[str, Any]]:
        return {k: asdict(v) for k, v in self.state.items.items()}
