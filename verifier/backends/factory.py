"""A backend's `Backend` object from its registry row (verifier/backends/registry.py).

The class is named by its import path in the row and imported here, on first use: task fitting, the CLI and
doctor read the registry without importing any backend's build machinery (an ascend backend loads CANN's
helpers, the emulator's its build tables).
"""
from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from evokernel.verifier.backends.base import Backend
from evokernel.verifier.backends.registry import spec

__all__ = ["backend_class", "make_backend", "resolve"]


def resolve(path: str) -> Any:
    """The object named ``module:attribute``."""
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


def backend_class(name: str) -> type[Backend]:
    return resolve(spec(name).backend_class)


def make_backend(name: str, cache_dir: Path, build_timeout_s: float = 600.0) -> Backend:
    """The backend ``name`` (a ValueError naming the known ones when there is no such row)."""
    return backend_class(name)(cache_dir, build_timeout_s)
