"""Test helper for the template generator's Ascend families: custom tasks written from a task template and the
draft request the tests send."""
from __future__ import annotations

from evokernel.generators.base import GenerationRequest
from evokernel.tasks import load_task


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
