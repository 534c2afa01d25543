"""The binary judge of Ascend C builds (verifier/backends/ascend_sim/judge.py): real builds of the kernel and
host translation units (build.py, unsandboxed runner), their facts, and the findings. Honest projects (the shipped
examples, with emulator macros that expand to the runtime's internals) have none; every rule has its kernel."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from evokernel.verifier.backends.ascend_sim import build, judge
from evokernel.verifier.backends.ascend_sim.project import parse_candidate
from evokernel.verifier.trusted.native_build import _local_runner

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "evokernel" / "examples" / "ascend"
ADD = parse_candidate((EXAMPLES / "add_custom.py").read_text())


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("judge-cache")


def judged(project, unit: str, cache: Path) -> tuple[judge.UnitFacts, list[str]]:
    if unit == "kernel":
        result = build.build_kernel(project, 0, cache, _local_runner)
    else:
        result = build.build_host(project, cache, _local_runner)
    runtime = build.build_runtime(cache, _local_runner, 300)
    findings = judge.judge(result.facts, judge.policy(str(build.runtime_symbols(runtime))))
    return result.facts, [f"{f.rule}: {f.message}" for f in findings]


def variant(project, **sources):
    return dataclasses.replace(project, sources={**project.sources, **sources})


@pytest.mark.parametrize("example", ["add_custom.py", "matmul_custom.py"])
def test_shipped_examples_have_no_finding(cache, example):
    """Vector and MIX (cube) examples: GET_TILING_DATA, ASCEND_IS_AIV, REGISTER_TILING_DATA_CLASS and OP_ADD
    expand to the runtime's internals in the emulator's headers; none of it is the candidate's."""
    project = parse_candidate((EXAMPLES / example).read_text())
    for unit in ("kernel", "host"):
        facts, findings = judged(project, unit, cache)
        assert not facts.error and facts.symbols and findings == [], (unit, findings)
        spelled = [t for f in facts.files.values() for _, t in f.tokens]
        assert len(spelled) > 50 and not [t for t in spelled if t.startswith("evk_sim")]
    kernel, _ = judged(project, "kernel", cache)
    assert any("evk_sim::" in dem for _, dem, _ in kernel.symbols)  # reached through the headers, allowed


BAD_KERNEL = r'''
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <thread>
#define PASTE(a, b) a##b
extern "C" void bad_internal() { PASTE(ev, k_sim)::g_ub[0] = 1; }
extern "C" int bad_mprotect(void* p) { return mprotect(p, 4096, PROT_READ | PROT_WRITE); }
extern "C" long bad_syscall() { return syscall(SYS_getpid); }
extern "C" void bad_asm() { __asm__ volatile("nop"); }
extern "C" void bad_thread() { std::thread t([] {}); t.join(); }
extern "C" long bad_clock() { return std::chrono::steady_clock::now().time_since_epoch().count(); }
extern "C" void* bad_frame() { return __builtin_frame_address(0); }
extern "C" void bad_stdout() { std::puts("kernel"); }  // (std::printf is the kernel print)
extern "C" int bad_file() { return std::fopen("/etc/hostname", "r") != nullptr; }
extern "C" void bad_omp(float* x) {
#pragma omp parallel for
    for (int i = 0; i < 64; ++i) x[i] = 0;
}
__attribute__((constructor)) static void bad_ctor() {}
'''


def test_every_kernel_rule_has_its_offender(cache):
    facts, findings = judged(variant(ADD, kernel_src=ADD.sources["kernel_src"] + BAD_KERNEL), "kernel", cache)
    text = "\n".join(findings)
    assert re.search(r"ascend-internals: kernel_src: 'evk_sim' is part of the emulator's machinery", text)
    assert "native-asm: kernel_src" in text
    assert "native-attribute: kernel_src" in text and "constructor" in text
    assert "ascend-introspection: kernel_src: __builtin_frame_address" in text
    for what, symbol in [("memory mappings and protection", "mprotect"), ("raw system calls", "syscall"),
                         ("threads", "std::thread"), ("clocks and sleeping", "std::chrono"),
                         ("stdout/stdin", "puts"), ("files", "fopen")]:
        line = next((f for f in findings if f"reaches {what}" in f), "")
        assert symbol in line, (what, findings)
    # `#pragma omp` without -fopenmp is a no-op; the threads it would start are GOMP_ symbols (refused above)
    src = (ADD.sources["kernel_src"] + BAD_KERNEL).split("\n")
    internal = [ln for ln, t in facts.files["kernel_src"].tokens if t == "evk_sim"]
    assert internal == [next(i for i, t in enumerate(src, 1) if "bad_internal" in t)]  # the pasting line


