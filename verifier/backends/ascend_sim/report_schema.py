"""The schema of an emulator report as it crosses from a candidate's worker to the trusted parent.

One place: the producer is the emulator (``report_json`` in runtime.cpp, ``stats_json`` in
include/evk_sim/race.h) plus the worker's ``"call"`` entry (sandboxed/ascend_ops.py); the consumers are
report.py (judge_report, format_violation), latency_model.py (estimate_kernel) and trusted/trials.py
(report_warnings, sim_summary, the modelled-traffic floor). The message codec checks every report of a
``run`` reply (or of a failure reply) against `REPORT` before any consumer sees it: unknown fields are
dropped, a field of the wrong type or out of bounds is a ProtocolError (a ``runtime`` verdict).

Required are the fields a consumer indexes directly (``b["timing_estimate"]["cycles"]``); every other
field the emulator writes is typed but optional. A new emulator field is added here, next to its
producer's name (``EXTRA`` exists for that: fields added in one place, merged into `REPORT`).
"""
from __future__ import annotations

from evokernel.verifier.wire_schema import Bool, Int, List, Map, Num, Obj, Spec, Str, Value

U64 = Int(0, 2**64 - 1)  # Json::num
I64 = Int(-(2**63), 2**63 - 1)  # Json::inum
NUM = Num()  # Json::dbl (finite: the emulator writes null only for a non-finite value, which is a bug)
NAME = Str(64)  # rule ids, pipe and memory names, dtypes, statuses
TEXT = Str(20_000, truncate=True)  # messages, errors
PATH = Str(4096, truncate=True)
MAX_REPORTS = 1024  # per reply (the worker keeps at most ascend_ops.MAX_REPORTS = 64)
MAX_BLOCKS = 1 << 18  # 65,535 blocks (SetBlockDim's limit), three reported blocks per AI core of a MIX kernel
MAX_VIOLATIONS = 4096  # distinct violations kept (the emulator's max_violations, default 200)
PIPES = ("scalar", "vector", "mte2", "mte3", "mte1", "cube", "fix")
MEMORIES = ("UB", "L1", "L0A", "L0B", "L0C", "BT")

# counters_json
_VECTOR = Obj({"op": NAME, "dtype": NAME, "calls": U64, "elements": U64, "repeats": U64},
              required=("op", "dtype", "calls", "repeats"))
COUNTERS = Obj({
    **{k: U64 for k in ("mte2_bytes", "mte2_calls", "mte2_bursts", "mte3_bytes", "mte3_calls", "mte3_bursts",
                        "ub_copy_bytes", "ub_copy_calls", "instructions")},
    "scalar": Obj({k: U64 for k in ("gm_get", "gm_set", "ub_get", "ub_set", "gm_get_bytes", "gm_set_bytes", "libm")}),
    "sync": Obj({k: U64 for k in ("pipe_barrier", "set_flag", "wait_flag", "sync_all")}),
    "queue": Obj({k: U64 for k in ("alloc", "enque", "deque", "free")}),
    "cube": Obj({k: U64 for k in ("mmad_calls", "macs_half", "macs_bfloat16", "macs_float", "macs_int8", "mte1_bytes",
                                  "mte1_calls", "fix_bytes", "fix_calls")}),
    "vector": List(_VECTOR, 4096),
}, required=("mte2_bytes", "mte3_bytes"))

# timing_json: the modelled schedule of one block
_COPIES = ("mte2", "mte3", "fix")
TIMING = Obj({
    "cycles": NUM, "us": NUM, "scalar_stall_cycles": NUM,
    "busy_cycles": Obj({p: NUM for p in PIPES}),
    "instructions": Obj({p: U64 for p in PIPES}),
    "gm_bytes": Obj({p: NUM for p in _COPIES}, required=("mte2", "mte3")),
    "copies": Obj({p: U64 for p in _COPIES}, required=("mte2", "mte3")),
}, required=("cycles", "busy_cycles", "gm_bytes", "copies"))

_QUEUE = Obj({"kind": NAME, "position": NAME, "num": I64, "depth": I64, "bytes": U64, "allocs": U64, "line": I64},
             required=("position",))
