"""evokernel.cpu.load_cpp: declaration parsing, typed calls, clear errors, build cache."""
import pytest
import torch

from evokernel.cpu import CompileError, load_cpp, parse_extern_c

SRC = r'''
#include <cstdint>
#include <cstddef>
// extern "C" void commented_out(float* x);
extern "C" {
  void scale(const float* __restrict__ x, float* y, int64_t n, float a) {
    for (int64_t i = 0; i < n; i++) y[i] = a * x[i];
  }
  double dot(const double* a, const double* b, size_t n);
  int32_t count_pos(const int32_t* v, int n) { int c = 0; for (int i = 0; i < n; i++) c += v[i] > 0; return c; }
}
double dot(const double* a, const double* b, size_t n) { double s = 0; for (size_t i = 0; i < n; i++) s += a[i] * b[i]; return s; }
extern "C" void fill_i64(int64_t *out, long n, long v) { for (long i = 0; i < n; i++) out[i] = v; }
static inline float helper(float x) { return x; }
'''


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("EVOKERNEL_CACHE", str(tmp_path))


def test_parse_extern_c():
    sigs = {s.name: s for s in parse_extern_c(SRC)}
    assert set(sigs) == {"scale", "dot", "count_pos", "fill_i64"}
    assert [(p.ctype, p.pointer) for p in sigs["scale"].params] == [
        ("float", True), ("float", True), ("int64_t", False), ("float", False)]
    assert sigs["dot"].restype == "double"


def test_typed_calls():
    lib = load_cpp(SRC)
    x = torch.randn(100)
    y = torch.empty(100)
    lib.scale(x, y, 100, 2.5)
    assert torch.allclose(y, 2.5 * x)
    a, b = torch.randn(50, dtype=torch.float64), torch.randn(50, dtype=torch.float64)
    assert abs(lib.dot(a, b, 50) - float(a @ b)) < 1e-9
    assert lib.count_pos(torch.tensor([1, -2, 3], dtype=torch.int32), 3) == 2
    out = torch.empty(4, dtype=torch.int64)
    lib["fill_i64"](out, 4, 7)
    assert out.tolist() == [7, 7, 7, 7]
    assert "scale" in dir(lib)


def test_type_errors_are_clear():
    lib = load_cpp(SRC)
    x = torch.randn(10)
    with pytest.raises(TypeError, match=r"scale\(\): argument 2 'y'.*expects dtype torch.float32, got torch.float64"):
        lib.scale(x, torch.empty(10, dtype=torch.float64), 10, 1.0)
    with pytest.raises(TypeError, match="expects a Python int"):
        lib.scale(x, x, 10.0, 1.0)
    with pytest.raises(TypeError, match="expects a Python float"):
        lib.scale(x, x, 10, "a")
    with pytest.raises(TypeError, match="takes 4 arguments"):
        lib.scale(x, x)
    with pytest.raises(TypeError, match="expects a CPU tensor"):
        lib.scale([1.0], x, 1, 1.0)
    with pytest.raises(AttributeError, match="no extern"):
        lib.nope


VIEWS = r'''
#include <cstdint>
extern "C" void relu(const float* x, float* y, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
extern "C" void twice_(float* x, int64_t n) { for (int64_t i = 0; i < n; i++) x[i] *= 2.f; }
extern "C" void add_(float* acc, float const* x, int64_t n) { for (int64_t i = 0; i < n; i++) acc[i] += x[i]; }
extern "C" void ramp(float* const y, int64_t n) { for (int64_t i = 0; i < n; i++) y[i] = (float)i; }
extern "C" void follow(float* y, const float* x, int64_t n) { for (int64_t i = 1; i < n; i++) y[i] = x[i - 1] + 1.f; }
extern "C" void poke(const float* x, int64_t n) { if (n) const_cast<float*>(x)[0] = -1.f; }
'''


def _views(rows=6, cols=10):
    """The two layouts the verifier's strided trials pass: a transposed copy's transpose, and rows of a wider buffer."""
    return {"transposed": torch.randn(cols, rows).t(), "sliced": torch.randn(rows, cols + 3)[:, 1:cols + 1]}


def test_parse_extern_c_reads_const_pointees():
    sigs = {s.name: s for s in parse_extern_c(VIEWS)}
    assert [p.readonly for p in sigs["relu"].params] == [True, False, False]
    assert [p.readonly for p in sigs["add_"].params] == [False, True, False]  # `float const*` is const data
    assert [p.readonly for p in sigs["ramp"].params] == [False, False]  # `float* const` is a const pointer
    assert sigs["relu"].params[0].describe() == "const float* x"


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_a_view_reaches_the_kernel_in_its_logical_order(layout):
    lib = load_cpp(VIEWS)
    x = _views()[layout]
    assert not x.is_contiguous()
    before = x.clone()
    y = torch.empty(x.shape)
    lib.relu(x, y, x.numel())  # the kernel reads x linearly: right only on a buffer in x's logical order
    assert torch.equal(y, torch.relu(before))
    assert torch.equal(x, before)
    # a non-contiguous output is written through (a transposed one here): the buffer is copied back after the call
    out = torch.empty(x.shape[::-1]).t()
    lib.relu(x, out, x.numel())
    assert torch.equal(out, torch.relu(before))


