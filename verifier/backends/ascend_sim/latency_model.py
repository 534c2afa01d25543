"""The ascend-sim latency model: an ESTIMATE of how long a kernel (and the eager PyTorch reference) would take
on an Ascend 910B, built from the emulator's per-block pipe schedules and the constants in hardware.py.

Nothing here is measured. Two entry points, on the same constants and assumptions so that their ratio (the
speedup ascend-sim reports) compares like with like:

- `estimate_kernel(report)`: the emulator's JSON report carries, per block, a modelled schedule
  (`timing_estimate`: makespan and busy cycles of the scalar, vector, MTE2 and MTE3 pipes). Blocks are
  dispatched to the AIV cores in index order, each to the core that frees up first (waves when block_dim
  exceeds the cores); the slowest core is the critical path; all cores share the HBM, so the kernel's total
  GM traffic over the HBM bandwidth is a lower bound; a launch overhead is added. The result carries an
  msprof PipeUtilization-like breakdown and `profile_text()`, the short text refinement reads.
- `estimate_eager(ops)`: the reference run eagerly, one kernel per aten op: views are free, every other op
  costs launch + max(its bytes over the HBM bandwidth, its vector work over all cores, its cube work) with
  the floor a minimal kernel has in the runtime's schedule.

Assumptions and calibration: docs/ascend-sim-latency.md. Pure Python (no torch, no numpy).
"""
from __future__ import annotations

import dataclasses
import heapq
import math
from dataclasses import dataclass, field

from .hardware import FULL_REDUCE, Ascend910B, vec_class
from .report_size import omitted_units as _omitted_units

LABEL = "estimate (modelled from the emulator's schedule and hardware.py constants, not measured)"
PIPES = ("mte2", "vector", "mte3", "scalar", "mte1", "cube", "fix")
CUBE_PIPES = ("mte1", "cube", "fix")
BOUND_TEXT = {
    "hbm": "HBM bandwidth (all cores' GM traffic together)",
    "mte2": "MTE2 (GM->UB/L1 copies)",
    "mte3": "MTE3 (UB->GM copies)",
    "mte1": "MTE1 (L1->L0A/L0B loads of the cube core)",
    "cube": "cube unit (Mmad)",
    "fix": "FIX (L0C->GM write-out of the cube core)",
    "vector": "vector unit",
    "scalar": "scalar unit (API issue, GetValue/SetValue)",
    "latency": "latency (the pipes wait on each other or on GM: no pipe is saturated)",
    "launch": "launch overhead (the device work is shorter than the kernel launch)",
}
FULL_BANDWIDTH_COPY = 16 * 1024
SATURATED = 0.6  # a pipe busy at least this share of the critical core's time is "the" bound


def classify_bound(device_us: float, launch_us: float, ratios: dict[str, float], hbm_bound: bool = False) -> str:
    """The bottleneck name, for modelled (this module) and measured (msprof, backend ascend) profiles alike:
    launch when the launch outlasts the device work, hbm when the HBM bound dominates, else the busiest pipe
    (ratios: pipe -> busy share, keys among mte2, mte3, vector, scalar) if saturated, else latency."""
    if launch_us > device_us:
        return "launch"
    if hbm_bound:
        return "hbm"
    if not ratios:
        return "latency"
    top = max(ratios, key=lambda k: ratios[k])
    return top if ratios[top] >= SATURATED else "latency"


