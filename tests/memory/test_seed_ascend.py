"""Seed knowledge (M0) of the Ascend C family (ascend-sim and ascend share memory/seed/ascend/): the items
load with stable ids for both backends, the store's lookups find them, and every code snippet in them is
real: helper functions compile against the emulator and match numpy, the complete kernel and the
fragments of operator projects run end to end through `evokernel verify` (ascend-sim) on suite tasks.

How each code block of an item is checked:

* a ```cpp block with `#include "kernel_operator.h"` and an `extern "C"` kernel is a complete kernel: a
  vehicle in ascend_seed/ (an operator project whose kernel_src is `@seed <item>`) supplies the host
  side and runs it on a suite task;
* a block whose lines occur, in order, in a verified operator project (the system prompt's example or a
  vehicle's own text) is a fragment of it;
* every other ```cpp block holds helper functions: all of them, in item order, make seed_helpers.h for
  the test kernels of ascend_seed/cases.cpp, every function must be called there or in a vehicle, and
  the vehicles include the helpers of the items they name (`@seed <item>`), so the helpers also run in
  full operator projects.
"""
from __future__ import annotations

import functools
import re
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from evokernel.verifier.backends.registry import family
from evokernel.memory.seed import apis_in, backends, load_seed
from evokernel.memory.store import KINDS
from evokernel.prompts.render import PromptOptions

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VEHICLES = HERE / "ascend_seed"
NPU_L1 = ROOT / "evokernel" / "suites" / "npu_l1"
sys.path.insert(0, str(ROOT / "tests" / "verifier" / "ascend_sim"))  # the emulator's test harness

from ascend_sim_harness import Sim, build_cases, have_gxx  # noqa: E402
from verdicts import unexplained_warnings

BLOCK = re.compile(r"```(\w+)\n(.*?)```", re.S)
HELPER_DEF = re.compile(r"__aicore__\s+inline\s+[\w:<>]+\s+(\w+)\s*\(")


def items():
    return load_seed("ascend-sim")


def blocks(lang: str | None = None) -> list[tuple[str, str, str]]:
    """(item stem, language, code) of every fenced block of the ascend seed, in item order."""
    out = []
    for it in items():
        for kind, code in BLOCK.findall(it.text):
            if lang is None or kind == lang:
                out.append((it.id.rsplit(":", 1)[1], kind, code))
    return out


def is_complete_kernel(code: str) -> bool:
    return '#include "kernel_operator.h"' in code and 'extern "C"' in code


def norm_lines(text: str) -> list[str]:
    return [ln.strip() for ln in text.splitlines() if ln.strip()]


def contains_lines(haystack: str, needle: str) -> bool:
    h, n = norm_lines(haystack), norm_lines(needle)
    return any(h[i:i + len(n)] == n for i in range(len(h) - len(n) + 1))


@functools.lru_cache(maxsize=None)
def system_example() -> str:
    """The complete candidate of the ascend system prompt."""
    from evokernel.generators.base import GenerationRequest
    from evokernel.prompts.render import render_prompt
    from evokernel.tasks.load import load_task

    task = load_task(NPU_L1 / "02_leaky_relu.py")
    system, _ = render_prompt(GenerationRequest(task=task, stage="draft", backend="ascend-sim"))
    return system[system.index("```python\n") + len("```python\n"):system.rindex("```")]


# shipped examples that are vehicles too: their kernel_src replaced by a seed item's complete kernel
EXAMPLE_VEHICLES = {"matmul_custom": (ROOT / "evokernel" / "examples" / "ascend" / "matmul_custom.py", "14_cube_matmul")}


def vehicle_sources() -> dict[str, str]:
    out = {p.stem: p.read_text() for p in sorted(VEHICLES.glob("*.py"))}
    for name, (path, item) in EXAMPLE_VEHICLES.items():
        text = path.read_text()
        start = text.index('kernel_src = """')
        end = text.index('"""', start + len('kernel_src = """')) + 3
        # (" @ " in its prose is the matmul operator, not a seed marker)
        out[name] = (text[:start] + f'kernel_src = """@seed {item}"""' + text[end:]).replace(" @ ", " x ")
    return out


def verified_projects() -> list[str]:
    """Operator projects verified end to end below (raw text: `@seed` markers not expanded)."""
    return [system_example(), *vehicle_sources().values()]


def is_fragment(code: str) -> bool:
    return any(contains_lines(p, code) for p in verified_projects())


