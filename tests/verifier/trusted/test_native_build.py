"""Compiler output reduced to what a model can act on (verifier/trusted/native_build.py)."""
import shutil
import subprocess

import pytest

from evokernel.verifier.trusted.native_build import reduce_diagnostics

# g++ 12's own words for two names a real 1.5B reply used without their headers
GXX = """kernel.cpp: In function 'void f(const float*, float*, int64_t)':
kernel.cpp:9:35: error: \u2018accumulate\u2019 is not a member of \u2018std\u2019
    9 |     y[0] = std::accumulate(x, x + n, 0.0f);
      |                 ^~~~~~~~~~
kernel.cpp:19:14: error: \u2018numeric_limits\u2019 is not a member of \u2018std\u2019
kernel.cpp:20:5: error: \u2018dim\u2019 was not declared in this scope
"""


def test_a_std_name_without_its_header_gets_the_include_to_add():
    out = reduce_diagnostics(GXX).splitlines()
    assert out[:3] == ["kernel.cpp:9: error: \u2018accumulate\u2019 is not a member of \u2018std\u2019",
                       "kernel.cpp:19: error: \u2018numeric_limits\u2019 is not a member of \u2018std\u2019",
                       "kernel.cpp:20: error: \u2018dim\u2019 was not declared in this scope"]
    assert "note: std::accumulate is declared in <numeric>: add #include <numeric>" in out[3]
    assert "#include <limits>" in out[4] and len(out) == 5


def test_gxx_header_notes_are_kept():
    log = ("k.cpp:3:10: error: 'memcpy' is not a member of 'std'\n"
           "k.cpp:2:1: note: 'std::memcpy' is defined in header '<cstring>'; this is probably fixable by adding "
           "'#include <cstring>'\n")
    out = reduce_diagnostics(log)
    assert "is defined in header '<cstring>'" in out and out.count("<cstring>") >= 2


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_against_the_real_compiler(tmp_path):
    src = tmp_path / "kernel.cpp"
    src.write_text('#include <cstdint>\nextern "C" float f(const float* x, int64_t n) '
                   '{ return std::accumulate(x, x + n, 0.0f); }\n')
    p = subprocess.run(["g++", "-c", str(src), "-o", str(tmp_path / "k.o")], capture_output=True, text=True)
    assert p.returncode != 0
    out = reduce_diagnostics(p.stderr)
    assert "kernel.cpp:2: error:" in out and "#include <numeric>" in out


@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_a_candidates_file_macros_name_no_build_folder(tmp_path):
    # red-team round 2: __FILE__ (the build folder under the cache) XOR-encoded on stderr, or spelled as template
    # arguments in a compiler error, got past the feedback's scrubbing; the unit's __FILE__ is /build/... instead
    import ctypes

    from evokernel.verifier.trusted.native_build import build_cpp

    src = ('#include <cstdint>\nextern "C" const char* file_macro() { return __FILE__; }\n'
           'extern "C" const char* file_builtin() { return __builtin_FILE(); }\n')
    built = build_cpp(src, (), tmp_path / "cache", judge=True)
    lib = ctypes.CDLL(str(built.path))
    for name in ("file_macro", "file_builtin"):
        fn = getattr(lib, name)
        fn.restype = ctypes.c_char_p
        value = fn().decode()
        assert value.startswith("/build/") and str(tmp_path) not in value, value
