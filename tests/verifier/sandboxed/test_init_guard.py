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
    """As the worker does it: drawn_constants entered before the guard, which trusts its initialisers by identity
    (their arithmetic, a sign and a magnitude, is no compute the guard allows candidate code)."""
    with drawn_constants(1234), guarded_construction() as guard:
        model = Honest()
    guard.audit(model)
    assert guard.violations == {}
    # entered the other way round, the drawn initialisers are not known to the guard: their where/abs is refused
    with guarded_construction() as guard:
        with drawn_constants(1234):
            model = nn.LayerNorm(8)
    guard.audit(model)
    assert guard.violations


def test_many_norm_layers_pass_with_drawn_constants():
    """The perturbed trial's drawn constants are the verifier's arithmetic (a sign and ``0.5 + |u|``), not values the candidate
    chose: a model with 100 norm layers (DenseNet201 has ~200) counted 4 per layer against the cap before. The
    worker enters drawn_constants before the guard; the values drawn are the same as without the guard."""
    def build():
        return nn.Sequential(*[nn.BatchNorm2d(8) for _ in range(100)], *[nn.LayerNorm(8) for _ in range(20)])

    with drawn_constants(7), guarded_construction() as guard:
        model = build()
    guard.audit(model)
    assert guard.violations == {} and guard.python_values == 0
    with drawn_constants(7):
        plain = build()
    for a, b in zip(model.state_dict().values(), plain.state_dict().values()):
        assert torch.equal(a, b)
    assert not torch.equal(model[0].weight, torch.ones(8))  # drawn, not torch's constant
    weights = torch.cat([m.weight.detach() for m in model])
    assert float(weights.min()) < 0 < float(weights.max())  # of both signs, trusted all the same


def test_signed_constants_are_trusted_in_every_holder():
    """constant_ is also held by torch.nn.modules.activation (MultiheadAttention's biases) and PReLU calls
    nn.init.constant_: the drawn, signed values pass the guard wherever torch calls them from."""
    def build():
        return nn.ModuleList([nn.PReLU(8), nn.MultiheadAttention(16, 2), nn.GroupNorm(2, 8), nn.InstanceNorm2d(8, affine=True)])

    torch.manual_seed(0)
    with drawn_constants(11), guarded_construction() as guard:
        model = build()
    guard.audit(model)
    assert guard.violations == {}
    torch.manual_seed(0)
    with drawn_constants(11):
        plain = build()
    for a, b in zip(model.state_dict().values(), plain.state_dict().values()):
        assert torch.equal(a, b)


def test_only_the_verifiers_initialisers_are_trusted():
    """Trust is by identity: a function the candidate puts in nn.init's place (or in the drawn running
    statistics' place) runs guarded like the rest of its code, under drawn_constants too."""
    def table_ones_(t):
        with torch.no_grad():
            return t.copy_(torch.linspace(-8, 8, t.numel()).tanh().view_as(t))

    held = nn.init.ones_
    try:
        with drawn_constants(7):
            nn.init.ones_ = table_ones_
            with guarded_construction() as guard:
                model = nn.LayerNorm(64)
            guard.audit(model)
    finally:
        nn.init.ones_ = held
    assert any("grid" in k for k in guard.violations), guard.violations

    def stats(norm):
        with torch.no_grad():
            norm.running_var.copy_(torch.linspace(0.1, 4, norm.running_var.numel()).exp())

    base = nn.modules.batchnorm._NormBase
    with drawn_constants(7):
        drawn_stats = base.reset_running_stats
        base.reset_running_stats = stats
        try:
            with guarded_construction() as guard:
                model = nn.BatchNorm2d(64)
            guard.audit(model)
        finally:
            base.reset_running_stats = drawn_stats
    assert any("grid" in k for k in guard.violations), guard.violations


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


# --- red team round 4: chosen values counted where they are made, native calls' arguments ----------------------
def _sigmoid_at(i, n):
    return 1 / (1 + math.exp(-(i - n / 2) / 64))


def _spelled(n, spell):
    def build():
        t = torch.zeros(n)
        for i in range(n):
            spell(t, i, _sigmoid_at(i, n))
        return holder(t=t)
    return build


def _pool_pick(n):
    # Python reads a random pool and picks the entry nearest each table value: a table made of drawn values
    def build():
        pool = torch.rand(4 * n)
        vals = pool.tolist()
        picks = [min(range(len(vals)), key=lambda j: abs(vals[j] - _sigmoid_at(i, n))) for i in range(n)]
        return holder(t=torch.stack([pool[j] for j in picks]))
    return build


def _held_constants(n):
    def build():
        m = nn.Module()
        m.parts = [torch.full((1,), _sigmoid_at(i, n)) for i in range(n)]  # never concatenated here: forward would
        return m
    return build


def _held_sums(n):
    def build():
        m = nn.Module()
        m.parts = [torch.zeros(1) + _sigmoid_at(i, n) for i in range(n)]
        return m
    return build


def _held_views(n):
    def build():
        m = nn.Module()
        pool = torch.rand(4 * n)
        vals = pool.tolist()
        m.parts = [pool[min(range(len(vals)), key=lambda j: abs(vals[j] - _sigmoid_at(i, n)))] for i in range(n)]
        return m
    return build


def _digit_alphabet(n):
    # ten constants made once, then placed digit by digit: each placement is a choice
    def build():
        digits = [torch.full((2,), float(d)) for d in range(10)]
        t = torch.zeros(n)
        for i in range(n):
            d = int(_sigmoid_at(i, n) * 10) % 10
            t.narrow(0, i, 1).copy_(digits[d].narrow(0, 0, 1))
        return holder(t=t)
    return build