@functools.lru_cache(maxsize=None)
def helper_blocks() -> list[tuple[str, str]]:
    return [(stem, code) for stem, _, code in blocks("cpp")
            if not is_complete_kernel(code) and not is_fragment(code)]


def expand(vehicle: str) -> str:
    """A vehicle with every `@seed <item>` line replaced by that item's ```cpp blocks."""
    by_item: dict[str, list[str]] = {}
    for stem, _, code in blocks("cpp"):
        by_item.setdefault(stem, []).append(code)

    def rep(m: re.Match[str]) -> str:
        assert m.group(1) in by_item, f"{m.group(1)}: no such seed item with code"
        return "\n".join(by_item[m.group(1)])

    return re.sub(r"@seed (\w+)", rep, vehicle)


# --- loading, ids, the family mapping ---------------------------------------------------------------

def test_family_mapping():
    assert family("ascend-sim") == "ascend" and family("ascend") == "ascend"
    assert family("cpu") == "cpu" and family("something-else") == "something-else"
    assert "ascend" in backends() and "ascend-sim" not in backends()  # one folder per family


def test_ascend_seed_items():
    sim, npu = load_seed("ascend-sim"), load_seed("ascend")
    assert 14 <= len(sim) <= 24
    # the same items and ids for both backends of the family: learned values carry over
    assert [i.id for i in sim] == [i.id for i in npu] and len({i.id for i in sim}) == len(sim)
    assert [i.text for i in sim] == [i.text for i in npu]
    assert {i.kind for i in sim} == {"seed", "best_practice"} <= set(KINDS)
    limit = PromptOptions().max_item_chars
    for it, other in zip(sim, npu):
        assert it.id.startswith("seed:ascend:") and it.key and len(it.text) > 300
        assert it.meta["backend"] == "ascend-sim" and other.meta["backend"] == "ascend"
        assert it.meta["content_hash"] == other.meta["content_hash"] and len(it.meta["content_hash"]) == 16
        assert it.meta["source"] == "seed" and it.meta["task"] == "" and it.meta["title"] and it.meta["categories"]
        assert len(it.text) <= limit, f"{it.id}: {len(it.text)} characters would be cut in prompts"
        if it.kind == "seed":
            assert it.meta["apis"], it.id
    core = [i.id for i in sim if "*" in i.meta["categories"]]
    assert core == ["seed:ascend:00_candidate_format", "seed:ascend:01_emulator_rules"]
    covered = {c for i in sim for c in i.meta["categories"]}
    assert {"elementwise", "activation", "reduction", "softmax", "normalization", "loss", "fusion"} <= covered
    assert len([i for i in sim if i.kind == "best_practice"]) >= 5


def test_apis_in_code_for_both_backends():
    code = "ReduceSum(red, x, work, n);\nDataCopyPad(xLocal, xGm, params, pad);\nBrcb(bc, v, 1, p);\n// MyReduceSum"
    found = apis_in(code, "ascend-sim")
    assert {"ReduceSum", "DataCopyPad", "Brcb"} <= set(found) and found == apis_in(code, "ascend")
    assert "ReduceMax" not in found and apis_in("", "ascend-sim") == []


def test_ensure_seed_and_knowledge_for_the_family(tmp_path):
    from evokernel.memory.embeddings import HashEmbedder
    from evokernel.memory.store import MemoryStore
    from evokernel.memory.values import DRAFT

    store = MemoryStore(tmp_path / "mem", embedder=HashEmbedder())
    try:
        n = store.ensure_seed("ascend-sim")
        assert n == len(items()) and store.ensure_seed("ascend-sim") == 0
        core = ["seed:ascend:00_candidate_format", "seed:ascend:01_emulator_rules"]
        # core items first, then by how specifically an item matches (memory/knowledge.py): the one softmax item
        # before the items whose APIs the retrieved code uses
        k = [i.id for i in store.knowledge("ascend-sim", apis={"Brcb", "WholeReduceMax", "x"}, category="softmax",
                                           limit=5)]
        assert k == core + ["seed:ascend:11_row_softmax", "seed:ascend:07_mask_repeat_broadcast",
                            "seed:ascend:06_reductions"]
        for category, ops, item in (("activation", {"gelu"}, "08_activations"), ("reduction", {"sum"}, "06_reductions"),
                                    ("normalization", {"layer_norm"}, "12_layer_rms_norm"),
                                    ("softmax", {"softmax"}, "11_row_softmax"), ("elementwise", set(), "02_pipeline_tque")):
            assert [i.id for i in store.knowledge("ascend-sim", category=category, ops=ops, limit=3)] == core + [
                f"seed:ascend:{item}"]
        assert store.knowledge("ascend") == [] and store.knowledge("cpu") == []
        # a value learned on the emulator stays with the item when the same memory serves real NPUs
        bp = "seed:ascend:20_bp_double_buffer"
        store.values.record("a0", DRAFT, 1.0, [bp], task="relu")
        q = store.values.q(bp, DRAFT)
        assert q > 0
        assert store.ensure_seed("ascend") == n  # re-tagged, same ids
        assert store.count() == n and store.knowledge("ascend-sim") == []
        assert [i.id for i in store.knowledge("ascend", limit=2)] == core
        assert store.get([bp])[0].meta["backend"] == "ascend" and store.values.q(bp, DRAFT) == q
        assert store.ensure_seed("ascend") == 0
        store.ensure_seed("cpu")
        assert store.count() == n + len(load_seed("cpu"))
    finally:
        store.close()


