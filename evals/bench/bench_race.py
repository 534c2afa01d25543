"""Cost of ascend-sim's cross-core race detector (rule cross_core_race): the emulated run of a few heavy
template-drafted kernels with EVK_SIM_RACE=0 (off) and 1 (on), median of --repeats runs each.

    .venv/bin/python -m evals.bench_race [--repeats 3] [--sim-root DIR]

--sim-root: a copy of verifier/backends/ascend_sim (its include/ and runtime.cpp) to measure instead of the
checkout's, e.g. an older commit's (`git archive <commit> verifier/backends/ascend_sim | tar -x -C /tmp/x`).
Only the launcher's run is timed, as its CPU time (user + system; steadier than wall time on a shared
machine), the build being done once per case; the outputs are checked against the task's PyTorch reference
once. The report's `race` object (when the runtime writes one) gives the memory
the detector's records took.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TASK = '''"""{doc}"""
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
{init_body}

    def forward(self, {args}):
        return {expr}


def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return []
'''
# (label, task fields, cube knobs or None for the draft)
CASES = [
    ("MIX linear+layernorm 1024x512->1536, row_split block",
     dict(doc="LayerNorm(Linear(x))", init_body="        self.fc = nn.Linear(512, 1536)\n"
                                                 "        self.ln = nn.LayerNorm(1536)",
          args="x", expr="self.ln(self.fc(x))", inputs="torch.randn(1024, 512)"), {"row_split": "block"}),
    ("MIX linear+layernorm 1024x512->1536, row_split all",
     dict(doc="LayerNorm(Linear(x))", init_body="        self.fc = nn.Linear(512, 1536)\n"
                                                 "        self.ln = nn.LayerNorm(1536)",
          args="x", expr="self.ln(self.fc(x))", inputs="torch.randn(1024, 512)"), {"row_split": "all"}),
    ("vector a*b+a 4096x2048",
     dict(doc="a * b + a", init_body="        pass", args="a, b", expr="a * b + a",
          inputs="torch.randn(4096, 2048), torch.randn(4096, 2048)"), None),
    ("vector softmax 2048x4096",
     dict(doc="softmax over rows", init_body="        pass", args="x", expr="torch.softmax(x, dim=1)",
          inputs="torch.randn(2048, 4096)"), None),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--sim-root", type=Path, default=ROOT / "verifier" / "backends" / "ascend_sim")
    ap.add_argument("--only", default="", help="substring of the case labels to run")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "tests" / "verifier" / "ascend_sim"))
    sys.path.insert(0, str(ROOT / "tests" / "generators"))
    import ascend_sim_harness as H

    H.SIM = args.sim_root
    H.INCLUDE = args.sim_root / "include"
    H.RUNTIME = args.sim_root / "runtime.cpp"
    import ascend_run

    from evokernel.generators.template import TemplateGenerator
    from evokernel.generators.template.ascend import schedules as AS
    from evokernel.generators.template.generator import ascend_op_for
    from evokernel.tasks.load import load_task
    from evokernel.verifier.backends.ascend_sim.build import kernel_cores

    work = Path(tempfile.mkdtemp(prefix="bench_race_"))
    sim = H.Sim(work)
    gen = TemplateGenerator()
    rows = []
    for i, (label, fields, knobs) in enumerate(CASES):
        if args.only and args.only not in label:
            continue
        d = work / f"case{i}"
        d.mkdir()
        p = d / "task.py"
        p.write_text(TASK.format(**fields))
        task = load_task(p)
        if knobs is None:
            from template_cases import draft

            source = draft(gen, task).source
        else:
            sched = AS.make_schedule("ascend_cube", {**AS.CONSERVATIVE, **knobs}, "x")
            source, _, geo = gen.render_ascend(task, ascend_op_for(task), sched)
            assert geo is not None, label
        cores = kernel_cores(ascend_run.parse(source)["kernel_src"])
        run = ascend_run.run(sim, d, task, source, options={"mix": cores} if cores else None)
        assert run.result.rc == 0 and run.result.report.get("status", "ok") == "ok", run.result.violations[:3]
        err = run.max_err()
        races = [v for v in run.result.violations if v["rule"] == "cross_core_race"]
        exe, spec = d / "prog", d / "spec.txt"
        times: dict[str, list[float]] = {"0": [], "1": []}
        stats = {}
        for _ in range(args.repeats):
            for flag in ("0", "1"):
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                r = subprocess.run([str(exe), str(spec)], capture_output=True, text=True,
                                   env={**os.environ, "EVK_SIM_RACE": flag}, timeout=600)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                # CPU time (user + system) of the launcher: steadier than wall time on a shared machine
                times[flag].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
                assert r.returncode == 0, r.stderr[-2000:]
                if flag == "1":
                    stats = json.loads((d / "report.json").read_text()).get("race", {})
        rows.append((label, statistics.median(times["0"]), statistics.median(times["1"]), err, len(races), stats))
        print(f"{label}: CPU time off {rows[-1][1]:.3f} s, on {rows[-1][2]:.3f} s (+{100 * (rows[-1][2] / rows[-1][1] - 1):.0f}%),"
              f" max err {err:.2e}, races {len(races)}, race stats {json.dumps(stats)}", flush=True)
    print(f"\nCPU time of the launcher, median of {args.repeats}")
    print("\n| kernel | EVK_SIM_RACE=0 | EVK_SIM_RACE=1 | overhead |\n|---|---|---|---|")
    for label, off, on, _, _, _ in rows:
        print(f"| {label} | {off:.2f} s | {on:.2f} s | {100 * (on / off - 1):+.0f}% |")


if __name__ == "__main__":
    main()
