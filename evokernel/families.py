"""Backend families: targets that share seed knowledge (M0) and prompt templates.

The Ascend C emulator (``ascend-sim``) and real Ascend NPUs (``ascend``) take the same candidates and the
same API, so they share one seed folder (``memory/seed/ascend/``) and one prompt folder
(``prompts/ascend/``), and their seed items have the same ids (``seed:ascend:<stem>``): what the memory
learns about those items on the emulator carries over to the hardware. The family is a column of the backend
registry (verifier/backends/registry.py); a name that is no backend is a family of its own.
"""
from __future__ import annotations

from evokernel.verifier.backends.registry import REGISTRY


def family(backend: str) -> str:
    """The family (seed and prompt folder name) of ``backend``: ``ascend-sim`` -> ``ascend``, others unchanged."""
    row = REGISTRY.get(backend)
    return row.family if row is not None else backend