# --- the code blocks --------------------------------------------------------------------------------

def test_code_blocks_pass_the_static_rules():
    from evokernel.verifier.trusted.native_rules import check_native

    cpp = blocks("cpp")
    assert len(cpp) >= 15 and {lang for _, lang, _ in blocks()} <= {"cpp", "python"}
    for stem, _, code in cpp:
        if "EXEC_NPU_CMD" in code:
            continue  # python_bind_src: torch's C++ API by design, not checked as kernel/host source
        assert check_native(code, "ascend") == [], stem


def test_every_block_is_checked_somewhere():
    """Complete kernels have a vehicle, fragments come from verified projects, helper functions are
    called by the test kernels or the vehicles."""
    vehicles = vehicle_sources()
    for stem, lang, code in blocks():
        if lang == "python" or is_complete_kernel(code):
            if lang == "cpp":
                assert any(re.search(rf"@seed {stem}\b", v) for v in vehicles.values()), f"{stem}: no vehicle"
            else:
                assert is_fragment(code), f"{stem}: python block not taken from a verified project"
    helpers = helper_blocks()
    assert {stem for stem, _ in helpers} >= {"03_datacopy_pad", "05_vector_count_form", "06_reductions",
                                             "07_mask_repeat_broadcast", "08_activations", "09_cast_half",
                                             "10_compare_select", "11_row_softmax", "12_layer_rms_norm"}
    # calls from the test kernels, the vehicles and other helpers (definitions do not count)
    callers = "\n".join([(VEHICLES / "cases.cpp").read_text(), *vehicles.values(), *(c for _, c in helpers)])
    defined = HELPER_DEF.findall(callers)
    for stem, code in helpers:
        names = HELPER_DEF.findall(code)
        assert names, f"{stem}: a helper block defines no __aicore__ inline function"
        for name in names:
            calls = len(re.findall(rf"\b{name}\s*\(", callers)) - defined.count(name)
            assert calls >= 1, f"{stem}: {name} is never exercised"


# --- helper functions against numpy (direct launches on the emulator) --------------------------------

F32, F16 = np.float32, np.float16
rng = np.random.default_rng(2024)


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    if not have_gxx():
        pytest.skip("g++ is not available")
    return Sim(tmp_path_factory.mktemp("ascend-sim"))


