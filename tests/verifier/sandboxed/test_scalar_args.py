"""Forward's Python float arguments given new values in the special and distinct trials
(`verifier/sandboxed/scalar_args.py`): a value is kept only where the reference runs on it without error and with
finite outputs."""

import pytest
import torch

from evokernel.verifier.sandboxed.scalar_args import FACTOR_MAX, FACTOR_MIN, float_paths, plant
from evokernel.verifier.sandboxed.trial_inputs import decode_args, encode_args


def accepting(fn, tensors, calls=None):
    """The check the worker gives: ``fn`` runs on the template's arguments without error, with finite outputs."""
    def accepts(template):
        if calls is not None:
            calls.append(template)
        try:
            out = fn(*decode_args(template, tensors))
        except Exception:  # noqa: BLE001
            return False
        return bool(torch.isfinite(out).all())
    return accepts


def test_the_floats_found_and_what_is_left_alone():
    x = torch.randn(4)
    t = encode_args([x, 0.75, 3, True, None, "left", [1e-5, 2], (0.0, float("inf"), 0.5), torch.float16, -2.0])
    assert float_paths(t) == [(1,), (6, 0), (7, 2), (9,)]
    assert float_paths(None) == [] and float_paths(encode_args([x, 4, False])) == []


@pytest.mark.parametrize("flip", [False, True])
def test_new_values_far_from_the_drawn_one_sign_flipped_in_distinct(flip):
    """Red team round 9 (rt9_scalar_arg_hardcoded): a kernel hard-coding alpha = 0.75 passed, since forward's float
    argument held get_inputs()'s value in every trial."""
    x = torch.randn(16)
    template = encode_args([x, 0.75, [2.0, 3]])
    before = repr(template)
    seen = []
    for seed in range(200):
        torch.manual_seed(seed)
        got = plant(template, accepting(lambda x, a, l: x * a + l[0] * l[1], [x]), flip=flip)
        a, inner = got[1][1], got[2][1][1]
        assert inner[1] == 3 and type(inner[1]) is int  # ints stay
        for new, old in ((a, 0.75), (inner[0], 2.0)):
            assert (new < 0) == flip
            f = abs(new) / old
            assert FACTOR_MIN <= max(f, 1 / f) <= FACTOR_MAX * (1 + 1e-12)
        seen.append(abs(a) / 0.75)
    assert repr(template) == before  # the template given is not modified
    assert min(seen) < 0.35 and max(seen) > 3.0 and any(0.8 > s > 0.5 for s in seen)  # both sides of 1, wide
    torch.manual_seed(7)
    one = plant(template, accepting(lambda x, a, l: x * a, [x]), flip=flip)
    torch.manual_seed(7)
    assert plant(template, accepting(lambda x, a, l: x * a, [x]), flip=flip) == one  # the seed decides


def test_the_reference_decides_the_sign_and_a_refused_value_stays():
    x = torch.rand(16) + 0.5
    template = encode_args([x, 2.0, 0.5])
    calls = []
    # an exponent the reference accepts only positive, and a
    # second float the reference refuses at any other value: the first keeps its sign, the second its drawn value

    def ref(x, p, q):
        if p < 0 or q != 0.5:
            raise ValueError("refused")
        return x ** p

    torch.manual_seed(0)
    got = plant(template, accepting(ref, [x], calls), flip=True)
    assert got[1][1] > 0 and got[1][1] != 2.0 and got[2][1] == 0.5
    assert len(calls) == 1 + 2 + 2  # all at once, then each alone: flipped, then the drawn sign
    # non-finite outputs refuse a value as an error does
    torch.manual_seed(0)
    got = plant(template, accepting(lambda x, p, q: x / (p - p) if p < 0 else x * p * q, [x]), flip=True)
    assert got[1][1] > 0 and got[2][1] < 0
