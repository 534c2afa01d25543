"""ascend-sim builds show only neutral paths (verifier/backends/ascend_sim/build.py `sandbox`, on
verifier/trusted/build_sandbox.py): an Ascend C kernel unit's and host unit's ``__has_include`` probes of the
checkout, the virtualenv, the Python installation, $HOME, the caches and /proc answer 0 while the emulator's own
headers answer 1; the libraries name no host path; the judge still classifies includes by where they land; the
libraries load in the host process."""
from __future__ import annotations

import dataclasses
import os
import shutil
import sys
from pathlib import Path

import pytest

from evokernel.cpu import CompileError
from evokernel.runtime.paths import default_cache_dir
from evokernel.verifier.backends.ascend_sim import build, host, judge
from evokernel.verifier.backends.ascend_sim.backend import AscendSimBackend
from evokernel.verifier.backends.ascend_sim.project import parse_candidate
from evokernel.verifier.backends.cpu import build_limits
from evokernel.verifier.trusted import build_sandbox, launcher
from evokernel.verifier.trusted.native_build import _local_runner
from host_places import host_places

needs_bwrap = pytest.mark.skipif(launcher.sandbox_mode() != "bwrap" or shutil.which("g++") is None,
                                 reason="needs bubblewrap and g++")
CHECKOUT = Path(__file__).resolve().parents[3]
ADD = parse_candidate((CHECKOUT / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text())


def _host_places(cache: Path) -> dict[str, str]:
    """Real files of this test run that a build must not be able to find (names are C identifiers)."""
    return host_places(cache, emulator_header=str(build.INCLUDE / "kernel_operator.h"),  # the emulator's own
                       emulator_runtime=str(build.RUNTIME), emulator_build=str(Path(build.__file__).resolve()))


# the emulator's headers where the build sees them: by name (on the include path) and at the neutral path
OWN = {"own_by_name": '"kernel_operator.h"', "own_neutral": f'"{build.NEUTRAL_INCLUDE}/kernel_operator.h"'}


def _probes(places: dict[str, str]) -> str:
    """Each probe leaves one identifier in the preprocessed unit: prb_found_<name> or prb_absent_<name> (read
    back from the build's facts: the tokens the candidate spelled). Host paths are macro-pasted."""
    lines = ["#define PRB_STR2(x) #x", "#define PRB_STR(x) PRB_STR2(x)"]
    for name, path in places.items():
        lines += [f"#define PRB_P_{name} {path}", f"#if __has_include(PRB_STR(PRB_P_{name}))"]
        lines += [f"static int prb_found_{name};", "#else", f"static int prb_absent_{name};", "#endif"]
    for name, spelled in OWN.items():
        lines += [f"#if __has_include({spelled})", f"static int prb_found_{name};", "#else",
                  f"static int prb_absent_{name};", "#endif"]
    return "\n".join(lines) + "\n"


def _answers(facts: judge.UnitFacts, label: str) -> dict[str, int]:
    toks = [t for _, t in facts.files[label].tokens]
    out = {t[len("prb_found_"):]: 1 for t in toks if t.startswith("prb_found_")}
    out |= {t[len("prb_absent_"):]: 0 for t in toks if t.startswith("prb_absent_")}
    return out


def _probed(project, places):
    block = _probes(places)
    return dataclasses.replace(project, sources={**project.sources,
                                                 "kernel_src": block + project.sources["kernel_src"],
                                                 "host_operator_src": block + project.sources["host_operator_src"]})


def _host_bytes(places: dict[str, str]) -> list[bytes]:
    prefixes = {CHECKOUT, Path(sys.prefix), Path(sys.base_prefix), Path(os.path.expanduser("~")),
                default_cache_dir(), build.SIM_DIR, Path(places["test_cache"]).parent}
    return sorted({str(p).encode() for p in prefixes if str(p) not in ("/", "/tmp")})


def test_the_views_mounts_are_the_emulator_at_neutral_paths():
    mounts = dict(build.neutral_mounts())
    assert mounts == {str(build.INCLUDE): build.NEUTRAL_INCLUDE, str(build.RUNTIME): build.NEUTRAL_RUNTIME_SRC}
    assert all(n.startswith("/opt/evk/ascend/") for n in mounts.values())
    # the cpu backend's view is unchanged by the parameter
    assert build_sandbox.BuildSandbox(build_limits).mounts is build_sandbox.neutral_mounts


@needs_bwrap
def test_kernel_and_host_probes_of_host_paths_answer_zero(tmp_path):
    places = _host_places(tmp_path)
    assert {"checkout", "venv", "python", "emulator_header", "emulator_runtime", "proc"} <= set(places)
    project = _probed(ADD, places)
    sandbox = build.sandbox(build_limits)
    kernel = build.build_kernel(project, 0, tmp_path / "sandboxed", sandbox)
    hosted = build.build_host(project, tmp_path / "sandboxed", sandbox)
    expected = {**dict.fromkeys(places, 0), **dict.fromkeys(OWN, 1)}
    assert _answers(kernel.facts, "kernel_src") == expected
    assert _answers(hosted.facts, "host_operator_src") == expected
    # the same project built unsandboxed sees the host (so the probes can fail); the neutral path is not there
    local_k = build.build_kernel(project, 0, tmp_path / "local", _local_runner)
    local_h = build.build_host(project, tmp_path / "local", _local_runner)
    seen = {**dict.fromkeys(places, 1), "own_by_name": 1, "own_neutral": 0}
    assert _answers(local_k.facts, "kernel_src") == seen
    assert _answers(local_h.facts, "host_operator_src") == seen
    # nothing of the host in the libraries or the runtime object they link
    runtime = build.build_runtime(tmp_path / "sandboxed", sandbox, 300)
    for path in (kernel.path, hosted.path, runtime.path):
        data = path.read_bytes()
        assert [p for p in _host_bytes(places) if p in data] == [], path
    # with debug information (-g: the compile folder, every header's path), the kernel library names the neutral
    # places only; built unsandboxed, the same unit names the host's (the scan can fail)
    debug = {}
    for where, runner in (("sandboxed", sandbox), ("local", _local_runner)):
        debug[where] = build._build_unit("kernel", project, ["debug-info"], tmp_path / where, runner, 300.0,
                                         [*project.macros(0), "-g"]).path.read_bytes()
    assert [p for p in _host_bytes(places) if p in debug["sandboxed"]] == []
    assert build.NEUTRAL_INCLUDE.encode() in debug["sandboxed"] and b"/build" in debug["sandboxed"]
    assert str(build.INCLUDE).encode() in debug["local"]


@needs_bwrap
def test_the_judge_classifies_includes_where_they_land(tmp_path):
    sandbox = build.sandbox(build_limits)

    def rules(project) -> tuple[judge.UnitFacts, set[str]]:
        built = build.build_kernel(project, 0, tmp_path, sandbox)
        runtime = build.build_runtime(tmp_path, sandbox, 300)
        return built.facts, {f.rule for f in judge.judge(built.facts, judge.policy(str(build.runtime_symbols(runtime))))}

    facts, found = rules(ADD)  # the emulator's headers (at /opt/evk/ascend/include), the tiling header (/build)
    assert found == set() and not facts.error and facts.symbols
    src = ADD.sources["kernel_src"]
    _, found = rules(dataclasses.replace(ADD, sources={**ADD.sources, "kernel_src": '#include "/dev/null"\n' + src}))
    assert "native-include" in found
    # the runtime's source, visible beside the headers (at its neutral path), is not a header: refused, either
    # by the build (it defines what runtime.o defines) or by the judge
    try:
        _, found = rules(dataclasses.replace(ADD, sources={**ADD.sources,
                                                           "kernel_src": '#include "../src/runtime.cpp"\n' + src}))
    except CompileError:
        found = {"native-include (the build refused it)"}
    assert any(r.startswith("native-include") for r in found), found


def test_foreign_files_follow_the_roots_they_are_given(tmp_path):
    # the build passes the neutral roots: a -MD list naming /build and /opt/evk/ascend/include is the
    # candidate's and the emulator's, the host path of the same header is not
    deps = ["/build/kernel_tu.cpp", "/opt/evk/ascend/include/kernel_operator.h", "/usr/include/stdio.h",
            "op_host/add_custom_tiling.h", str(build.INCLUDE / "kernel_operator.h"),
            "/opt/evk/ascend/include/../src/runtime.cpp"]
    assert judge.foreign_files(deps, Path("/build"), Path(build.NEUTRAL_INCLUDE)) == [
        str(build.INCLUDE / "kernel_operator.h"), "/opt/evk/ascend/src/runtime.cpp"]


@needs_bwrap
def test_the_backends_builds_load_in_the_host_process(tmp_path):
    backend = AscendSimBackend(tmp_path)
    try:
        assert isinstance(backend._runner, build_sandbox.BuildSandbox)
        assert backend._runner.view(tmp_path).inside(str(build.INCLUDE)) == build.NEUTRAL_INCLUDE
        hosted = build.build_host(ADD, tmp_path, backend._runner)
        result = host.run_host(hosted.path, {"mode": "describe", "op": ADD.op_type}, tmp_path / "runs")
        assert result.get("ok") and result.get("opdef"), result
        again = build.build_host(ADD, tmp_path, backend._runner)  # cached
        assert again.cached and again.path == hosted.path and again.facts.files
    finally:
        backend.close()


@needs_bwrap
def test_every_command_flag_and_dependency_list_names_neutral_paths(tmp_path, monkeypatch):
    """What the sandbox is handed (argv after the view, the working folder) and what the compiler wrote (-MD
    lists) name /build, /opt/evk/ascend and system paths only."""
    seen: list[str] = []

    class Recording(build_sandbox.BuildSandbox):
        def __call__(self, argv, cwd, timeout, writable):
            view = self.view(writable)
            seen.extend([*view.argv(argv), view.inside(str(cwd))])
            return super().__call__(argv, cwd, timeout, writable)

    deps: list[str] = []
    parse = judge.parse_deps
    monkeypatch.setattr(judge, "parse_deps", lambda text: deps.append(text) or parse(text))
    runner = Recording(build_limits, threads=2, mounts=build.neutral_mounts)
    build.build_kernel(ADD, 0, tmp_path, runner)
    build.build_host(ADD, tmp_path, runner)
    hosts = {str(CHECKOUT), sys.prefix, sys.base_prefix, os.path.expanduser("~"), str(default_cache_dir()),
             str(tmp_path), str(build.SIM_DIR)}
    assert len(deps) == 2 and len(seen) > 10
    for text in seen + deps:
        assert not [h for h in hosts if h in text], text
    flags = [a for a in seen if a.startswith(("-I", "-isystem", "-L", "-fmacro-prefix-map", "-fdebug-prefix-map"))]
    assert f"-I{build.NEUTRAL_INCLUDE}" in flags and "-I/build" in flags and "-fmacro-prefix-map=/build=/build" in flags
    assert all(a.split("=")[-1].removeprefix("-I").startswith(("/build", "/opt/evk/ascend/")) for a in flags), flags
    assert f"{build.NEUTRAL_INCLUDE}/kernel_operator.h" in deps[0] and "/build/kernel_tu.cpp" in deps[0]


@needs_bwrap
def test_the_ascend_build_sandbox_holds_no_python_and_no_proc(tmp_path):
    script = (f"test -e {sys.executable} && echo python-found; test -e {sys.base_prefix} && echo base-found; "
              # (spelled in two pieces: the view rewrites the host folders a trusted command names)
              f"h={str(build.INCLUDE)[:-3]}; test -e ${{h}}ude/kernel_operator.h && echo host-emulator-found; "
              "test -e /proc/self && echo proc-found; "
              f"test -e {build.NEUTRAL_INCLUDE}/kernel_operator.h && echo neutral-header; "
              f"test -e {build.NEUTRAL_RUNTIME_SRC} && echo neutral-runtime; echo cwd=$(pwd)")
    rc, out = build.sandbox(build_limits)(["/bin/sh", "-c", script], tmp_path, 60.0, tmp_path)
    assert rc == 0, out
    assert "neutral-header" in out and "neutral-runtime" in out and "cwd=/build" in out
    assert not [w for w in ("python-found", "base-found", "host-emulator-found", "proc-found") if w in out], out