BLOCK = Obj({
    "block": I64, "status": NAME, "ub_bytes_used": U64, "kernel_type": NAME,
    "core": NAME, "ai_core": I64, "sub_block": I64,  # a core of a MIX kernel
    "local_bytes_used": Obj({m: U64 for m in MEMORIES}),
    "queues": List(_QUEUE, 1024),
    "counters": COUNTERS,
    "timing_estimate": TIMING,
    "repeat": Int(1, MAX_BLOCKS),  # report_size.run_length: the unit again, shifted, this many times in all
}, required=("block",))

VIOLATION = Obj({"rule": NAME, "severity": NAME, "block": I64, "blocks": List(I64, 1024), "count": U64,
                 "message": TEXT, "file": PATH, "line": I64},
                required=("rule", "severity", "message", "file", "line"))  # format_violation reads file and line

HW_MODEL = Map(NUM, 256, fixed={"name": NAME})  # "name" and one finite number per constant (hardware.py)

_RACE = Obj({"cores": U64, "write_record_bytes": U64, "read_record_bytes": U64, "read_sets": U64,
             "widest_read_set": U64, "read_sets_saturated": Bool(), "accumulation_groups": U64})
_TILING = Obj({"data_size": U64, "data_hex": Str(1 << 20, truncate=True), "workspace_sizes": List(U64, 4096),
               "workspace_bytes": U64, "schedule_mode": U64})
_INFER_SHAPE = Obj({"ran": Bool(), "ok": Bool(), "outputs": List(List(I64, 64), 1024)})
_SUMMARY = Obj({"fatal": U64, "error": U64, "warning": U64, "dropped": U64, "by_rule": Map(U64, 4096)})
# report_size.compact: the units left out of a report over its size budget
_OMITTED = Obj({"units": Int(0, MAX_BLOCKS), "blocks": Int(0, MAX_BLOCKS), "cycles_sum": NUM, "cycles_max": NUM,
                "gm_bytes": Obj({p: NUM for p in ("mte2", "mte3", "fix")}),
                "copies": Obj({p: U64 for p in ("mte2", "mte3", "fix")})},
               required=("units", "blocks", "cycles_sum", "cycles_max"))
_PLATFORM = Obj({"soc": NAME, "core_num_aiv": U64, "ub_bytes": U64, "half_overflow": NAME})
# the worker's description of the call (ascend_ops: op type, input shapes and dtypes, EXEC_NPU_CMD attributes)
_CALL = Obj({"op": Str(256), "inputs": List(List(I64, 64), 1024), "dtypes": List(NAME, 1024),
             "attrs": List(Value(depth=4, items=4096, text=1024), 1024)})

FIELDS: dict[str, Spec] = {
    "schema": NAME, "op_type": Str(256), "kernel": Str(256), "status": NAME, "error": TEXT,
    "platform": _PLATFORM, "gm_protection": NAME, "hw_model": HW_MODEL, "timing_note": Str(512, truncate=True),
    "block_dim": U64, "tiling_key": U64, "tiling": _TILING, "infer_shape": _INFER_SHAPE, "blocks_run": U64,
    "race": _RACE, "summary": _SUMMARY, "violations": List(VIOLATION, MAX_VIOLATIONS),
    "blocks": List(BLOCK, MAX_BLOCKS), "totals": COUNTERS, "kernel_printf": Str(16_384, truncate=True),
    "call": _CALL,
}
# what the API moved per kernel argument (runtime.cpp: report_json "args"; the parent's audit.py reads it)
_ARG = Obj({"name": Str(256), "kind": NAME, "bytes": U64, "read_bytes": U64, "written_bytes": U64, "covered_bytes": U64,
            "changed_bytes": U64}, required=("kind", "covered_bytes"))
EXTRA: dict[str, Spec] = {"args": List(_ARG, 64), "blocks_omitted": _OMITTED}  # fields a newer emulator adds (checked like the others)

REPORT = Obj({**FIELDS, **EXTRA})
REPORTS = List(REPORT, MAX_REPORTS)
