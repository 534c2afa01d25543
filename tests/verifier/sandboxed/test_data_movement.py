"""The data-movement rule (verifier/sandboxed/data_movement.py) as the operator recorder applies it: each
rearranging copy and each output that is not the candidate's own memory is a finding; a whole-tensor copy, views
and allocations are not (issue 28)."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

from evokernel.verifier.sandboxed import data_movement as dm
from evokernel.verifier.sandboxed.op_recorder import OpRecorder
from evokernel.verifier.trusted.failures import MOVEMENT_PREFIX, torch_ops_fail


def _run(forward, inputs, model=None):
    """forward under the recorder as the worker runs it; the data-movement findings (texts without prefix)."""
    rec = OpRecorder()
    with torch.no_grad(), rec:
        out = forward(*inputs)
    outs = list(out) if isinstance(out, (list, tuple)) else [out]
    rec.check_outputs(outs, list(inputs), model)
    return [k[len(dm.FINDING_PREFIX):] for k in rec.violations if k.startswith(dm.FINDING_PREFIX)]


def _native(x, out):
    """Stands for a native kernel writing every output byte (fill_ with a number: not a copy)."""
    out.fill_(1.0)
    return out


X = torch.randn(6, 10)
NCHW = torch.randn(2, 3, 4, 5)


# --- honest glue: no finding -----------------------------------------------------------------------


def test_honest_glue_is_not_a_finding():
    class Lin(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(4, 10))

        def forward(self, x):
            x, w = x.contiguous(), self.weight.contiguous()  # no-ops: already contiguous
            out = torch.empty(x.shape[0], w.shape[0])
            return _native(x, out).view(-1).reshape(x.shape[0], w.shape[0])

    m = Lin()
    assert _run(m, [X], m) == []


def test_a_whole_tensor_copied_byte_for_byte_is_allowed():
    def forward(x):
        y = x.clone()                     # whole, contiguous -> whole, contiguous
        z = torch.empty_like(x).copy_(y)  # the same with copy_
        return _native(z, torch.empty_like(z))

    assert _run(forward, [X]) == []


def test_a_freed_copy_destination_is_not_mistaken_for_the_output():
    def forward(x):
        y = x.clone()
        del y  # its memory is handed to the next allocation of the same size (glibc, at this size) unless held
        return _native(x, torch.empty_like(x))

    assert _run(forward, [torch.randn(100_000)]) == []


# --- rearranging copies ------------------------------------------------------------------------------


@pytest.mark.parametrize("forward", [
    pytest.param(lambda x: x.t().contiguous(), id="transpose-contiguous"),
    pytest.param(lambda x: x.t().reshape(-1), id="transpose-reshape"),
    pytest.param(lambda x: x[:, None, :].expand(6, 2, 10).reshape(12, 10), id="broadcast-reshape"),
    pytest.param(lambda x: x.as_strided((10, 6), (1, 10)).contiguous(), id="as_strided-contiguous"),
    pytest.param(lambda x: x[:, 2:5].contiguous(), id="strided-slice"),
    pytest.param(lambda x: x.narrow(0, 1, 3).clone(), id="contiguous-part-of-a-tensor"),
])
def test_a_copy_that_reads_a_view_is_a_finding(forward):
    found = _run(lambda x: _native(forward(x), torch.empty(1)), [X])
    assert any("read a view" in f for f in found), found


def _back(view, buffer):
    """A buffer copied back into a view (what load_cpp does after a call), then a native kernel's output."""
    view.copy_(buffer)
    return _native(None, torch.empty(1))


