"""Measure and sanity-check KernelBench-style task files in a suite directory.

Usage: python evals/bench/measure_suites.py evokernel/suites/cpu_l1 [--repeats 10] [--warmup 5]

For every NN_name.py in the directory: import it, seed, build Model(*get_init_inputs()),
seed, call get_inputs(), and time forward (torch.set_num_threads(1), torch.no_grad(),
median of --repeats calls after --warmup calls).

Each task is timed in its own subprocess, twice, because the eager time of large
memory-bound ops on CPU depends on the glibc allocator state, not just on the kernel:
  fresh: default malloc in a new process.  Blocks of >= 32 MiB are always mmap'ed and
         freed back to the OS, so every call page-faults its output/temporaries in.
  warm:  mallopt(M_MMAP_MAX=0, M_TRIM_THRESHOLD=max) and a long warm-up, so buffers are
         recycled from the heap without page faults (what a long-running process that has
         grown its heap sees).  This is roughly the pure compute time.
Both must lie in [--min-ms, --max-ms] (default 2-40 ms) for the task to pass.

Prints a table of median ms and output stats, and exits non-zero if any task
  - runs outside [--min-ms, --max-ms] in either mode,
  - has an input tensor larger than 64 MiB,
  - returns something other than one finite floating-point tensor,
  - is matched by a trivial answer under torch.allclose(atol=1e-2, rtol=1e-2):
    all zeros, a constant (the output mean; only for outputs with >1 element),
    or one of its inputs returned unchanged (same shape),
  - is not deterministic under torch.manual_seed,
  - lacks a docstring or a valid CATEGORY,
  - ignores an override of `batch_size` (sizes must be read at call time).
"""

import argparse
import ctypes
import importlib.util
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # do not leave __pycache__ next to the task files

CATEGORIES = {
    "activation", "elementwise", "reduction", "normalization", "softmax", "matmul",
    "pooling", "loss", "scan", "convolution", "fusion",
}
MAX_INPUT_BYTES = 64 * 1024 * 1024
ATOL = RTOL = 1e-2
SEED = 0
M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # glibc mallopt parameters


def load(path):
    spec = importlib.util.spec_from_file_location(f"task_{path.stem}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def build(mod):
    import torch
    torch.manual_seed(SEED)
    model = mod.Model(*mod.get_init_inputs())
    torch.manual_seed(SEED)
    inputs = mod.get_inputs()
    return model, inputs


def close(a, b):
    import torch
    return a.shape == b.shape and a.dtype == b.dtype and torch.allclose(a, b, atol=ATOL, rtol=RTOL)


def time_forward(model, inputs, warmup, repeats):
    """Per-call wall times in ms, and the number of minor page faults per timed call."""
    import torch
    with torch.no_grad():
        for _ in range(warmup):
            model(*inputs)
        times = []
        faults0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        for _ in range(repeats):
            t0 = time.perf_counter()
            model(*inputs)
            times.append((time.perf_counter() - t0) * 1e3)
        faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults0) / repeats
    return times, faults


