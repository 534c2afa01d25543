"""A finding of the verifier's rules: which rule, where, and what to do instead (the hack gate's
feedback). Shared by the Python glue allow-list, the native-source text rules and the binary judge."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    rule: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: [{self.rule}] {self.message}"
