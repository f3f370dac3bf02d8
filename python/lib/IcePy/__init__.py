"""IcePy: the module that the ``Ice`` package and slice2py's generated code call.

Its native part (``IcePy._native``) is floe's Rust core; this file re-exports it and adds the
pieces written in Python: the asynchronous forms of ``Operation`` and the text of values.
"""

from IcePy import _native

globals().update({k: v for k, v in vars(_native).items() if not k.startswith("__")})


class Operation(_native.Operation):
    """A Slice operation (made by generated code): ``invoke`` and ``invokeAsync`` are native;
    ``begin``/``end`` (Ice 3.6's asynchronous calls) are written over ``invokeAsync``."""

    def begin(self, proxy, args):
        params, response, exception, sent, context = args
        future = self.invokeAsync(proxy, (params, context))

        def done(f):
            e = f.exception()
            if e is not None:
                if exception:
                    exception(e)
            elif response:
                r = f.result()
                if r is None:
                    response()
                elif self.result_count > 1:
                    response(*r)
                else:
                    response(r)

        future.add_done_callback(done)
        return future

    def end(self, proxy, future):
        return future.result()


def stringify(value, type_info=None):
    """The text of a struct, class or servant: its members, one per line."""
    members = getattr(value, "__dict__", {})
    if not members:
        return "%s()" % type(value).__name__
    return "%s:\n%s" % (
        type(value).__module__ + "." + type(value).__name__,
        "\n".join("    %s = %r" % (k, v) for k, v in members.items()),
    )


def stringifyException(value):
    """The text of a user exception: its type id and members."""
    members = getattr(value, "__dict__", {})
    text = getattr(value, "_ice_id", type(value).__name__)
    if members:
        text += "\n" + "\n".join("    %s = %r" % (k, v) for k, v in members.items())
    return text
