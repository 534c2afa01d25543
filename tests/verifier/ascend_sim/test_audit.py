"""The parent's audit of emulator reports (verifier/backends/ascend_sim/audit.py) and the runtime's per-argument
tallies it reads: an honest report passes; each claim a tampered report could make (another tiling, fewer blocks,
outputs not written through the API, schedules shorter than their own copies, other hardware constants) is
refused, each by its own check."""
from __future__ import annotations

import copy
import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import build_cases
from evokernel.verifier.backends.ascend_sim import audit
from evokernel.verifier.backends.ascend_sim.project import parse_candidate

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
PROJECTS = HERE / "projects"
ADD = parse_candidate((ROOT / "evokernel" / "examples" / "ascend" / "add_custom.py").read_text())
SHAPE = (64, 1024)
N = SHAPE[0] * SHAPE[1]


@pytest.fixture(scope="module")
def honest(sim, tmp_path_factory):
    """An honest report of the add project (operator flow: host half, then the kernel from its tiling)."""
    d = tmp_path_factory.mktemp("audit-add")
    src = PROJECTS / "add_custom"
    exe = sim.op_project(d, op="AddCustom", kernel_name="add_custom", kernel_src=(src / "add_custom_kernel.cpp").read_text(),
                         host_src=(src / "add_custom.cpp").read_text(), tiling_src=(src / "add_custom_tiling.h").read_text(),
                         tiling_header="add_custom_tiling.h", dtypes={"x": "float", "y": "float", "z": "float"},
                         label="add_custom (audit)")
    rng = np.random.default_rng(3)
    x, y = (rng.standard_normal(SHAPE).astype(np.float32) for _ in range(2))
    res = sim.run_op(exe, d, "AddCustom", [("x", x), ("y", y)], [("z", SHAPE, np.float32)])
    assert res.rc == 0 and res.report["status"] == "ok", res.stderr
    np.testing.assert_array_equal(res.outputs["z"], x + y)
    return res.report


def served_of(report: dict) -> dict:
    t = audit._tiling_of(report)
    return {audit.tiling_id(t): t}


def check(report: dict, project=ADD, served=None) -> list[str]:
    return audit.audit([[report]], served if served is not None else served_of(report), (3 * 4 * N, 4 * N), project)


def test_the_report_says_what_the_api_moved(honest):
    args = {a["name"]: a for a in honest["args"]}
    assert [a["kind"] for a in honest["args"]] == ["input", "input", "output", "workspace", "tiling"]
    assert args["x"]["read_bytes"] == args["y"]["read_bytes"] == 4 * N and args["x"]["written_bytes"] == 0
    assert args["z"]["written_bytes"] == args["z"]["covered_bytes"] == 4 * N
    # bytes that differ from the NaN poison (a correct float may hold a 0xFF byte)
    assert 0.99 * 4 * N < args["z"]["changed_bytes"] <= 4 * N
    assert args["x"]["covered_bytes"] == 0  # covered bytes are kept for outputs only


def test_an_honest_report_passes(honest):
    assert check(honest) == []


def tampered(report: dict, edit) -> dict:
    r = copy.deepcopy(report)
    edit(r)
    return r


@pytest.mark.parametrize("what, edit, expect", [
    ("a tiling nobody computed", lambda r: r["tiling"].update(data_hex="00" * 20), "did not compute"),
    ("another block count", lambda r: r.update(block_dim=1), "did not compute"),
    ("a block dropped", lambda r: (r["blocks"].pop(), r.update(blocks_run=len(r["blocks"]))), "TilingFunc set blockDim"),
    ("outputs written elsewhere", lambda r: r["args"][2].update(covered_bytes=4 * N - 4), "the Ascend C API wrote"),
    ("a copy pipe zeroed", lambda r: r["blocks"][3]["timing_estimate"]["busy_cycles"].update(mte2=0), "mte2 moved"),
    ("a schedule shortened", lambda r: r["blocks"][0]["timing_estimate"].update(cycles=1), "in a block of 1"),
    ("other hardware constants", lambda r: r["hw_model"].update(mte2_bytes_per_cycle=64), "hardware constants"),
])
def test_a_tampered_report_is_refused(honest, what, edit, expect):
    bad = tampered(honest, edit)
    problems = check(bad, served=served_of(honest))
    assert any(expect in p for p in problems), (what, problems)


def test_value_filled_outputs_need_their_changed_bytes_covered(honest):
    zeros = dataclasses.replace(ADD, sources={**ADD.sources, "python_bind_src": ADD.sources["python_bind_src"].replace(
        "at::empty_like", "at::zeros_like")})
    assert audit.poisoned_outputs(ADD) and not audit.poisoned_outputs(zeros)
    few = tampered(honest, lambda r: r["args"][2].update(covered_bytes=100, changed_bytes=100))
    assert check(few, zeros) == []  # with zeros the untouched bytes may be right as they are
    assert any("output byte(s) changed" in p for p in check(tampered(few, lambda r: r["args"][2].update(changed_bytes=101)), zeros))
    assert any("the Ascend C API wrote 100" in p for p in check(few, ADD))


def test_a_stopped_run_is_left_to_the_runtime_gate(honest):
    assert check(tampered(honest, lambda r: r.update(status="aborted", block_dim=0))) == []


@pytest.fixture(scope="module")
def cases(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("coverage")
    return build_cases(sim, d, HERE / "coverage_cases.cpp", "coverage_cases.cpp"), d


def test_output_bytes_written_behind_the_api_are_fatal(sim, cases):
    exe, d = cases
    a = np.arange(256, dtype=np.float32)
    ok = sim.launch(exe, d, "c_copy_all", [a], [((256,), np.float32)])
    assert ok.rc == 0 and ok.violations == [] and ok.report["args"][1]["covered_bytes"] == 1024
    bad = sim.launch(exe, d, "c_half_behind_api", [a], [((256,), np.float32)])
    assert bad.rules("fatal") == {"gm_raw_write"}
    v = bad.find("gm_raw_write")[0]
    assert re.search(r"512 byte\(s\) of output '\S+' \(first at byte 512\) changed without an Ascend C API write",
                     v["message"])
    out = bad.report["args"][1]
    assert out["covered_bytes"] == 512 and out["changed_bytes"] == 1024
