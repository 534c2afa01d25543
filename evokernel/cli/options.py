"""What the CLI's commands share: options generated from the run settings, and the parsing helpers.

:func:`with_settings` adds one typer option per run setting (:mod:`evokernel.settings`) to a command: the
option is named after the setting (``n_context`` -> ``--n-context``; a bool gets ``--x/--no-x``), its help is
the setting's help and its default the setting's default, so ``evokernel run --help`` cannot drift from
``Context`` or from the eval config. The command receives the values as one :class:`Given`.

This module imports no other ``evokernel.cli.app*`` module (the command modules import it), and nothing heavy.
"""
from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Iterable, Optional

import typer
from rich.console import Console

from evokernel import settings as run_settings
from evokernel.tasks.task import FIT_MODES, parse_override

err = Console(stderr=True, soft_wrap=True)


@dataclass
class Given:
    """The setting options of one command line: every value (defaults included, unless the options are
    optional) and the names given explicitly."""

    values: dict[str, Any] = field(default_factory=dict)
    explicit: set[str] = field(default_factory=set)

    def given(self) -> dict[str, Any]:
        """The settings given on the command line, by name."""
        return {k: self.values[k] for k in self.explicit}


def option_name(name: str) -> str:
    return "--" + name.replace("_", "-")


def option_decls(f: Any) -> list[str]:
    """The option's spellings: ``--name`` (``--name/--no-name`` for a bool), then the setting's ``flags``."""
    main = option_name(f.name)
    if run_settings.type_of(f.name) is bool:
        main = f"{main}/--no-{f.name.replace('_', '-')}"
    return [main, *f.metadata["flags"]]


def setting_parameter(f: Any, optional: bool = False) -> inspect.Parameter:
    """A keyword-only parameter typer turns into the setting's option (``optional``: default None, meaning
    "not given": the command's other source of settings, e.g. an eval config, decides)."""
    kind = run_settings.type_of(f.name)
    option = typer.Option(*option_decls(f), help=f.metadata["description"], show_default=not optional)
    annotation = Annotated[Optional[kind] if optional else kind, option]  # type: ignore[valid-type]
    default = None if optional else run_settings.default_of(f)
    return inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def with_settings(names: Iterable[str] | None = None, *, optional: bool = False) -> Callable:
    """Decorate a typer command with one option per run setting in ``names`` (default: every setting the CLI
    exposes). The command takes a keyword ``settings: Given`` instead of one parameter per setting."""
    chosen = [f for f in run_settings.cli_fields() if names is None or f.name in set(names)]
    if names is not None and len(chosen) != len(set(names)):
        unknown = set(names) - {f.name for f in chosen}
        raise ValueError(f"not command-line settings: {', '.join(sorted(unknown))}")

    def decorate(func: Callable) -> Callable:
        sig = inspect.signature(func, eval_str=True)  # typer reads the options from the evaluated annotations
        own = [p for p in sig.parameters.values() if p.name != "settings"]
        clash = {p.name for p in own} & {f.name for f in chosen}
        if clash:
            raise ValueError(f"{func.__name__} declares settings itself: {', '.join(sorted(clash))}")
        extra = [setting_parameter(f, optional) for f in chosen]

        # typer hands this parameter its context: which options were given on the command line
        context = inspect.Parameter(CONTEXT, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=typer.Context)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            ctx = kwargs.pop(CONTEXT, None)
            values = {f.name: kwargs.pop(f.name) for f in chosen if f.name in kwargs}
            return func(*args, settings=Given(values, _explicit(values, optional, ctx)), **kwargs)

        wrapper.__signature__ = sig.replace(parameters=own + extra + [context])  # type: ignore[attr-defined]
        wrapper.__annotations__ = {p.name: p.annotation for p in own + extra + [context]} | {
            "return": sig.return_annotation}
        return wrapper

    return decorate


CONTEXT = "cli_context"


def _explicit(values: dict[str, Any], optional: bool, ctx: Any) -> set[str]:
    if optional:
        return {k for k, v in values.items() if v is not None}
    if ctx is None:  # called as a plain function: everything passed counts
        return set(values)

    def given(name: str) -> bool:
        source = ctx.get_parameter_source(name)
        return source is not None and source.name not in ("DEFAULT", "DEFAULT_MAP")

    return {k for k in values if given(k)}


# ---------------------------------------------------------------- helpers of several commands


def fit_mode(value: str) -> str:
    if value not in FIT_MODES:
        err.print(f"error: --fit must be one of {', '.join(FIT_MODES)}, not {value!r}")
        raise typer.Exit(2)
    return value


def overrides(values: list[str] | None) -> dict[str, object]:
    """``--set NAME=VALUE`` options as a mapping."""
    out: dict[str, object] = {}
    for v in values or []:
        name, value = parse_override(v)
        out[name] = value
    return out
