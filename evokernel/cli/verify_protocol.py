"""The warm verifier's requests, parsed strictly (no torch: the CLI's client path imports this).

A request is a JSON object from the bounded codec (`evokernel.verifier.message_codec`). Only the user who
runs the service can reach its socket (0600 in a 0700 directory, and the server checks the peer's uid), but
the service is trusted code like the parent verifier, so it still accepts exactly these fields, each with its
type and range, and answers anything else with an error instead of guessing:

* ``{"op": "ping"}``, ``{"op": "stop"}``;
* ``{"op": "verify", ...}`` with the fields of `VERIFY_FIELDS`. The candidate's source is only text here: it
  runs in the sandboxed workers of the verifier, as in-process.
"""
from __future__ import annotations

import math
import re
from typing import Any

MAX_SOURCE = 16 * 1024 * 1024  # characters of a candidate
MAX_PATH = 4096
NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,99}\Z")


class RequestError(ValueError):
    """A request that is not one of the forms above (the reply says which field and why)."""


def _int(v: Any, name: str, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise RequestError(f"{name} must be an integer in [{lo}, {hi}], not {v!r}")
    return v


def _bool(v: Any, name: str) -> bool:
    if not isinstance(v, bool):
        raise RequestError(f"{name} must be true or false, not {v!r}")
    return v


def _str(v: Any, name: str, limit: int) -> str:
    if not isinstance(v, str) or len(v) > limit or "\x00" in v:
        raise RequestError(f"{name} must be a string of at most {limit} characters without NUL")
    return v


def _float(v: Any, name: str, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not lo < v <= hi:
        raise RequestError(f"{name} must be a number in ({lo}, {hi}], not {v!r}")
    return float(v)


def _value(v: Any, name: str, depth: int = 0) -> Any:
    """A size constant's value: a JSON scalar or a (nested, short) list of them."""
    if v is None or isinstance(v, (bool, int, str)):
        if isinstance(v, str) and len(v) > 1000:
            raise RequestError(f"override {name}: a string of at most 1000 characters")
        return v
    if isinstance(v, float):
        if not math.isfinite(v):
            raise RequestError(f"override {name}: not a finite number")
        return v
    if isinstance(v, list) and depth < 4 and len(v) <= 64:
        return [_value(x, name, depth + 1) for x in v]
    raise RequestError(f"override {name}: {type(v).__name__} is not a size constant's value")


def _overrides(v: Any) -> dict[str, Any]:
    if not isinstance(v, dict) or len(v) > 256:
        raise RequestError("overrides must be an object of at most 256 NAME: value pairs")
    out = {}
    for k, x in v.items():
        if not NAME.match(k):
            raise RequestError(f"override name {k!r} is not an identifier")
        out[k] = _value(x, k)
    return out


def _seed(v: Any) -> int | None:
    return None if v is None else _int(v, "seed", 0, 2**63 - 1)


def _version(v: Any) -> str | None:
    return None if v is None else _str(v, "version", 200)


# field -> (parser, default); a field without a default is required
VERIFY_FIELDS: dict[str, tuple[Any, Any]] = {
    "task_path": (lambda v: _str(v, "task_path", MAX_PATH), ...),
    "overrides": (_overrides, {}),
    "candidate": (lambda v: _str(v, "candidate", MAX_SOURCE), ...),
    "backend": (lambda v: _str(v, "backend", 64), ...),
    "threads": (lambda v: _int(v, "threads", 1, 4096), ...),
    "strict": (lambda v: _bool(v, "strict"), False),
    "trials": (lambda v: _int(v, "trials", 1, 1000), 4),
    "timing": (lambda v: _bool(v, "timing"), True),
    "compile_baseline": (lambda v: _bool(v, "compile_baseline"), False),
    "seed": (_seed, None),
    "timeout": (lambda v: _float(v, "timeout", 0.0, 86400.0), 20.0),
    "version": (_version, None),  # the client's verifier code version (a mismatch is answered "incompatible")
}


def parse(req: Any) -> dict[str, Any]:
    """The request with every field checked and defaults filled (RequestError otherwise)."""
    if not isinstance(req, dict):
        raise RequestError("a request is a JSON object")
    op = req.get("op")
    if op in ("ping", "stop"):
        if set(req) != {"op"}:
            raise RequestError(f"{op} takes no fields besides op")
        return {"op": op}
    if op != "verify":
        raise RequestError(f"unknown request {op!r}")
    unknown = sorted(set(req) - set(VERIFY_FIELDS) - {"op"})
    if unknown:
        raise RequestError(f"unknown field(s) {', '.join(map(repr, unknown))}")
    out: dict[str, Any] = {"op": "verify"}
    for name, (check, default) in VERIFY_FIELDS.items():
        if name in req:
            out[name] = check(req[name])
        elif default is ...:
            raise RequestError(f"missing field {name!r}")
        else:
            out[name] = dict(default) if isinstance(default, dict) else default
    if not out["task_path"].startswith("/"):
        raise RequestError("task_path must be absolute")
    return out
