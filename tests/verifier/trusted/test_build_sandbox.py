"""The build sandbox shows only neutral paths (verifier/trusted/build_sandbox.py): a candidate's
``__has_include`` probes of the checkout, the virtualenv, $HOME and the cache answer 0 (red-team
rt4_has_include_oracle), the built libraries name no host path, and the binary judge still classifies
headers by where they land."""
import ctypes
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from evokernel.runtime.paths import default_cache_dir
from evokernel.verifier.backends.cpu import build_limits
from evokernel.verifier.trusted import binary_judge as bj
from evokernel.verifier.trusted import build_sandbox as bs
from evokernel.verifier.trusted import launcher, native_build
from host_places import a_file_in, host_places

needs_bwrap = pytest.mark.skipif(launcher.sandbox_mode() != "bwrap" or shutil.which("g++") is None,
                                 reason="needs bubblewrap and g++")
CHECKOUT = Path(__file__).resolve().parents[3]


def _host_places(cache: Path) -> dict[str, str]:
    """Real files of this test run that a build must not be able to find."""
    return host_places(cache, verifier=str(Path(bs.__file__).resolve()),
                       torch=str(Path(torch.__file__).resolve().parent / "include" / "torch" / "extension.h"))


def _probes(places: dict[str, str]) -> str:
    """A kernel answering each probe as one bit; the paths are macro-pasted, as the red team's were."""
    lines = ["#define EVK_STR2(x) #x", "#define EVK_STR(x) EVK_STR2(x)"]
    for i, (name, path) in enumerate(places.items()):
        lines += [f"#define EVK_P{i} {path}", f"#if __has_include(EVK_STR(EVK_P{i}))",
                  f"#define EVK_B{i} 1", "#else", f"#define EVK_B{i} 0", "#endif"]
    bits = " | ".join(f"(EVK_B{i} << {i})" for i in range(len(places)))
    return "\n".join(lines) + f"\nstatic long long evk_bits() {{ return {bits}; }}\n"


def _bits(value: int, places: dict[str, str]) -> dict[str, int]:
    return {name: (value >> i) & 1 for i, name in enumerate(places)}


def _host_bytes(places: dict[str, str]) -> list[bytes]:
    prefixes = {CHECKOUT, Path(sys.prefix), Path(sys.base_prefix), Path(os.path.expanduser("~")),
                default_cache_dir()}
    prefixes |= {Path(places["test_cache"])} if "test_cache" in places else set()
    return sorted({str(p).encode() for p in prefixes if str(p) not in ("/", "/tmp")})


def test_the_view_names_mounted_folders_inside_and_maps_back():
    view = bs.BuildView((("/h/cache/cpp/k1.tmp", "/build"), ("/h/venv/torch/include", "/opt/evk/torch/include")))
    cmd = "g++ -c '/h/cache/cpp/k1.tmp/kernel.cpp' -fmacro-prefix-map=/h/cache/cpp/k1.tmp=/build"
    assert view.inside(cmd) == "g++ -c '/build/kernel.cpp' -fmacro-prefix-map=/build=/build"
    assert view.argv(["-isystem/h/venv/torch/include", "-isystem/h/venv/torch/include/torch/csrc/api/include"]) == \
        ["-isystem/opt/evk/torch/include", "-isystem/opt/evk/torch/include/torch/csrc/api/include"]
    assert view.inside("/h/cache/cpp/k1.tmpX/a") == "/h/cache/cpp/k1.tmpX/a"  # a longer name is another folder
    assert view.host("/opt/evk/torch/include/ATen/ATen.h") == "/h/venv/torch/include/ATen/ATen.h"
    assert view.host("/build/kernel.cpp") == "/h/cache/cpp/k1.tmp/kernel.cpp"
    assert view.host("/usr/include/stdio.h") == "/usr/include/stdio.h"
    assert view.host("/buildx/a.h") == "/buildx/a.h"


@needs_bwrap
def test_the_mounts_are_neutral_and_exist():
    inside = [n for _, n in bs.neutral_mounts()]
    assert bs.TORCH_INCLUDE in inside and bs.TORCH_LIB in inside and bs.INLINE_INCLUDE in inside
    assert all(n.startswith("/opt/evk/") for n in inside)


@needs_bwrap
def test_cpp_probes_of_host_paths_answer_zero(tmp_path):
    places = _host_places(tmp_path)
    src = _probes(places) + 'extern "C" long long f() { return evk_bits(); }\n'
    sandbox = bs.BuildSandbox(build_limits)
    built = native_build.build_cpp(src, ("-g",), tmp_path, sandbox, 120.0, judge=True)
    bits = _bits(ctypes.CDLL(str(built.path)).f(), places)
    assert bits == dict.fromkeys(places, 0), bits
    # the same kernel built unsandboxed sees the host (so the probes can fail)
    local = native_build.build_cpp(src, ("-g", "-DEVK_LOCAL"), tmp_path / "local")
    seen = _bits(ctypes.CDLL(str(local.path)).f(), places)
    assert seen == dict.fromkeys(places, 1), seen
    # nothing of the host in the library, debug information included (-g: DW_AT_comp_dir, file names)
    data = built.path.read_bytes()
    assert [p for p in _host_bytes(places) if p in data] == []
    assert b"/build" in data  # (the debug information is there, naming the neutral folder)


