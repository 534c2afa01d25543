"""`evokernel memory ...`: inspect, export and import the value-driven memory.

    evokernel memory stats  [--memory DIR] [--server URL] [--json]
    evokernel memory list   [--kind K] [--task T] [--backend B] [--sort q1|q2|n1|n2|recent] [--limit N]
    evokernel memory show   ID
    evokernel memory export PATH [--exclude-task T]... [--kind K]... [--backend B]
    evokernel memory import PATH [--exclude-task T]... [--backend B] [--no-values]

Every command takes ``--memory DIR`` (default ./evokernel-memory, env EVOKERNEL_MEMORY) and
``--server URL`` (a `chroma run` server holding the items, env EVOKERNEL_CHROMA_URL; the value ledger
stays in DIR). Exit code 2 on bad input (unknown kind, missing memory, malformed file, locked memory).
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any, Iterator, Optional

import typer
from rich.console import Console
from rich.table import Table

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                  help="Inspect, export and import the value-driven memory (items, Q-values, seed knowledge).")
err = Console(stderr=True, soft_wrap=True)

# the same names as the run settings memory_dir and memory_url (evokernel run --memory-dir, --memory-url); the
# older spellings --memory and --server stay (the docs and scripts use them)
MemoryOpt = Annotated[Path, typer.Option("--memory-dir", "--memory", envvar="EVOKERNEL_MEMORY",
                                         help="memory directory (Chroma files unless --memory-url, and values.jsonl)")]
ServerOpt = Annotated[Optional[str], typer.Option("--memory-url", "--server", envvar="EVOKERNEL_CHROMA_URL",
                                                  help="Chroma server URL (`chroma run`), e.g. http://127.0.0.1:8000")]
DEFAULT_MEMORY = Path("evokernel-memory")
SORTS = ("q1", "q2", "n1", "n2", "recent")


def _fail(msg: str) -> None:
    err.print(f"[red]error:[/red] {msg}", highlight=False)
    raise typer.Exit(2)


@contextmanager
def _open(memory: Path, server: str | None, *, create: bool = False) -> Iterator[Any]:
    # lazy: the memory store (numpy, chromadb), only for memory commands
    from evokernel.memory.store import MemoryStore, MemoryStoreError
    from evokernel.memory.transfer import TransferError

    if not create and not server and not (memory / "chroma").exists():
        _fail(f"no memory at {memory} (give --memory DIR or set EVOKERNEL_MEMORY)")
    try:
        store = MemoryStore(memory, url=server)
    except MemoryStoreError as e:
        _fail(str(e))
    try:
        yield store
    except (MemoryStoreError, TransferError, ValueError) as e:
        _fail(str(e))
    finally:
        store.close()


def _values(store: Any, item_id: str) -> dict[str, Any]:
    v = store.values.get(item_id)
    if v is None:
        return {"q1": 0.0, "q2": 0.0, "n1": 0, "n2": 0, "last_r1": None, "last_r2": None}
    return {"q1": v.q1, "q2": v.q2, "n1": v.n1, "n2": v.n2, "last_r1": v.last_r1, "last_r2": v.last_r2}


def _summary(item: Any, width: int = 70) -> str:
    s = str(item.meta.get("summary") or item.meta.get("title") or item.key).replace("\n", " ")
    return s if len(s) <= width else s[: width - 1] + "…"


def _check_kind(kind: str | None) -> None:
    from evokernel.memory.store import KINDS  # lazy: the memory store (numpy, chromadb), only for memory commands

    if kind is not None and kind not in KINDS:
        _fail(f"unknown kind {kind!r} (one of {', '.join(KINDS)})")


@app.command()
def stats(memory: MemoryOpt = DEFAULT_MEMORY, server: ServerOpt = None,
          as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False) -> None:
    """Counts per kind, backend and task; value summary."""
    with _open(memory, server) as store:
        s = store.stats()
    if as_json:
        print(json.dumps(s, indent=2))
        return
    out = Console()
    out.print(f"memory {s['path']}" + (f" (server {s['server']})" if s["server"] else "") + f": {s['items']} items",
              highlight=False)
    table = Table("group", "name", "items")
    for group in ("by_kind", "by_backend"):
        for name, n in s[group].items():
            table.add_row(group[3:], name, str(n))
    for name, n in list(s["by_task"].items())[:20]:
        table.add_row("task", name, str(n))
    out.print(table)
    v = s["values"]
    out.print(f"attempts {v['attempts']}; items with Q1 {v['items_with_q1']} (mean {v['q1_mean']:.3f}, max "
              f"{v['q1_max']:.3f}); items with Q2 {v['items_with_q2']} (mean {v['q2_mean']:.3f}, max {v['q2_max']:.3f})",
              highlight=False)


@app.command("list")
def list_items(memory: MemoryOpt = DEFAULT_MEMORY, server: ServerOpt = None,
               kind: Annotated[Optional[str], typer.Option(help="only this kind")] = None,
               task: Annotated[Optional[str], typer.Option(help="only items of this task")] = None,
               backend: Annotated[Optional[str], typer.Option(help="only this backend")] = None,
               sort: Annotated[str, typer.Option(help="q1, q2, n1, n2 (highest first) or recent")] = "q1",
               limit: Annotated[int, typer.Option(min=1, help="rows to show")] = 50,
               as_json: Annotated[bool, typer.Option("--json", help="print JSON lines")] = False) -> None:
    """Items with their values, best first."""
    _check_kind(kind)
    if sort not in SORTS:
        _fail(f"unknown sort {sort!r} (one of {', '.join(SORTS)})")
    with _open(memory, server) as store:
        items = store.find(kind=kind, task=task, backend=backend)
        rows = [(it, _values(store, it.id)) for it in items]
    if sort == "recent":
        rows.reverse()
    else:
        rows.sort(key=lambda r: -r[1][sort])
    rows = rows[:limit]
    if as_json:
        for it, v in rows:
            print(json.dumps({"id": it.id, "kind": it.kind, "task": it.meta.get("task", ""), **v,
                              "summary": _summary(it, 200)}))
        return
    table = Table("id", "kind", "task", "q1", "q2", "n1", "n2", "summary", title=f"{len(rows)} of {len(items)} items")
    for it, v in rows:
        table.add_row(it.id, it.kind, str(it.meta.get("task", "")), f"{v['q1']:+.3f}", f"{v['q2']:+.3f}",
                      str(v["n1"]), str(v["n2"]), _summary(it))
    Console(width=200).print(table)


@app.command()
def show(item_id: Annotated[str, typer.Argument(metavar="ID", help="item id")],
         memory: MemoryOpt = DEFAULT_MEMORY, server: ServerOpt = None,
         as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False) -> None:
    """One item: full text, metadata, values, and the children of a trace."""
    with _open(memory, server) as store:
        found = store.get([item_id])
        if not found:
            _fail(f"no item {item_id!r} in {memory}")
        it = found[0]
        children = store.find(parent=it.id)
        vals = _values(store, it.id)
        child_rows = [(c, _values(store, c.id)) for c in children]
    if as_json:
        print(json.dumps({"id": it.id, "kind": it.kind, "key": it.key, "text": it.text, "meta": it.meta,
                          "values": vals, "children": [c.id for c in children]}, indent=2, default=str))
        return
    out = Console(width=200)
    out.rule(f"{it.id} ({it.kind})")
    out.print(f"key: {it.key}", highlight=False)
    out.print("values: " + ", ".join(f"{k}={v}" for k, v in vals.items()), highlight=False)
    meta = Table("meta", "value", show_header=False)
    for k in sorted(it.meta):
        meta.add_row(k, str(it.meta[k]))
    out.print(meta)
    out.rule("text")
    print(it.text)
    if child_rows:
        table = Table("child", "stage", "feasible", "speedup_vs_parent", "q2", "summary", title="children")
        for c, v in child_rows:
            table.add_row(c.id, str(c.meta.get("stage", "")), str(c.meta.get("feasible", "")),
                          str(c.meta.get("speedup_vs_parent", "")), f"{v['q2']:+.3f}", _summary(c))
        out.print(table)


@app.command("export")
def export_cmd(path: Annotated[Path, typer.Argument(help="output JSONL file")],
               memory: MemoryOpt = DEFAULT_MEMORY, server: ServerOpt = None,
               exclude_task: Annotated[Optional[list[str]], typer.Option("--exclude-task", help="leave out this task's items (repeatable)")] = None,
               kind: Annotated[Optional[list[str]], typer.Option("--kind", help="only this kind (repeatable)")] = None,
               backend: Annotated[Optional[str], typer.Option(help="only this backend")] = None) -> None:
    """Write items and their values to a JSONL file."""
    # lazy: the memory store (numpy, chromadb), only for memory commands
    from evokernel.memory.transfer import export_memory

    for k in kind or []:
        _check_kind(k)
    with _open(memory, server) as store:
        n = export_memory(store, path, exclude_tasks=exclude_task or (), kinds=kind or None, backend=backend)
    Console().print(f"exported {n} items to {path}", highlight=False)


@app.command("import")
def import_cmd(path: Annotated[Path, typer.Argument(help="a file written by `evokernel memory export`")],
               memory: MemoryOpt = DEFAULT_MEMORY, server: ServerOpt = None,
               exclude_task: Annotated[Optional[list[str]], typer.Option("--exclude-task", help="skip this task's items (repeatable)")] = None,
               backend: Annotated[Optional[str], typer.Option(help="re-tag imported items with this backend")] = None,
               values: Annotated[bool, typer.Option(help="carry the items' Q-values over")] = True) -> None:
    """Add the items of an export file (existing ids are kept as they are)."""
    # lazy: the memory store (numpy, chromadb), only for memory commands
    from evokernel.memory.transfer import TransferError, import_memory, read_export

    if not path.is_file():
        _fail(f"no such file: {path}")
    try:
        read_export(path)  # validate before opening (and possibly creating) the memory
    except TransferError as e:
        _fail(str(e))
    with _open(memory, server, create=True) as store:
        n = import_memory(store, path, exclude_tasks=exclude_task or (), keep_values=values, backend=backend)
    Console().print(f"imported {n} new items into {memory}", highlight=False)
