"""The construction guard (`verifier/sandboxed/init_guard.py`): what PyTorch may compute while ModelNew is built.

Honest constructors (layers, random inits, affine maps of drawn values, transposed copies, constant buffers, casts,
nn.init, the drawn constants of a verdict's perturbed trial) pass; every way of tabulating the task's function
that the rule has to stop is refused, each by the clause that names it."""
import math

import pytest
import torch
import torch.nn as nn

from evokernel.verifier.sandboxed import init_guard
from evokernel.verifier.sandboxed.init_guard import PYTHON_CAP, guarded_construction
from evokernel.verifier.sandboxed.init_perturbation import drawn_constants


def violations(build) -> dict[str, int]:
    with guarded_construction() as guard:
        model = build()
    guard.audit(model)
    return guard.violations


def holder(**tensors: torch.Tensor) -> nn.Module:
    m = nn.Module()
    for k, v in tensors.items():
        m.register_buffer(k, v)
    return m


class Honest(nn.Module):
    def __init__(self, n: int = 32):
        super().__init__()
        self.lin = nn.Linear(n, n)
        self.conv = nn.Conv2d(3, n, 3)
        self.ln = nn.LayerNorm(n)
        self.bn = nn.BatchNorm2d(n)
        self.gn = nn.GroupNorm(4, n)
        self.emb = nn.Embedding(10, n)
        self.mha = nn.MultiheadAttention(n, 4)
        self.gru = nn.GRU(n, n)
        with torch.no_grad():
            self.ln.weight.copy_(1.0 + 0.5 * torch.empty(n).normal_())
            self.ln.bias.copy_(0.5 * torch.empty(n).normal_())
        self.w = nn.Parameter(torch.randn(n, n) * 0.02)
        self.scale = nn.Parameter(1 - torch.rand(n) / 2)
        self.register_buffer("wt", self.lin.weight.detach().t().contiguous())  # a transposed (packed) weight
        self.register_buffer("w_half", self.lin.weight.detach().half())
        self.register_buffer("running", torch.zeros(n))
        self.register_buffer("qkv", torch.cat([self.lin.weight.detach(), self.w.detach()], 0))
        self.p = nn.Parameter(torch.empty(n, n))
        nn.init.trunc_normal_(self.p, std=0.02)  # erfinv, clamp inside nn.init: trusted
        nn.init.orthogonal_(self.w)  # a QR decomposition inside nn.init: trusted
        nn.init.kaiming_uniform_(self.p, a=math.sqrt(5))
        self.small = torch.tensor([1.0, 2.0, 3.0])  # a few Python constants
        self.idx = torch.arange(n)  # a grid may exist; only compute on it is refused
        self.count = torch.tensor(0)


def test_honest_constructors_pass():
    assert violations(Honest) == {}


def test_honest_constructors_pass_with_drawn_constants():
    def build():
        with drawn_constants(1234):
            return Honest()
    assert violations(build) == {}


def test_nn_init_is_restored_after_the_guard():
    held = {n: getattr(nn.init, n) for n in ("uniform_", "trunc_normal_", "eye_")}
    with guarded_construction():
        assert nn.init.uniform_ is not held["uniform_"]
    assert {n: getattr(nn.init, n) for n in held} == held


@pytest.mark.parametrize("name,build,clause", [
    ("float16 bit patterns (rt2)", lambda: holder(t=torch.arange(65536, dtype=torch.int32).to(torch.int16)
                                                  .view(torch.float16).float().neg().exp().add(1).reciprocal()),
     "on grid values"),
    ("float32 grid (rt2)", lambda: holder(t=torch.arange(65536, dtype=torch.int32).mul(65536).view(torch.float32)
                                          .mul(2.0).exp()), "on grid values"),
    ("linspace", lambda: holder(t=torch.linspace(-8, 8, 4096).tanh()), "on grid values"),
    ("random abscissae", lambda: holder(t=(torch.rand(4096) * 16 - 8).neg().exp()), "exp"),
    ("sorted random table", lambda: holder(t=torch.rand(4096).sort().values), "sort"),
    ("a product of two tensors", lambda: holder(t=torch.rand(64) * torch.rand(64)), "mul"),
    ("a square of one element", lambda: holder(t=torch.rand(4)[0] * torch.rand(4)[0]), "mul"),
    ("a quotient by a tensor", lambda: holder(t=torch.tensor(2.0) / torch.rand(64)), "div"),
    ("integer arithmetic on float bits", lambda: holder(t=torch.rand(64).view(torch.int32) * 3), "mul"),
    ("a cast to integers (floor)", lambda: holder(t=(torch.rand(64) * 8).to(torch.int32)), "_to_copy"),
    ("a matmul of two weights", lambda: holder(t=torch.randn(8, 8) @ torch.randn(8, 8)), "mm"),
])
def test_compute_that_tabulates_is_refused(name, build, clause):
    found = violations(build)
    assert any(clause in k for k in found), (name, found)


def _grid_through_copy():
    p = nn.Parameter(torch.zeros(4096), requires_grad=False)
    with torch.no_grad():
        p.copy_(torch.linspace(-8, 8, 4096))
    return holder(t=p.neg().exp())


def _grid_through_data():
    p = nn.Parameter(torch.zeros(4096), requires_grad=False)
    p.data = torch.linspace(-8, 8, 4096)
    return holder(t=p.neg().exp())


def _grid_through_cat():
    return holder(t=torch.cat([torch.randn(4), torch.arange(4096.0)]).exp())