@needs_bwrap
def test_the_judge_classifies_headers_where_they_land(tmp_path):
    sandbox = bs.BuildSandbox(build_limits)

    def rules(src: str) -> set[str]:
        built = native_build.build_cpp(src, (), tmp_path, sandbox, 120.0, judge=True)
        return {f.rule for f in bj.judge(built.facts, "cpp", bj.policy("cpp"))}

    assert rules('#include <cmath>\n#include <omp.h>\nextern "C" float f(float x){ return std::sqrt(x); }\n') == set()
    assert "native-header" in rules('#define H <sys/syscall.h>\n#include H\nextern "C" long f(){ return SYS_write; }\n')
    assert "native-include" in rules('#include "/dev/null"\nextern "C" int f(){ return 0; }\n')


# Loaded in a process of its own: every inline library defines the module ``evk_ext``, and a second one loaded
# into the same process is handed the first's module (measured: `ma is mb`), so an in-process load here would
# give a later test of this xdist worker (test_inline_binding's) this library's functions instead of its own.
_RUN = """import importlib.machinery as m, importlib.util as u, json, sys, torch
p = sys.argv[1]; ld = m.ExtensionFileLoader("evk_ext", p)
mod = u.module_from_spec(u.spec_from_file_location("evk_ext", p, loader=ld)); ld.exec_module(mod)
x = torch.arange(4, dtype=torch.float32)
print(json.dumps([mod.torch_seen(), mod.probe(), bool(torch.equal(mod.twice(x), 2 * x))]))
"""


