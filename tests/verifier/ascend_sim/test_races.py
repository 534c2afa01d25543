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
    # block 0 read block 1's part before block 1 ran (zeros here; on the NPU anything): block 1's write of its
    # part meets that unordered read (write after read); block 1's read of block 0's part gave the right value
    # but nothing ordered it (read after write)
    read, write = line_of("DataCopy(x, gp[((b + 1) % n) * 8], 8)"), line_of("DataCopy(gp[b * 8], y, 8);")
    assert [(v["line"], v["block"]) for v in found] == [(write, 1), (read, 1)], res.violations
    war, raw = (v["message"] for v in found)
    assert war.startswith("block 1's DataCopy UB->GM writes 32 byte(s) of output") and "first at byte 32" in war, war
    assert f"that block 0 read at {SRC}:{read}," in war and "nothing orders that read before this write" in war, war
    assert "block 1's" in raw and f"block 0 wrote at {SRC}:{write}" in raw, raw


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
    add = line_of("DataCopy(ga, y, 8);  // every block's add")
    # block 1's add races with block 0's read before it (write after read), block 1's read with block 0's add
    assert [(v["line"], v["block"]) for v in found] == [(add, 1), (line, 1)], res.violations
    assert "block 1's DataCopy UB->GM writes (atomic add) 32 byte(s)" in found[0]["message"], found[0]["message"]
    assert f"that block 0 read at {SRC}:{line}," in found[0]["message"], found[0]["message"]
    assert "accumulated atomically" in found[1]["message"] or "atomic add" in found[1]["message"]


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


# ---- write after read: reads are recorded (race.h: read sets) ----

@pytest.mark.parametrize("case", ["race_slot_back", "race_slot_noback", "race_slot_back_early"])
def test_the_cube_core_rewrites_a_slot_its_vector_cores_read(sim, prog, case):
    """The AIC rewrites its workspace slot with the next tile. Only a flag back from both AIVs after their reads
    orders the rewrite after them; a start-up signal (noback) or a flag back set before the read (back_early)
    does not. The emulator ran the AIVs' reads first: every output is right, only the rule tells."""
    exe, d = prog
    n = 2
    res = sim.launch(exe, d, case, [], [((n * 64,), np.float32), ((n * 128,), np.float32)], block_dim=n, options=MIX)
    assert res.rc == 0, res.violations
    want = np.concatenate([np.concatenate([t * 1000 + b * 64 + np.arange(64)]) for b in range(n) for t in range(2)])
    np.testing.assert_array_equal(res.outputs[1], want.astype(np.float32))
    found = races(res)
    if case == "race_slot_back":
        assert found == [] and res.rules("error") == set(), res.violations
        return
    write, read = line_of("static_cast<float>(t * 1000 + blk * 64 + i));  // rewrite"), line_of("the slot read the")
    assert [v["line"] for v in found] == [write], res.violations  # once per (read line, write line)
    v = found[0]
    assert v["severity"] == "error" and v["blocks"] == [0], v  # AI core 1 repeats the same pair of lines
    m = v["message"]
    assert m.startswith("the AIC of AI core 0's GlobalTensor::SetValue writes 4 byte(s) of output "
                        f"'{case}_out0.bin' (first at byte 0) that AIV 0 of AI core 0 (block 0) read at "
                        f"{SRC}:{read},"), m
    assert "CrossCoreSetFlag after the read, CrossCoreWaitFlag before this write" in m, m


def test_write_after_read_costs_nothing_when_off(sim, prog):
    """EVK_SIM_RACE=0: no rule, no record (the report has no race object)."""
    exe, d = prog
    import os
    old = os.environ.get("EVK_SIM_RACE")
    os.environ["EVK_SIM_RACE"] = "0"
    try:
        res = sim.launch(exe, d, "race_slot_noback", [], [((64,), np.float32), ((128,), np.float32)], block_dim=1,
                         options=MIX)
    finally:
        if old is None:
            del os.environ["EVK_SIM_RACE"]
        else:
            os.environ["EVK_SIM_RACE"] = old
    assert res.rc == 0 and races(res) == [] and "race" not in res.report, res.violations


@pytest.mark.parametrize("case", ["race_peek_sync", "race_peek_nosync_reader0", "race_peek_nosync_reader1"])
def test_a_block_reads_another_blocks_part_of_the_output(sim, prog, case):
    """Block READER copies the other block's part of out. Without SyncAll it is caught whichever block the
    emulator runs first: reader 0 read before block 1 wrote (block 1's write meets the read), reader 1 after
    block 0 wrote (the read meets the write)."""
    exe, d = prog
    x = np.arange(16, dtype=np.float32)
    res = sim.launch(exe, d, case, [x], [((16,), np.float32), ((8,), np.float32)], block_dim=2)
    assert res.rc == 0, res.violations
    np.testing.assert_array_equal(res.outputs[0], 2 * x)
    found = races(res)
    read, write = line_of("DataCopy(v, go[(1 - b) * 8], 8);"), line_of("DataCopy(go[b * 8], y, 8);  // each block")
    if case == "race_peek_sync":
        np.testing.assert_array_equal(res.outputs[1], 2 * x[8:])
        assert found == [] and res.rules("error") == set(), res.violations
        return
    if case.endswith("reader1"):  # block 0 ran first: the read meets the write
        np.testing.assert_array_equal(res.outputs[1], 2 * x[:8])
        assert [(v["line"], v["block"]) for v in found] == [(read, 1)], res.violations
        assert f"block 0 wrote at {SRC}:{write}" in found[0]["message"], found[0]["message"]
        return
    # block 0 read block 1's part before block 1 ran (the emulator's zero-filled or poisoned output)
    assert [(v["line"], v["block"]) for v in found] == [(write, 1)], res.violations
    m = found[0]["message"]
    assert m.startswith(f"block 1's DataCopy UB->GM writes 32 byte(s) of output '{case}_out0.bin' (first at byte "
                        f"32) that block 0 read at {SRC}:{read},"), m
    assert "CrossCoreSetFlag/CrossCoreWaitFlag), or put a SyncAll between them" in m, m


