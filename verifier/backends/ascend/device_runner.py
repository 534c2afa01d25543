"""The device side of the ascend backend: one candidate checked and timed on one NPU, in a FRESH process.

    python -m evokernel.verifier.backends.ascend.device_runner REQUEST.json RESULT.json

This is the only module of the backend that imports torch_npu, and it does so inside main(): on a machine
without a loadable CANN `import torch_npu` prints the libhccl/libascendcl ImportError and calls sys.exit()
(ascend-toolchain.md §4, §7), which must not take the verifier down. A fresh process per candidate is also
what the binding needs: EXEC_NPU_CMD reads ASCEND_CUSTOM_OPP_PATH once, at load time, and a device fault
leaves the process's device context unusable (§1.1, §4). The parent (not written yet) starts this module
with toolchain.device_env(...) as the environment, enforces the wall-clock limit (killing the process
group), and classifies what the runtime printed on stderr with feedback.analyze_runtime: device fault texts
(EZ9999, retCode=0x31, ...) are deliberately left on stderr, exception texts are also echoed there.

What it does (the MultiKernelBench flow of §1.1, with the verifier's secret seeds instead of seed 1024):

1. import torch, torch_npu (failure -> stage "import", with feedback.analyze_import's diagnosis) and select
   the device (torch_npu.npu.set_device(device_id)).
2. Load the task (Model, get_inputs, get_init_inputs) from its source text or path; load the built
   `custom_ops_lib` module from its file path under that name, then the candidate's model_src (which
   `import custom_ops_lib`).
3. Build Model and ModelNew from get_init_inputs() after torch.manual_seed(init_seed) each, move both to
   the device.
4. For every trial: torch.manual_seed(seed); get_inputs() on CPU; a perturbation of the floating inputs
   (the CPU verifier's worker set: none/scale/negate/shift); separate device copies for the reference and the
   candidate; forward + synchronize each; compare CPU copies (shape, dtype, torch.equal for bool/integer
   outputs, torch.allclose(atol=atol, rtol=rtol) for floating ones, tuples/lists element-wise), record the max
   abs / rel error; check the candidate left its inputs unchanged. Stops at the first failing trial.
5. If every trial passed and timing is on: warm-up calls (each synchronized), then per timed call a pair of
   torch_npu.npu.Event(enable_timing=True), record / call / record / synchronize / elapsed_time (ms), for
   ModelNew and then the eager reference Model, on the first trial's inputs. Median, mean, min, max, std.
   (The paper's per-kernel mean over passes comes from msprof; that is msprof.py's job, not this one's.)

REQUEST.json
    task_source | task_path   the task file's text (with overrides applied) or its path
    model_src | model_src_path
    custom_ops_lib            path of the built extension (custom_ops_lib*.so); optional (omitted: model_src
                              must not need it)
    device                    "npu:0" by default; tests pass "cpu" with the fake torch_npu
    device_id                 int, default: the index in `device`, else 0
    init_seed                 int (default 0)
    trials                    [{"seed": int, "perturb": "none"|"scale"|"negate"|"shift"}, ...] (>= 1)
    atol, rtol                default 1e-4 each (`tol` sets both)
    warmup                    default 3;  timed_calls: default 100 (0: no timing)
    timing                    "events" (default) | "none";  time_reference: default true

RESULT.json
    ok, stage                 ok=true and stage="done" when every trial passed (and timing ran if asked);
                              otherwise ok=false and stage in request | import | device | task | load | init |
                              run | correctness | timing
    error, traceback          on failure: one-line text and the last traceback lines (candidate frames)
    diagnosis                 stage "import" only: {"kind", "message", "lines"} from feedback.analyze_import
                              over what the import printed through Python's sys.stdout/stderr (text a C library
                              writes straight to fd 2 is not captured here: the parent should also run
                              analyze_import / analyze_runtime on the process's stderr)
    trials                    [{"seed", "perturb", "ok", "max_abs_err", "max_rel_err", "message"}]
    max_abs_err, max_rel_err  over the trials that ran
    timing                    {"mode", "warmup", "calls", "candidate_ms": stats, "reference_ms": stats | null}
    device, torch_version, torch_npu_version
Exit code: 0 when ok, 2 when a result with ok=false was written, anything else: the process died (read stderr).

NOT run on an NPU or with a real torch_npu: tests use a fake torch_npu that maps the API onto CPU
(tests/verifier/ascend/fake_torch_npu/) and a Python stand-in for custom_ops_lib.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import math
import statistics
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any

STAGES = ("request", "import", "device", "task", "load", "init", "run", "correctness", "timing")
PERTURBATIONS = {  # same set and values as verifier/sandboxed/worker.py
    "none": lambda t: t,
    "scale": lambda t: t * 4.0,
    "negate": lambda t: -t,
    "shift": lambda t: t + 3.0,
}
TRACEBACK_LINES = 12
MODEL_SRC_NAME = "<model_src>"
TASK_NAME = "<task>"


class Failure(Exception):
    def __init__(self, stage: str, error: str, tb: str = "", **extra: Any):
        super().__init__(error)
        self.stage, self.error, self.tb, self.extra = stage, error, tb, extra


def _tb_tail(exc: BaseException, n: int = TRACEBACK_LINES) -> str:
    lines = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)).rstrip().splitlines()
    return "\n".join(lines[-n:])


def _describe(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"SystemExit({exc.code!r})"
    return f"{type(exc).__name__}: {exc}"


def _fail(stage: str, exc: BaseException, prefix: str = "") -> Failure:
    text = prefix + _describe(exc)
    print(f"[device_runner] {stage}: {text}", file=sys.stderr, flush=True)  # for the parent's stderr scan
    return Failure(stage, text, _tb_tail(exc))


# ---------------------------------------------------------------------------------------------------------
# request
# ---------------------------------------------------------------------------------------------------------
def parse_request(req: dict[str, Any]) -> dict[str, Any]:
    r = dict(req)
    if not (r.get("task_source") or r.get("task_path")):
        raise Failure("request", "request needs task_source or task_path")
    if not (r.get("model_src") or r.get("model_src_path")):
        raise Failure("request", "request needs model_src or model_src_path")
    r.setdefault("device", "npu:0")
    if "device_id" not in r:
        dev = str(r["device"])
        r["device_id"] = int(dev.split(":", 1)[1]) if ":" in dev and dev.split(":", 1)[1].isdigit() else 0
    r["init_seed"] = int(r.get("init_seed", 0))
    trials = r.get("trials") or []
    if not trials:
        raise Failure("request", "request needs at least one trial")
    norm = []
    for t in trials:
        t = {"seed": t} if isinstance(t, int) else dict(t)
        t.setdefault("perturb", "none")
        if t["perturb"] not in PERTURBATIONS:
            raise Failure("request", f"unknown perturbation {t['perturb']!r} (one of {', '.join(PERTURBATIONS)})")
        norm.append({"seed": int(t["seed"]), "perturb": t["perturb"]})
    r["trials"] = norm
    tol = float(r.get("tol", 1e-4))
    r["atol"], r["rtol"] = float(r.get("atol", tol)), float(r.get("rtol", tol))
    r["warmup"], r["timed_calls"] = int(r.get("warmup", 3)), int(r.get("timed_calls", 100))
    r.setdefault("timing", "events")
    if r["timing"] not in ("events", "none"):
        raise Failure("request", f"unknown timing mode {r['timing']!r} (events | none)")
    r["time_reference"] = bool(r.get("time_reference", True))
    return r


# ---------------------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------------------
def _exec_module(name: str, source: str, filename: str) -> types.ModuleType:
    mod = types.ModuleType(name)
    mod.__file__ = filename
    sys.modules[name] = mod  # dataclasses / pickling inside the module look themselves up here
    exec(compile(source, filename, "exec"), mod.__dict__)
    return mod


def load_task(r: dict[str, Any]) -> types.ModuleType:
    try:
        src = r.get("task_source") or Path(r["task_path"]).read_text()
        mod = _exec_module("evokernel_task", src, r.get("task_path") or TASK_NAME)
    except BaseException as exc:  # noqa: BLE001
        raise _fail("task", exc, "the task did not load: ") from None
    for name in ("Model", "get_inputs", "get_init_inputs"):
        if not hasattr(mod, name):
            raise Failure("task", f"the task defines no {name}")
    return mod


def load_candidate(r: dict[str, Any]) -> types.ModuleType:
    lib = r.get("custom_ops_lib")
    if lib:
        try:
            spec = importlib.util.spec_from_file_location("custom_ops_lib", lib)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load a module from {lib}")
            mod = importlib.util.module_from_spec(spec)
            sys.modules["custom_ops_lib"] = mod
            spec.loader.exec_module(mod)
        except BaseException as exc:  # noqa: BLE001 - the binding is candidate code
            sys.modules.pop("custom_ops_lib", None)
            raise _fail("load", exc, "custom_ops_lib did not load: ") from None
    try:
        src = r.get("model_src") or Path(r["model_src_path"]).read_text()
        mod = _exec_module("evokernel_model_new", src, MODEL_SRC_NAME)
    except BaseException as exc:  # noqa: BLE001
        raise _fail("load", exc, "model_src did not load: ") from None
    if not hasattr(mod, "ModelNew"):
        raise Failure("load", "model_src does not define ModelNew")
    return mod


# ---------------------------------------------------------------------------------------------------------
# comparison
# ---------------------------------------------------------------------------------------------------------
def _to_cpu(x):
    import torch
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu")
    if isinstance(x, (list, tuple)):
        return type(x)(_to_cpu(v) for v in x)
    return x


def compare(ref, new, atol: float, rtol: float, where: str = "output") -> tuple[bool, str, float, float]:
    """(ok, message, max abs err, max rel err) of CPU outputs; rel err = |new - ref| / max(|ref|, 1e-12)."""
    import torch
    if isinstance(ref, (list, tuple)):
        if not isinstance(new, (list, tuple)) or len(new) != len(ref):
            return False, f"{where}: expected a sequence of {len(ref)}, got {type(new).__name__}", math.inf, math.inf
        ok, msg, ma, mr = True, "", 0.0, 0.0
        for i, (a, b) in enumerate(zip(ref, new)):
            o, m, a_err, r_err = compare(a, b, atol, rtol, f"{where}[{i}]")
            ma, mr = max(ma, a_err), max(mr, r_err)
            if not o and ok:
                ok, msg = False, m
        return ok, msg, ma, mr
    if not isinstance(ref, torch.Tensor):
        same = ref == new
        return bool(same), "" if same else f"{where}: expected {ref!r}, got {new!r}", 0.0, 0.0
    if not isinstance(new, torch.Tensor):
        return False, f"{where}: expected a tensor, got {type(new).__name__}", math.inf, math.inf
    if tuple(new.shape) != tuple(ref.shape):
        return (False, f"{where}: shape mismatch: expected {tuple(ref.shape)}, got {tuple(new.shape)}",
                math.inf, math.inf)
    if new.dtype != ref.dtype:
        return False, f"{where}: dtype mismatch: expected {ref.dtype}, got {new.dtype}", math.inf, math.inf
    if not ref.is_floating_point() and not ref.is_complex():
        eq = torch.equal(ref, new)
        diff = 0.0 if eq else float((ref.to(torch.float64) - new.to(torch.float64)).abs().max())
        return eq, "" if eq else f"{where}: values differ (exact comparison)", diff, diff
    if ref.numel() == 0:
        return True, "", 0.0, 0.0
    r64, n64 = ref.to(torch.float64), new.to(torch.float64)
    err = (n64 - r64).abs()
    err = torch.where(torch.isnan(r64) & torch.isnan(n64), torch.zeros_like(err), err)
    err = torch.nan_to_num(err, nan=math.inf)
    max_abs = float(err.max())
    max_rel = float((err / r64.abs().clamp_min(1e-12)).max())
    ok = bool(torch.allclose(new, ref, atol=atol, rtol=rtol, equal_nan=True))
    msg = "" if ok else (f"{where}: mismatch beyond atol={atol:g} rtol={rtol:g}: max abs err {max_abs:.4g}, "
                         f"max rel err {max_rel:.4g}")
    return ok, msg, max_abs, max_rel


def _unchanged(before, after) -> bool:
    import torch
    if before.shape != after.shape or before.dtype != after.dtype:
        return False
    if before.is_floating_point():
        return bool(torch.allclose(before, after, rtol=0.0, atol=0.0, equal_nan=True))
    return torch.equal(before, after)


# ---------------------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------------------
def _stats(ms: list[float]) -> dict[str, float]:
    return {"median": statistics.median(ms), "mean": statistics.fmean(ms), "min": min(ms), "max": max(ms),
            "std": statistics.pstdev(ms), "n": len(ms)}


def _import_torch_npu() -> tuple[Any, Any]:
    """torch and torch_npu, or Failure("import") with the captured text (torch_npu prints, then sys.exit())."""
    buf = io.StringIO()
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(buf):
            import torch
            import torch_npu
    except BaseException as exc:  # noqa: BLE001 - includes the SystemExit torch_npu raises without CANN
        printed = buf.getvalue()
        sys.stderr.write(printed)  # keep it visible to the parent too
        text = (printed.strip() + "\n" if printed.strip() else "") + _describe(exc)
        from evokernel.verifier.backends.ascend.feedback import analyze_import
        d = analyze_import(text)
        extra = {"diagnosis": {"kind": d.kind, "message": d.message, "lines": d.lines}} if d else {}
        raise Failure("import", text, _tb_tail(exc), **extra) from None
    sys.stdout.write(buf.getvalue())
    return torch, torch_npu


def run(req: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"ok": False, "stage": "request", "trials": []}
    try:
        r = parse_request(req)
        result["device"] = r["device"]
        torch, torch_npu = _import_torch_npu()
        result["torch_version"] = str(torch.__version__)
        result["torch_npu_version"] = str(getattr(torch_npu, "__version__", "unknown"))
        npu = torch_npu.npu
        try:
            npu.set_device(r["device_id"])
            device = torch.device(r["device"])
        except BaseException as exc:  # noqa: BLE001
            raise _fail("device", exc) from None

        task = load_task(r)
        cand = load_candidate(r)
        try:
            init_args = list(task.get_init_inputs())
            torch.manual_seed(r["init_seed"])
            ref_model = task.Model(*init_args).to(device)
        except BaseException as exc:  # noqa: BLE001
            raise _fail("task", exc, "the reference Model did not build: ") from None
        try:
            torch.manual_seed(r["init_seed"])
            new_model = cand.ModelNew(*init_args).to(device)
        except BaseException as exc:  # noqa: BLE001
            raise _fail("init", exc) from None

        max_abs = max_rel = 0.0
        first_inputs = None
        for t in r["trials"]:
            try:
                torch.manual_seed(t["seed"])
                cpu_in = [x for x in task.get_inputs()]
                p = PERTURBATIONS[t["perturb"]]
                cpu_in = [p(x) if isinstance(x, torch.Tensor) and x.is_floating_point() else x for x in cpu_in]
                to_dev = [(x.to(device, copy=True) if isinstance(x, torch.Tensor) else x) for x in cpu_in]
                ref_in = [(x.to(device, copy=True) if isinstance(x, torch.Tensor) else x) for x in cpu_in]
                with torch.no_grad():
                    ref_out = ref_model(*ref_in)
                npu.synchronize()
                ref_cpu = _to_cpu(ref_out)
            except BaseException as exc:  # noqa: BLE001
                raise _fail("task", exc, "the reference failed: ") from None
            if first_inputs is None:
                first_inputs = ([x.to(device, copy=True) if isinstance(x, torch.Tensor) else x for x in cpu_in],
                                ref_in)
            try:
                with torch.no_grad():
                    new_out = new_model(*to_dev)
                npu.synchronize()
                new_cpu = _to_cpu(new_out)
            except BaseException as exc:  # noqa: BLE001
                raise _fail("run", exc) from None
            ok, msg, a_err, r_err = compare(ref_cpu, new_cpu, r["atol"], r["rtol"])
            if ok:
                for i, (before, after) in enumerate(zip(cpu_in, to_dev)):
                    if isinstance(before, torch.Tensor) and not _unchanged(before, _to_cpu(after)):
                        ok, msg = False, f"ModelNew modified its input {i} in place"
                        break
            max_abs, max_rel = max(max_abs, a_err), max(max_rel, r_err)
            result["trials"].append({**t, "ok": ok, "max_abs_err": a_err, "max_rel_err": r_err, "message": msg})
            result["max_abs_err"], result["max_rel_err"] = max_abs, max_rel
            if not ok:
                raise Failure("correctness", f"trial seed={t['seed']} perturb={t['perturb']}: {msg}")

        if r["timing"] == "events" and r["timed_calls"] > 0:
            new_in, ref_in = first_inputs
            timing = {"mode": "events", "warmup": r["warmup"], "calls": r["timed_calls"]}
            timing["candidate_ms"] = _time(torch, npu, new_model, new_in, r["warmup"], r["timed_calls"], "timing")
            timing["reference_ms"] = (_time(torch, npu, ref_model, ref_in, r["warmup"], r["timed_calls"], "task")
                                      if r["time_reference"] else None)
            result["timing"] = timing
        result.update(ok=True, stage="done")
    except Failure as f:
        result.update(ok=False, stage=f.stage, error=f.error)
        if f.tb:
            result["traceback"] = f.tb
        result.update(f.extra)
    return result


def _time(torch, npu, model, inputs, warmup: int, calls: int, stage: str) -> dict[str, float]:
    """Per-call NPU event timing after synchronized warm-up calls (§1.1 'Timing')."""
    try:
        with torch.no_grad():
            for _ in range(warmup):
                model(*inputs)
                npu.synchronize()
            ms = []
            for _ in range(calls):
                start, end = npu.Event(enable_timing=True), npu.Event(enable_timing=True)
                start.record()
                model(*inputs)
                end.record()
                npu.synchronize()
                ms.append(float(start.elapsed_time(end)))
    except BaseException as exc:  # noqa: BLE001
        raise _fail(stage, exc, "while timing: ") from None
    return _stats(ms)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m evokernel.verifier.backends.ascend.device_runner REQUEST.json RESULT.json",
              file=sys.stderr)
        return 64
    try:
        req = json.loads(Path(args[0]).read_text())
        if not isinstance(req, dict):
            raise ValueError("the request is not a JSON object")
    except (OSError, ValueError) as exc:
        result: dict[str, Any] = {"ok": False, "stage": "request", "error": f"unreadable request: {exc}", "trials": []}
    else:
        t0 = time.perf_counter()
        result = run(req)
        result["seconds"] = time.perf_counter() - t0
    Path(args[1]).write_text(json.dumps(result, indent=1))
    return 0 if result["ok"] else 2


if __name__ == "__main__":
    sys.exit(main())
