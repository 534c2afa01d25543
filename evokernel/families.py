"""Backend families: targets that share seed knowledge (M0) and prompt templates.

The Ascend C emulator (``ascend-sim``) and real Ascend NPUs (``ascend``) take the same candidates and the
same API, so they share one seed folder (``memory/seed/ascend/``) and one prompt folder
(``prompts/ascend/``), and their seed items have the same ids (``seed:ascend:<stem>``): what the memory
learns about those items on the emulator carries over to the hardware. Every other backend is a family
of its own.
"""
from __future__ import annotations

FAMILIES: dict[str, str] = {"ascend-sim": "ascend", "ascend": "ascend"}


def family(backend: str) -> str:
    """The family (seed and prompt folder name) of ``backend``: ``ascend-sim`` -> ``ascend``, others unchanged."""
    return FAMILIES.get(backend, backend)
