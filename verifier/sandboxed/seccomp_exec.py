"""Runs INSIDE a build sandbox: install the ``build`` seccomp filter, then exec the build command.

    python -m evokernel.verifier.sandboxed.seccomp_exec -- g++ ...

A filter survives exec, so the compiler and everything it starts (and anything a candidate's source makes
them do) runs under it.
"""
from __future__ import annotations

import os
import sys

from evokernel.verifier.sandboxed.seccomp_filter import install_seccomp


def main(argv: list[str]) -> None:
    if "--" in argv:
        argv = argv[argv.index("--") + 1:]
    if not argv:
        raise SystemExit("usage: python -m evokernel.verifier.sandboxed.seccomp_exec -- COMMAND [ARGS...]")
    install_seccomp("build")
    os.execvp(argv[0], argv)


if __name__ == "__main__":
    main(sys.argv[1:])
