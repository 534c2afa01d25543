"""The GEMM's base block chosen from a model of the cube core's pipes (the draft's tiling, issue 33).

Per cube core the kernel walks its share of the ``base_m x base_n`` tiles; per tile, K in ``base_k`` steps: MTE2
copies an A and a B block GM -> L1 (per-copy setup, bytes at the core's GM rate, a first-byte latency), MTE1
loads them L1 -> L0A/L0B, the M pipe runs one Mmad (MACs at the cube's rate for the dtype, padded to 16), and
after the last step the FIX pipe writes the tile out. Single-buffered, the pipes of a step run one after another
and every copy's latency is exposed; double-buffered, the next step's copies overlap the current Mmad, so a step
costs its slowest pipe and only the first copy's latency shows. The block with the least modelled time per core
(the busiest core: ceil(tiles / cores) tiles) wins; on a tie (a single K step: nothing for a second buffer to
overlap on the cube) two buffers win, since ``buffer_num`` also sizes the vector cores' queues of a MIX kernel (the
conv's im2col and copy-out), where overlap pays; then smaller blocks.

The constants are the emulated 910B's (``verifier/backends/ascend_sim/hardware.py``: the latency model the
verifier estimates with; a device would be measured instead), read here as plain numbers so the generator never
imports the verifier. Only shapes, dtypes and the cube core's capacities enter: nothing about the task's name.
"""
from __future__ import annotations

from itertools import product
from typing import Any, Callable

from evokernel.generators.template.ascend.gemm.op import CUBE_CORES, CubeOp

MTE2_BYTES_PER_CYCLE, MTE2_SETUP, MTE2_LATENCY, BURST = 32.0, 64.0, 600.0, 128
MTE1_BYTES_PER_CYCLE, MTE1_SETUP = 256.0, 32.0
MACS_PER_CYCLE_FP16, FP32_RATIO, MMAD_SETUP = 4096.0, 0.25, 32.0
FIX_BYTES_PER_CYCLE, FIX_SETUP, FIX_LATENCY = 32.0, 64.0, 300.0


def _up(x: int, m: int) -> int:
    return -(-x // m) * m


def _bursts(rows: int, row_bytes: int, stride_bytes: int, first: int = 0) -> int:
    """GM bursts a copy of ``rows`` rows of ``row_bytes`` bytes, ``stride_bytes`` apart from byte ``first``, moves:
    each row whole bursts from its start's burst to its end's (a row that starts mid-burst pays for the part it
    does not use)."""
    total = 0
    for r in range(rows):
        lo = first + r * stride_bytes
        total += (lo + row_bytes + BURST - 1) // BURST - lo // BURST
    return total


def _copy_cycles(rows: int, row_bytes: int, stride_bytes: int, first: int) -> float:
    return MTE2_SETUP + _bursts(rows, row_bytes, stride_bytes, first) * BURST / MTE2_BYTES_PER_CYCLE


def core_cycles(op: CubeOp, bm: int, bn: int, bk: int, nb: int, cores: int = CUBE_CORES) -> float:
    """Modelled cycles of the busiest cube core for this base block and buffering (its first tile's copies, burst
    by burst, stand for every tile's)."""
    es = op.esize
    tiles = op.batch * -(-op.M // bm) * -(-op.N // bn)
    per_core = -(-tiles // cores)
    m, n = min(bm, op.M), min(bn, op.N)
    macs = MACS_PER_CYCLE_FP16 * (1.0 if op.half else FP32_RATIO)
    steps = []
    for k0 in range(0, op.K, bk):
        k = min(bk, op.K - k0)
        a = _copy_cycles(m, k * es, op.K * es, k0 * es)  # A row-major M x K: m rows of k
        if op.trans_b:  # B as N x K: n rows of k
            b = _copy_cycles(n, k * es, op.K * es, k0 * es)
        else:  # B as K x N: k rows of n
            b = _copy_cycles(k, n * es, op.N * es, k0 * op.N * es)
        kp, mp, np_ = _up(k, 16), _up(m, 16), _up(n, 16)
        mte1 = 2 * MTE1_SETUP + (mp + np_) * kp * es / MTE1_BYTES_PER_CYCLE
        mmad = MMAD_SETUP + mp * np_ * kp / macs
        steps.append((a + b, mte1, mmad))
    fix = FIX_SETUP + FIX_LATENCY + _bursts(m, n * es, op.N * es) * BURST / FIX_BYTES_PER_CYCLE
    if nb >= 2:  # the next step's copies overlap this step's loads and Mmad: the slowest pipe sets the pace
        tile = MTE2_LATENCY + sum(max(s) for s in steps) + steps[-1][1] + steps[-1][2] + fix
    else:  # copy, wait for the data, load, multiply: one after another
        tile = sum(MTE2_LATENCY + sum(s) for s in steps) + fix
    return per_core * tile


def best_block(op: CubeOp, knobs_space: dict[str, list[Any]], fits: Callable[[dict[str, Any]], bool],
               base: dict[str, Any]) -> dict[str, Any]:
    """The base block and buffering (``base_m``, ``base_n``, ``base_k``, ``buffer_num``) of ``knobs_space`` with the
    least modelled time among those ``fits`` accepts (the family's own geometry on ``base`` + the block); ``{}``
    when none fits."""
    best: tuple[float, int, int, dict[str, Any]] | None = None
    for bm, bn, bk, nb in product(knobs_space["base_m"], knobs_space["base_n"], knobs_space["base_k"],
                                  knobs_space["buffer_num"]):
        cand = {"base_m": bm, "base_n": bn, "base_k": bk, "buffer_num": nb}
        if not fits({**base, **cand}):
            continue
        key = (core_cycles(op, bm, bn, bk, nb), -nb, bm * bn * bk, cand)
        if best is None or key[:3] < best[:3]:
            best = key
    return {} if best is None else best[3]
