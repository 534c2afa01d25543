"""Issue 32, offline numbers: which tasks the kernel-only form can declare, the prompt sizes of both forms, and the
seed item ranked first for each task. No model is called.

    HF_HUB_OFFLINE=1 .venv/bin/python scripts/kernel_form_coverage.py [DIR ...]

DIR defaults to the cpu_l1 and cpu_l2 suites; KernelBench's level1/level2 folders work as they are.
"""
from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from pathlib import Path

from evokernel.generators.base import DRAFT, GenerationRequest
from evokernel.generators.kernel_form import KernelFormError, declare
from evokernel.memory.knowledge import rank_knowledge, task_ops
from evokernel.memory.seed import load_seed
from evokernel.prompts.render import render_prompt
from evokernel.tasks.load import load_task

ROOT = Path(__file__).resolve().parents[1]


def main(dirs: list[str]) -> None:
    folders = [Path(d) for d in dirs] or [ROOT / "evokernel" / "suites" / "cpu_l1", ROOT / "evokernel" / "suites" / "cpu_l2"]
    seeds = [it for it in load_seed("cpu") if it.kind == "seed" and "*" not in it.meta["categories"]]
    for folder in folders:
        files = sorted(p for p in folder.glob("*.py") if p.name[0].isdigit())
        ok, why, secs, full_chars, kernel_chars, firsts = 0, Counter(), [], [], [], Counter()
        for path in files:
            try:
                task = load_task(path)
            except Exception as exc:  # noqa: BLE001
                why[f"load: {type(exc).__name__}"] += 1
                continue
            t0 = time.perf_counter()
            try:
                spec = declare(task)
            except KernelFormError as exc:
                why[str(exc).split(":")[0][:70]] += 1
                spec = None
            secs.append(time.perf_counter() - t0)
            request = GenerationRequest(task=task, stage=DRAFT)
            full_chars.append(sum(map(len, render_prompt(request))))
            if spec is not None:
                ok += 1
                kernel_chars.append(sum(map(len, render_prompt(request, kernel=spec))))
            top = rank_knowledge(seeds, ops=task_ops(task), category=task.category, name=task.name, limit=1)
            firsts[top[0].id.split(":")[-1] if top else "(none)"] += 1
        print(f"== {folder} ({len(files)} files)")
        print(f"declared: {ok}/{len(files)}; not: {dict(why)}")
        print(f"declare seconds: median {statistics.median(secs):.3f}, max {max(secs):.3f}")
        print(f"draft prompt chars (system + human, no memory): full form median {statistics.median(full_chars):.0f}, "
              f"kernel form median {statistics.median(kernel_chars):.0f}" if kernel_chars else "")
        print(f"first seed item: {dict(firsts.most_common())}")


if __name__ == "__main__":
    main(sys.argv[1:])