@pytest.fixture(scope="module")
def cases(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("seed-cases")
    (d / "seed_helpers.h").write_text("\n\n".join(code for _, code in helper_blocks()))
    shutil.copy(VEHICLES / "cases.cpp", d / "cases.cpp")
    exe = build_cases(sim, d / "build", d / "cases.cpp", "seed helpers")
    return sim, exe, d / "run"


def launch(cases, case, inputs, out_shape, out_dtype, prm, fprm=(0.0,), block_dim=1, inout=()):
    sim, exe, d = cases
    args = [np.asarray(prm, np.int32), np.asarray(fprm, F32), *inputs]
    res = sim.launch(exe, d, case, args, [] if inout else [(out_shape, out_dtype)], block_dim=block_dim,
                     inout=list(inout))
    assert res.rc == 0, res.stderr[-2000:]
    assert res.violations == [], [(v["rule"], v["severity"], v["line"], v["message"]) for v in res.violations]
    return res.outputs["io0"] if inout else res.outputs[0]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


UNARY = {
    "c_clamp": lambda x, a: np.clip(x, -0.5, 0.75),
    "c_hardswish": lambda x, a: x * np.clip(x / 6 + 0.5, 0, 1),
    "c_sigmoid": lambda x, a: sigmoid(x),
    "c_tanh": lambda x, a: np.tanh(x),
    "c_tanh_inplace": lambda x, a: np.tanh(x),
    "c_gelu": lambda x, a: gelu_tanh(x),
    "c_gelu_inplace": lambda x, a: gelu_tanh(x),
    "c_softplus": lambda x, a: np.logaddexp(0, x),
    "c_softplus_inplace": lambda x, a: np.logaddexp(0, x),
    "c_elu": lambda x, a: np.where(x > 0, x, a * np.expm1(x)),
    "c_elu_inplace": lambda x, a: np.where(x > 0, x, a * np.expm1(x)),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(UNARY))
def test_elementwise_helpers(cases, case):
    for n in (1, 203, 4099):  # a single element, a tail, several repeats
        x = (rng.standard_normal(n) * 6).astype(F32)
        x[:4] = np.array([100.0, -100.0, 0.0, 1e-3], F32)[:n]  # overflow-prone and tiny values
        got = launch(cases, case, [x], (n,), F32, [n], [0.7])
        with np.errstate(over="ignore"):
            want = UNARY[case](x.astype(np.float64), 0.7)
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=1e-6, err_msg=f"{case}[{n}]")


@pytest.mark.slow
def test_half_helpers(cases):
    for n in (7, 1000):
        x = (rng.standard_normal(n) * 4).astype(F16)
        got = launch(cases, "c_hardswish_half", [x], (n,), F16, [n])
        np.testing.assert_allclose(got.astype(np.float64), UNARY["c_hardswish"](x.astype(np.float64), 0), rtol=3e-3,
                                   atol=3e-3)
        for case, dt, tol in (("c_gelu_via_float_half", F16, 1e-3), ("c_gelu_via_float_float", F32, 1e-6)):
            x = (rng.standard_normal(n) * 4).astype(dt)
            got = launch(cases, case, [x], (n,), dt, [n])
            np.testing.assert_allclose(got.astype(np.float64), gelu_tanh(x.astype(np.float64)), rtol=tol, atol=tol)


@pytest.mark.slow
def test_reduction_helpers(cases):
    for n in (1, 63, 64, 1000, 5000):
        x = (rng.standard_normal(n) * 3).astype(F32)
        got = launch(cases, "c_sum_max", [x], (2,), F32, [n])
        np.testing.assert_allclose(got, [x.astype(np.float64).sum(), x.max()], rtol=1e-5, atol=1e-4)
    for rows, cols in ((1, 1), (5, 7), (13, 64), (40, 33)):
        x = (rng.standard_normal((rows, cols)) * 3).astype(F32)
        r8 = (rows + 7) // 8 * 8
        got = launch(cases, "c_row_sums_maxes", [x], (2 * r8,), F32, [rows, cols])
        want = np.zeros(2 * r8)
        want[:rows], want[r8:r8 + rows] = x.astype(np.float64).sum(-1), x.max(-1)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    # blocks combine partial results with atomic adds into a zero-filled output
    parts = rng.standard_normal(7).astype(F32)
    got = launch(cases, "c_atomic_add", [parts], None, None, [0], block_dim=7, inout=[np.zeros(1, F32)])
    np.testing.assert_allclose(got, [parts.astype(np.float64).sum()], rtol=1e-6)


def row_refs(x, g, b, eps):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(-1, keepdims=True))
    sm = e / e.sum(-1, keepdims=True)
    ln = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + eps) * g + b
    rms = x / np.sqrt((x ** 2).mean(-1, keepdims=True) + eps) * g
    return {"c_softmax_rows": sm, "c_softmax_rows_inplace": sm, "c_log_softmax_rows": np.log(sm),
            "c_layer_norm_rows": ln, "c_layer_norm_rows_inplace": ln, "c_rms_norm_rows": rms,
            "c_softmax_short_rows": sm}


