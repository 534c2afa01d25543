"""Run the attack corpus through whichever evokernel is importable and print one JSON line per attack.

    # today's main (the worktree at /work/base), to fill the manifest's `main` field:
    /work/base/.venv/bin/python tests/verifier/attacks/replay.py [--full] [ATTACK ...]
    # this checkout:
    .venv/bin/python tests/verifier/attacks/replay.py

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
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault(SECRET_ENV, "evk-host-secret-" + secrets.token_hex(8))

    from evokernel.tasks import load_task
    from evokernel.verifier.trusted.verifier import Verifier, VerifyConfig

    names = [n for n in MANIFEST if not args.attacks or any(a == n or a in n for a in args.attacks)]
    if args.file:
        names = [n for n in MANIFEST if args.like and args.like in n][:1]
    cache = Path(args.cache or tempfile.mkdtemp(prefix="evk-attacks-"))
    v = Verifier("cpu", VerifyConfig(cache_dir=cache, timing=False, run_timeout_s=20.0)).start()
    base = {k: getattr(v.config, k) for k in ("timing", "warmup", "min_rounds", "max_rounds", "build_timeout_s")}
    try:
        for name in names:
            e = MANIFEST[name]
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
        v.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
