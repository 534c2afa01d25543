"""A user's stop request (Ctrl-C, or the SIGINT the eval harness forwards) reaching the graph's worker threads.

LangGraph runs a subgraph (drafting, refining) as a task on a worker thread; a KeyboardInterrupt raised in
the main thread only makes the main thread wait for that task, and the task goes on attempt after attempt
until its stage ends. So SIGINT also sets a process-wide flag that the nodes check where stopping is
clean (before an attempt's generation): the subgraph then raises, the run's checkpoint keeps every
finished attempt, and ``evokernel run --resume`` redoes only the attempt that was cut.
"""
from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["StopRequested", "check", "clear", "deferred", "request", "requested", "sigint_requests_stop"]

_EVENT = threading.Event()


class StopRequested(KeyboardInterrupt):
    """Raised by a node (or a model call) once a stop was requested: a KeyboardInterrupt, so no retry
    policy or ``except Exception`` on the way swallows it."""


def request() -> None:
    _EVENT.set()


def requested() -> bool:
    return _EVENT.is_set()


def clear() -> None:
    _EVENT.clear()


def check(where: str) -> None:
    """Raise :class:`StopRequested` if a stop was requested (call where stopping leaves no half-done work)."""
    if _EVENT.is_set():
        raise StopRequested(f"stop requested (before {where})")


@contextlib.contextmanager
def sigint_requests_stop(on_stop: Callable[[], None] | None = None) -> Iterator[None]:
    """Within the block SIGINT requests a stop, calls ``on_stop`` once (e.g. release a local model server
    so a generation in flight fails at once) and raises KeyboardInterrupt in the main thread as before.
    Only from the main thread (elsewhere the block does nothing); the previous handler comes back after."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)

    def handler(signum: int, frame: Any) -> None:
        first = not _EVENT.is_set()
        request()
        if first and on_stop is not None:
            with contextlib.suppress(Exception):
                on_stop()
        raise KeyboardInterrupt

    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        clear()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """Within the block a SIGINT is held and given to the handler that was in place when the block ends
    (whichever it is: :func:`sigint_requests_stop`'s, Python's KeyboardInterrupt, ...). For code that must not
    be cut half-way: a KeyboardInterrupt raised inside rich's ``Console.__enter__`` (after it counted one more
    buffer level, before the ``with`` holds) leaves the console buffering for good, so a run's last words
    ("resume with ...") were never printed. Main thread only (elsewhere it does nothing); nests."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[Any] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(frame))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held and callable(previous):
            previous(signal.SIGINT, held[0])
        elif held and previous == signal.SIG_DFL:
            raise KeyboardInterrupt
