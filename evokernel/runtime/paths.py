"""Where EvoKernel keeps its files (importable without torch: the CLI's client path uses it)."""
from __future__ import annotations

import os
from pathlib import Path


def default_cache_dir() -> Path:
    """The build cache (and the verify server's socket): $EVOKERNEL_CACHE, else ~/.cache/evokernel."""
    root = os.environ.get("EVOKERNEL_CACHE")
    return Path(root) if root else Path.home() / ".cache" / "evokernel"
