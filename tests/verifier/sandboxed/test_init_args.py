"""The constructor's float arguments in the perturbed-parameter trials (sandboxed/init_args.py)."""
from __future__ import annotations

import math

import torch

from evokernel.verifier.sandboxed.init_args import scaled
from evokernel.verifier.sandboxed.scalar_args import FACTOR_MAX, FACTOR_MIN


def test_every_finite_nonzero_float_is_scaled_out_of_the_drawn_values_reach():
    """Red team round 10: a LeakyReLU kernel hard-coding the constructor's slope 0.1 passed. Every Python float (at any
    depth) gets its magnitude scaled by 1/4 .. 1/1.25 or 1.25 .. 4, its sign kept; ints, bools, strings, 0.0 and
    non-finite values stay; the list given is not modified; the same seed gives the same values, torch's global
    generator untouched."""
    args = [0.1, 16, True, "gelu", [1e-5, -2.0, (0.5, 3)], 0.0, float("inf"), None]
    state = torch.get_rng_state()
    out = scaled(args, 7)
    assert torch.equal(state, torch.get_rng_state())
    assert args[0] == 0.1 and args[4][0] == 1e-5
    assert out[1:4] == [16, True, "gelu"] and out[5] == 0.0 and math.isinf(out[6]) and out[7] is None
    assert isinstance(out[4], list) and isinstance(out[4][2], tuple) and out[4][2][1] == 3
    for new, old in ((out[0], 0.1), (out[4][0], 1e-5), (out[4][1], -2.0), (out[4][2][0], 0.5)):
        r = new / old
        assert r > 0 and (FACTOR_MIN * 0.999 <= r <= FACTOR_MAX * 1.001 or 1 / FACTOR_MAX * 0.999 <= r
                          <= 1 / FACTOR_MIN * 1.001), (new, old)
    assert scaled(args, 7) == out and scaled(args, 8) != out
    assert scaled([3, "x"], 7) == [3, "x"]


def test_the_verifier_judges_a_hard_coded_constructor_float_when_asked(cache_dir):
    """End to end (rt10_leaky_slope_hardcoded): with vary_init_floats the kernel that hard-codes the task's slope is
    refused in a perturbed-parameter trial and its honest twin, which reads self.negative_slope, is feasible."""
    from pathlib import Path

    from evokernel.tasks.load import load_task
    from evokernel.verifier import Verifier, VerifyConfig

    attacks = Path(__file__).resolve().parents[1] / "attacks"
    task = load_task(attacks / "tasks" / "rt10_leaky.py", {"batch_size": 16, "dim": 1024})
    with Verifier(config=VerifyConfig(seed=1000, timing=False, vary_init_floats=True, cache_dir=cache_dir)) as v:
        bad = v.verify(task, (attacks / "c9_values" / "rt10_leaky_slope_hardcoded.py").read_text())
        good = v.verify(task, (attacks / "twins" / "leaky_plain.py").read_text())
    assert not bad.feasible and bad.failed_gate == "correctness" and "perturbed parameters" in bad.feedback
    assert good.feasible, good.feedback