@pytest.mark.parametrize("case", ["race_shared_read", "race_shared_rewrite", "race_shared_rewrite_sync",
                                  "race_shared_rewrite_flags"])
def test_many_cores_read_the_same_bytes(sim, prog, case):
    """Eight blocks read the same input and the same workspace table (filled by block 0 before a SyncAll). Reads
    never race with reads; the input costs no record at all; the table's bytes hold one read set of all eight.
    The last block rewriting the table without a barrier races with the seven other reads (the last reader
    before that write is the writer itself: a detector keeping only the last read would miss it); after a
    SyncAll, or after waiting for a mode-0 flag every core set after its read (the tally hands on the join of
    all eight clocks), it does not."""
    exe, d = prog
    n = 8
    x = np.arange(64, dtype=np.float32)
    res = launch_ws_in(exe, d, case, n, x, 256, n * 32)
    assert res.rc == 0, res.violations
    table = np.arange(64) % 8
    np.testing.assert_array_equal(np.fromfile(d / f"{case}_out.bin", np.float32), np.tile((x + table)[:8], n))
    stats = res.report["race"]
    assert stats["cores"] == n, stats
    # records: the table (the workspace: 8 bytes written, 4 read per byte), out (written); none for the input
    assert stats["read_record_bytes"] == 256 * 4, stats
    assert stats["write_record_bytes"] == (256 + n * 32) * 8, stats
    assert stats["widest_read_set"] == n and stats["read_sets"] <= 2 * n, stats
    found = races(res)
    if case != "race_shared_rewrite":
        assert found == [] and res.rules("error") == set(), res.violations
        return
    line = line_of("gw.SetValue(0, -1.0f);  // the rewrite of the table")
    assert [(v["line"], v["block"]) for v in found] == [(line, n - 1)], res.violations
    m = found[0]["message"]
    assert m.startswith(f"block {n - 1}'s GlobalTensor::SetValue writes 4 byte(s) of workspace") and \
        f"that block 0 read at {SRC}:{line_of('DataCopy(t, gw, 64);  // every block reads the table')}," in m, m


def launch_ws_in(exe: Path, d: Path, case: str, block_dim: int, x: np.ndarray, ws_bytes: int, out_bytes: int) -> Result:
    rep = d / f"{case}.json"
    rep.unlink(missing_ok=True)
    xin = d / f"{case}_x.bin"
    x.tofile(xin)
    r = subprocess.run([str(exe), case, "--block-dim", str(block_dim), "--report", str(rep), "--name", case,
                        "--in", str(xin), "--workspace", str(ws_bytes), "--out",
                        f"{d / (case + '_out.bin')}:{out_bytes}"], capture_output=True, text=True, timeout=60)
    return Result(r.returncode, r.stderr, json.loads(rep.read_text()) if rep.exists() else {})


@pytest.mark.parametrize("case", ["race_read_then_add_sync", "race_read_then_add_nosync"])
def test_atomic_adds_after_an_unordered_read(sim, prog, case):
    """Block 0 reads acc, then every block adds into it atomically: without a barrier block 0 may read some of
    the other blocks' adds on the NPU. Reported once for the add line (the atomic adds keep the read for the
    later adds; each add is checked)."""
    exe, d = prog
    n = 4
    res = sim.launch(exe, d, case, [], [((8,), np.float32)], block_dim=n, inout=[np.zeros(8, np.float32)])
    assert res.rc == 0, res.violations
    np.testing.assert_array_equal(res.outputs["io0"], np.full(8, n * (n + 1) / 2, np.float32))
    np.testing.assert_array_equal(res.outputs[0], np.zeros(8, np.float32))
    found = races(res)
    if case.endswith("_sync"):
        assert found == [] and res.rules("error") == set(), res.violations
        return
    line = line_of("DataCopy(ga, y, 8);  // the atomic add after block 0's read")
    assert [(v["line"], v["blocks"]) for v in found] == [(line, [1])], res.violations
    assert "writes (atomic add) 32 byte(s) of in/out" in found[0]["message"], found[0]["message"]


@pytest.mark.parametrize("case", ["race_print_only", "race_print_kept"])
def test_a_value_read_only_to_be_printed_is_no_race(sim, prog, case):
    """Ascend's printf sample prints C from the AIVs before the AIC computes it: the print may show stale data on
    the NPU, but nothing of it reaches an output, so it is not refused; the same read kept and stored is."""
    exe, d = prog
    res = sim.launch(exe, d, case, [], [((64,), np.float32), ((64,), np.float32)], block_dim=1, options=MIX)
    assert res.rc == 0, res.stderr
    found = races(res)
    if case == "race_print_only":
        assert found == [] and res.rules("error") == set(), res.violations
        assert "first" in res.report.get("kernel_printf", "") + res.stderr
    else:
        assert [v["line"] for v in found] == [line_of("the racy read kept")], res.violations
