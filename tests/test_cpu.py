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
    with pytest.raises(TypeError, match="contiguous"):
        lib.scale(torch.randn(10, 2).t(), torch.empty(20), 20, 1.0)
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
