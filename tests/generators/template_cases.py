"""Test helper for the template generator's Ascend families: custom tasks written from a task template and the
draft request the tests send."""
from __future__ import annotations

from evokernel.generators.base import GenerationRequest
from evokernel.tasks.load import load_task


def write_tasks(directory, template: str, cases: dict, refused: dict) -> dict:
    """Every case (name -> format fields) and refused case (name -> (fields, reason)) written as a task file from
    `template` in `directory`, loaded."""
    out = {}
    for name, spec in {**cases, **{k: v[0] for k, v in refused.items()}}.items():
        p = directory / f"{name}.py"
        p.write_text(template.format(**spec))
        out[name] = load_task(p)
    return out


def draft(gen, task, seed=3):
    return gen.generate(GenerationRequest(task=task, stage="draft", backend="ascend-sim", seed=seed))


def transform_variants(gen, task, family: str, fast: dict) -> list:
    """Every refinement step (each transform) from the draft's schedule and from the tuned start ``fast`` (knobs
    over the conservative ones): ``(schedule, source, geometry)`` for each distinct kernel the host can tile."""
    from evokernel.generators.template.ascend import schedules as AS
    from evokernel.generators.template.generator import ascend_op_for

    op = ascend_op_for(task)
    starts = (AS.make_schedule(family, dict(AS.CONSERVATIVE), "draft"),
              AS.make_schedule(family, {**AS.CONSERVATIVE, **fast}, "x"))
    sigs, out = set(), []
    for start in starts:
        for name in AS.TRANSFORM_NAMES:
            sched = AS.apply_transform(start, name)
            if sched is None:
                continue
            source, sig, geo = gen.render_ascend(task, op, sched)
            if geo is None or sig in sigs:
                continue
            sigs.add(sig)
            out.append((sched, source, geo))
    return out


def logsumexp_task(shape: str, half: bool = False) -> str:
    """A task file: torch.logsumexp over dim 1 of inputs holding rows PyTorch answers specially (a +Inf element:
    +Inf, its shift masks an infinite max; an all -Inf row: -Inf; NaN stays NaN; a row with +Inf and -Inf; a
    row scaled far from 1, whose finite shift is kept)."""
    cast = ".half()" if half else ""
    scale = "6000.0" if half else "1e30"
    nan = "" if half else '    x[2, 7] = float("nan")\n'
    return (
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n\n    def forward(self, x):\n        return torch.logsumexp(x, dim=1)\n\n\n"
        f"def get_inputs():\n    x = torch.randn({shape}){cast}\n"
        '    x[0, 5] = float("inf")\n    x[1, :] = float("-inf")\n' + nan +
        '    x[3, 3], x[3, 9] = float("inf"), float("-inf")\n'
        f"    x[4] *= {scale}\n    return [x]\n\n\ndef get_init_inputs():\n    return []\n")

