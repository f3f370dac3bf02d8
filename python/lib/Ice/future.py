"""``Ice.Future``: the result of an asynchronous call, awaitable from asyncio."""

import threading


class FutureBase(object):
    """The base of Ice's futures."""


class Future(FutureBase):
    """A result that comes later: ``result()`` waits for it, ``add_done_callback`` is told of
    it, and ``await future`` works in a coroutine."""

    def __init__(self):
        self._condition = threading.Condition()
        self._done = False
        self._cancelled = False
        self._result = None
        self._exception = None
        self._callbacks = []

    def cancel(self):
        with self._condition:
            if self._done:
                return False
            self._cancelled = True
        self._finish(None, _cancelled())
        return True

    def cancelled(self):
        with self._condition:
            return self._cancelled

    def done(self):
        with self._condition:
            return self._done

    def add_done_callback(self, fn):
        with self._condition:
            if not self._done:
                self._callbacks.append(fn)
                return
        fn(self)

    def result(self, timeout=None):
        with self._condition:
            if not self._condition.wait_for(lambda: self._done, timeout):
                raise _timeout()
            if self._exception is not None:
                raise self._exception
            return self._result

    def exception(self, timeout=None):
        with self._condition:
            if not self._condition.wait_for(lambda: self._done, timeout):
                raise _timeout()
            return self._exception

    def set_result(self, result):
        self._finish(result, None)

    def set_exception(self, ex):
        self._finish(None, ex)

    def _finish(self, result, ex):
        with self._condition:
            if self._done:
                return
            self._done = True
            self._result = result
            self._exception = ex
            callbacks, self._callbacks = self._callbacks, []
            self._condition.notify_all()
        for fn in callbacks:
            fn(self)

    def __await__(self):
        return wrap_future(self).__await__()

    @staticmethod
    def completed(result):
        f = Future()
        f.set_result(result)
        return f


def wrap_future(future, loop=None):
    """An asyncio future completed from an ``Ice.Future``."""
    import asyncio

    loop = loop or asyncio.get_event_loop()
    target = loop.create_future()

    def done(f):
        def transfer():
            if target.done():
                return
            e = f.exception()
            if e is not None:
                target.set_exception(e)
            else:
                target.set_result(f.result())

        loop.call_soon_threadsafe(transfer)

    future.add_done_callback(done)
    return target


def _timeout():
    import Ice

    return Ice.TimeoutException()


def _cancelled():
    import Ice

    return Ice.InvocationCanceledException()
