"""Ice's exceptions: ``Ice.Exception``, ``Ice.UserException`` (the base of Slice exceptions) and
the ``Ice.LocalException`` hierarchy that the runtime raises."""

import builtins


class Exception(builtins.Exception):
    """The base of every Ice exception."""

    _ice_id = "::Ice::Exception"

    def ice_id(self):
        return self._ice_id

    @classmethod
    def ice_staticId(cls):
        return cls._ice_id


class UserException(Exception):
    """The base of the exceptions declared in Slice."""

    _ice_id = "::Ice::UserException"

    def __str__(self):
        import IcePy

        return IcePy.stringifyException(self)


class LocalException(Exception):
    """An exception raised by the runtime. ``str()`` gives what went wrong."""

    _ice_id = "::Ice::LocalException"
    _fields = ()

    def __init__(self, *args, **kwargs):
        builtins.Exception.__init__(self, *args)
        for name, default in self._fields:
            setattr(self, name, default)
        for name, value in zip((n for n, _ in self._fields), args):
            setattr(self, name, value)
        for name, value in kwargs.items():
            setattr(self, name, value)
        self._message = ""

    def __str__(self):
        name = type(self).__module__ + "." + type(self).__name__
        if self._message:
            return "%s:\n%s" % (name, self._message)
        return name


# (name, base, fields): the hierarchy of Ice 3.7's local exceptions.
_HIERARCHY = [
    ("InitializationException", "LocalException", (("reason", ""),)),
    ("PluginInitializationException", "LocalException", (("reason", ""),)),
    ("CollocationOptimizationException", "LocalException", ()),
    ("AlreadyRegisteredException", "LocalException", (("kindOfObject", ""), ("id", ""))),
    ("NotRegisteredException", "LocalException", (("kindOfObject", ""), ("id", ""))),
    ("TwowayOnlyException", "LocalException", (("operation", ""),)),
    ("CloneNotImplementedException", "LocalException", ()),
    ("UnknownException", "LocalException", (("unknown", ""),)),
    ("UnknownLocalException", "UnknownException", ()),
    ("UnknownUserException", "UnknownException", ()),
    ("VersionMismatchException", "LocalException", ()),
    ("CommunicatorDestroyedException", "LocalException", ()),
    ("ObjectAdapterDeactivatedException", "LocalException", (("name", ""),)),
    ("ObjectAdapterIdInUseException", "LocalException", (("id", ""),)),
    ("NoEndpointException", "LocalException", (("proxy", ""),)),
    ("EndpointParseException", "LocalException", (("str", ""),)),
    ("EndpointSelectionTypeParseException", "LocalException", (("str", ""),)),
    ("VersionParseException", "LocalException", (("str", ""),)),
    ("IdentityParseException", "LocalException", (("str", ""),)),
    ("ProxyParseException", "LocalException", (("str", ""),)),
    ("IllegalIdentityException", "LocalException", (("id", None),)),
    ("IllegalServantException", "LocalException", (("reason", ""),)),
    ("RequestFailedException", "LocalException", (("id", None), ("facet", ""), ("operation", ""))),
    ("ObjectNotExistException", "RequestFailedException", ()),
    ("FacetNotExistException", "RequestFailedException", ()),
    ("OperationNotExistException", "RequestFailedException", ()),
    ("SyscallException", "LocalException", (("error", 0),)),
    ("SocketException", "SyscallException", ()),
    ("CFNetworkException", "SocketException", (("domain", ""),)),
    ("FileException", "SyscallException", (("path", ""),)),
    ("ConnectFailedException", "SocketException", ()),
    ("ConnectionRefusedException", "ConnectFailedException", ()),
    ("ConnectionLostException", "SocketException", ()),
    ("DNSException", "LocalException", (("error", 0), ("host", ""))),
    ("OperationInterruptedException", "LocalException", ()),
    ("TimeoutException", "LocalException", ()),
    ("ConnectTimeoutException", "TimeoutException", ()),
    ("CloseTimeoutException", "TimeoutException", ()),
    ("ConnectionTimeoutException", "TimeoutException", ()),
    ("InvocationTimeoutException", "TimeoutException", ()),
    ("InvocationCanceledException", "LocalException", ()),
    ("ProtocolException", "LocalException", (("reason", ""),)),
    ("BadMagicException", "ProtocolException", (("badMagic", b""),)),
    ("UnsupportedProtocolException", "ProtocolException", (("bad", None), ("supported", None))),
    ("UnsupportedEncodingException", "ProtocolException", (("bad", None), ("supported", None))),
    ("UnknownMessageException", "ProtocolException", ()),
    ("ConnectionNotValidatedException", "ProtocolException", ()),
    ("UnknownRequestIdException", "ProtocolException", ()),
    ("UnknownReplyStatusException", "ProtocolException", ()),
    ("CloseConnectionException", "ProtocolException", ()),
    ("ConnectionManuallyClosedException", "LocalException", (("graceful", False),)),
    ("IllegalMessageSizeException", "ProtocolException", ()),
    ("CompressionException", "ProtocolException", ()),
    ("DatagramLimitException", "ProtocolException", ()),
    ("MarshalException", "ProtocolException", ()),
    ("ProxyUnmarshalException", "MarshalException", ()),
    ("UnmarshalOutOfBoundsException", "MarshalException", ()),
    ("NoValueFactoryException", "MarshalException", (("type", ""),)),
    ("UnexpectedObjectException", "MarshalException", (("type", ""), ("expectedType", ""))),
    ("MemoryLimitException", "MarshalException", ()),
    ("StringConversionException", "MarshalException", ()),
    ("EncapsulationException", "MarshalException", ()),
    ("FeatureNotSupportedException", "LocalException", (("unsupportedFeature", ""),)),
    ("SecurityException", "LocalException", (("reason", ""),)),
    ("FixedProxyException", "LocalException", ()),
    ("ResponseSentException", "LocalException", ()),
]

__all__ = ["Exception", "UserException", "LocalException"]


def _define():
    scope = globals()
    for name, base, fields in _HIERARCHY:
        parent = scope[base]
        cls = type(name, (parent,), {"_ice_id": "::Ice::" + name, "_fields": parent._fields + fields})
        cls.__module__ = "Ice"
        scope[name] = cls
        __all__.append(name)


_define()
Exception.__module__ = UserException.__module__ = LocalException.__module__ = "Ice"
