"""`evokernel ascend ...`: Ascend C operator projects as others write them.

    evokernel ascend import DIR [-o FILE]   an msopgen op project (<Op>.json, op_host/, op_kernel/) as a
                                            candidate file, its sources unchanged (evokernel/ascend_import.py)
"""
from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                  help="Ascend C operator projects as others write them: import one as a candidate.")
err = Console(stderr=True, soft_wrap=True, highlight=False)


@app.command("import")
def import_cmd(
    project: Annotated[Path, typer.Argument(help="the op project: the folder holding <Op>.json, or the one above "
                                                 "it, with op_host/ and op_kernel/")],
    out: Annotated[Optional[Path], typer.Option("--out", "-o", help="candidate file to write [default: print it]")] = None,
) -> None:
    """Wrap an msopgen op project in a candidate file, its json, tiling, host and kernel sources unchanged;
    the PyTorch binding and ModelNew are generated from the json."""
    from evokernel.ascend_import import ImportError_, import_project

    try:
        p, text = import_project(project, out)
    except ImportError_ as exc:
        err.print(f"[red]error:[/red] {exc}", markup=True)
        raise typer.Exit(2)
    if out is None:
        print(text)
    else:
        err.print(f"{p.op} ({p.snake}) -> {out}")
        for name, path in p.files.items():
            err.print(f"  {name:18s} {path}")
        err.print(f"check it: evokernel verify TASK {out} --backend ascend-sim")
