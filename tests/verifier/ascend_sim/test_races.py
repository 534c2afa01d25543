"""Cross-core races on GM (rule cross_core_race): happens-before with vector clocks over the cores' fibers.
The emulator runs the cores one after another, so every racy case here still computes the right numbers; the
rule is what tells that on the NPU (cores running at the same time) the reader may see stale data."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import numpy as np
import pytest

from ascend_sim_harness import Result, build_cases

SRC = Path(__file__).parent / "race_cases.cpp"
MIX = {"mix": 2}
RACE = "cross_core_race"


def line_of(text: str) -> int:
    lines = SRC.read_text().splitlines()
    hits = [i + 1 for i, s in enumerate(lines) if text in s]
    assert len(hits) == 1, text
    return hits[0]


@pytest.fixture(scope="module")
def prog(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("race")
    return build_cases(sim, d, SRC, "race cases"), d


def races(res) -> list[dict]:
    return res.find(RACE)


@pytest.mark.parametrize("case", ["race_handoff_ok", "race_handoff_nowait", "race_handoff_set_first"])
def test_mix_handoff_through_the_workspace(sim, prog, case):
    exe, d = prog
    n = 3
    res = sim.launch(exe, d, case, [], [((n * 64,), np.float32), ((n * 64,), np.float32)], block_dim=n, options=MIX)
    assert res.rc == 0, res.violations
    # the emulator ran the AIC first: the numbers are right in every variant
    np.testing.assert_array_equal(res.outputs[1], 2.0 * np.arange(n * 64, dtype=np.float32))
    found = races(res)
    if case == "race_handoff_ok":
        assert found == [] and res.rules("error") == set(), res.violations
        return
    read = line_of("the racy read when ORDER != 0")
    write = line_of("gws.SetValue(i, static_cast<float>(blk * 64 + i))")
    assert [v["line"] for v in found] == [read], res.violations  # once per (access line, writer line)
    v = found[0]
    assert v["severity"] == "error"
    m = v["message"]
    assert m.startswith("AIV 0 of AI core 0 (block 0)'s DataCopy GM->UB reads") and "the AIC of AI core 0 wrote" in m
    assert f"output '{case}_out0.bin'" in m, m
    assert f"race_cases.cpp:{write}" in m and "reads 128 byte(s)" in m and "CrossCoreWaitFlag" in m, m


def test_the_message_names_tensor_and_byte(sim, prog):
    exe, d = prog
    res = sim.launch(exe, d, "race_handoff_nowait", [], [((64,), np.float32), ((64,), np.float32)], block_dim=1,
                     options=MIX)
    m = races(res)[0]["message"]
    assert "first at byte 0" in m and "SyncAll" in m and "stale" in m, m


@pytest.mark.parametrize("case", ["race_exchange_sync", "race_exchange_nosync"])
def test_two_blocks_exchange_through_gm(sim, prog, case):
    exe, d = prog
    n = 2
    res = sim.launch(exe, d, case, [], [((n * 8,), np.float32), ((n * 8,), np.float32)], block_dim=n)
    assert res.rc == 0, res.violations
    found = races(res)
    if case == "race_exchange_sync":
        np.testing.assert_array_equal(res.outputs[1], np.repeat([2.0, 1.0], 8).astype(np.float32))
        assert found == [] and res.rules("error") == set(), res.violations
        return
    # block 0 read block 1's part before block 1 ran (zeros here; on the NPU anything); block 1's read of block
    # 0's part gave the right value but nothing ordered it: both are races only block 1's is visible to the rule
    line = line_of("DataCopy(x, gp[((b + 1) % n) * 8], 8)")
    assert [(v["line"], v["block"]) for v in found] == [(line, 1)], res.violations
    assert "block 1's" in found[0]["message"] and "block 0 wrote" in found[0]["message"]


@pytest.mark.parametrize("case", ["race_atomic_sync", "race_atomic_nosync"])
def test_atomic_accumulation_then_read(sim, prog, case):
    exe, d = prog
    n = 4
    res = sim.launch(exe, d, case, [], [((n * 8,), np.float32)], block_dim=n, inout=[np.zeros(8, np.float32)])
    assert res.rc == 0, res.violations
    np.testing.assert_array_equal(res.outputs["io0"], np.full(8, n * (n + 1) / 2, np.float32))
    found = races(res)
    if case == "race_atomic_sync":
        # the atomic adds of all blocks do not race with each other; after SyncAll every block reads the sum
        np.testing.assert_array_equal(res.outputs[0], np.full(n * 8, n * (n + 1) / 2, np.float32))
        assert found == [] and res.rules("error") == set(), res.violations
        return
    line = line_of("DataCopy(x, ga, 8);  // the racy read without SYNC")
    assert [v["line"] for v in found] == [line] and found[0]["block"] == 1, res.violations
    # block 3 read after its own add: the other blocks' adds are unordered (an accumulation group)
    assert "accumulated atomically" in found[0]["message"] or "atomic add" in found[0]["message"]


def launch_ws(exe: Path, d: Path, case: str, block_dim: int, ws_bytes: int, out_bytes: int) -> Result:
    rep = d / f"{case}.json"
    rep.unlink(missing_ok=True)
    r = subprocess.run([str(exe), case, "--block-dim", str(block_dim), "--report", str(rep), "--name", case,
                        "--workspace", str(ws_bytes), "--out", f"{d / (case + '_out.bin')}:{out_bytes}"],
                       capture_output=True, text=True, timeout=60)
    return Result(r.returncode, r.stderr, json.loads(rep.read_text()) if rep.exists() else {})


@pytest.mark.parametrize("case", ["race_reuse_sync", "race_reuse_nosync"])
def test_workspace_rewritten_by_another_block(sim, prog, case):
    """The workspace has no block_write_overlap (blocks may reuse it): the ordering of the two writes is what
    counts."""
    exe, d = prog
    res = launch_ws(exe, d, case, 2, 32, 8)
    assert res.rc == 0, res.violations
    found = races(res)
    if case == "race_reuse_sync":
        assert found == [] and res.rules("error") == set(), res.violations
        return
    line = line_of("the racy write without SYNC")
    assert [(v["line"], v["block"]) for v in found] == [(line, 1)], res.violations
    assert "writes 4 byte(s) of workspace" in found[0]["message"], found[0]["message"]
