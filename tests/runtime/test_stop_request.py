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