@pytest.mark.parametrize("build", [_grid_through_copy, _grid_through_data, _grid_through_cat])
def test_a_grid_keeps_its_provenance_through_parameters_and_moves(build):
    found = violations(build)
    assert any("on grid values" in k for k in found), found


def _python_list(n):
    return lambda: holder(t=torch.tensor([1 / (1 + math.exp(-(i - n / 2) / 64)) for i in range(n)]))


def _element_fills(n):
    def build():
        t = torch.zeros(n)
        for i in range(n):
            t.narrow(0, i, 1).fill_(1 / (1 + math.exp(-(i - n / 2) / 64)))
        return holder(t=t)
    return build


def _element_copies(n):
    def build():
        t = torch.zeros(n)
        for i in range(n):
            t[i] = 1 / (1 + math.exp(-(i - n / 2) / 64))
        return holder(t=t)
    return build


@pytest.mark.parametrize("make", [_python_list, _element_fills, _element_copies])
def test_python_made_tables_are_capped(make):
    assert violations(make(PYTHON_CAP)) == {}  # a few constants (no more than a kernel's source could carry)
    found = violations(make(PYTHON_CAP + 1))
    assert any("made by Python" in k for k in found), found


def test_the_cap_counts_plain_attributes_and_lists_too():
    outside = [torch.ones(200), torch.ones(200)]  # made before the guard: elements counted where they are held

    def build():
        m = nn.Module()
        m.tables = outside
        return m
    assert any("made by Python" in k for k in violations(build))


def test_a_whole_fill_is_a_constant_a_partial_one_is_data():
    guard = init_guard.InitGuard()
    with guard:
        a = torch.zeros(8)
        a.fill_(3.0)
        b = torch.zeros(8)
        b.narrow(0, 0, 1).fill_(3.0)
    assert guard.label(a) == init_guard.DRAWN and guard.label(b) == init_guard.PYTHON


def test_storages_the_guard_never_saw_are_python_data():
    outside = torch.arange(4096.0)
    with guarded_construction() as guard:
        inside = outside.exp()
    assert guard.label(outside) == init_guard.PYTHON and guard.violations and inside is not None


def test_eye_and_dirac_write_structure():
    def build():
        w = torch.empty(64, 64)
        nn.init.eye_(w)
        return holder(t=w * 2.0)
    assert any("on grid values" in k for k in violations(build))


def _writes(n, write):
    def build():
        t = torch.zeros(n)
        for i in range(n):
            write(t.narrow(0, i, 1), 1 / (1 + math.exp(-(i - n / 2) / 64)))
        return holder(t=t)
    return build


@pytest.mark.parametrize("write", [
    lambda view, v: view.uniform_(v, v),  # a "random" draw from U(v, v)
    lambda view, v: view.normal_(v, 0.0),
    lambda view, v: nn.init.constant_(view, v),
    lambda view, v: nn.init.constant_(tensor=view, val=v),
    lambda view, v: view.add_(v),  # a constant 0 plus a chosen number, one element at a time
], ids=["uniform", "normal", "nn.init.constant_", "constant_ by keyword", "add_"])
def test_chosen_values_written_element_by_element_are_python_data(write, request):
    if "add_" not in request.node.name:  # add_ on an element already written is compute on Python data
        assert violations(_writes(PYTHON_CAP, write)) == {}
    found = violations(_writes(PYTHON_CAP + 1, write))
    assert found, found


def test_single_values_concatenated_are_python_data():
    def build():
        parts = [torch.empty(1).uniform_(v / 64, v / 64) for v in range(PYTHON_CAP + 1)]
        return holder(t=torch.cat(parts))
    assert any("made by Python" in k for k in violations(build))


def test_a_padding_row_is_one_python_value():
    # nn.Embedding(padding_idx) zeroes one row of its random weight: one chosen value, not the row's elements
    assert violations(lambda: nn.Embedding(1000, 512, padding_idx=0)) == {}


def test_python_values_count_once_and_also_when_not_held():
    def copies():
        t = torch.tensor([float(i) for i in range(200)])
        return holder(a=t.clone(), b=torch.cat([t, t]))  # 200 values made, copied: 200, under the cap
    assert violations(copies) == {}

    def laundered():
        t = torch.tensor([float(i) for i in range(PYTHON_CAP + 1)])  # never held: a native call could copy it
        return holder(a=torch.zeros(PYTHON_CAP + 1))
    assert any("made by Python" in k for k in violations(laundered))


def test_a_tensor_the_guard_never_saw_counts_its_elements():
    outside = torch.ones(PYTHON_CAP + 1)
    assert any("made by Python" in k for k in violations(lambda: holder(t=outside)))
    assert violations(lambda: holder(t=torch.ones(PYTHON_CAP + 1))) == {}

def test_empty_memory_is_zeroed_so_a_freed_table_is_not_reused():
    def build():
        table = torch.tensor([1 / (1 + math.exp(-(i - 128) / 16)) for i in range(PYTHON_CAP)])
        del table  # freed: the next allocation of the size may get these bytes back
        reused = torch.empty(PYTHON_CAP)
        grown = torch.zeros(1)
        grown.resize_(4096)
        return holder(a=reused, b=grown)
    with guarded_construction() as guard:
        model = build()
    guard.audit(model)
    assert guard.violations == {}
    assert not model.a.any() and not model.b.any()  # nothing of the freed table (or of any freed memory) is left