def test_host_code_may_print_but_not_reach_the_system(cache):
    host = ADD.sources["host_operator_src"].replace(
        "context->SetBlockDim(blockDim);",
        'context->SetBlockDim(blockDim);\n    std::printf("blockDim %u\\n", blockDim);\n'
        '    if (std::getenv("HOME")) blockDim = 1;')
    host = '#include <cstdio>\n#include <cstdlib>\n' + host
    # getenv is the emulator's empty environment (evk_sim/host_env.h): the object never reaches the process's
    facts, findings = judged(variant(ADD, host_operator_src=host), "host", cache)
    assert findings == [], findings
    names = {name for name, _dem, _weak in facts.symbols}
    assert "getenv" not in names and "evk_host_getenv" in names
    clean = host.replace('    if (std::getenv("HOME")) blockDim = 1;', "")
    assert judged(variant(ADD, host_operator_src=clean), "host", cache)[1] == []  # printf to stdout is fine here
    # the process environment itself stays out of reach (another spelling of the read, and a change)
    for line in ('    if (secure_getenv("HOME")) blockDim = 1;', '    setenv("HOME", "/", 1);'):
        bad = host.replace('    if (std::getenv("HOME")) blockDim = 1;', line)
        _, findings = judged(variant(ADD, host_operator_src=bad), "host", cache)
        assert len(findings) == 1 and "the compiled host code reaches the environment" in findings[0], (line, findings)


def test_the_build_prelude_and_emulator_headers_are_not_the_candidates():
    labels = {"/w/kernel_src.cpp": "kernel_src"}
    line = ('{P:/w/kernel_tu.cpp;F:<NULL>;L:3;C:1;S:0;M:0x1;E:0,LOC:1,R:1}namespace '
            '{P:/inc/evk_sim/kernel.h;F:<NULL>;L:9;C:2;S:0;M:0x1;E:0,LOC:2,R:2}evk_sim '
            '{P:/w/kernel_src.cpp;F:<NULL>;L:7;C:1;S:0;M:0x1;E:0,LOC:3,R:3}evk_sim '
            '{P:/w/kernel_src.cpp;F:<NULL>;L:7;C:9;S:0;M:0x1;E:0,LOC:4,R:4}"evk_sim in a string" ')
    spelled, seen = judge.spelled_tokens(line, labels)
    assert seen == 4 and spelled == {"kernel_src": [(7, "evk_sim")]}  # a string literal is no token


def test_pasted_registrars_are_the_api_macros_own():
    """Every evk-prefixed name an emulator macro pastes from the candidate's names is exempt, and only those."""
    prefixes = set()
    for h in build.INCLUDE.rglob("*.h"):
        text = h.read_text()
        prefixes |= set(re.findall(r"\b(evk\w*_)##", text))
        prefixes |= set(re.findall(r"EVK_CAT\((evk\w*_),", text))
    assert prefixes and prefixes <= set(judge.PASTED_REGISTRARS), prefixes
    assert set(judge.PASTED_REGISTRARS) <= prefixes


def test_files_read_outside_the_emulator_the_project_and_the_system(tmp_path):
    deps = judge.parse_deps(f"k.o: {tmp_path}/kernel_tu.cpp {build.INCLUDE}/kernel_operator.h \\\n"
                            " /usr/include/stdio.h /etc/hostname ../outside.h\n")
    assert judge.foreign_files(deps, tmp_path, build.INCLUDE) == ["/etc/hostname", str(tmp_path.parent / "outside.h")]


def test_unreadable_facts_are_a_finding():
    assert [f.rule for f in judge.judge(judge.UnitFacts("kernel", error="x"), judge.SymbolPolicy(frozenset(), frozenset()))] \
        == ["native-judge"]
