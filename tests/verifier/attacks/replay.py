"""Run the attack corpus through whichever evokernel is importable and print one JSON line per attack.

    # today's main (the worktree at /work/base), to fill the manifest's `main` field:
    /work/base/.venv/bin/python tests/verifier/attacks/replay.py [--full] [ATTACK ...]
    # this checkout:
    .venv/bin/python tests/verifier/attacks/replay.py

``--table`` prints README.md's tables from the manifest instead (nothing runs).

ATTACK is a manifest key ("c1_glue/alias_recorder_pop.py") or a substring of one; none means all.
``--full`` verifies at the task's default sizes (no `set` overrides), with timing on for every
attack and the CLI's default timing protocol: the setting the `main` column of README.md was
recorded with for class 4. Without it each attack runs exactly as test_attacks.py runs it.
Exceptions escaping `Verifier.verify` are reported as {"crash": "..."}: that is a finding, not a
driver error. Nothing here decides pass/fail; test_attacks.py does.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import secrets
import shutil
import sys
import tempfile
import time
import tomllib
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
MANIFEST = tomllib.loads((HERE / "manifest.toml").read_text())
SECRET_ENV = "EVK_ATTACK_HOST_SECRET"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("attacks", nargs="*")
    ap.add_argument("--full", action="store_true", help="default task sizes, timing on")
    ap.add_argument("--cache", default=None, help="build cache (default: a fresh temporary folder)")
    ap.add_argument("--like", default=None, help="with --file: use this manifest entry's settings")
    ap.add_argument("--file", default=None, help="verify this file (a variant) instead of the attack itself")
    ap.add_argument("--table", action="store_true", help="print README.md's tables from the manifest and exit")
    args = ap.parse_args()
    if args.table:
        print(tables())
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault(SECRET_ENV, "evk-host-secret-" + secrets.token_hex(8))

    from evokernel.tasks.load import load_task
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    names = [n for n in MANIFEST if not args.attacks or any(a == n or a in n for a in args.attacks)]
    if args.file:
        names = [n for n in MANIFEST if args.like and args.like in n][:1]
    cache = Path(args.cache or tempfile.mkdtemp(prefix="evk-attacks-"))  # removed at the end unless given
    verifiers: dict = {}

    def verifier_for(backend: str):  # one per backend, started on first use
        if backend not in verifiers:
            verifiers[backend] = Verifier(backend, VerifyConfig(cache_dir=cache, timing=False,
                                                                run_timeout_s=20.0)).start()
        return verifiers[backend]

    v = verifier_for("cpu")
    base = {k: getattr(v.config, k) for k in ("timing", "warmup", "min_rounds", "max_rounds", "build_timeout_s")}
    try:
        for name in names:
            e = MANIFEST[name]
            v = verifier_for(e.get("backend", "cpu"))
            for k, val in base.items():
                setattr(v.config, k, val)
            if args.full:
                v.config.timing = True
            elif e.get("timing"):
                v.config.timing = True
                v.config.warmup, v.config.min_rounds, v.config.max_rounds = 2, 6, 10
            if "build_timeout_s" in e:
                v.config.build_timeout_s = float(e["build_timeout_s"])
            task_path = ROOT / e["task"]
            if e.get("external"):  # KernelBench, read in place: kernelbench/<level>/<file>
                sys.path.insert(0, str(ROOT / "tests"))
                from kernelbench_files import kernelbench_root

                task_path = (kernelbench_root() or ROOT) / e["task"].removeprefix("kernelbench/")
            task = load_task(task_path, {} if args.full else dict(e.get("set", {})))
            for victim in e.get("victims", []):
                v.verify(task, (HERE / victim).read_text())
            t0 = time.perf_counter()
            peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            row: dict = {"attack": name}
            try:
                verdict = v.verify(task, Path(args.file or HERE / name).read_text())
                row.update(feasible=verdict.feasible, gate=verdict.failed_gate, speedup=verdict.speedup,
                           feedback=verdict.feedback[:600])
            except BaseException as exc:  # noqa: BLE001 - an escaping exception is the finding
                row["crash"] = f"{type(exc).__name__}: {str(exc)[:200]}"
                row["trace"] = traceback.format_exc()[-600:]
            row["seconds"] = round(time.perf_counter() - t0, 2)
            row["parent_peak_growth_mb"] = round((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak) / 1024)
            if e.get("twin") and "crash" not in row:
                twin = v.verify(task, (HERE / e["twin"]).read_text())
                row["twin_speedup"] = twin.speedup
            print(json.dumps(row), flush=True)
    finally:
        for each in verifiers.values():
            each.close()
        if not args.cache:
            shutil.rmtree(cache, ignore_errors=True)
    return 0


CLASSES = {"1-glue": "1. The Python glue reaches the harness", "2-unwatched": "2. Only checked calls are watched",
           "3-native-rules": "3. The native rules are regexes", "4-timing": "4. Timing can be gamed",
           "4-ascend-sim": "4b. The emulator's counters live in the candidate's process (ascend-sim)",
           "5-scalar-approx": "5. Approximations pass on scalar outputs", "6-resources": "6. Resources are unbounded",
           "7-protocol": "7. The protocol trusts the worker's bytes", "8-host-view": "8. The sandbox sees the host",
           "9-values": "9. Non-finite, near-zero and low-precision values switch correctness off"}
OUTCOMES = ("feasible", "crash", "leak", "rejected")


def _expectation(e: dict) -> str:
    gate = e["expect_gate"] if isinstance(e["expect_gate"], str) else " or ".join(e["expect_gate"])
    c, extra = e.get("contain", {}), []
    if "no_host_text" in c:
        extra.append("no host text")
    if "max_speedup_vs_twin" in c:
        extra.append(f"speedup <= {c['max_speedup_vs_twin']}x the twin's")
    if "max_parent_peak_growth_mb" in c:
        extra.append(f"parent peak +<= {c['max_parent_peak_growth_mb']} MiB")
    if "no_cache_file" in c:
        extra.append("nothing planted in the cache")
    if "max_cache_file_mb" in c:
        extra.append(f"no cache file > {c['max_cache_file_mb']} MiB")
    if e.get("then_honest"):
        extra.append("then an honest candidate is feasible")
    return gate + (f" ({'; '.join(extra)})" if extra else "")


def tables() -> str:
    """README.md's summary and per-class tables, from the manifest."""
    lines = ["| class | attacks | counted | today's main: " + " | ".join(OUTCOMES) + " |",
             "|---|---|---|---|---|---|---|"]
    total = [0] * 6
    for cls, title in CLASSES.items():
        es = [e for e in MANIFEST.values() if e["class"] == cls]
        row = [len(es), sum(e.get("counted", True) for e in es)]
        row += [sum(e["main"].startswith(o) for e in es) for o in OUTCOMES]
        total = [a + b for a, b in zip(total, row)]
        lines.append(f"| {title} | " + " | ".join(map(str, row)) + " |")
    lines.append("| **all** | " + " | ".join(f"**{n}**" for n in total) + " |")
    for cls, title in CLASSES.items():
        lines += ["", f"### {title}", "", "| attack | trick; defence | the new verifier must answer | today's main |",
                  "|---|---|---|---|"]
        for key, e in MANIFEST.items():
            if e["class"] == cls:
                name = Path(key).stem + ("" if e.get("counted", True) else " (not counted)")
                why = e["why"].replace("|", "\\|")
                lines.append(f"| [`{name}`]({key}) | {why} | {_expectation(e)} | {e['main']} |")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
