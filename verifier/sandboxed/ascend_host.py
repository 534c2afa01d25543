"""Runs INSIDE a sandbox of its own: an Ascend C candidate's host code (TilingFunc, InferShape, the OpDef), as
CANN runs it on the host before any data exists.

    python -S -I verifier/sandboxed/ascend_host.py DIR PURELIB   # as host.py starts it

DIR holds ``host.so`` (the candidate's host library, built and judged by the parent) and ``request.json``:
``{"mode": "describe", "op": ...}`` (the OpDef the library registers) or ``{"mode": "tiling", "op", "inputs",
"outputs", "attrs", "sim"}`` with every tensor as its dtype and dims only (the values of a small integer input
the OpDef declares ValueDepend are the one exception, as on CANN). This process never holds an input or output:
the kernel runs in the candidate worker from the tiling bytes, block count, tiling key and workspace sizes
written here to ``DIR/result.json``. The parent reads that file as untrusted bytes (host.py).

The run filter (no network, no new processes, no other process's memory) is installed before the library is
loaded, so the candidate's static constructors already run under it; stdout is the candidate's (CANN prints a
TilingFunc's output harmlessly), the result goes to the file.

It starts in ~0.1 s: without the site machinery (``-S``: the two modules it needs are loaded from their files,
pyseccomp from PURELIB) and without the library search pyseccomp would run at import (the two libraries it
loads are named directly).
"""
from __future__ import annotations

import ctypes
import json
import os
import struct
import sys
from pathlib import Path
from typing import Any

_PACK = {"int8": "b", "uint8": "B", "int16": "h", "int32": "i", "int64": "q", "bool": "?"}


def _values(dtype: str, values: list[int]) -> bytes:
    return struct.pack("<" + _PACK[dtype] * len(values), *[bool(v) if dtype == "bool" else int(v) for v in values])


HERE = Path(__file__).resolve().parent
ABI = HERE.parent / "backends" / "ascend_sim" / "abi.py"


def _module(name: str, path: Path) -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _fast_pyseccomp(purelib: str) -> None:
    """Import pyseccomp without its find_library calls (each runs ldconfig: ~0.1 s here)."""
    import ctypes.util

    sys.path.append(purelib)
    real = ctypes.util.find_library
    known = {"c": "libc.so.6", "seccomp": "libseccomp.so.2"}

    def find(name: str) -> str | None:
        try:
            ctypes.CDLL(known[name])
            return known[name]
        except (KeyError, OSError):
            return real(name)

    ctypes.util.find_library = find
    try:
        import pyseccomp  # noqa: F401
    except ImportError:
        pass  # install_seccomp reports that seccomp is unavailable
    finally:
        ctypes.util.find_library = real


def serve(work: Path) -> dict[str, Any]:
    abi = _module("evk_ascend_abi", ABI)
    req = json.loads((work / "request.json").read_text())
    dll = abi.declare(ctypes.CDLL(str(work / "host.so")))
    raw = dll.evk_sim_describe_op(str(req["op"]).encode())
    opdef = json.loads(raw.decode()) if raw else None
    if req["mode"] == "describe" or opdef is None:
        return {"ok": True, "opdef": opdef}
    keep = abi.Keep()
    ins = []
    for k, t in enumerate(req["inputs"]):
        data, nbytes = None, 0
        if t.get("values") is not None:
            buf = ctypes.create_string_buffer(_values(t["dtype"], t["values"]))
            keep.alive.append(buf)
            data, nbytes = ctypes.addressof(buf), len(buf.raw)
        ins.append((t["name"], t["dtype"], list(t["dims"]), data, nbytes))
    outs = [(t["name"], t["dtype"], list(t["dims"]), None, 0) for t in req["outputs"]]
    try:
        attrs = keep.attrs(list(req["attrs"]), opdef.get("attrs") or [], str(req["op"]))
    except ValueError as exc:
        return {"ok": False, "error": str(exc)}
    report_path = work / "report.json"
    cfg = abi.RunConfig(str(req["op"]).encode(), None, len(ins), keep.tensors(ins), len(outs), keep.tensors(outs),
                        len(req["attrs"]), attrs, str(report_path).encode(), abi.options(req.get("sim") or {}))
    sys.stdout.flush()
    rc = dll.evk_sim_tiling(ctypes.byref(cfg))
    if rc == 1:
        return {"ok": False, "error": (dll.evk_sim_last_error() or b"").decode(errors="replace")}
    try:
        report = json.loads(report_path.read_text())
    except (OSError, ValueError) as exc:
        return {"ok": False, "error": f"the emulator wrote no readable host report (rc {rc}): {exc}"}
    return {"ok": True, "opdef": opdef, "report": report}


def main() -> int:
    work = Path(sys.argv[1])
    _fast_pyseccomp(sys.argv[2])
    _module("evk_seccomp_filter", HERE / "seccomp_filter.py").install_seccomp("run")
    try:
        result = serve(work)
    except Exception as exc:  # noqa: BLE001 - reported; the parent decides
        result = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.flush()
    tmp = work / "result.json.tmp"
    tmp.write_text(json.dumps(result))
    os.replace(tmp, work / "result.json")
    return 0


if __name__ == "__main__":
    sys.exit(main())
