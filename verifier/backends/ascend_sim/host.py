"""The host process of an Ascend C candidate (trusted side): its TilingFunc, InferShape and OpDef run in a
sandbox of their own, on shapes, dtypes and attributes, never in the candidate worker that holds the data.

On CANN the host code runs on the host before any data exists; running it inside the worker let a TilingFunc
read the real inputs and write the outputs. Here each request starts a fresh process (bubblewrap + prlimit,
the run seccomp filter installed before the library loads: sandboxed/ascend_host.py) with a private folder
holding the candidate's host library and the request; it answers with a file the parent reads as untrusted
bytes: bounded, parsed, schema-checked. A crash, a hang or junk is a failed tiling with a named cause.

The backend asks twice per candidate at most: ``describe`` (the OpDef, once per host library, cached with the
build) and ``tiling`` (once per distinct shapes/dtypes/attributes within a verdict).
"""
from __future__ import annotations

import json
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any, Callable

from evokernel.verifier.trusted.launcher import Limits, SandboxSpec, run_sandboxed
from evokernel.verifier.wire_schema import Bool, Int, List, Nullable, Obj, ProtocolError, Str, Value

from .report_schema import VIOLATION

HOST_SCRIPT = Path(__file__).resolve().parents[2] / "sandboxed" / "ascend_host.py"
MAX_RESULT_BYTES = 4 * 1024 * 1024
# a TilingFunc takes milliseconds; the CPU limit stops one that computes for ever, the wall-clock limit one that
# waits, generously: on a machine shared by several verifiers a process start alone took seconds (measured)
HOST_CPU_S = 30
HOST_TIMEOUT_S = 120.0
HOST_LIMITS = dict(cpu_s=HOST_CPU_S, fsize_mb=8, address_space_mb=4096, tasks=16, tmp_mb=64)
_CPU_LIMIT_STATUS = {-24, -9, 128 + 24, 128 + 9}  # SIGXCPU at the soft limit, SIGKILL at the hard one

# Runner: (argv, spec, timeout) -> (rc or None on timeout, output); tests substitute their own
Runner = Callable[[list[str], SandboxSpec, float], "tuple[int | None, str]"]


class HostError(RuntimeError):
    """The host code could not produce an answer (crash, hang, junk): the message is LLM-facing feedback."""


# what the host process writes (result.json): the OpDef, or the host half's report
_REPORT = Obj({
    "status": Str(64, truncate=True), "error": Str(4000, truncate=True), "block_dim": Int(0, 2**32 - 1),
    "tiling_key": Int(0, 2**64 - 1),
    "tiling": Obj({"data_size": Int(0, 2**32), "data_hex": Str(2 * 64 * 1024),
                   "workspace_sizes": List(Int(0, 2**50), 64), "schedule_mode": Int(0, 2**32 - 1)},
                  required=("data_hex", "workspace_sizes", "schedule_mode")),
    "violations": List(VIOLATION, 256), "kernel_printf": Str(8192, truncate=True),
}, required=("status", "block_dim", "tiling_key", "tiling", "violations"))
_PARAM = Obj({"name": Str(256), "param_type": Str(32, truncate=True), "value_depend": Bool(),
              "dtypes": List(Str(32, truncate=True), 64)}, required=("name",))
_OPDEF = Obj({"op": Str(256), "inputs": List(_PARAM, 64), "outputs": List(_PARAM, 64),
              "attrs": List(Obj({"name": Str(256), "type": Str(32, truncate=True), "param_type": Str(32, truncate=True),
                                 "default": Value(depth=2, text=4096)}, required=("name",)), 64)},
             required=("op", "inputs", "outputs", "attrs"))
_RESULT = Obj({"ok": Bool(), "error": Str(8000, truncate=True), "opdef": Nullable(_OPDEF), "report": _REPORT},
              required=("ok",))


def _sandboxed(argv: list[str], spec: SandboxSpec, timeout: float) -> tuple[int | None, str]:
    return run_sandboxed(argv, spec, timeout)


def run_host(host_lib: Path, request: dict[str, Any], scratch: Path, timeout: float = HOST_TIMEOUT_S,
             runner: Runner = _sandboxed) -> dict[str, Any]:
    """One request to a fresh host process; the validated result (HostError if there is none)."""
    scratch.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="host.", dir=scratch))
    try:
        shutil.copyfile(host_lib, work / "host.so")
        (work / "request.json").write_text(json.dumps(request))
        spec = SandboxSpec(threads=1, writable=[work], limits=Limits(**HOST_LIMITS), cwd=work, name="host")
        rc, output = runner([sys.executable, "-S", "-I", str(HOST_SCRIPT), str(work), sysconfig.get_paths()["purelib"]],
                            spec, timeout)
        result_file = work / "result.json"
        if rc is None:
            raise HostError(f"the host code (TilingFunc / InferShape / the OpDef's constructor) did not finish within "
                            f"{timeout:.0f} s")
        if not result_file.is_file() and rc in _CPU_LIMIT_STATUS:
            raise HostError(f"the host code (TilingFunc / InferShape / the OpDef's constructor) used more than "
                            f"{HOST_CPU_S} s of CPU time")
        if not result_file.is_file():
            tail = output.strip().splitlines()[-3:]
            raise HostError("the host process ended without an answer (exit status "
                            f"{rc}): the host code crashed or exited" + (f" ({' / '.join(tail)[:300]})" if tail else ""))
        if result_file.stat().st_size > MAX_RESULT_BYTES:
            raise HostError("the host process answered with more than 4 MiB")
        try:
            result = _RESULT.check(json.loads(result_file.read_text(errors="replace")), "host result")
        except (ValueError, ProtocolError) as exc:
            raise HostError(f"the host process answered with junk ({str(exc)[:200]})") from None
        return result
    finally:
        shutil.rmtree(work, ignore_errors=True)