@pytest.mark.parametrize("make", [
    (lambda n: _spelled(n, lambda t, i, v: t.narrow(0, i, 1).copy_(
        torch.full((2,), v).narrow(0, 0, 1)))),  # rt4_init_table_unit_copies
    lambda n: _spelled(n, lambda t, i, v: t.narrow(0, i, 1).copy_(torch.tensor([v, v])[1:])),
    lambda n: _spelled(n, lambda t, i, v: t.narrow(0, i, 1).copy_((torch.zeros(2) + v)[:1])),
    _pool_pick, _held_constants, _held_sums, _held_views, _digit_alphabet,
], ids=["unit copy of a full", "a slice of a list", "a slice of a sum", "picked from a random pool",
        "held constants", "held sums", "held views of a pool", "a digit alphabet placed"])
def test_every_spelling_of_a_partial_write_is_counted(make):
    found = violations(make(PYTHON_CAP + 1))
    assert any("made by Python" in k for k in found), found


def test_element_writes_of_a_number_still_cost_one_value_each():
    # t[i] = v makes the constant v (counted) and places it once (paid): PYTHON_CAP of them pass
    assert violations(_element_copies(PYTHON_CAP)) == {}
    assert violations(_spelled(PYTHON_CAP, lambda t, i, v: t.narrow(0, i, 1).copy_(torch.tensor(v)))) == {}


class _Watched:
    """A native function as the guard sees one: it reports its arguments through evokernel.cpu, and stores."""

    def __init__(self, store):
        self.store = store

    def __call__(self, *args):
        from evokernel import cpu as native
        native.note_native_call(args)
        self.store(*args)


def _native_table(n, encode):
    def build():
        tab = torch.zeros(n)
        put = _Watched(lambda t, i, v: None)
        for i in range(n):
            put(tab, i, encode(_sigmoid_at(i, n)))
        return holder(tab=tab)
    return build


@pytest.mark.parametrize("encode", [
    lambda v: v,  # rt4_init_table_native_args: floats
    lambda v: int(v * (1 << 24)),  # fixed point: integers carry a table as well
    lambda v: repr(v),  # a string per entry
], ids=["floats", "fixed-point integers", "strings"])
def test_native_calls_during_construction_count_their_arguments(encode):
    found = violations(_native_table(PYTHON_CAP, encode))
    assert any("made by Python" in k for k in found), found


def test_a_native_call_with_a_list_or_unary_calls_counts_too():
    def one_call():
        _Watched(lambda *a: None)(torch.zeros(PYTHON_CAP + 1), [_sigmoid_at(i, 8) for i in range(PYTHON_CAP)])
        return nn.Module()

    def unary():  # no number passed: how many calls is the number
        tick = _Watched(lambda *a: None)
        t = torch.zeros(4)
        for _ in range(PYTHON_CAP + 1):
            tick(t)
        return holder(t=t)

    def offsets():  # a view's offset is a number: tab[k:] hands the native code k
        pool = torch.zeros(4096)
        f = _Watched(lambda *a: None)
        for i in range(PYTHON_CAP // 2 + 1):
            f(pool, pool[int(_sigmoid_at(i, 8) * 4000):])
        return holder(t=pool)
    for build in (one_call, unary, offsets):
        assert any("made by Python" in k for k in violations(build)), build.__name__


def test_honest_native_weight_preparation_passes():
    class Folded(nn.Module):  # a conv whose batch norm is folded into it by native code, per layer
        def __init__(self, layers=8):
            super().__init__()
            fold = _Watched(lambda *a: None)
            self.convs = nn.ModuleList(nn.Conv2d(16, 16, 3) for _ in range(layers))
            self.bns = nn.ModuleList(nn.BatchNorm2d(16, eps=1e-5) for _ in range(layers))
            for c, b in zip(self.convs, self.bns):
                w = torch.empty_like(c.weight)
                fold(c.weight.detach(), b.weight.detach(), b.running_var, w, 16, 16, 9, b.eps)
                self.register_buffer(f"w{len(self._buffers)}", w)
    assert violations(Folded) == {}


def test_the_native_watch_is_only_set_during_construction():
    from evokernel import cpu as native
    assert native._CALL_WATCH is None
    with guarded_construction():
        assert native._CALL_WATCH is not None
    assert native._CALL_WATCH is None


def test_an_affine_factor_given_by_keyword_is_a_chosen_value():
    def build():
        m = nn.Module()
        m.parts = [torch.zeros(1).add(torch.ones(1), alpha=_sigmoid_at(i, 8) + 2) for i in range(PYTHON_CAP + 1)]
        return m
    assert any("made by Python" in k for k in violations(build))


def test_the_load_cpp_door_reports_its_calls():
    # a real NativeFunction over libc's labs(long): its plain-number argument reaches the guard
    import ctypes

    from evokernel.cpu import NativeFunction, Param, Signature
    labs = NativeFunction(Signature("labs", "long", (Param("x", "long", False),)), ctypes.CDLL(None).labs)

    def build():
        for i in range(PYTHON_CAP // 2 + 1):
            assert labs(-int(_sigmoid_at(i, 8) * 1e6)) > 0
        return nn.Module()
    assert any("made by Python" in k for k in violations(build))
    assert violations(lambda: (labs(-3), nn.Module())[1]) == {}


def test_the_load_inline_door_reports_its_calls():
    import types

    from evokernel.verifier.sandboxed.worker import _CountingModule
    ext = types.ModuleType("ext")
    ext.put = lambda tab, i, v: None
    lib = _CountingModule(ext)

    def build():
        tab = torch.zeros(PYTHON_CAP)
        for i in range(PYTHON_CAP):
            lib.put(tab, i, _sigmoid_at(i, PYTHON_CAP))
        return holder(tab=tab)
    assert any("made by Python" in k for k in violations(build))
