"""Host paths out of what a verdict says.

A verdict's feedback and details go to an LLM and into logs that may be shared; they must not carry the
host's folder layout. Compiler diagnostics name the build folder (inside the build cache), a traceback or
an internal error may name the checkout or a file under $HOME, and a candidate may print what it found.
`HostText` replaces those prefixes with placeholders, as the last step of every verdict:

    <cache>       the build cache (VerifyConfig.cache_dir)
    <evokernel>   the folder the evokernel packages are installed from (the checkout, or site-packages)
    ~             $HOME

Longest prefix first (the cache usually lies under $HOME), both as given and with symlinks resolved, and
only whole path components (``/home/ann`` does not touch ``/home/anna``).
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any


def _package_root() -> Path:
    import evokernel

    return Path(evokernel.__file__).resolve().parent.parent


_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all C0/C1 controls but \t and \n
# lone UTF-16 surrogates: JSON escapes carry them from a worker's message into a str that cannot be encoded as
# UTF-8, so printing, logging or sending the feedback to a model would raise (red-team rt3_lone_surrogate_feedback)
_SURROGATE = re.compile("[\ud800-\udfff]")


class HostText:
    def __init__(self, cache_dir: Path | str, home: str | None = None, package_root: Path | None = None):
        home = os.environ.get("HOME", "") if home is None else home
        pairs: dict[str, str] = {}
        for path, label in ((cache_dir, "<cache>"), (package_root or _package_root(), "<evokernel>"), (home, "~")):
            if not path:
                continue
            for form in {str(path), os.path.realpath(path)}:
                form = form.rstrip("/")
                if len(form) > 1 and form not in pairs:  # never "/" itself
                    pairs[form] = label
        ordered = sorted(pairs, key=len, reverse=True)
        self._labels = pairs
        alternatives = "|".join(re.escape(p) for p in ordered)
        self._pattern = re.compile(f"(?:{alternatives})" + r"(?![\w.-])") if ordered else None

    def text(self, s: str) -> str:
        """Host paths replaced by their labels; control characters (terminal escapes, NUL, carriage returns a
        candidate printed to rewrite what a reader sees) shown as backslash-x escapes, lone surrogates as
        backslash-u escapes (the text always encodes as UTF-8); newlines and tabs kept."""
        if not s:
            return s
        s = _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", s)
        s = _SURROGATE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", s)
        if self._pattern is None:
            return s
        return self._pattern.sub(lambda m: self._labels[m.group(0)], s)

    def value(self, v: Any) -> Any:
        """Strings anywhere inside dicts, lists and tuples scrubbed (keys too); other values unchanged."""
        if isinstance(v, str):
            return self.text(v)
        if isinstance(v, dict):
            return {self.value(k): self.value(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return type(v)(self.value(x) for x in v)
        return v
