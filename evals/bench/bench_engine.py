"""What Ray costs `evokernel eval`, and what a cluster buys it (issue 16's targets; docs/scale-out.md).

    python -m evokernel.evals.bench.bench_engine                 # all three tables (~15 min on 2 cores)
    python -m evokernel.evals.bench.bench_engine --only overhead --repeats 5

1. **overhead**: a local Ray's start-up and stop, and the round trip of a trivial actor call (medians).
2. **eval**: the same small eval (2 methods × 2 seeds, T = 4, template generator, two cpu-l1 operators at small
   sizes, 2 workers) run by the harness on a local Ray, and its units run by a plain pool of 2 subprocess
   slots (what the harness did before Ray: the same `evokernel run` commands, 2 at a time), with the thread
   setting Ray gives a 1-CPU actor (``OMP_NUM_THREADS=1``; without it the pool's two units each ran torch on
   both cores and the pool came out ~20% slower than Ray). Alternating order, ``--repeats`` times; the ratio
   Ray / pool per repeat and its median (target: <= 1.15).
3. **cluster**: the same eval with 4 seeds (4 independent units) on a local cluster of 1 and of 2 nodes of
   one CPU each (`ray start` on 127.0.0.2/3): units per minute against the CPUs declared.

Wall times are medians over repeats on a shared machine: compare ratios within one run.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

TASKS = ["cpu-l1/01_relu", "cpu-l1/11_softmax"]
SMALL = {"batch_size": 16, "dim": 1024}


def _config(out: Path, seeds: int, methods: list[str]) -> dict[str, Any]:
    return {"name": "bench-engine", "out": str(out), "tasks": TASKS, "set": SMALL, "budget": 4, "seeds": seeds,
            "methods": methods, "workers": 2}


def overhead(repeats: int) -> dict[str, float]:
    from evokernel.evals.engine import RayEngine

    starts, stops, calls = [], [], []
    for _ in range(repeats):
        t0 = time.perf_counter()
        engine = RayEngine("local")
        starts.append(time.perf_counter() - t0)
        actor, ref = engine.submit([sys.executable, "-c", "import time; time.sleep(600)"], os.getcwd(), os.devnull,
                                   {"CPU": 1})
        engine.ray.get(actor.where.remote())
        for _ in range(50):
            t0 = time.perf_counter()
            engine.ray.get(actor.where.remote())
            calls.append(time.perf_counter() - t0)
        engine.kill(actor)
        t0 = time.perf_counter()
        engine.shutdown()
        stops.append(time.perf_counter() - t0)
    return {"start_s": statistics.median(starts), "stop_s": statistics.median(stops),
            "call_ms": 1e3 * statistics.median(calls)}


def _run_harness(cfg: dict[str, Any], ray: str = "local", env: dict[str, str] | None = None) -> float:
    path = Path(cfg["out"]).with_suffix(".yaml")
    path.write_text(yaml.safe_dump(cfg))
    t0 = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "evokernel", "eval", str(path), "--ray", ray], capture_output=True,
                       text=True, env=env or dict(os.environ, HF_HUB_OFFLINE="1"))
    if r.returncode != 0:
        raise RuntimeError(f"eval failed: {r.stderr[-2000:]}")
    return time.perf_counter() - t0


def _run_pool(cfg: dict[str, Any]) -> float:
    """The units of the same plan, run as plain subprocesses 2 at a time (the pre-Ray harness), plus the report."""
    from evokernel.evals import harness
    from evokernel.evals.config import make_config

    t0 = time.perf_counter()
    c = make_config(cfg, "bench")
    ed, meta = harness.prepare(c, "bench")
    groups = {g["name"]: g for g in meta["groups"]}
    units = [harness.Unit(**u) for u in meta["units"]]
    # OMP_NUM_THREADS=1: what Ray gives a 1-CPU actor's processes (the units' own torch threads)
    env = dict(os.environ, HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1")

    def one(u: harness.Unit) -> int:
        group, seed = u.arm.rsplit("/seed-", 1)
        cmd = harness.unit_command(c, groups[group], int(seed), u, ed.path.resolve(), False, None)
        return subprocess.run(cmd, capture_output=True, env=env).returncode

    with ThreadPoolExecutor(c.workers) as pool:
        codes = list(pool.map(one, units))
    if any(codes):
        raise RuntimeError(f"a unit failed: {codes}")
    subprocess.run([sys.executable, "-m", "evokernel", "report", str(ed.path)], capture_output=True, env=env)
    return time.perf_counter() - t0


def eval_vs_pool(repeats: int, tmp: Path) -> list[dict[str, float]]:
    rows = []
    for i in range(repeats):
        cfg_r = _config(tmp / f"ray-{i}", 2, ["evokernel", "passk"])
        cfg_p = _config(tmp / f"pool-{i}", 2, ["evokernel", "passk"])
        if i % 2 == 0:
            ray_s = _run_harness(cfg_r)
            pool_s = _run_pool(cfg_p)
        else:
            pool_s = _run_pool(cfg_p)
            ray_s = _run_harness(cfg_r)
        rows.append({"ray_s": ray_s, "pool_s": pool_s, "ratio": ray_s / pool_s})
    return rows


def cluster(repeats: int, tmp: Path) -> list[dict[str, Any]]:
    from evokernel.evals.local_cluster import LocalCluster

    rows = []
    for n in (1, 2):
        walls = []
        with LocalCluster([{"cpus": 1}] * n) as c:
            for i in range(repeats):
                cfg = _config(tmp / f"cluster{n}-{i}", 4, ["evokernel"]) | {"workers": 4}
                walls.append(_run_harness(cfg, ray=c.address, env=dict(c.env, HF_HUB_OFFLINE="1")))
        wall = statistics.median(walls)
        rows.append({"nodes": n, "cpus": n, "units": 4, "wall_s": wall, "units_per_min": 4 * 60 / wall})
    return rows


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", choices=["overhead", "eval", "cluster"], action="append")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    want = set(args.only or ["overhead", "eval", "cluster"])
    out = Console()
    with tempfile.TemporaryDirectory(prefix="bench-engine-") as d:
        tmp = Path(d)
        if "overhead" in want:
            o = overhead(args.repeats)
            t = Table(title=f"local Ray overhead (median of {args.repeats})")
            for col in ("start", "stop", "actor call"):
                t.add_column(col, justify="right")
            t.add_row(f"{o['start_s']:.2f} s", f"{o['stop_s']:.2f} s", f"{o['call_ms']:.2f} ms")
            out.print(t)
        if "eval" in want:
            rows = eval_vs_pool(args.repeats, tmp)
            t = Table(title="2 methods × 2 seeds, T = 4, 2 workers: harness on a local Ray vs a plain pool")
            for col in ("repeat", "Ray (s)", "pool (s)", "Ray / pool"):
                t.add_column(col, justify="right")
            for i, r in enumerate(rows):
                t.add_row(str(i + 1), f"{r['ray_s']:.1f}", f"{r['pool_s']:.1f}", f"{r['ratio']:.3f}")
            t.add_row("median", f"{statistics.median(r['ray_s'] for r in rows):.1f}",
                      f"{statistics.median(r['pool_s'] for r in rows):.1f}",
                      f"{statistics.median(r['ratio'] for r in rows):.3f}")
            out.print(t)
        if "cluster" in want:
            rows = cluster(args.repeats, tmp)
            t = Table(title="4 units (4 seeds, T = 4) on a local cluster of 1-CPU nodes")
            for col in ("nodes", "CPUs declared", "wall (s)", "units / min", "vs 1 node"):
                t.add_column(col, justify="right")
            for r in rows:
                t.add_row(str(r["nodes"]), str(r["cpus"]), f"{r['wall_s']:.1f}", f"{r['units_per_min']:.2f}",
                          f"{r['units_per_min'] / rows[0]['units_per_min']:.2f}×")
            out.print(t)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