@pytest.mark.parametrize("layout", ["transposed", "sliced"])
def test_an_in_place_kernel_writes_through_into_a_view(layout):
    lib = load_cpp(VIEWS)
    base = torch.randn(6, 10)
    x = base.t().contiguous().t() if layout == "transposed" else torch.randn(6, 13)[:, 1:11].copy_(base)
    storage = x.untyped_storage()
    lib.twice_(x, x.numel())
    assert torch.equal(x, 2 * base) and x.untyped_storage().data_ptr() == storage.data_ptr()
    if layout == "sliced":  # the unused elements around the slice are left alone
        wide = torch.empty(0).set_(storage).view(6, 13)
        assert torch.equal(wide[:, 1:11], 2 * base)
    # a view passed with another, read-only: each its own buffer, the read-only one not copied back
    acc = x.clone().t().contiguous().t() if layout == "transposed" else x.clone()
    lib.add_(x, acc, x.numel())
    assert torch.equal(x, 4 * base) and torch.equal(acc, 2 * base)
    # the same view twice: one buffer, so the kernel sees the aliasing it would see on a contiguous tensor
    want, before = x.contiguous(), x.reshape(-1).clone()
    lib.follow(want, want, want.numel())  # aliased: y[i] = y[i - 1] + 1 (two buffers: y[i] = x[i - 1] + 1)
    lib.follow(x, x, x.numel())
    assert torch.equal(x, want) and not torch.equal(want.reshape(-1)[1:], before[:-1] + 1)
    lib.ramp(x, x.numel())  # `float* const`: the data is writable, so written back
    assert torch.equal(x, torch.arange(60, dtype=torch.float32).view(6, 10))


def test_contiguous_tensors_are_not_copied_and_const_views_not_written_back():
    lib = load_cpp(VIEWS)
    x = torch.ones(4, 5)
    lib.poke(x, x.numel())  # a contiguous tensor is passed as it is: the kernel's (forbidden) write lands
    assert x[0, 0] == -1.0
    v = torch.ones(5, 4).t()
    lib.poke(v, v.numel())  # a view for a const pointee: the buffer is not copied back
    assert torch.equal(v, torch.ones(4, 5))


def test_the_copies_are_pytorch_operators_and_only_for_views():
    """A contiguous tensor costs no copy; a view costs one copy in (and one back where the kernel may write it), made
    by PyTorch operators a dispatch mode sees -- the verifier's data-movement rule judges them like the glue's own."""
    from evokernel.verifier.sandboxed.op_recorder import OpRecorder
    lib = load_cpp(VIEWS)
    x, y = torch.randn(6, 10), torch.empty(6, 10)
    # an input as given may be copied and written back; the output view y.t() is not an input: its copies are a
    # rearrangement PyTorch would do for the kernel (a transpose), findings
    out_view = ["aten::clone read a view", "aten::copy_ wrote into a view"]
    for args, fn, ops, findings in (((x, y), lib.relu, {}, []), ((x.t(), y), lib.relu, {"clone": 1}, []),
                                    ((x.t(), y.t()), lib.relu, {"clone": 2, "copy_": 1}, out_view),
                                    ((x.t(),), lib.twice_, {"clone": 1, "copy_": 1}, [])):
        rec = OpRecorder()
        rec.movement.give(args[:1])  # the first argument plays forward's input as the verifier passed it
        with rec:
            fn(*args, 60)
        assert rec.calls == ops, rec.calls
        assert sorted(k.split(": ")[1].split(" (")[0] for k in rec.violations) == findings, rec.violations


def test_a_broadcast_view_for_a_writable_pointer_is_refused():
    lib = load_cpp(VIEWS)
    b = torch.randn(10).expand(6, 10)
    y = torch.empty(6, 10)
    lib.relu(b, y, b.numel())  # read-only: copied, fine
    assert torch.equal(y, torch.relu(b))
    with pytest.raises(TypeError, match=r"twice_\(\): argument 1 'x'.*share memory"):
        lib.twice_(b, b.numel())


def test_compile_errors_are_reduced():
    with pytest.raises(CompileError) as exc:
        load_cpp('extern "C" void f(float* x) { undefined_thing(x); }')
    assert "kernel.cpp:1: error:" in exc.value.diagnostics
    with pytest.raises(CompileError, match="undefined reference"):
        load_cpp('extern "C" void g(float* x); extern "C" void f(float* x) { g(x); }')
    with pytest.raises(CompileError, match='no extern "C"'):
        load_cpp("void f() {}")


def test_flags_are_checked_and_cache_is_reused(tmp_path):
    with pytest.raises(CompileError, match="not allowed"):
        load_cpp(SRC, extra_cflags=["-Wl,-rpath,/tmp"])
    try:
        a = load_cpp(SRC, extra_cflags=["-ffast-math"])
        b = load_cpp(SRC, extra_cflags=["-ffast-math"])
    finally:
        # a -ffast-math library sets flush-to-zero for the loading thread (crtfastmath): denormals of every later
        # test in this process would read as 0 (test_correctness's 1e-40 outputs did)
        torch.set_flush_denormal(False)
    assert a.path == b.path
    assert len(list((tmp_path / "cpp").iterdir())) == 1


def test_empty_flags_are_ignored():
    # KernelBench's load_inline examples pass extra_cflags=[""]
    from evokernel.verifier.trusted.native_build import check_flags, clean_flags, cpp_cache_key

    assert clean_flags(["", " ", " -O2 "]) == ("-O2",)
    check_flags(clean_flags(("", " ")))
    assert load_cpp(SRC, extra_cflags=["", " "]).path == load_cpp(SRC).path  # same binary, same cache entry
    assert cpp_cache_key(SRC, clean_flags([""])) == cpp_cache_key(SRC, ())
