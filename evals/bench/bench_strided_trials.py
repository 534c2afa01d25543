"""Verdict time with the strided trials on against off (`VerifyConfig.strided_inputs`; docs/verifier.md, "Measured
here"): two warm verifiers in one process, verdicts alternating (off-on, on-off, ...), the shipped CPU examples of
relu and softmax on cpu_l1's default sizes, timing on. Prints per case the median total seconds and the median
seconds of the correctness trials, each side, and their ratios.

    HF_HUB_OFFLINE=1 .venv/bin/python -m evokernel.evals.bench.bench_strided_trials --repeats 7
"""
from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

CASES = ("01_relu", "11_softmax")


def main() -> None:
    from evokernel.tasks.load import load_task
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=7, help="verdicts per case and side")
    args = ap.parse_args()
    root = Path(__file__).resolve().parents[2] / "evokernel"
    if not (root / "suites").is_dir():  # installed: the package's own folders
        import evokernel

        root = Path(evokernel.__file__).resolve().parent
    verifiers = {on: Verifier("cpu", VerifyConfig(strided_inputs=on)).start() for on in (False, True)}
    try:
        for name in CASES:
            task = load_task(root / "suites" / "cpu_l1" / f"{name}.py", {})
            source = (root / "examples" / "cpu" / f"{name}.py").read_text()
            for on in (False, True):  # warm: builds and the reference
                verifiers[on].verify(task, source)
            total: dict[bool, list[float]] = {False: [], True: []}
            trials: dict[bool, list[float]] = {False: [], True: []}
            for k in range(args.repeats):
                for on in ((False, True) if k % 2 == 0 else (True, False)):
                    t0 = time.perf_counter()
                    verdict = verifiers[on].verify(task, source)
                    total[on].append(time.perf_counter() - t0)
                    trials[on].append(verdict.timings.get("correctness_trials", 0.0))
                    if not verdict.feasible:
                        raise SystemExit(f"{name} (strided_inputs={on}): {verdict.feedback}")
            m = {on: (statistics.median(total[on]), statistics.median(trials[on])) for on in (False, True)}
            print(f"{name}: total off {m[False][0]:.2f} s, on {m[True][0]:.2f} s, "
                  f"on/off {m[True][0] / m[False][0]:.3f}; "
                  f"correctness trials off {m[False][1]:.3f} s, on {m[True][1]:.3f} s, "
                  f"on/off {m[True][1] / m[False][1]:.3f}", flush=True)
    finally:
        for v in verifiers.values():
            v.close()


if __name__ == "__main__":
    main()