def _run_library(path: Path) -> list:
    out = subprocess.run([sys.executable, "-c", _RUN, str(path)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@needs_bwrap
@pytest.mark.slow
def test_inline_probes_see_torch_but_no_host_path(tmp_path):
    places = _host_places(tmp_path)
    src = ("#include <torch/extension.h>\n" + _probes(places)
           + "#if __has_include(<torch/extension.h>) && __has_include(<ATen/ATen.h>)\n#define EVK_TORCH 1\n"
             "#else\n#define EVK_TORCH 0\n#endif\n"
           + "int64_t probe() { return evk_bits(); }\nint64_t torch_seen() { return EVK_TORCH; }\n"
           + "torch::Tensor twice(torch::Tensor x) { auto y = torch::empty_like(x); auto* o = y.data_ptr<float>();\n"
             "  auto* i = x.data_ptr<float>(); for (int64_t k = 0; k < x.numel(); ++k) o[k] = 2 * i[k]; return y; }\n")
    spec = {"name": "probes", "cpp_sources": [src], "functions": ["probe", "torch_seen", "twice"],
            "extra_cflags": ["-g"]}
    built = native_build.build_inline(spec, tmp_path, bs.BuildSandbox(build_limits), 600.0, judge=True)
    assert bj.judge(built.facts, "inline", bj.policy("inline")) == []
    # loads and runs (libtorch found by soname, not by a host path)
    torch_seen, probe, twice_ok = _run_library(built.path)
    assert torch_seen == 1
    assert _bits(probe, places) == dict.fromkeys(places, 0)
    assert twice_ok
    data = built.path.read_bytes()  # the candidate's object and the verifier's binding object, linked
    assert [p for p in _host_bytes(places) if p in data] == []
    assert b"/opt/evk/torch/include" in data  # header paths (assertion strings) name the neutral place


@needs_bwrap
def test_the_build_filter_is_loaded_without_python_inside(tmp_path):
    # the build's seccomp filter comes from bubblewrap (--seccomp), not a Python wrapper: a program the build
    # compiles and runs inside the build sandbox gets EPERM from socket(), and finds no Python there
    (tmp_path / "s.c").write_text('#include <errno.h>\n#include <stdio.h>\n#include <sys/socket.h>\n'
                                  'int main(void){ int s = socket(AF_UNIX, SOCK_STREAM, 0);\n'
                                  '  printf("socket=%d errno=%d\\n", s, s < 0 ? errno : 0); return 0; }\n')
    script = (f"gcc {tmp_path}/s.c -o {tmp_path}/s && {tmp_path}/s; "
              f"test -e {sys.executable} && echo python-found; test -e {sys.base_prefix} && echo base-found; "
              "echo cwd=$(pwd) path=$PATH")
    rc, out = bs.BuildSandbox(build_limits)(["/bin/sh", "-c", script], tmp_path, 60.0, tmp_path)
    assert rc == 0, out
    assert "socket=-1 errno=1" in out  # EPERM
    assert "python-found" not in out and "base-found" not in out
    assert f"cwd={bs.WORK} path={launcher.LAUNCH_PATH}" in out


# --- the toolchain's root: only what the compiler, the linker and the judge's tools read -----------------------

def _outside_the_toolchain() -> dict[str, str]:
    """Host text files a build has no business reading (red-team rt5_usr_file_in_compiler_error quoted os-release's
    text through a compile error; /usr/local/etc holds package managers' configuration, tokens included)."""
    places = {"os-release": "/usr/lib/os-release", "etc-os-release": "/etc/os-release", "passwd": "/etc/passwd",
              "hostname": "/etc/hostname", "usr-local-etc": a_file_in(Path("/usr/local/etc"), 1),
              "usr-share": a_file_in(Path("/usr/share/common-licenses"), 1) or a_file_in(Path("/usr/share"), 2),
              "usr-local-bin": a_file_in(Path("/usr/local/bin"), 0),
              # the loader's cache names every library folder the host configures (rt6_ld_so_cache_in_compile_error)
              "ld-so-cache": "/etc/ld.so.cache"}
    return {k: v for k, v in places.items() if v and Path(v).is_file()}


@needs_bwrap
def test_the_root_is_the_toolchain_only():
    root = bs.toolchain_root()
    named = [*root.dirs, *root.files, *(p for _, p in root.links)]
    assert not [p for p in named if bs._under(p, bs.NEVER)], named  # /etc/ld.so.cache included (rt6)
    assert not [p for p in named if any(h in p for h in (str(CHECKOUT), sys.prefix, sys.base_prefix))], named
    assert "/usr" not in root.dirs and "/usr/lib" not in root.dirs and "/usr/lib/x86_64-linux-gnu" not in root.dirs
    assert "/usr/include" in root.dirs  # the system headers, whole


@needs_bwrap
def test_the_loader_cache_is_in_the_root_only_where_a_library_needs_it(monkeypatch):
    # here every toolchain library is in the loader's system folders: no cache (the loader finds them without it)
    assert bs.LOADER_CACHE not in bs.toolchain_root().files
    assert "/usr/lib/x86_64-linux-gnu" in bs._system_search_dirs("/lib64/ld-linux-x86-64.so.2")
    # a host whose loader searches no folder of them: the cache is kept, or the compiler could not start
    monkeypatch.setattr(bs, "_system_search_dirs", lambda loader: [])
    assert bs.LOADER_CACHE in bs.toolchain_root.__wrapped__().files


@needs_bwrap
def test_host_files_outside_the_toolchain_are_absent(tmp_path):
    places = _outside_the_toolchain()
    assert "os-release" in places
    src = _probes(places) + 'extern "C" long long f() { return evk_bits(); }\n'
    built = native_build.build_cpp(src, (), tmp_path, bs.BuildSandbox(build_limits), 120.0, judge=True)
    assert _bits(ctypes.CDLL(str(built.path)).f(), places) == dict.fromkeys(places, 0)
    local = native_build.build_cpp(src, ("-DEVK_LOCAL",), tmp_path / "local")  # the host sees them all
    assert _bits(ctypes.CDLL(str(local.path)).f(), places) == dict.fromkeys(places, 1)
    # the red team's read: an #include of the file fails as "not found", and the feedback quotes none of it
    text = Path("/usr/lib/os-release").read_text()
    for path in places.values():
        with pytest.raises(native_build.CompileError) as err:
            native_build.build_cpp(f'#include "{path}"\nextern "C" int g() {{ return 0; }}\n', (), tmp_path / "inc",
                                   bs.BuildSandbox(build_limits), 120.0, judge=True)
        assert "No such file or directory" in str(err.value), str(err.value)
        lines = [ln for ln in Path(path).read_text(errors="replace").splitlines() if len(ln.strip()) > 8]
        assert not [ln for ln in lines + text.splitlines() if ln.strip() and ln in str(err.value)]


@needs_bwrap
def test_a_build_runs_every_tool_it_needs_in_the_root(tmp_path):
    script = "for t in sh g++ gcc nm objdump c++filt cut sed as ld; do command -v $t >/dev/null || echo missing-$t; done"
    rc, out = bs.BuildSandbox(build_limits)(["/bin/sh", "-c", script], tmp_path, 60.0, tmp_path)
    assert rc == 0 and "missing" not in out, out


@needs_bwrap
def test_builds_run_with_a_fixed_source_date(tmp_path):
    # __DATE__ is an error in candidate builds (-Werror=date-time); were it reached, it would not be the build's date
    (tmp_path / "d.cpp").write_text("const char* d = __DATE__;\n")
    rc, out = bs.BuildSandbox(build_limits)(["g++", "-E", "-P", "d.cpp", "-o", "d.i"], tmp_path, 60.0, tmp_path)
    assert rc == 0, out
    assert '"Jan  1 1970"' in (tmp_path / "d.i").read_text()
