"""Value-driven retrieval (paper §3.4): the embedding index proposes a pool of K = λ·N items by
similarity to the task; the stage's Q-value then picks N of them, ε-greedily.

Policies, for ablations:

* ``value`` (the paper): N slots; each slot takes, with probability ε, a random remaining pool item,
  otherwise the remaining item with the highest Q for the stage (ties broken by similarity);
* ``similarity``: the N most similar items (the heuristic baseline);
* ``random``: N items drawn uniformly from the pool;
* ``none``: no retrieved context.

ε and λ can follow schedules over a run's iterations. Defaults, and why: λ grows linearly from 2
to 30 over the first 20 iterations (the paper: λ=2 plateaued at 67% L1 correctness, λ≈30 reached
84%, and growing λ gradually helped); ε decays from 0.3 to 0.05 over 20 iterations (explore while
Q-values are uninformed, then exploit). Seed API knowledge does not go through here: it is looked
up by name and category, not by learned value.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Sequence

from evokernel.settings import RunSettings

POLICIES = ("value", "similarity", "random", "none")


@dataclass(frozen=True)
class Candidate:
    """A pool item: its id, its similarity to the query, and its Q for the current stage."""

    item_id: str
    similarity: float
    q: float = 0.0


@dataclass(frozen=True)
class LinearSchedule:
    """``start`` at step 0, moving linearly to ``end`` at ``steps``, constant afterwards."""

    start: float
    end: float
    steps: int = 0

    def __call__(self, step: int) -> float:
        if self.steps <= 0 or step >= self.steps:
            return self.end
        return self.start + (self.end - self.start) * max(step, 0) / self.steps


# the run settings' defaults (declared once, in evokernel.settings)
DEFAULT_LAMBDA = LinearSchedule(RunSettings.lambda_start, RunSettings.lambda_end, RunSettings.lambda_steps)
DEFAULT_EPSILON = LinearSchedule(RunSettings.epsilon_start, RunSettings.epsilon_end, RunSettings.epsilon_steps)


def pool_size(n: int, lam: float) -> int:
    """K = ceil(λ·N), at least N."""
    if n < 0 or lam < 1:
        raise ValueError(f"need N >= 0 and λ >= 1, got N={n}, λ={lam}")
    return max(n, math.ceil(lam * n))


def select(pool: Sequence[Candidate], n: int, policy: str = "value", epsilon: float = 0.1,
           rng: random.Random | None = None) -> list[Candidate]:
    """Pick up to ``n`` distinct items of ``pool`` for the context."""
    if policy not in POLICIES:
        raise ValueError(f"unknown retrieval policy {policy!r} (one of {', '.join(POLICIES)})")
    if not 0 <= epsilon <= 1:
        raise ValueError(f"epsilon must be in [0, 1], got {epsilon}")
    rng = rng or random.Random()
    items = list({c.item_id: c for c in pool}.values())  # distinct ids, first occurrence wins
    n = min(n, len(items))
    if policy == "none" or n <= 0:
        return []
    if policy == "similarity":
        return sorted(items, key=lambda c: -c.similarity)[:n]
    if policy == "random":
        return rng.sample(items, n)
    remaining = sorted(items, key=lambda c: (-c.q, -c.similarity))
    chosen: list[Candidate] = []
    for _ in range(n):
        pick = rng.randrange(len(remaining)) if rng.random() < epsilon else 0
        chosen.append(remaining.pop(pick))
    return chosen