def core_use_hints(block_dim: int, cores: int, bound: str, kind: str = "AIV") -> list[str]:
    """Hints on core use (too few blocks, a partial last wave), shared with the measured profiles."""
    hints: list[str] = []
    if block_dim <= 0 or cores <= 0:
        return hints
    waves = -(-block_dim // cores)
    used = min(block_dim, cores)
    if waves == 1 and used < cores and (bound != "launch" or used * 4 <= cores):
        hints.append(f"only {used} of {cores} {kind} cores used (block_dim {block_dim}): split the work "
                     f"over up to {cores} blocks (GetCoreNum{'Aiv' if kind == 'AIV' else 'Aic'}())")
    if bound != "launch" and waves > 1 and block_dim % cores:
        rem = block_dim % cores
        hints.append(f"{block_dim} blocks on {cores} cores = {waves} waves, the last with {rem} block(s) "
                     f"({cores - rem} cores idle in it): use block_dim = {cores} with a loop over the work")
    return hints  # ref §6: a single GM transfer >= 16 KB reaches best bandwidth


# =============================================================================================================
# Kernel estimate
# =============================================================================================================
@dataclass
class Estimate:
    """The modelled latency of one kernel launch. Times in microseconds; every number is an estimate."""
    us: float                      # total: launch_us + device_us
    device_us: float               # max(critical core's schedule, HBM bound)
    launch_us: float
    block_dim: int
    cores: int                     # AIV cores of the modelled chip
    cores_used: int
    waves: int                     # ceil(block_dim / cores)
    core_us: float                 # the critical (slowest) core's schedule: the sum of its blocks' makespans
    hbm_us: float                  # total GM traffic / HBM bandwidth
    bound: str                     # hbm | mte2 | mte3 | vector | scalar | latency | launch
    # busy time of each pipe on the critical core (us)
    mte2_us: float
    vec_us: float
    mte3_us: float
    scalar_us: float
    # the same as msprof's PipeUtilization columns (aiv_*): time = device time; pipe times on the critical
    # core, MTE stretched to the HBM time when the HBM bound dominates; ratio = pipe time / aiv_time
    aiv_time: float
    aiv_vec_time: float
    aiv_mte2_time: float
    aiv_mte3_time: float
    aiv_scalar_time: float
    aiv_vec_ratio: float
    aiv_mte2_ratio: float
    aiv_mte3_ratio: float
    aiv_scalar_ratio: float
    overlap: float                 # (busy cycles of every pipe but S) / core cycles: 1.0 = serialised, higher = overlapped
    scalar_stall_ratio: float      # share of the critical core's time the scalar issue waited for pipes/flags
    gm_bytes: float                # burst-rounded bytes moved GM<->UB by all blocks, plus scalar GM accesses
    mte2_copies: int
    mte3_copies: int
    # the cube core's pipes on the critical core (us; 0 for vector-only kernels) and their busy shares
    mte1_us: float = 0.0
    cube_us: float = 0.0
    fix_us: float = 0.0
    aic_cube_ratio: float = 0.0
    aic_mte1_ratio: float = 0.0
    aic_fix_ratio: float = 0.0
    core_kind: str = "AIV"          # AIV (vector cores) or AIC (cube cores: a cube-only kernel)
    hints: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    blocks_modelled: int = 0
    label: str = LABEL

    def profile_text(self) -> str:
        """A short, actionable description of where the (modelled) time goes."""
        w = "wave" if self.waves == 1 else "waves"
        lines = [
            f"estimated {self.us:.1f} us (modelled, not measured) = launch {self.launch_us:.1f} + device "
            f"{self.device_us:.1f}; {self.block_dim} block(s) on {self.cores_used} of {self.cores} "
            f"{self.core_kind} cores, {self.waves} {w}",
            f"critical core: MTE2 {pct(self.aiv_mte2_ratio)} busy, VEC {pct(self.aiv_vec_ratio)}, "
            f"MTE3 {pct(self.aiv_mte3_ratio)}, scalar {pct(self.aiv_scalar_ratio)}; pipe overlap "
            f"{self.overlap:.2f}x (1.00 = serialised)",
            f"bound: {BOUND_TEXT.get(self.bound, self.bound)}",
        ]
        if self.cube_us or self.mte1_us or self.fix_us:
            lines.insert(2, f"cube core: cube (Mmad) {pct(self.aic_cube_ratio)} busy, MTE1 {pct(self.aic_mte1_ratio)}, "
                            f"FIX {pct(self.aic_fix_ratio)}")
        lines += [f"hint: {h}" for h in self.hints]
        lines += [f"note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["profile"] = self.profile_text()
        return d


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _timing(block: dict) -> dict | None:
    return block.get("timing_estimate")


def _vector_shares(blocks: list[dict], hw: Ascend910B) -> list[tuple[str, str, float]]:
    """(op, dtype, modelled vector cycles) over the given blocks, largest first."""
    acc: dict[tuple[str, str], float] = {}
    for b in blocks:
        for v in b.get("counters", {}).get("vector", []):
            cyc = v["calls"] * hw.vec_instr_cycles + v["repeats"] * hw.vec_cycles_per_repeat(vec_class(v["op"]), v["dtype"])
            if v["op"] in FULL_REDUCE:
                cyc += v["calls"] * hw.vec_reduce_tail_cycles
            acc[(v["op"], v["dtype"])] = acc.get((v["op"], v["dtype"]), 0.0) + cyc
    return sorted(((op, dt, c) for (op, dt), c in acc.items()), key=lambda t: -t[2])


def estimate_kernel(report: dict, hw: Ascend910B = Ascend910B()) -> Estimate:
    """Combine the per-block schedules of an emulator report into the kernel's modelled latency."""
    blocks = [b for b in report.get("blocks", []) if _timing(b)]
    block_dim = int(report.get("block_dim") or len(blocks))
    # a cube-only kernel (KERNEL_TYPE_AIC_ONLY) runs its blocks on the cube cores: one per two vector cores; a MIX
    # kernel's block is an AI core (its cube core and two vector cores, each reported as a block with "ai_core")
    mix = any("ai_core" in b for b in blocks)
    aic_only = bool(blocks) and not mix and all(b.get("kernel_type") == "aic" for b in blocks)
    cores = max(1, int(hw.aiv_cores) // 2) if aic_only or mix else int(hw.aiv_cores)
    if mix:
        by_core: dict[int, list[dict]] = {}
        for b in blocks:
            by_core.setdefault(int(b["ai_core"]), []).append(b)
        units = [by_core[k] for k in sorted(by_core)]
        block_dim = len(units)
    else:
        units = [[b] for b in sorted(blocks, key=lambda b: b["block"])]
    notes: list[str] = []
    used_hw = report.get("hw_model")
    if used_hw:
        differ = sorted(k for k, v in hw.runtime_dict().items()
                        if k in used_hw and k != "name" and not math.isclose(float(used_hw[k]), float(v), rel_tol=1e-9))
        if differ:
            notes.append("the report's block schedules were made with other constants than this estimate uses: "
                         + ", ".join(differ))
    # the units a report over its size budget summarised (report_size.compact): dispatched after the others
    omitted = _omitted_units(report)
    omitted_summary = report.get("blocks_omitted") or {}
    if omitted:
        units = units + [[{"block": -1, "timing_estimate": {
            "cycles": c, "busy_cycles": {}, "gm_bytes": {"mte2": 0, "mte3": 0}, "copies": {"mte2": 0, "mte3": 0}}}]
            for c in omitted]
        if mix:
            block_dim = len(units)
        notes.append(f"{len(omitted)} of the kernel's units were summarised to keep the report under its size "
                     "limit: dispatched at their mean length with the longest last (an over-estimate)")
    n_ran = len(blocks) + int(omitted_summary.get("blocks", 0))
    if n_ran < block_dim:
        notes.append(f"only {n_ran} of {block_dim} blocks ran (status {report.get('status')}): the estimate "
                     "covers those")
    if not blocks:
        launch = hw.launch_us
        return Estimate(us=launch, device_us=0.0, launch_us=launch, block_dim=block_dim, cores=cores, cores_used=0,
                        waves=0, core_us=0.0, hbm_us=0.0, bound="launch", mte2_us=0.0, vec_us=0.0, mte3_us=0.0,
                        scalar_us=0.0, aiv_time=0.0, aiv_vec_time=0.0, aiv_mte2_time=0.0, aiv_mte3_time=0.0,
                        aiv_scalar_time=0.0, aiv_vec_ratio=0.0, aiv_mte2_ratio=0.0, aiv_mte3_ratio=0.0,
                        aiv_scalar_ratio=0.0, overlap=0.0, scalar_stall_ratio=0.0, gm_bytes=0.0, mte2_copies=0,
                        mte3_copies=0,
                        notes=notes + ["no block schedule in the report"], blocks_modelled=0)

    # ---- dispatch: blocks (MIX: AI cores) in index order, each to the core that frees up first -------------
    heap = [(0.0, c) for c in range(min(cores, len(units)))]
    heapq.heapify(heap)
    per_core: dict[int, list[list[dict]]] = {}
    finish: dict[int, float] = {}
    for u in units:
        t, c = heapq.heappop(heap)
        t += max(_timing(b)["cycles"] for b in u)  # the cores of an AI core run side by side
        per_core.setdefault(c, []).append(u)
        finish[c] = t
        heapq.heappush(heap, (t, c))
    crit = max(finish, key=lambda c: finish[c])
    crit_units = per_core[crit]
    crit_blocks = [b for u in crit_units for b in u]
    core_cycles = finish[crit]
    busy = {p: sum(max(_timing(b)["busy_cycles"].get(p, 0.0) for b in u) for u in crit_units) for p in PIPES}
    stall = sum(max(_timing(b).get("scalar_stall_cycles", 0.0) for b in u) for u in crit_units)

    core_us = hw.us(core_cycles)
    gm_bytes = sum(_timing(b)["gm_bytes"]["mte2"] + _timing(b)["gm_bytes"]["mte3"] + _timing(b)["gm_bytes"].get("fix", 0)
                   for b in blocks)
    # GlobalTensor GetValue/SetValue move data through GM too (the scalar unit's cost is in its pipe)
    gm_bytes += sum(float(v) for v in (omitted_summary.get("gm_bytes") or {}).values())
    gm_bytes += sum(float(sc.get("gm_get_bytes", 0)) + float(sc.get("gm_set_bytes", 0))
                    for b in blocks for sc in [b.get("counters", {}).get("scalar", {})])
    hbm_us = gm_bytes / hw.hbm_bytes_per_s * 1e6
    device_us = max(core_us, hbm_us)
    launch = hw.launch_us
    us = launch + device_us
    waves = math.ceil(block_dim / cores) if block_dim else 0
    cores_used = min(cores, len(units))

    stretch = device_us / core_us if core_us > 0 else 1.0  # HBM-bound: the copies take that much longer
    mte2_t, mte3_t = hw.us(busy["mte2"]) * stretch, hw.us(busy["mte3"]) * stretch
    vec_t, sc_t = hw.us(busy["vector"]), hw.us(busy["scalar"])
    aiv = device_us

    def ratio(x: float) -> float:
        return min(1.0, x / aiv) if aiv > 0 else 0.0

    # busy pipe-cycles per cycle of the critical core: above 1 the copies and the compute overlap
    overlap = sum(busy[p] for p in PIPES if p != "scalar") / core_cycles if core_cycles else 0.0
    ratios = {"mte2": ratio(mte2_t), "vector": ratio(vec_t), "mte3": ratio(mte3_t), "scalar": ratio(sc_t)}
    cube_t = {p: hw.us(busy[p]) * (stretch if p == "fix" else 1.0) for p in CUBE_PIPES}
    ratios.update({p: ratio(cube_t[p]) for p in CUBE_PIPES if busy[p] > 0})
    bound = classify_bound(device_us, launch, ratios, hbm_bound=hbm_us >= core_us)

    est = Estimate(
        us=us, device_us=device_us, launch_us=launch, block_dim=block_dim, cores=cores, cores_used=cores_used,
        waves=waves, core_us=core_us, hbm_us=hbm_us, bound=bound,
        mte2_us=hw.us(busy["mte2"]), vec_us=vec_t, mte3_us=hw.us(busy["mte3"]), scalar_us=sc_t,
        aiv_time=aiv, aiv_vec_time=vec_t, aiv_mte2_time=mte2_t, aiv_mte3_time=mte3_t, aiv_scalar_time=sc_t,
        aiv_vec_ratio=ratios["vector"], aiv_mte2_ratio=ratios["mte2"], aiv_mte3_ratio=ratios["mte3"],
        aiv_scalar_ratio=ratios["scalar"], overlap=overlap,
        scalar_stall_ratio=stall / core_cycles if core_cycles else 0.0, gm_bytes=gm_bytes,
        mte2_copies=sum(_timing(b)["copies"]["mte2"] for b in blocks) + int((omitted_summary.get("copies") or {}).get("mte2", 0)),
        mte3_copies=sum(_timing(b)["copies"]["mte3"] for b in blocks) + int((omitted_summary.get("copies") or {}).get("mte3", 0)),
        mte1_us=hw.us(busy["mte1"]), cube_us=hw.us(busy["cube"]), fix_us=hw.us(busy["fix"]),
        aic_cube_ratio=ratios.get("cube", 0.0), aic_mte1_ratio=ratios.get("mte1", 0.0),
        aic_fix_ratio=ratios.get("fix", 0.0), core_kind="AI (MIX: AIC + 2 AIV)" if mix else "AIC" if aic_only else "AIV",
        notes=notes, blocks_modelled=n_ran)
    est.hints = _kernel_hints(est, report, blocks, crit_blocks, ratios, hw)
    return est


def _kernel_hints(e: Estimate, report: dict, blocks: list[dict], crit_blocks: list[dict], ratios: dict,
                  hw: Ascend910B) -> list[str]:
    hints: list[str] = []
    if e.bound == "launch":
        hints.append(f"the device work ({e.device_us:.2f} us) is shorter than the launch overhead "
                     f"({e.launch_us:.1f} us): little to gain inside the kernel at this size")
    if e.bound == "hbm":
        hints.append(f"memory-bound at the HBM bandwidth ({e.gm_bytes / 1e6:.2f} MB moved in {e.hbm_us:.1f} us): "
                     "only fewer bytes help (read each input once, fuse passes, keep intermediates in UB)")
    hints += core_use_hints(e.block_dim, e.cores, e.bound, e.core_kind)
    if e.bound == "launch":
        return hints
    # buffering: single-buffered queues while no pipe is saturated
    queues = [q for b in crit_blocks for q in b.get("queues", []) if q.get("kind") == "TQue" and q.get("allocs", 0) > 1]
    single = sorted({q["position"] for q in queues if q.get("num") == 1})
    top = max(ratios.values()) if ratios else 0.0
    copies = sum(_timing(b)["copies"]["mte2"] + _timing(b)["copies"]["mte3"] for b in crit_blocks)
    copy_bytes = sum(_timing(b)["gm_bytes"]["mte2"] + _timing(b)["gm_bytes"]["mte3"] for b in crit_blocks)
    small_copies = copies and copy_bytes / copies < FULL_BANDWIDTH_COPY
    if e.scalar_stall_ratio >= 0.2:
        hints.append(f"the scalar unit waits {pct(e.scalar_stall_ratio)} of the time for pipe results "
                     "(LocalTensor::GetValue of vector/copy results, WaitFlag<..._S>, PipeBarrier<PIPE_ALL>) and "
                     "issues nothing meanwhile (not the next tile's copies): keep per-row values in vector form "
                     "(Brcb/Duplicate + vector ops) or handle several rows per tile")
    if e.bound in ("latency", "mte2", "mte3", "vector") and top < 0.8:
        if single:
            hints.append(f"{'/'.join(single)} queue(s) have 1 buffer and are reused: copies and compute take turns "
                         f"(busiest pipe {pct(top)}, pipe overlap {e.overlap:.2f}x); double-buffer with "
                         "InitBuffer(queue, 2, bytes) (BUFFER_NUM=2)")
        elif not queues and e.overlap <= 1.15:
            hints.append(f"pipes serialised (MTE2+VEC+MTE3 = {e.overlap:.2f}x the block time, no TQue pipeline): "
                         "stage the tiles through double-buffered TQues (BUFFER_NUM=2) instead of TBufs with "
                         "PipeBarrier<PIPE_ALL>/WaitFlag between the stages")
        elif e.scalar_stall_ratio >= 0.2:
            pass  # explained by the stall hint above
        elif small_copies:
            hints.append(f"tiles too small to hide the GM latency (~{hw.us(hw.mte2_latency_cycles):.2f} us per "
                         "GM->UB copy, modelled): the pipes wait even with double buffering; use bigger tiles")
        else:
            hints.append("no pipe is saturated: the pipes wait on each other (PipeBarrier<PIPE_ALL>, WaitFlag, "
                         "scalar GetValue on fresh data) or on GM latency; pipeline the tiles and drop needless "
                         "barriers")
    # copy sizes
    small = []
    for pipe, name in (("mte2", "MTE2 GM->UB"), ("mte3", "MTE3 UB->GM")):
        n = sum(_timing(b)["copies"][pipe] for b in blocks)
        byts = sum(_timing(b)["gm_bytes"][pipe] for b in blocks)
        if n and ratios[pipe] >= 0.2 and byts / n < FULL_BANDWIDTH_COPY:
            small.append(f"{name} {byts / n / 1024:.1f} KB")
    if small:
        hints.append(f"copies average {', '.join(small)}; a copy reaches full bandwidth from 16 KB: use bigger "
                     "tiles (fewer, larger DataCopy calls)")
    raw = sum(b["counters"]["mte2_bytes"] + b["counters"]["mte3_bytes"] for b in blocks if "counters" in b)
    if raw and e.gm_bytes > 1.15 * raw:
        # the padding's share of the traffic moved (at most 100%), not its ratio to the useful bytes
        hints.append(f"{pct(1 - raw / e.gm_bytes)} of the GM traffic is burst padding (short or unaligned rows): "
                     "align GM offsets and row lengths to 512 B, copy longer contiguous rows")
    # scalar work
    sc = {}
    for b in crit_blocks:
        for k, v in b.get("counters", {}).get("scalar", {}).items():
            sc[k] = sc.get(k, 0) + v
    ub_s, gm_s = sc.get("ub_get", 0) + sc.get("ub_set", 0), sc.get("gm_get", 0) + sc.get("gm_set", 0)
    sc_cost = hw.us(ub_s * hw.scalar_ub_access_cycles + sc.get("gm_get", 0) * hw.scalar_gm_read_cycles
                    + sc.get("gm_set", 0) * hw.scalar_gm_write_cycles)
    if e.aiv_time > 0 and sc_cost >= 0.2 * e.aiv_time:
        hints.append(f"scalar-heavy ({pct(ratios['scalar'])}): {ub_s} LocalTensor and {gm_s} GlobalTensor "
                     "GetValue/SetValue calls on the critical core; replace element loops by vector instructions "
                     "and DataCopy (a GM scalar access costs hundreds of cycles)")
    elif e.bound == "scalar":
        hints.append("the scalar unit is the bottleneck (many small API calls): fewer, larger instructions "
                     "(bigger tiles, count-form vector calls over whole tiles)")
    if e.bound == "vector" or ratios["vector"] >= 0.5:
        shares = _vector_shares(crit_blocks, hw)
        total = sum(c for _, _, c in shares) or 1.0
        top3 = ", ".join(f"{op} ({dt}) {pct(c / total)}" for op, dt, c in shares[:3])
        hints.append(f"vector time by instruction: {top3}; fewer passes over the data (fuse instructions, "
                     "Muls instead of Div by a constant, half where precision allows) shorten it")
    return hints


# =============================================================================================================
# Eager PyTorch estimate
# =============================================================================================================
VIEW_OPS = frozenset({
    "view", "_unsafe_view", "reshape", "_reshape_alias", "expand", "expand_as", "t", "transpose", "permute",
    "squeeze", "unsqueeze", "detach", "alias", "as_strided", "slice", "select", "view_as", "unflatten", "flatten",
    "split", "split_with_sizes", "chunk", "unbind", "narrow", "diagonal", "lift_fresh", "numpy_T", "mT", "movedim",
    "empty", "empty_like", "empty_strided", "new_empty", "new_empty_strided", "size", "sym_size", "stride",
    "numel", "dim", "is_contiguous", "_reshape_copy_if_needed", "resolve_conj", "resolve_neg", "real",
})
# vector passes per output element (or per input element for reductions): [(class, passes)]
_S, _E, _D, _R, _RED, _C = "simple", "exp", "div", "recip", "reduce", "cast"
EAGER_VECTOR = {
    **{k: [(_S, 1)] for k in (
        "add", "sub", "rsub", "mul", "neg", "relu", "abs", "maximum", "minimum", "clamp", "clamp_min", "clamp_max",
        "where", "gt", "lt", "ge", "le", "eq", "ne", "fill", "zero", "zeros", "zeros_like", "ones", "ones_like",
        "full", "full_like", "masked_fill", "threshold_backward", "leaky_relu", "hardtanh", "sign", "floor", "ceil",
        "round", "trunc", "logical_and", "logical_or", "logical_not", "bitwise_and", "bitwise_or", "square",
        "relu6", "hardsigmoid", "hardswish", "scalar_tensor", "arange")},
    "addcmul": [(_S, 2)], "addcdiv": [(_S, 1), (_D, 1)], "lerp": [(_S, 2)],
    "exp": [(_E, 1)], "exp2": [(_E, 1)], "expm1": [(_E, 1), (_S, 1)], "log": [(_E, 1)], "log2": [(_E, 1), (_S, 1)],
    "log1p": [(_E, 1), (_S, 1)], "log10": [(_E, 1), (_S, 1)],
    "sigmoid": [(_E, 1), (_S, 1), (_D, 1)], "tanh": [(_E, 1), (_S, 2), (_D, 1)], "silu": [(_E, 1), (_S, 2), (_D, 1)],
    "gelu": [(_E, 1), (_S, 6), (_D, 1)], "elu": [(_E, 1), (_S, 2)], "selu": [(_E, 1), (_S, 3)],
    "softplus": [(_E, 2), (_S, 1)], "mish": [(_E, 3), (_S, 3), (_D, 1)], "erf": [(_E, 1), (_S, 8)],
    "pow": [(_E, 2), (_S, 1)], "sin": [(_S, 8)], "cos": [(_S, 8)],
    "div": [(_D, 1)], "true_divide": [(_D, 1)], "floor_divide": [(_D, 1), (_S, 1)], "remainder": [(_D, 1), (_S, 2)],
    "fmod": [(_D, 1), (_S, 2)], "sqrt": [(_D, 1)], "rsqrt": [(_R, 1)], "reciprocal": [(_R, 1)],
    "sum": [(_RED, 1)], "mean": [(_RED, 1), (_S, 1)], "amax": [(_RED, 1)], "amin": [(_RED, 1)], "max": [(_RED, 1)],
    "min": [(_RED, 1)], "argmax": [(_RED, 1)], "argmin": [(_RED, 1)], "prod": [(_RED, 1)], "any": [(_RED, 1)],
    "all": [(_RED, 1)], "norm": [(_S, 1), (_RED, 1), (_D, 1)], "linalg_vector_norm": [(_S, 1), (_RED, 1), (_D, 1)],
    "var": [(_RED, 2), (_S, 2)], "std": [(_RED, 2), (_S, 2), (_D, 1)], "var_mean": [(_RED, 2), (_S, 2)],
    "cumsum": [(_RED, 2)], "logsumexp": [(_RED, 2), (_S, 1), (_E, 1)],
    "_softmax": [(_RED, 2), (_S, 1), (_E, 1), (_D, 1)], "softmax": [(_RED, 2), (_S, 1), (_E, 1), (_D, 1)],
    "_log_softmax": [(_RED, 2), (_S, 2), (_E, 2)], "log_softmax": [(_RED, 2), (_S, 2), (_E, 2)],
    "native_layer_norm": [(_RED, 2), (_S, 4), (_R, 1)], "layer_norm": [(_RED, 2), (_S, 4), (_R, 1)],
    "native_group_norm": [(_RED, 2), (_S, 4), (_R, 1)], "native_batch_norm": [(_RED, 2), (_S, 4), (_R, 1)],
    "_native_batch_norm_legit_no_training": [(_S, 2)], "_native_batch_norm_legit": [(_RED, 2), (_S, 4), (_R, 1)],
    "rms_norm": [(_RED, 1), (_S, 3), (_R, 1)],
    "_to_copy": [(_C, 1)], "to": [(_C, 1)], "copy": [], "copy_": [], "clone": [], "contiguous": [], "cat": [],
    "stack": [], "index_select": [], "gather": [], "embedding": [], "constant_pad_nd": [], "repeat": [],
    "max_pool2d_with_indices": [(_S, 9)], "avg_pool2d": [(_S, 9), (_S, 1)], "adaptive_avg_pool2d": [(_RED, 1)],
}
CUBE_OPS = frozenset({"mm", "bmm", "addmm", "matmul", "linear", "baddbmm", "addbmm", "convolution", "_convolution",
                      "conv1d", "conv2d", "conv3d", "einsum", "dot", "mv", "addmv"})
REDUCING = frozenset({"sum", "mean", "amax", "amin", "max", "min", "argmax", "argmin", "prod", "any", "all", "norm",
                      "linalg_vector_norm", "var", "std", "var_mean", "logsumexp", "adaptive_avg_pool2d"})
DTYPE_BYTES = {"float32": 4, "float": 4, "float16": 2, "half": 2, "bfloat16": 2, "float64": 8, "double": 8,
               "int64": 8, "long": 8, "int32": 4, "int": 4, "int16": 2, "short": 2, "int8": 1, "uint8": 1,
               "bool": 1, "complex64": 8}


def _norm_dtype(dt) -> str:
    return str(dt or "float32").replace("torch.", "")


def _numel(t: dict) -> int:
    n = 1
    for d in t.get("shape") or []:
        n *= int(d)
    return n


def _nbytes(t: dict) -> int:
    return _numel(t) * DTYPE_BYTES.get(_norm_dtype(t.get("dtype")), 4)


def _base(op: str) -> str:
    """'aten.add.Tensor' -> 'add'; 'aten::relu_' -> 'relu'; in-place underscores dropped."""
    s = op.replace("::", ".")
    parts = s.split(".")
    name = parts[1] if len(parts) > 1 and parts[0] in ("aten", "prims", "torch", "ops") else parts[0]
    if name.endswith("_") and not name.startswith("_") and name not in ("copy_",):
        name = name[:-1]
    return name


def _cube_flops(base: str, ins: list[dict], outs: list[dict]) -> float:
    tensors = [t for t in ins if t.get("shape") is not None]
    out = outs[0] if outs else None
    if out is None:
        return 0.0
    on = _numel(out)
    if base in ("convolution", "_convolution", "conv1d", "conv2d", "conv3d"):
        w = tensors[1] if len(tensors) > 1 else None
        k = _numel(w) // max(1, int(w["shape"][0])) if w and w.get("shape") else 1
        return 2.0 * on * k
    # matrix products: 2 * output elements * the contracted length (last dim of the first matrix operand)
    mats = [t for t in tensors if len(t.get("shape") or []) >= 1]
    if base in ("addmm", "baddbmm", "addbmm", "addmv") and len(mats) >= 3:
        a = mats[1]
    else:
        a = mats[0] if mats else None
    k = int(a["shape"][-1]) if a and a.get("shape") else 1
    return 2.0 * on * k


@dataclass
class OpEstimate:
    op: str
    us: float          # launch + device (0 for view ops)
    device_us: float
    bound: str         # free | hbm | vector | cube | floor
    bytes: int
    detail: str = ""


@dataclass
class EagerEstimate:
    """The modelled latency of the reference run eagerly on the NPU (one kernel per non-view aten op)."""
    us: float
    launch_us: float     # total launch overhead (kernels x launch_us)
    device_us: float
    kernels: int
    free_ops: int
    ops: list = field(default_factory=list)   # [OpEstimate]
    label: str = LABEL

    def profile_text(self) -> str:
        lines = [f"eager reference: estimated {self.us:.1f} us (modelled, not measured) over {self.kernels} "
                 f"kernel(s) (+{self.free_ops} free view ops): launch {self.launch_us:.1f} + device "
                 f"{self.device_us:.1f}"]
        for o in sorted(self.ops, key=lambda o: -o.us)[:5]:
            if o.bound != "free":
                lines.append(f"  {o.op}: {o.us:.2f} us ({o.bound}{'; ' + o.detail if o.detail else ''})")
        return "\n".join(lines)

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        d["profile"] = self.profile_text()
        return d


def min_kernel_device_us(hw: Ascend910B = Ascend910B()) -> float:
    """The device time of the smallest useful kernel in the runtime's schedule: one block that starts, reads its
    tiling data, copies a tile in, runs one vector instruction and copies it out (every latency exposed). The
    floor of an eager op."""
    cyc = (hw.block_start_cycles + hw.scalar_gm_read_cycles + 6 * hw.scalar_issue_cycles + hw.mte2_setup_cycles
           + hw.mte2_latency_cycles + hw.vec_instr_cycles + hw.vec_simple_b32 + hw.mte3_setup_cycles
           + hw.mte3_latency_cycles)
    return hw.us(cyc)


def estimate_op(rec: dict, hw: Ascend910B = Ascend910B()) -> OpEstimate:
    op = str(rec.get("op", "?"))
    base = _base(op)
    ins = [t for t in rec.get("inputs", []) if isinstance(t, dict) and t.get("shape") is not None]
    outs = [t for t in rec.get("outputs", []) if isinstance(t, dict) and t.get("shape") is not None]
    if base in VIEW_OPS:
        return OpEstimate(op, 0.0, 0.0, "free", 0, "view/metadata")
    nbytes = sum(_nbytes(t) for t in ins) + sum(_nbytes(t) for t in outs)
    mem_us = nbytes / hw.hbm_bytes_per_s * 1e6
    # the copies also pass the cores' MTE pipes (never the binding limit with the default constants)
    mte_us = nbytes / (hw.aiv_cores * min(hw.mte2_bytes_per_cycle, hw.mte3_bytes_per_cycle) * hw.clock_hz) * 1e6
    terms = {"hbm": max(mem_us, mte_us)}
    detail = f"{nbytes / 1e6:.3f} MB"
    if base in CUBE_OPS:
        dt = _norm_dtype((ins[0] if ins else {}).get("dtype"))
        rate = hw.cube_fp16_flops_per_s * (hw.cube_fp32_ratio if DTYPE_BYTES.get(dt, 4) >= 4
                                           else hw.cube_bf16_ratio if dt in ("bfloat16", "bf16") else 1.0)
        flops = _cube_flops(base, ins, outs)
        terms["cube"] = flops / rate * 1e6
        detail += f", {flops / 1e9:.3f} GFLOP on the cube"
    else:
        passes = EAGER_VECTOR.get(base, [(_S, 1)])
        ref = max(ins, key=_numel) if base in REDUCING and ins else (outs[0] if outs else (ins[0] if ins else None))
        if ref is not None and passes:
            dt = _norm_dtype(ref.get("dtype"))
            esize = DTYPE_BYTES.get(dt, 4)
            n = max(_numel(ref), max((_numel(t) for t in ins), default=0)) if base not in REDUCING else _numel(ref)
            repeats = math.ceil(n * esize / 256)
            group = "float32" if esize >= 4 else "float16"
            cyc = sum(p * repeats * hw.vec_cycles_per_repeat(c, group) for c, p in passes)
            terms["vector"] = hw.us(cyc / hw.aiv_cores)
    floor = min_kernel_device_us(hw)
    bound = max(terms, key=lambda k: terms[k])
    device = terms[bound]
    if device < floor:
        device, bound = floor, "floor"
    return OpEstimate(op, hw.launch_us + device, device, bound, nbytes, detail)


def estimate_eager(ops: list[dict], hw: Ascend910B = Ascend910B()) -> EagerEstimate:
    """The modelled latency of running `ops` (aten op records) eagerly, one kernel each."""
    per = [estimate_op(r, hw) for r in ops]
    kernels = [o for o in per if o.bound != "free"]
    launch = hw.launch_us * len(kernels)
    device = sum(o.device_us for o in kernels)
    return EagerEstimate(us=launch + device, launch_us=launch, device_us=device, kernels=len(kernels),
                         free_ops=len(per) - len(kernels), ops=per)


def speedup(eager: EagerEstimate, kernel: Estimate) -> float:
    """eager / kernel, both modelled on the same constants (an estimate of the NPU speedup)."""
    return eager.us / kernel.us if kernel.us > 0 else float("inf")