def check_task(path, warmup, repeats):
    """Run in the worker process: timing plus (in fresh mode) all sanity checks."""
    import torch
    problems = []
    mod = load(path)
    if not (mod.__doc__ or "").strip():
        problems.append("no docstring")
    if getattr(mod, "CATEGORY", None) not in CATEGORIES:
        problems.append(f"bad CATEGORY {getattr(mod, 'CATEGORY', None)!r}")

    model, inputs = build(mod)
    res = dict(shapes=", ".join(str(tuple(t.shape)) + ("" if t.dtype == torch.float32 else
                                 f" {str(t.dtype).replace('torch.', '')}") for t in inputs),
               doc=(mod.__doc__ or "").strip().splitlines()[0] if (mod.__doc__ or "").strip() else "",
               category=getattr(mod, "CATEGORY", "?"), problems=problems)
    for t in inputs:
        if t.element_size() * t.numel() > MAX_INPUT_BYTES:
            problems.append(f"input {tuple(t.shape)} exceeds 64 MiB")

    with torch.no_grad():
        out = model(*inputs)
    if not isinstance(out, torch.Tensor) or not out.is_floating_point():
        problems.append(f"output is not a float tensor: {type(out).__name__}")
        return res
    times, faults = time_forward(model, inputs, warmup, repeats)
    res.update(ms=statistics.median(times), spread=[min(times), max(times)], faults=faults,
               out_shape="x".join(map(str, out.shape)) or "[]")

    o = out.double()
    res["stats"] = [o.min().item(), o.max().item(), o.mean().item(), o.std().item() if o.numel() > 1 else 0.0]
    if not torch.isfinite(out).all():
        problems.append("non-finite output")
    if close(torch.zeros_like(out), out):
        problems.append("all-zeros passes allclose")
    if out.numel() > 1 and close(torch.full_like(out, out.mean().item()), out):
        problems.append("constant (mean) passes allclose")
    for i, t in enumerate(inputs):
        if t.is_floating_point() and close(t, out):
            problems.append(f"identity to input {i} passes allclose")
    res["zeros_pass"] = close(torch.zeros_like(out), out)
    res["ident_pass"] = inputs[0].is_floating_point() and close(inputs[0], out)

    # determinism: rebuild from the same seed and compare
    model2, inputs2 = build(mod)
    with torch.no_grad():
        out2 = model2(*inputs2)
    if not torch.equal(out, out2):
        problems.append("not deterministic under manual_seed")
    del model2, inputs2, out2

    # sizes must be read at call time
    if isinstance(getattr(mod, "batch_size", None), int) and mod.batch_size > 1:
        saved = mod.batch_size
        mod.batch_size = max(1, saved // 2)
        try:
            small = mod.get_inputs()
            if [tuple(t.shape) for t in small] == [tuple(t.shape) for t in inputs]:
                problems.append("get_inputs ignores a batch_size override")
        finally:
            mod.batch_size = saved
    return res


def worker(path, mode, warmup, repeats):
    if mode == "warm":
        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(M_MMAP_MAX, 0)
        libc.mallopt(M_TRIM_THRESHOLD, 2**31 - 1)
    import torch
    torch.set_num_threads(1)
    if mode == "warm":
        mod = load(path)
        model, inputs = build(mod)
        times, faults = time_forward(model, inputs, warmup, repeats)
        res = dict(ms=statistics.median(times), spread=[min(times), max(times)], faults=faults, problems=[])
    else:
        res = check_task(path, warmup, repeats)
    print(json.dumps(res))


def run_worker(path, mode, warmup, repeats):
    cmd = [sys.executable, __file__, "--worker", mode, str(path),
           "--warmup", str(warmup), "--repeats", str(repeats)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        err = (p.stderr.strip().splitlines() or ["?"])[-1]
        return dict(problems=[f"{mode} worker failed: {err}"])
    return json.loads(p.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("suite", help="suite directory (or a single task file with --worker)")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--warm-warmup", type=int, default=30, help="warm-up calls in warm mode")
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--min-ms", type=float, default=2.0)
    ap.add_argument("--max-ms", type=float, default=40.0)
    ap.add_argument("--only", default="", help="substring filter on file names")
    ap.add_argument("--markdown", action="store_true", help="also print a markdown table for a README")
    ap.add_argument("--worker", choices=["fresh", "warm"], help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.worker:
        return worker(Path(args.suite), args.worker, args.warmup, args.repeats)

    files = sorted(p for p in Path(args.suite).glob("[0-9]*_*.py") if args.only in p.name)
    if not files:
        sys.exit(f"no task files in {args.suite}")

    print(f"{'task':34} {'category':13} {'fresh ms':>8} {'warm ms':>8}  {'output':>12}  "
          f"{'min':>8} {'max':>8} {'mean':>9} {'std':>8}  0s? id?  | inputs")
    failed = 0
    rows = []
    for path in files:
        r = run_worker(path, "fresh", args.warmup, args.repeats)
        w = run_worker(path, "warm", args.warm_warmup, args.repeats)
        problems = r["problems"] + w["problems"]
        for mode, ms in (("fresh", r.get("ms")), ("warm", w.get("ms"))):
            if ms is not None and not (args.min_ms <= ms <= args.max_ms):
                problems.append(f"{mode} time {ms:.2f} ms outside [{args.min_ms}, {args.max_ms}]")
        st = r.get("stats") or [float("nan")] * 4
        yn = lambda b: "-" if b is None else ("YES" if b else "no")  # noqa: E731
        print(f"{path.name:34} {r.get('category', '?'):13} {r.get('ms', float('nan')):8.2f} "
              f"{w.get('ms', float('nan')):8.2f}  {r.get('out_shape', '?'):>12}  "
              f"{st[0]:8.3g} {st[1]:8.3g} {st[2]:9.3g} {st[3]:8.3g}  {yn(r.get('zeros_pass')):3} "
              f"{yn(r.get('ident_pass')):3}  | {r.get('shapes', '?')}")
        for p in problems:
            print(f"    FAIL: {p}")
        failed += bool(problems)
        doc = r.get("doc", "").replace("|", "\\|")
        rows.append(f"| {path.name} | {doc} | {r.get('shapes', '?')} | {r.get('out_shape', '?')} | "
                    f"{r.get('ms', float('nan')):.1f} | {w.get('ms', float('nan')):.1f} | {r.get('category', '?')} |")
    if args.markdown:
        print("\n| file | op | inputs (float32 unless noted) | output | fresh ms | warm ms | category |")
        print("|---|---|---|---|---:|---:|---|")
        print("\n".join(rows))
    print(f"\n{len(files) - failed}/{len(files)} tasks pass")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
