import os
import signal
import threading

import pytest

from evokernel.runtime import stop_request


def test_sigint_in_the_block_requests_a_stop_that_worker_threads_see():
    released = []
    seen = []
    previous = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with stop_request.sigint_requests_stop(on_stop=lambda: released.append(1)):
            assert not stop_request.requested()
            try:
                os.kill(os.getpid(), signal.SIGINT)  # the handler runs in this thread, right after
                for _ in range(10_000):
                    pass
            finally:
                # a node on a worker thread, after the signal: it must not start another generation
                def node():
                    try:
                        stop_request.check("the next generation")
                    except stop_request.StopRequested as exc:
                        seen.append(str(exc))

                t = threading.Thread(target=node)
                t.start()
                t.join()
    assert seen == ["stop requested (before the next generation)"]
    assert released == [1]
    assert signal.getsignal(signal.SIGINT) is previous and not stop_request.requested()  # restored, cleared


def test_check_passes_until_requested_and_is_a_keyboard_interrupt():
    stop_request.check("anything")
    stop_request.request()
    try:
        with pytest.raises(KeyboardInterrupt):  # no `except Exception` or retry policy catches it
            stop_request.check("x")
    finally:
        stop_request.clear()
    stop_request.check("anything")


def test_outside_the_main_thread_the_block_installs_nothing():
    previous = signal.getsignal(signal.SIGINT)
    out = []

    def worker():
        with stop_request.sigint_requests_stop():
            out.append(signal.getsignal(signal.SIGINT))

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert out == [previous]


def test_a_sigint_inside_a_deferred_block_reaches_the_handler_when_the_block_ends():
    done, released = [], []
    previous = signal.getsignal(signal.SIGINT)
    with pytest.raises(KeyboardInterrupt):
        with stop_request.sigint_requests_stop(on_stop=lambda: released.append(stop_request.requested())):
            with stop_request.deferred():
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(10_000):  # the signal has arrived by now: held, not handled
                    pass
                done.append(stop_request.requested())
            done.append("after the block")  # never reached: the block's end raised
    assert done == [False] and released == [True]  # the stop handler ran once, at the block's end
    assert signal.getsignal(signal.SIGINT) is previous


def test_under_python_s_own_handler_a_deferred_sigint_is_a_keyboard_interrupt_at_the_end():
    done = []
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            with stop_request.deferred():
                with stop_request.deferred():  # nests: the inner end hands it to the outer hold
                    os.kill(os.getpid(), signal.SIGINT)
                    for _ in range(10_000):
                        pass
                done.append("inner ended")
            done.append("after")
    finally:
        signal.signal(signal.SIGINT, previous)
    assert done == ["inner ended"]


def test_without_a_sigint_a_deferred_block_raises_nothing():
    with stop_request.sigint_requests_stop():
        with stop_request.deferred():
            with stop_request.deferred():  # nests
                pass
    assert not stop_request.requested()