@pytest.mark.parametrize("view", [
    pytest.param(lambda x: x.t().contiguous().t(), id="transposed"),
    pytest.param(lambda x: torch.cat([x, torch.zeros(6, 3)], 1)[:, :10], id="padded"),
])
def test_making_an_input_view_contiguous_is_glue_and_nothing_else_of_it(view):
    """A trial's input may be a non-contiguous view (trial_inputs.STRIDED_IN): copying that input, exactly as
    forward got it, into a whole tensor is allowed; a copy of another view of it (a slice, a broadcast) is not."""
    x = view(X)

    def run(forward):
        rec = OpRecorder()
        rec.movement.give([x])
        with torch.no_grad(), rec:
            out = forward(x)
        rec.check_outputs([out], [x], None)
        return [k for k in rec.violations if k.startswith(dm.FINDING_PREFIX)]

    assert not x.is_contiguous()
    assert run(lambda x: _native(x.contiguous(), torch.empty(6, 10))) == []
    assert run(lambda x: _native(torch.empty(6, 10).copy_(x), torch.empty(6, 10))) == []
    assert run(lambda x: _native(x.reshape(-1), torch.empty(6, 10))) == []
    assert any("read a view" in f for f in run(lambda x: _native(x[:, 1:].contiguous(), torch.empty(1))))
    assert any("read a view" in f for f in run(
        lambda x: _native(x[:, None, :].expand(6, 2, 10).reshape(12, 10), torch.empty(1))))
    # the copy is still PyTorch's: returning it is a finding, as before
    assert any("PyTorch copy wrote" in f for f in run(lambda x: x.contiguous()))
    # and back (load_cpp after a kernel that may write a copied view): a whole tensor of its shape into the input as
    # given is glue; into another view of it, or of another shape, it writes into a view
    assert run(lambda x: _back(x, x.contiguous())) == []
    assert any("wrote into a view" in f for f in run(lambda x: _back(x[:, 1:], torch.empty(6, 9))))
    assert any("wrote into a view" in f for f in run(lambda x: _back(x, torch.empty(10))))
    # without the inputs given (the rule before), the same copy is a finding
    rec = OpRecorder()
    with torch.no_grad(), rec:
        _native(x.contiguous(), torch.empty(1))
    assert any("read a view" in k for k in rec.violations)


def test_a_channels_last_clone_is_a_finding():
    found = _run(lambda x: _native(x.contiguous(memory_format=torch.channels_last), torch.empty(1)), [NCHW])
    assert any("wrote into a view" in f for f in found), found


def test_a_copy_into_part_of_a_tensor_is_a_finding():
    def concat(a, b):
        out = torch.empty(a.shape[0] + b.shape[0], a.shape[1])
        out.narrow(0, 0, a.shape[0]).copy_(a)
        out.narrow(0, a.shape[0], b.shape[0]).copy_(b)
        return out

    found = _run(concat, [X, torch.randn(3, 10)])
    assert any("aten::copy_ wrote into a view" in f for f in found), found


def test_a_copy_into_a_permuted_view_is_a_finding():
    def forward(x):
        out = torch.empty(10, 6)
        out.t().copy_(x)  # whole source, permuted destination: the transpose
        return out

    assert any("wrote into a view" in f for f in _run(forward, [X]))


def test_a_broadcasting_copy_is_a_finding():
    def forward(x):
        row = torch.empty(1, 10).fill_(2.0)
        out = torch.empty(6, 10)
        out.copy_(row)  # (1, 10) repeated into (6, 10)
        return out

    assert any("broadcast" in f for f in _run(forward, [X]))


def test_clone_out_is_judged_by_its_out_argument():
    def forward(x):
        out = torch.empty(10, 6)
        torch.ops.aten.clone.out(x.t(), out=out)
        return out

    assert any("aten::clone read a view" in f for f in _run(forward, [X]))


def test_fill_with_a_tensor_element_is_a_finding_and_with_a_number_is_not():
    def by_tensor(x):
        out = torch.empty(4)
        out.fill_(x[0, 0])
        return out

    assert any("fill_" in f for f in _run(by_tensor, [X]))
    assert _run(lambda x: torch.empty(4).fill_(3.0), [X]) == []


def test_filling_a_part_of_a_tensor_is_a_finding():
    def per_row(x):
        out = torch.empty(6, 10)
        for i in range(6):
            out.select(0, i).fill_(float(i))  # stands for native code filling row i with a value it read from x
        out.narrow(0, 0, 1).zero_()
        return out

    found = _run(per_row, [X])
    assert any("aten::fill_ wrote a part" in f for f in found) and any("aten::zero_ wrote a part" in f for f in found)
    assert _run(lambda x: torch.empty(6, 10).zero_(), [X]) == []


def test_an_allocation_out_form_into_a_part_of_a_tensor_is_a_finding():
    def per_row(x):
        out = torch.empty(6, 10)
        for i in range(6):  # native code would read x[i, 0] and have ATen's full.out write row i
            torch.ops.aten.full.out([10], float(i), out=out.select(0, i))
        return out

    assert any("full wrote a part of a tensor through out=" in f for f in _run(per_row, [X]))
    assert _run(lambda x: torch.ops.aten.full.out([6, 10], 1.0, out=torch.empty(6, 10)), [X]) == []


# --- outputs ------------------------------------------------------------------------------------------


def test_a_returned_view_is_a_finding():
    assert any("non-contiguous" in f for f in _run(lambda x: _native(x, torch.empty(1)) and x.t(), [X]))


