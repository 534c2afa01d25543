"""What the model-state rule costs a verdict (verifier/trusted/model_state.py): verdict time with
``VerifyConfig(model_state=True)`` against ``False``, interleaved in one run, honest twins, timing on.

    python evals/bench/model_state_cost.py [N] [--worst] [--no-timing]

Cases: relu (cpu_l1/01_relu.py, 160 x 65536) and a linear (attacks/tasks/rt7_linear.py, 64 x 512 -> 256); with
``--worst`` a GEMV with a 64 MiB weight (1 x 4096 -> 4096), where the state is large against the work. Prints the
medians over N verdicts per side (trials alone too) and the time of the check after the timed rounds.
"""
from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

from evokernel.tasks.load import load_task
from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

ROOT = Path(__file__).resolve().parents[2]
A = ROOT / "tests" / "verifier" / "attacks"


def cases(worst: bool) -> list[tuple[str, object, str]]:
    linear = (A / "twins/linear_plain.py").read_text()
    if worst:
        return [("linear 1x4096->4096 (64 MiB weight)",
                 load_task(A / "tasks/rt7_linear.py", {"batch_size": 1, "in_features": 4096, "out_features": 4096}),
                 linear)]
    return [("relu 160x65536", load_task(ROOT / "evokernel/suites/cpu_l1/01_relu.py"),
             (A / "twins/relu_plain.py").read_text()),
            ("linear 64x512->256", load_task(A / "tasks/rt7_linear.py"), linear)]


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 5
    timing = "--no-timing" not in sys.argv
    cache = Path(tempfile.mkdtemp())
    res: dict[tuple[str, bool], list[tuple[float, float, float]]] = {}
    vs = {on: Verifier("cpu", VerifyConfig(cache_dir=cache, timing=timing, model_state=on)).start()
          for on in (False, True)}
    todo = cases("--worst" in sys.argv)
    try:
        for name, task, src in todo:
            for on in (False, True):  # warm: builds cached, the reference warm
                assert vs[on].verify(task, src).feasible
            for k in range(n):
                for on in ((False, True) if k % 2 == 0 else (True, False)):
                    t0 = time.perf_counter()
                    v = vs[on].verify(task, src)
                    dt = time.perf_counter() - t0
                    assert v.feasible, v.feedback
                    res.setdefault((name, on), []).append((dt, v.timings.get("correctness_trials", 0.0),
                                                           v.timings.get("state_after_timing", 0.0)))
    finally:
        for v in vs.values():
            v.close()
    for name, _, _ in todo:
        med = {on: [statistics.median(r[i] for r in res[(name, on)]) for i in range(3)] for on in (False, True)}
        print(f"{name}: verdict median off {med[False][0]:.3f} s, on {med[True][0]:.3f} s "
              f"(x{med[True][0] / med[False][0]:.3f}); trials off {med[False][1]:.3f} s, on {med[True][1]:.3f} s "
              f"(x{med[True][1] / med[False][1]:.3f}); check after timing {med[True][2] * 1e3:.1f} ms "
              f"(n={n}, timing={timing})")


if __name__ == "__main__":
    main()
