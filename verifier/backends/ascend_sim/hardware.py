"""The hardware constants of the ascend-sim latency model, in one place.

`Ascend910B` is the single source of the numbers: the emulator's runtime receives them as a flat JSON object
(`evk_options.hw_model_json`, see `runtime_json()`), and `latency_model.py` uses the same object for the
kernel estimate and for the eager PyTorch estimate, so both sides of a speedup rest on the same assumptions.
The runtime's built-in defaults (used when no JSON is given) equal the defaults here; a test checks that.

Every field says where its value comes from: "ref §6" is the project's research notes
(/work/shared/reference/ascend-toolchain.md §6, public figures), "derived" is computed from those, and
"assumption" means nobody measured it yet: calibrate on a device (docs/ascend-sim-latency.md explains how).
All timings that come out of this model are estimates, never measurements.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

# dtype name (as the emulator's counters spell it) -> element group of the per-repeat cost tables
B32_DTYPES = frozenset({"float", "float32", "int32", "uint32", "int64", "uint64", "double", "float64"})


@dataclass(frozen=True)
class Ascend910B:
    name: str = "Ascend910B"

    # ---- chip ----------------------------------------------------------------------------------------------
    # AI-vector cores. The emulator's GetCoreNumAiv() returns this (40, as 910B3/910B4-class parts with 20 AI
    # cores x 2 AIV have). ref §6 lists 48 for 910B2: to model that part, set 48 here AND pass the same value
    # as the emulator's core_num_aiv (the default of which is this field).
    aiv_cores: int = 40
    # Core clock. ref §6: cube_freq 1800 MHz in the 910B2 ini (the msopprof sample ran a 910B4 at 1650 MHz).
    clock_hz: float = 1.8e9
    # HBM bandwidth shared by all cores. ref §6: ~1.6 TB/s (profile estimate of a hardware yaml).
    hbm_bytes_per_s: float = 1.6e12
    # Kernel launch + completion overhead counted once per kernel (msprof's Task Duration includes it).
    # assumption: ref §6 only says small kernels are floor-bound at "a few us".
    launch_us: float = 3.0
    # Per block: core start, argument and tiling pointer set-up before the first API call. assumption.
    block_start_cycles: float = 200.0

    # ---- scalar unit (issues every API call in program order) ----------------------------------------------
    # Issue cost of one API call (address/parameter set-up and the dispatch to its pipe). assumption.
    scalar_issue_cycles: float = 10.0
    # LocalTensor::GetValue/SetValue: a scalar load/store to UB (after the data is ready). assumption.
    scalar_ub_access_cycles: float = 10.0
    # GlobalTensor::GetValue (and GET_TILING_DATA): a data-cache miss to GM, the scalar unit stalls.
    # assumption ("hundreds of cycles").
    scalar_gm_read_cycles: float = 500.0
    # GlobalTensor::SetValue: a write through the data cache to GM. assumption.
    scalar_gm_write_cycles: float = 200.0
    # A libm call from the kernel's scalar code (tanhf, expf, powf ...; the build counts each call): software math
    # on the scalar unit, tens of instructions. assumption.
    scalar_libm_call_cycles: float = 100.0

    # ---- MTE (DMA) pipes of one core --------------------------------------------------------------------------
    # GM->UB (MTE2) and UB->GM (MTE3) bandwidth of one core in bytes per cycle. assumption: 32 B/cycle
    # (57.6 GB/s at 1.8 GHz) is what the emulator's GetCoreMemBw(HBM) reports; 40 cores together (2.3 TB/s)
    # then exceed the HBM, as on the device where a handful of cores cannot saturate it but all can.
    mte2_bytes_per_cycle: float = 32.0
    mte3_bytes_per_cycle: float = 32.0
    # Per-copy occupancy of the pipe on top of bytes/bandwidth (descriptor set-up, burst scheduling): a stream
    # of 16 KB copies then runs at ~89 % of the pipe's bandwidth, 2 KB copies at 50 %, 256 B copies at 11 %.
    # assumption, chosen to match ref §6 "a single GM transfer >= 16 KB reaches best bandwidth".
    mte2_setup_cycles: float = 64.0
    mte3_setup_cycles: float = 64.0
    # GM round-trip latency of a copy: GM->UB data lands this long after the pipe finished issuing it (the
    # consumer waits for it, the next copy on the pipe does not); a UB->GM copy completes this long after it
    # read UB (the kernel ends after it). Overlapped by double buffering, exposed by single buffering.
    # assumption (a few hundred ns, as HBM latencies go).
    mte2_latency_cycles: float = 600.0
    mte3_latency_cycles: float = 300.0
    # GM traffic is moved in bursts: every contiguous GM segment of a copy is rounded out to whole bursts of
    # this size (aligned to it). ref §6: 128/256/512 B bursts; the smallest is used (assumption).
    gm_burst_bytes: float = 128.0

    # ---- vector unit: cycles per 256-byte repeat, by instruction class and element width ------------------------
    # One repeat = 256 B (64 fp32 / 128 fp16 lanes); ref §6 derives peak vector throughput from one repeat per
    # cycle, which the simple class uses. The other classes are assumptions (calibrate).
    vec_instr_cycles: float = 8.0       # per vector instruction (issue into the pipe, pipeline fill). assumption
    vec_simple_b16: float = 1.0         # Add Sub Mul Max Min Adds Muls Relu Abs Duplicate Compare Select ... ref §6
    vec_simple_b32: float = 1.0
    vec_cast_b16: float = 1.0           # Cast (repeats counted on the wider type). assumption
    vec_cast_b32: float = 1.0
    vec_exp_b16: float = 4.0            # Exp Ln. assumption
    vec_exp_b32: float = 4.0
    vec_div_b16: float = 4.0            # Div Sqrt. assumption
    vec_div_b32: float = 4.0
    vec_recip_b16: float = 2.0          # Rsqrt Reciprocal (approximate). assumption
    vec_recip_b32: float = 2.0
    vec_reduce_b16: float = 2.0         # ReduceSum/Max/Min, WholeReduce*, BlockReduce*, RepeatReduceSum. assumption
    vec_reduce_b32: float = 2.0
    vec_reduce_tail_cycles: float = 16.0  # extra for the second level of ReduceSum/Max/Min. assumption

    # ---- cube unit: the eager estimate of matmul/conv, and the emulated cube core (M pipe) -----------------------
    # derived from ref §6: 16x16x16 fp16 MACs per cycle per AI core = 8192 flop/cycle, x 20 AI cores (the 40
    # AIV parts) x 1.8 GHz = 2.95e14 flop/s; fp32 runs at 1/4 of fp16 (ref §6). The emulator's M pipe runs
    # cube_fp16_flops_per_s / (2 x aiv_cores/2 x clock_hz) = 4096 MACs per cycle on one cube core.
    cube_fp16_flops_per_s: float = 2.95e14
    cube_fp32_ratio: float = 0.25
    # bfloat16 relative to fp16. ref §6 (a public hardware yaml): bf16 188 vs fp16 376 TFLOPS peak.
    cube_bf16_ratio: float = 0.5
    # int8 relative to fp16: 16x32x16 int8 MACs per cycle vs 16x16x16 fp16 (ref §6).
    cube_int8_ratio: float = 2.0
    # The cube core's buffers (ref §6, Ascend910B2.ini [AICoreSpec] as quoted in public notes): L1 512 KiB,
    # L0A/L0B 64 KiB, L0C 128 KiB, bias table 1 KiB (also in the API docs of DataCopy L1->BiasTable).
    l1_bytes: float = 524288
    l0a_bytes: float = 65536
    l0b_bytes: float = 65536
    l0c_bytes: float = 131072
    bt_bytes: float = 1024
    # MTE1 (L1 -> L0A/L0B/bias table). assumption: 256 B/cycle, enough to feed a 128 x 128 base block (which
    # needs ~128 B/cycle at 4096 MACs/cycle); per-instruction set-up. assumption.
    mte1_bytes_per_cycle: float = 256.0
    mte1_setup_cycles: float = 32.0
    # Per-Mmad start-up of the matrix unit (fill/drain of the systolic pipeline). assumption.
    mmad_setup_cycles: float = 32.0
    # FIX (L0C -> GM through the fixpipe): modelled like MTE3. assumption: the same 32 B/cycle, set-up and GM
    # latency as MTE3's.
    fix_bytes_per_cycle: float = 32.0
    fix_setup_cycles: float = 64.0
    fix_latency_cycles: float = 300.0
    # SyncAll: the blocks resume this long after the last one arrived (a round of GM flag writes and polls).
    # assumption (about a microsecond).
    sync_all_cycles: float = 2000.0

    # ------------------------------------------------------------------------------------------------------------
    def runtime_dict(self) -> dict:
        """All fields as a flat dict (numbers, plus the name): what the runtime parses and echoes back."""
        return dataclasses.asdict(self)

    def runtime_json(self) -> str:
        """The flat JSON object for `evk_options.hw_model_json` / the spec file's `option hw_model_json`."""
        return json.dumps(self.runtime_dict(), separators=(",", ":"))

    # ---- helpers shared by the kernel and the eager estimates ----------------------------------------------------
    def us(self, cycles: float) -> float:
        return cycles / self.clock_hz * 1e6

    def vec_cycles_per_repeat(self, cls: str, dtype: str) -> float:
        group = "b32" if dtype_is_b32(dtype) else "b16"
        return float(getattr(self, f"vec_{cls}_{group}"))


def dtype_is_b32(dtype: str) -> bool:
    """Cast dtypes read "half->float": the wider side counts."""
    return any(part.strip() in B32_DTYPES for part in str(dtype).split("->"))


# The vector instruction classes the runtime uses (op name -> class); everything else is "simple".
VEC_CLASS = {
    "Exp": "exp", "Ln": "exp", "Log": "exp",  # Log: the high-level API, one Ln (evk_sim/math_api.h)
    "Div": "div", "Sqrt": "div",
    "Rsqrt": "recip", "Reciprocal": "recip",
    "Cast": "cast", "Floor": "cast", "Ceil": "cast", "Trunc": "cast",  # high-level rounding: casts
    "ReduceSum": "reduce", "ReduceMax": "reduce", "ReduceMin": "reduce",
    "WholeReduceSum": "reduce", "WholeReduceMax": "reduce", "WholeReduceMin": "reduce",
    "RepeatReduceSum": "reduce", "BlockReduceSum": "reduce", "BlockReduceMax": "reduce", "BlockReduceMin": "reduce",
}
FULL_REDUCE = frozenset({"ReduceSum", "ReduceMax", "ReduceMin"})


def vec_class(op: str) -> str:
    return VEC_CLASS.get(op, "simple")