@pytest.mark.slow
@pytest.mark.parametrize("rows,cols", [(1, 1), (5, 7), (13, 64), (40, 33), (3, 1000)])
def test_row_helpers(cases, rows, cols):
    x = (rng.standard_normal((rows, cols)) * 3).astype(F32)
    g, b = rng.standard_normal(cols).astype(F32), rng.standard_normal(cols).astype(F32)
    for case, want in row_refs(x, g, b, 1e-5).items():
        if case == "c_softmax_short_rows" and cols > 64:
            continue  # the mask/repeat form takes rows of at most 64 floats
        got = launch(cases, case, [x, g, b], (rows, cols), F32, [rows, cols], [1e-5])
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=2e-6, err_msg=f"{case}[{rows}x{cols}]")


@pytest.mark.slow
def test_compare_select_helpers(cases):
    for n in (1, 8, 50, 64, 65, 1000):  # around the 8-element and 64-element (256-byte) boundaries
        x = rng.standard_normal(n).astype(F32)
        got = launch(cases, "c_hardshrink", [x], (n,), F32, [n], [0.5])
        np.testing.assert_array_equal(got, np.where(np.abs(x) > 0.5, x, 0))


# --- complete operator projects end to end: the system prompt's example and the vehicles -------------

@pytest.fixture(scope="module")
def ascend_verifier(cache_dir):
    if not have_gxx():
        pytest.skip("g++ is not available")
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    v = Verifier("ascend-sim", VerifyConfig(cache_dir=cache_dir, timing=False)).start()
    yield v
    v.close()


PROJECTS = [  # (candidate, task file, substitutions)
    ("system-prompt example", "02_leaky_relu.py", {}),
    ("mul_add_custom", "12_elementwise_mul_add.py", {}),
    ("softmax_custom", "19_softmax.py", {}),
    ("softmax_custom", "29_softmax_fp16.py", {}),
    ("mse_loss_custom", "24_mse_loss.py", {}),
    ("layer_norm_custom", "21_layer_norm.py", {"@dtype": "torch.float32"}),
    ("layer_norm_custom", "30_layer_norm_fp16.py", {"@dtype": "torch.float16"}),
    ("matmul_custom", "31_matmul_fp16.py", {}),
    ("conv2d_custom", "36_conv2d_3x3.py", {}),
    ("conv2d_cube_custom", "36_conv2d_3x3.py", {}),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,task_file,subs", PROJECTS, ids=[f"{p[0]}-{p[1][:-3]}" for p in PROJECTS])
def test_projects_pass_the_verifier(ascend_verifier, name, task_file, subs):
    from evokernel.tasks.load import load_task

    source = system_example() if name == "system-prompt example" else expand(vehicle_sources()[name])
    for k, v in subs.items():
        source = source.replace(k, v)
    assert "@" not in re.sub(r"@(property|staticmethod)", "", source)
    verdict = ascend_verifier.verify(load_task(NPU_L1 / task_file), source)
    assert verdict.feasible, verdict.feedback
    assert not unexplained_warnings(verdict), unexplained_warnings(verdict)


@pytest.mark.slow
@pytest.mark.parametrize("dtype", [F32, F16])
def test_system_prompt_example_on_edge_shapes(sim, tmp_path, dtype):
    """The example in both dtype combinations on shapes the suite task does not have (one element,
    tails, more units than cores), with the attribute given and defaulted: no violation at all."""
    from evokernel.verifier.backends.ascend_sim.project import parse_candidate

    project = parse_candidate(system_example())
    src = project.sources
    ctype = {F32: "float", F16: "half"}[dtype]
    exe = sim.op_project(tmp_path / "p", op=project.op_type, kernel_name=project.kernel_name,
                         kernel_src=src["kernel_src"], host_src=src["host_operator_src"],
                         tiling_src=src["host_tiling_src"], tiling_header=project.tiling_header,
                         dtypes={"x": ctype, "y": ctype}, label="system-prompt example")
    for shape in [(1,), (3, 1001), (16, 16384), (7, 33, 65)]:
        for slope in (None, 0.2):
            x = rng.standard_normal(shape).astype(dtype)
            res = sim.run_op(exe, tmp_path / "p", project.op_type, [("x", x)], [("y", shape, dtype)],
                             attrs={} if slope is None else {"negative_slope": slope})
            assert res.rc == 0 and res.report["status"] == "ok" and res.violations == [], res.violations
            s = 0.01 if slope is None else slope
            np.testing.assert_allclose(res.outputs["y"].astype(np.float64),
                                       np.where(x >= 0, x, x * dtype(s)).astype(np.float64), rtol=1e-3, atol=1e-3)