@pytest.mark.parametrize("forward", [
    pytest.param(lambda x: x, id="the-input"),
    pytest.param(lambda x: x.view(-1), id="a-view-of-the-input"),
    pytest.param(lambda x: x.narrow(0, 2, 3), id="a-contiguous-slice-of-the-input"),
])
def test_returning_input_memory_is_a_finding(forward):
    assert any("memory of an input" in f for f in _run(forward, [X]))


def test_returning_model_memory_is_a_finding():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(6, 10))
            self.register_buffer("table", torch.randn(6, 10))
            self.plain = torch.randn(6, 10)

        def forward(self, x):
            return self.weight, self.table, self.plain

    m = M()
    found = _run(m, [X], m)
    assert sum(1 for f in found if "of the model" in f) == 1  # one finding text, counted three times
    rec = OpRecorder()
    with torch.no_grad(), rec:
        outs = list(m(X))
    rec.check_outputs(outs, [X], m)
    assert rec.violations[dm.FINDING_PREFIX + next(f for f in found if "of the model" in f)] == 3


def test_returning_what_a_pytorch_copy_wrote_is_a_finding():
    found = _run(lambda x: x.clone(), [X])
    assert any("a PyTorch copy wrote" in f for f in found), found


# --- the parent's message ----------------------------------------------------------------------------


def test_the_parent_reads_the_recorders_prefix():
    assert MOVEMENT_PREFIX == dm.FINDING_PREFIX


def test_a_movement_finding_fails_the_hack_gate_with_its_own_message():
    fail = torch_ops_fail("trial 1", {dm.FINDING_PREFIX + "aten::clone read a view": 2}, "the native kernel",
                          "native code")
    assert fail.gate == "hack"
    assert "PyTorch moved the data" in fail.feedback and "aten::clone read a view (x2)" in fail.feedback
    assert "aten::data movement" not in fail.feedback
    mixed = torch_ops_fail("trial 1", {"add": 1, dm.FINDING_PREFIX + "x": 1}, "the native kernel", "native code")
    assert "aten::add x1" in mixed.feedback  # compute is named first: it is the graver finding


def test_whole_and_byte_range():
    assert dm.whole(X) and not dm.whole(X.t()) and not dm.whole(X[1:]) and dm.whole(torch.empty(0))
    lo, hi = dm.byte_range(X.t())
    assert (lo, hi) == (X.data_ptr(), X.data_ptr() + X.numel() * 4)
    assert dm.byte_range(torch.empty(0)) is None


def test_a_whole_copy_of_a_tensor_carrying_the_negative_bit_is_a_finding():
    """rt4_neg_bit_copy_source: an alias with the negative bit (set natively) copied whole: PyTorch wrote -x."""
    def forward(x):
        flagged = x._neg_view()  # what native `_set_neg(true)` on an alias makes
        buf = torch.empty_like(x)
        buf.copy_(flagged)
        return _native(buf, torch.empty_like(buf))

    found = _run(forward, [X])
    assert found and "negative bit" in found[0]

    def conj_forward(x):  # the conjugate bit of a complex tensor, read by a clone
        c = torch.complex(x, x).conj()
        return _native(c.clone(), torch.empty_like(x))

    assert any("conjugate bit" in f for f in _run(conj_forward, [X]))


def test_the_recorder_keeps_no_copy_destination_alive():
    """The recorder kept each copy destination alive (one more way a recorded call differed from an unrecorded
    one; rt4_audit_detect_refcount). Ranges are kept, not tensors: a destination the forward drops is gone."""
    import gc
    import weakref

    refs = []

    def forward(x):
        a, b = torch.empty(1), torch.empty(1)
        b.copy_(a)
        refs.append(weakref.ref(b))
        return _native(x, torch.empty_like(x))

    rec = OpRecorder()
    with torch.no_grad(), rec:
        forward(X)
    gc.collect()
    assert refs[0]() is None and rec.movement.written  # nothing alive, the range remembered


def test_a_copy_destination_freed_and_reused_by_an_allocation_is_not_the_copy():
    def forward(x):
        y = torch.empty_like(x)
        y.copy_(x)  # whole into whole: allowed; its range is remembered
        del y
        out = torch.empty_like(x)  # may land on y's memory: a fresh storage, not the copy
        return _native(x, out)

    assert _run(forward, [torch.randn(100_000)]) == []
    # the copy itself returned is still found
    assert _run(lambda x: torch.empty_like(x).copy_(x), [torch.randn(1000)])
