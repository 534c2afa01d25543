"""The device side of the ascend backend: one process on one NPU, started fresh for each job.

    python -m evokernel.verifier.sandboxed.device_runner REQUEST.json RESULT.json

It runs UNTRUSTED code (the candidate's binding and model_src) and so decides nothing: it runs what it
is asked to and writes what happened; the trusted parent (backend.py, trusted/verifier.py) compares the
outputs with its own CPU reference, reads the clock evidence and decides the verdict. It is the only module
that imports torch_npu, inside main(): on a machine without a loadable CANN `import torch_npu` prints the
libhccl/libascendcl ImportError and calls sys.exit() (ascend-toolchain.md §4, §7). A fresh process per job
is also what the binding needs: EXEC_NPU_CMD reads ASCEND_CUSTOM_OPP_PATH once, at load time, and a device
fault leaves the process's device context unusable (§1.1, §4). The parent starts it with the installed op's
environment (toolchain.device_env), in the sandbox with the NPU's device nodes, kills its process group on
timeout and classifies what the runtime printed on stderr (feedback.analyze_runtime): device fault texts
(EZ9999, retCode=0x31, ...) are left on stderr, exception texts are echoed there too.

Roles (REQUEST["role"]):
  candidate   load custom_ops_lib (from its file; model_src sees a facade that counts calls) and model_src,
              build ModelNew(*init_args) after torch.manual_seed(init_seed), then for each trial of the
              inputs file: device copies, forward under the ATen operator recorder (the dynamic anti-hack
              check: compute outside the custom op is recorded), synchronize, CPU copies of the outputs and
              of the inputs after the call -> OUTPUTS file. Then, if asked, timing on the first trial.
  reference   the task's Model (trusted code, its own process so a candidate cannot slow it down): timing only.
Timed calls: when the request names a TIMED_INPUTS file (a list of input sets drawn fresh by the parent
from secret seeds), timed call i runs on set i (one set per call: nothing repeats, so no result can be
replayed from a cache) and the candidate's output of every timed call is saved to TIMED_OUTPUTS for the
parent to check; without one, every timed call runs on the first trial (the msprof workload).
  health      set_device + a tiny computation + synchronize: is the device usable after a fault?
Timing modes: "events" (warm-up calls, then per call a pair of NPU events around it, synchronized: the
MultiKernelBench/AscendKernelBench protocol), "loop" (warm-up + calls without events: the workload msprof op
observes), "none".

REQUEST.json keys: role, device ("npu:0"), device_id, model_src, custom_ops_lib (path of the built
extension), task_source | task_path (reference), init_seed, init_args, inputs (torch.save'd list of trials,
each a list of CPU tensors), outputs (where to torch.save {"outputs", "inputs_after"}), check (default true
for the candidate), timing, warmup (3), calls (100), timed_inputs, timed_outputs (candidate).

RESULT.json: ok, stage (request | import | device | task | load | init | run | timing | done), error,
traceback, diagnosis (import only: feedback.analyze_import), trials_run, native_calls / violations per trial,
timing {mode, warmup, calls, ms: {median, mean, min, max, std, n}, samples}, device_count (health),
torch_version, torch_npu_version, seconds. Exit code 0 when ok, 2 when a failure result was written,
anything else: the process died (the parent reads stderr).

NOT run on an NPU or with a real torch_npu: tests use a fake torch_npu that maps the API onto the CPU and a
fake device that executes installed operators (tests/verifier/ascend/fake_torch_npu/).
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import json
import statistics
import sys
import time
import traceback
import types
from pathlib import Path
from typing import Any

STAGES = ("request", "import", "device", "task", "load", "init", "run", "timing")
ROLES = ("candidate", "reference", "health")
TIMING_MODES = ("events", "loop", "none")
TRACEBACK_LINES = 12
MODEL_SRC_NAME = "model_src.py"
TASK_NAME = "<task>"
MAX_SAMPLES = 1000


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
    r.setdefault("role", "candidate")
    if r["role"] not in ROLES:
        raise Failure("request", f"unknown role {r['role']!r} (one of {', '.join(ROLES)})")
    if r["role"] == "candidate" and not (r.get("model_src") or r.get("model_src_path")):
        raise Failure("request", "a candidate request needs model_src or model_src_path")
    if r["role"] == "reference" and not (r.get("task_source") or r.get("task_path")):
        raise Failure("request", "a reference request needs task_source or task_path")
    if r["role"] != "health" and not r.get("inputs"):
        raise Failure("request", f"a {r['role']} request needs an inputs file")
    r.setdefault("device", "npu:0")
    if "device_id" not in r:
        dev = str(r["device"])
        r["device_id"] = int(dev.split(":", 1)[1]) if ":" in dev and dev.split(":", 1)[1].isdigit() else 0
    r["init_seed"] = int(r.get("init_seed", 0))
    r["init_args"] = list(r.get("init_args") or [])
    r["check"] = bool(r.get("check", r["role"] == "candidate"))
    if r["check"] and (r["role"] != "candidate" or not r.get("outputs")):
        raise Failure("request", "checked trials are for the candidate role and need an outputs path")
    r.setdefault("timing", "none" if r["role"] == "health" else "events")
    if r["timing"] not in TIMING_MODES:
        raise Failure("request", f"unknown timing mode {r['timing']!r} ({' | '.join(TIMING_MODES)})")
    r["warmup"], r["calls"] = int(r.get("warmup", 3)), int(r.get("calls", 100))
    if r["warmup"] < 0 or r["calls"] < 0:
        raise Failure("request", "warmup and calls must be >= 0")
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
    if not hasattr(mod, "Model"):
        raise Failure("task", "the task defines no Model")
    return mod


class _Counter:
    calls = 0


def _facade(lib: types.ModuleType, counter: type[_Counter]) -> types.ModuleType:
    """What model_src imports as custom_ops_lib: the binding's functions, each call counted (a forward
    that never calls the custom op is a decoy); the extension module itself is not handed out."""
    facade = types.ModuleType("custom_ops_lib")
    for name in dir(lib):
        value = getattr(lib, name)
        if name.startswith("_") or not callable(value):
            continue

        def counted(*args: Any, __f: Any = value, **kwargs: Any) -> Any:
            counter.calls += 1
            return __f(*args, **kwargs)

        counted.__name__ = name
        setattr(facade, name, counted)
    return facade


def load_candidate(r: dict[str, Any]) -> types.ModuleType:
    lib = r.get("custom_ops_lib")
    if lib:
        try:
            spec = importlib.util.spec_from_file_location("custom_ops_lib", lib)
            if spec is None or spec.loader is None:
                raise ImportError(f"cannot load a module from {lib}")
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
        except BaseException as exc:  # noqa: BLE001 - the binding is candidate code
            raise _fail("load", exc, "custom_ops_lib did not load: ") from None
        sys.modules["custom_ops_lib"] = _facade(mod, _Counter)
    try:
        src = r.get("model_src") or Path(r["model_src_path"]).read_text()
        mod = _exec_module("evokernel_model_new", src, MODEL_SRC_NAME)
    except BaseException as exc:  # noqa: BLE001
        raise _fail("load", exc, "model_src did not load: ") from None
    if not hasattr(mod, "ModelNew"):
        raise Failure("load", "model_src does not define ModelNew")
    return mod


def _load_inputs(torch: Any, path: str) -> list[list[Any]]:
    try:
        trials = torch.load(path, weights_only=True)
    except BaseException as exc:  # noqa: BLE001
        raise _fail("request", exc, "the inputs file did not load: ") from None
    if not isinstance(trials, list) or not all(isinstance(t, list) for t in trials):
        raise Failure("request", "the inputs file must hold a list of trials, each a list of inputs")
    return trials


# ---------------------------------------------------------------------------------------------------------
# the run
# ---------------------------------------------------------------------------------------------------------
def _to_cpu(torch: Any, x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return x.detach().to("cpu").clone()
    if isinstance(x, (list, tuple)):
        return [_to_cpu(torch, v) for v in x]
    return x


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
    sys.stderr.write(buf.getvalue())  # stdout stays clean (the parent reads nothing from it)
    return torch, torch_npu


def _device(torch: Any, npu: Any, r: dict[str, Any]) -> Any:
    try:
        npu.set_device(r["device_id"])
        return torch.device(r["device"])
    except BaseException as exc:  # noqa: BLE001
        raise _fail("device", exc) from None


def _to_device(torch: Any, xs: list[Any], device: Any) -> list[Any]:
    return [x.to(device, copy=True) if isinstance(x, torch.Tensor) else x for x in xs]


def run(req: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = {"ok": False, "stage": "request"}
    try:
        r = parse_request(req)
        result["role"], result["device"] = r["role"], r["device"]
        torch, torch_npu = _import_torch_npu()
        result["torch_version"] = str(torch.__version__)
        result["torch_npu_version"] = str(getattr(torch_npu, "__version__", "unknown"))
        npu = torch_npu.npu
        device = _device(torch, npu, r)
        if r["role"] == "health":
            _health(torch, npu, device, result)
        elif r["role"] == "reference":
            _reference(torch, npu, device, r, result)
        else:
            _candidate(torch, npu, device, r, result)
        result.update(ok=True, stage="done")
    except Failure as f:
        result.update(ok=False, stage=f.stage, error=f.error)
        if f.tb:
            result["traceback"] = f.tb
        result.update(f.extra)
    return result


def _health(torch: Any, npu: Any, device: Any, result: dict[str, Any]) -> None:
    try:
        x = torch.arange(1024, dtype=torch.float32).to(device)
        total = float((x * 2.0).sum().to("cpu"))
        npu.synchronize()
    except BaseException as exc:  # noqa: BLE001
        raise _fail("run", exc, "the device failed a trivial computation: ") from None
    if total != 1023.0 * 1024.0:
        raise Failure("run", f"the device computed a wrong trivial sum ({total})")
    count = getattr(npu, "device_count", None)
    result["device_count"] = int(count()) if callable(count) else None


def _reference(torch: Any, npu: Any, device: Any, r: dict[str, Any], result: dict[str, Any]) -> None:
    task = load_task(r)
    trials = _load_inputs(torch, r["inputs"])
    try:
        init_args = list(task.get_init_inputs()) if hasattr(task, "get_init_inputs") else r["init_args"]
        torch.manual_seed(r["init_seed"])
        model = task.Model(*init_args).to(device)
    except BaseException as exc:  # noqa: BLE001
        raise _fail("task", exc, "the reference Model did not build: ") from None
    _timing(torch, npu, model, _timed_sets(torch, r, trials, device), r, result, "task")


def _candidate(torch: Any, npu: Any, device: Any, r: dict[str, Any], result: dict[str, Any]) -> None:
    cand = load_candidate(r)
    trials = _load_inputs(torch, r["inputs"])
    try:
        torch.manual_seed(r["init_seed"])
        model = cand.ModelNew(*r["init_args"]).to(device)
    except BaseException as exc:  # noqa: BLE001
        raise _fail("init", exc) from None
    if r["check"]:
        from evokernel.verifier.sandboxed.op_recorder import OpRecorder

        outputs, after = [], []
        result["native_calls"], result["violations"], result["trials_run"] = [], [], 0
        for i, cpu_in in enumerate(trials):
            dev_in = _to_device(torch, cpu_in, device)
            before = _Counter.calls
            recorder = OpRecorder()
            try:
                with torch.no_grad(), recorder:
                    out = model(*dev_in)
                npu.synchronize()
                outs = list(out) if isinstance(out, (list, tuple)) else [out]
                for o in outs:
                    if type(o) is not torch.Tensor:  # noqa: E721 - subclasses and look-alikes are refused
                        raise TypeError(f"forward must return plain torch.Tensor(s), got {type(o).__qualname__}")
                recorder.check_outputs(outs, list(dev_in), model)  # the candidate's own memory (data_movement.py)
                outputs.append(_to_cpu(torch, outs))
                after.append(_to_cpu(torch, dev_in))
            except BaseException as exc:  # noqa: BLE001
                _save(torch, r["outputs"], outputs, after)
                raise _fail("run", exc, f"trial {i + 1}: ") from None
            result["native_calls"].append(_Counter.calls - before)
            result["violations"].append(dict(recorder.violations))
            result["trials_run"] = i + 1
        _save(torch, r["outputs"], outputs, after)
    if trials:
        outs = _timing(torch, npu, model, _timed_sets(torch, r, trials, device), r, result, "timing")
        if r.get("timed_outputs") and outs:
            torch.save([_to_cpu(torch, o) for o in outs], r["timed_outputs"])


def _save(torch: Any, path: str, outputs: list[Any], after: list[Any]) -> None:
    torch.save({"outputs": outputs, "inputs_after": after}, path)


def _timed_sets(torch: Any, r: dict[str, Any], trials: list[list[Any]], device: Any) -> list[list[Any]]:
    """The input sets of the timed calls, on the device: the parent's fresh sets, else the first trial."""
    sets = _load_inputs(torch, r["timed_inputs"]) if r.get("timed_inputs") else trials[:1]
    return [_to_device(torch, s, device) for s in sets]


