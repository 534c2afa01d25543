"""The ``hybrid`` generator: the offline template generator drafts, an LLM refines.

A weak model spends most of its budget failing to produce a first feasible kernel; the template
generator drafts one at no cost for every operator it can lower. The hybrid gives the drafting stage
to the template (the LLM drafts only the operators the template cannot lower: its GenerationError
names why) and every refinement to the LLM, which then starts from a correct kernel and its verdict.
Spec: ``hybrid:<LLM spec>``, e.g. ``hybrid:local:qwen2.5-coder-1.5b`` or ``hybrid:openai:gpt-4o-mini``;
in an eval config it is one more entry of ``models``, so the harness compares it with the plain LLM.
"""
from __future__ import annotations

from typing import Any

from evokernel.generators.base import DRAFT, Generation, GenerationError, GenerationRequest


class HybridGenerator:
    """Drafts with ``drafter`` (the template generator), refines with ``refiner`` (an LLM generator)."""

    def __init__(self, drafter: Any, refiner: Any):
        self.drafter, self.refiner = drafter, refiner
        self.name = f"hybrid:{getattr(refiner, 'name', 'llm')}"
        self.last_route = ""

    def __getattr__(self, item: str) -> Any:  # prices_known, last_call, ... of the LLM
        if item in ("drafter", "refiner"):
            raise AttributeError(item)
        return getattr(self.refiner, item)

    def generate(self, request: GenerationRequest) -> Generation:
        if request.stage == DRAFT:
            try:
                out = self.drafter.generate(request)
                self.last_route = "template"
                return out
            except GenerationError as exc:  # an operator the template cannot lower: the LLM drafts it
                self.last_route = f"llm (template: {exc})"
        else:
            self.last_route = "llm"
        return self.refiner.generate(request)
