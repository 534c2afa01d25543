"""The golden corpus: honest candidates the verifier must accept, for measuring false rejections.

    from evokernel.evals.bench.golden_corpus import corpus
    for item in corpus("cpu"):           # or "ascend-sim"
        item.task, item.source, item.label, item.origin

What it holds, per backend:

* ``cpu``: every shipped example in ``evokernel/examples/cpu`` (its task named in its docstring), and
  the template generator's outputs for the ``cpu-l1`` and ``cpu-l2`` suites: the conservative draft,
  a few seeded exploration drafts, and every single-transform refinement of the conservative draft
  (each transform the schedule space offers that yields new code). The risky ``tail=none`` knob is a
  legitimate wrong answer on sizes it does not divide, so items carry ``risky`` and a caller may
  count their rejections apart.
* ``ascend-sim``: every shipped Ascend C example in ``evokernel/examples/ascend`` and the template
  generator's Ascend C drafts and single-transform refinements for the ``npu-l1`` and ``npu-l2`` suites.

``python -m evokernel.evals.bench.golden_corpus [cpu|ascend-sim]`` prints the counts per origin.
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from evokernel.verifier.backends.registry import family

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "evokernel" / "examples"
# "Task: evokernel/suites/cpu_l1/01_relu.py" (cpu examples) or "task: npu_l1/11_elementwise_add.py" (ascend)
_TASK_LINE = re.compile(r"[Tt]ask:\s*(?:evokernel/suites/)?(\w+/\w+\.py)")


@dataclass
class Item:
    task: object  # evokernel.tasks.task.Task
    source: str
    label: str  # "<task id>: <what>"
    origin: str  # "example" | "template-draft" | "template-explore" | "template-refine"
    risky: bool = False  # a schedule knob that is wrong on sizes it does not divide (template tail=none)
    meta: dict = field(default_factory=dict)


def _example_task(path: Path) -> Path | None:
    m = _TASK_LINE.search(path.read_text())
    return ROOT / "evokernel" / "suites" / m.group(1) if m else None


def examples(backend: str = "cpu") -> Iterator[Item]:
    """The shipped examples of ``backend`` (``cpu`` or ``ascend-sim``), each with the task it names."""
    from evokernel.tasks.load import load_task

    folder = EXAMPLES / family(backend)
    for path in sorted(folder.glob("*.py")):
        task_path = _example_task(path)
        if task_path is None:
            continue
        yield Item(load_task(task_path), path.read_text(), f"example {path.name}", "example",
                   meta={"file": str(path.relative_to(ROOT))})


def _cpu_templates(suites: tuple[str, ...], explore_seeds: int) -> Iterator[Item]:
    from evokernel.generators.base import DRAFT, GenerationError, GenerationRequest
    from evokernel.generators.template import TemplateGenerator
    from evokernel.generators.template.cpu import schedules as S
    from evokernel.generators.template.front.search import knobs_of
    from evokernel.generators.template.generator import _code_part, plan_for
    from evokernel.tasks.load import load_tasks

    gen = TemplateGenerator(explore_prob=1.0)
    for suite in suites:
        for task in load_tasks(suite):
            seen: set[str] = set()
            try:
                plan = plan_for(task)
            except GenerationError:
                continue
            draft = S.make_schedule(plan.primary, plan.families, dict(S.CONSERVATIVE), "draft")

            def emit(sched: dict, origin: str) -> Iterator[Item]:
                try:
                    source = gen.render(task, plan, sched)
                except GenerationError:
                    return
                code = _code_part(source)
                if code in seen:
                    return
                seen.add(code)
                knobs = knobs_of(sched)
                yield Item(task, source, f"{suite}/{task.name}: {origin} {sched.get('transform')}", origin,
                           risky=any(knobs.get(k) == v for k, v in S.RISKY.items()),
                           meta={"schedule": knobs})

            yield from emit(draft, "template-draft")
            for seed in range(explore_seeds):
                g = gen.generate(GenerationRequest(task=task, stage=DRAFT, seed=seed))
                if g.schedule and g.schedule.get("transform") == "explore":
                    yield from emit(g.schedule, "template-explore")
            for name in S.CPU.names:
                cand = S.apply_transform(draft, name)
                if cand is not None:
                    yield from emit(cand, "template-refine")


def _ascend_templates(suites: tuple[str, ...]) -> Iterator[Item]:
    from evokernel.generators.base import GenerationError
    from evokernel.generators.template import TemplateGenerator
    from evokernel.generators.template.ascend import schedules as AS
    from evokernel.generators.template.front.search import knobs_of
    from evokernel.generators.template.generator import ascend_op_for
    from evokernel.tasks.load import load_tasks

    gen = TemplateGenerator()
    for suite in suites:
        for task in load_tasks(suite):
            try:
                op = ascend_op_for(task)
            except GenerationError:
                continue
            seen: set[str] = set()
            draft = AS.make_schedule(op.family, dict(AS.CONSERVATIVE), "draft")
            scheds = [(draft, "template-draft")]
            scheds += [(c, "template-refine") for name in AS.TRANSFORM_NAMES
                       if (c := AS.ASCEND.apply_transform(draft, name)) is not None]
            for sched, origin in scheds:
                try:
                    source, sig, geo = gen.render_ascend(task, op, sched)
                except GenerationError:
                    continue
                if geo is None or sig in seen:
                    continue
                seen.add(sig)
                yield Item(task, source, f"{suite}/{task.name}: {origin} {sched.get('transform')}", origin,
                           meta={"schedule": knobs_of(sched)})


def corpus(backend: str = "cpu", *, templates: bool = True, explore_seeds: int = 3) -> Iterator[Item]:
    """Every golden item of ``backend``: examples first, then template outputs."""
    yield from examples(backend)
    if not templates:
        return
    if backend == "cpu":
        yield from _cpu_templates(("cpu-l1", "cpu-l2"), explore_seeds)
    elif backend == "ascend-sim":
        yield from _ascend_templates(("npu-l1", "npu-l2"))
    else:
        raise ValueError(f"no golden corpus for backend {backend!r}")


def main(argv: list[str] | None = None) -> int:
    from collections import Counter

    backends = (argv if argv is not None else sys.argv[1:]) or ["cpu", "ascend-sim"]
    for backend in backends:
        counts = Counter(i.origin for i in corpus(backend))
        print(f"{backend}: {sum(counts.values())} items ({', '.join(f'{k} {v}' for k, v in sorted(counts.items()))})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