def _timing(torch: Any, npu: Any, model: Any, sets: list[list[Any]], r: dict[str, Any], result: dict[str, Any],
            stage: str) -> list[list[Any]]:
    """Warm-up calls (each synchronized), then per call: NPU events around it ("events", §1.1 'Timing')
    or plain synchronized calls for a profiler to observe ("loop"). Call i runs on set i % len(sets); the
    outputs of the timed calls are returned (kept on the device until the loop is over)."""
    if r["timing"] == "none" or r["calls"] == 0 or not sets:
        return []
    kept: list[list[Any]] = []
    keep = bool(r.get("timed_outputs"))
    try:
        with torch.no_grad():
            for k in range(r["warmup"]):
                model(*sets[k % len(sets)])
                npu.synchronize()
            ms: list[float] = []
            for i in range(r["calls"]):
                inputs = sets[i % len(sets)]
                if r["timing"] == "loop":
                    model(*inputs)
                    npu.synchronize()
                    continue
                start, end = npu.Event(enable_timing=True), npu.Event(enable_timing=True)
                start.record()
                out = model(*inputs)
                end.record()
                npu.synchronize()
                ms.append(float(start.elapsed_time(end)))
                if keep:
                    kept.append(list(out) if isinstance(out, (list, tuple)) else [out])
    except BaseException as exc:  # noqa: BLE001
        raise _fail(stage, exc, "while timing: ") from None
    timing: dict[str, Any] = {"mode": r["timing"], "warmup": r["warmup"], "calls": r["calls"], "sets": len(sets)}
    if ms:
        timing["ms"] = _stats(ms)
        timing["samples"] = ms[:MAX_SAMPLES]
    result["timing"] = timing
    return kept


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: python -m evokernel.verifier.sandboxed.device_runner REQUEST.json RESULT.json",
              file=sys.stderr)
        return 64
    try:
        req = json.loads(Path(args[0]).read_text())
        if not isinstance(req, dict):
            raise ValueError("the request is not a JSON object")
    except (OSError, ValueError) as exc:
        result: dict[str, Any] = {"ok": False, "stage": "request", "error": f"unreadable request: {exc}"}
    else:
        t0 = time.perf_counter()
        result = run(req)
        result["seconds"] = time.perf_counter() - t0
    Path(args[1]).write_text(json.dumps(result, indent=1))
    return 0 if result["ok"] else 2


if __name__ == "__main__":
    sys.exit(main())
