"""Ice for Python's public API on floe's Rust core.

Programs written for ZeroC's Ice for Python, and the code slice2py generates for them, import
this package unchanged: communicators and properties, proxies and their ``ice_*`` factories,
checked and unchecked casts, servants and object adapters, user and local exceptions,
optionals (``Ice.Unset``), futures. The calls go through ``IcePy`` (floe's native module).
"""

import sys
import types as _types

import IcePy

from Ice.exceptions import *  # noqa: F401,F403 - the local exceptions are part of Ice's API
from Ice.exceptions import Exception, LocalException, UserException  # noqa: F401
from Ice.future import Future, FutureBase, wrap_future  # noqa: F401

Unset = IcePy.Unset
# The default of struct members and parameters in generated code: "make a default struct".
_struct_marker = object()
stringVersion = IcePy.stringVersion
intVersion = IcePy.intVersion


# ---- modules of generated code


def openModule(name):
    """The module ``name`` (``Demo`` or ``Demo.Inner``), made empty if it does not exist yet."""
    if name in sys.modules:
        return sys.modules[name]
    module = _types.ModuleType(name)
    sys.modules[name] = module
    if "." in name:
        parent, _, leaf = name.rpartition(".")
        setattr(openModule(parent), leaf, module)
    return module


def createTempClass():
    """A placeholder class for a type being defined (generated code replaces it)."""

    class _Temp(object):
        pass

    return _Temp


def updateModule(name):
    """Kept for generated code of older versions: nothing to do."""


def updateModules():
    """Kept for generated code of older versions: nothing to do."""


def getHash(value):
    """A hash of a member value (lists and dictionaries included), as generated `__hash__` uses."""
    if isinstance(value, (list, tuple)):
        h = 0
        for v in value:
            h = 5 * h + getHash(v)
        return h
    if isinstance(value, dict):
        h = 0
        for k, v in value.items():
            h = 5 * h + getHash(k) + getHash(v)
        return h
    return hash(value)


# ---- enumerations, values, servants, proxies


class EnumBase(object):
    """The base of Slice enumerations: an enumerator has a name and a value."""

    def __init__(self, _n, _v):
        self._name = _n
        self._value = _v

    def __str__(self):
        return self._name

    __repr__ = __str__

    def __hash__(self):
        return self._value

    def __int__(self):
        return self._value

    def _cmp(self, other, op):
        if isinstance(other, self.__class__):
            return op(self._value, other._value)
        if other is None:
            return NotImplemented
        return NotImplemented

    def __lt__(self, other):
        return self._cmp(other, lambda a, b: a < b)

    def __le__(self, other):
        return self._cmp(other, lambda a, b: a <= b)

    def __eq__(self, other):
        if self is other:
            return True
        if not isinstance(other, self.__class__):
            return False
        return self._value == other._value

    def __ne__(self, other):
        return not self.__eq__(other)

    def __gt__(self, other):
        return self._cmp(other, lambda a, b: a > b)

    def __ge__(self, other):
        return self._cmp(other, lambda a, b: a >= b)

    @property
    def name(self):
        return self._name

    @property
    def value(self):
        return self._value


class Value(object):
    """The base of Slice classes."""

    def ice_id(self):
        return "::Ice::Object"

    @staticmethod
    def ice_staticId():
        return "::Ice::Object"

    def ice_preMarshal(self):
        pass

    def ice_postUnmarshal(self):
        pass


Value._ice_type = IcePy.defineValue("::Ice::Object", Value, -1, (), False, False, None, ())
_t_Value = Value._ice_type


class UnknownSlicedValue(Value):
    """An instance of a class this program does not know (sliced format): only its type id."""

    def __init__(self, unknownTypeId=""):
        self.unknownTypeId = unknownTypeId

    def ice_id(self):
        return "::Ice::UnknownSlicedValue"


class Object(object):
    """The base of servants."""

    def ice_isA(self, id, current=None):
        return id in self.ice_ids(current)

    def ice_ping(self, current=None):
        pass

    def ice_ids(self, current=None):
        return ("::Ice::Object",)

    def ice_id(self, current=None):
        return "::Ice::Object"

    @staticmethod
    def ice_staticId():
        return "::Ice::Object"


class Blobject(Object):
    """A servant that receives requests as encoded bytes: ``ice_invoke(inParams, current)``
    returns ``(ok, outParams)``."""


class ObjectPrx(IcePy.ObjectPrx):
    """An untyped proxy; generated proxy classes derive from it."""

    @classmethod
    def ice_checkedCast(cls, proxy, id, facetOrContext=None, context=None):
        if proxy is None:
            return None
        facet = None
        if isinstance(facetOrContext, str):
            facet = facetOrContext
        elif isinstance(facetOrContext, dict):
            context = facetOrContext
        elif facetOrContext is not None:
            raise ValueError("checkedCast: the second argument must be a facet name or a context")
        target = proxy.ice_facet(facet) if facet is not None else proxy
        try:
            if not target.ice_isA(id, context):
                return None
        except FacetNotExistException:  # noqa: F405
            return None
        return IcePy.ObjectPrx.newProxy(cls, target, None)

    @classmethod
    def ice_uncheckedCast(cls, proxy, facet=None):
        if proxy is None:
            return None
        return IcePy.ObjectPrx.newProxy(cls, proxy, facet)

    @classmethod
    def checkedCast(cls, proxy, facetOrContext=None, context=None):
        return ObjectPrx.ice_checkedCast.__func__(ObjectPrx, proxy, "::Ice::Object", facetOrContext, context)

    @classmethod
    def uncheckedCast(cls, proxy, facet=None):
        return ObjectPrx.ice_uncheckedCast.__func__(ObjectPrx, proxy, facet)

    @staticmethod
    def ice_staticId():
        return "::Ice::Object"


IcePy.defineProxy("::Ice::Object", ObjectPrx)


class OperationMode(EnumBase):
    """How an operation changes its object: ``Normal``, ``Nonmutating`` or ``Idempotent``."""

    def __init__(self, _n, _v):
        EnumBase.__init__(self, _n, _v)

    @classmethod
    def valueOf(cls, _n):
        return cls._enumerators.get(_n)


OperationMode.Normal = OperationMode("Normal", 0)
OperationMode.Nonmutating = OperationMode("Nonmutating", 1)
OperationMode.Idempotent = OperationMode("Idempotent", 2)
OperationMode._enumerators = {0: OperationMode.Normal, 1: OperationMode.Nonmutating, 2: OperationMode.Idempotent}


class FormatType(EnumBase):
    """The format of classes and exceptions: ``DefaultFormat``, ``CompactFormat``,
    ``SlicedFormat``."""

    def __init__(self, _n, _v):
        EnumBase.__init__(self, _n, _v)


FormatType.DefaultFormat = FormatType("DefaultFormat", 0)
FormatType.CompactFormat = FormatType("CompactFormat", 1)
FormatType.SlicedFormat = FormatType("SlicedFormat", 2)
FormatType._enumerators = {0: FormatType.DefaultFormat, 1: FormatType.CompactFormat, 2: FormatType.SlicedFormat}


# ---- structs of Ice's own Slice


class _Struct(object):
    __slots__ = ()

    def _key(self):
        return tuple(getattr(self, n) for n in self._fields)

    def __eq__(self, other):
        return isinstance(other, self.__class__) and self._key() == other._key()

    def __ne__(self, other):
        return not self.__eq__(other)

    def __lt__(self, other):
        return self._key() < other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        return "%s(%s)" % (type(self).__name__, ", ".join("%s=%r" % (n, getattr(self, n)) for n in self._fields))

    __str__ = __repr__


class Identity(_Struct):
    """An object's identity: its name and category."""

    __slots__ = ("name", "category")
    _fields = ("name", "category")

    def __init__(self, name="", category=""):
        self.name = name
        self.category = category


class EncodingVersion(_Struct):
    """An encoding version (1.0 or 1.1)."""

    __slots__ = ("major", "minor")
    _fields = ("major", "minor")

    def __init__(self, major=0, minor=0):
        self.major = major
        self.minor = minor


class ProtocolVersion(EncodingVersion):
    """A protocol version (1.0)."""

    __slots__ = ()


Encoding_1_0 = EncodingVersion(1, 0)
Encoding_1_1 = EncodingVersion(1, 1)
Protocol_1_0 = ProtocolVersion(1, 0)
currentEncoding = Encoding_1_1
currentProtocol = Protocol_1_0
currentProtocolEncoding = Encoding_1_0

_M_Ice = sys.modules[__name__]
_t_Identity = IcePy.defineStruct(
    "::Ice::Identity", Identity, (), (("name", (), IcePy._t_string), ("category", (), IcePy._t_string))
)
_t_IdentitySeq = IcePy.defineSequence("::Ice::IdentitySeq", (), _t_Identity)
_t_Context = IcePy.defineDictionary("::Ice::Context", (), IcePy._t_string, IcePy._t_string)
_t_EncodingVersion = IcePy.defineStruct(
    "::Ice::EncodingVersion", EncodingVersion, (), (("major", (), IcePy._t_byte), ("minor", (), IcePy._t_byte))
)
_t_ObjectPrx = IcePy._t_ObjectPrx
_t_ObjectProxySeq = IcePy.defineSequence("::Ice::ObjectProxySeq", (), IcePy._t_ObjectPrx)
_t_StringSeq = IcePy.defineSequence("::Ice::StringSeq", (), IcePy._t_string)
_t_ByteSeq = IcePy.defineSequence("::Ice::ByteSeq", (), IcePy._t_byte)
_t_OperationMode = IcePy.defineEnum("::Ice::OperationMode", OperationMode, (), OperationMode._enumerators)
_t_Version = _t_EncodingVersion
_t_ProtocolVersion = IcePy.defineStruct(
    "::Ice::ProtocolVersion", ProtocolVersion, (), (("major", (), IcePy._t_byte), ("minor", (), IcePy._t_byte))
)


class ConnectionClose(EnumBase):
    """How `Connection.close` closes: ``Forcefully``, ``Gracefully``, ``GracefullyWithWait``."""

    def __init__(self, _n, _v):
        EnumBase.__init__(self, _n, _v)


ConnectionClose.Forcefully = ConnectionClose("Forcefully", 0)
ConnectionClose.Gracefully = ConnectionClose("Gracefully", 1)
ConnectionClose.GracefullyWithWait = ConnectionClose("GracefullyWithWait", 2)
ConnectionClose._enumerators = {0: ConnectionClose.Forcefully, 1: ConnectionClose.Gracefully, 2: ConnectionClose.GracefullyWithWait}


class ConnectionInfo(object):
    """What a connection is: ``incoming``, ``adapterName``, ``connectionId``."""

    def __init__(self, incoming=False, adapterName="", connectionId="", underlying=None):
        self.incoming = incoming
        self.adapterName = adapterName
        self.connectionId = connectionId
        self.underlying = underlying


class IPConnectionInfo(ConnectionInfo):
    """A connection's addresses and ports."""

    def __init__(self, localAddress="", localPort=-1, remoteAddress="", remotePort=-1, **kwargs):
        ConnectionInfo.__init__(self, **kwargs)
        self.localAddress = localAddress
        self.localPort = localPort
        self.remoteAddress = remoteAddress
        self.remotePort = remotePort


class TCPConnectionInfo(IPConnectionInfo):
    """A TCP connection's information."""


Connection = IcePy.Connection
ImplicitContext = IcePy.ImplicitContext
Logger = IcePy.Logger


class Current(object):
    """What a servant's method learns of the request it serves."""

    __slots__ = ("adapter", "con", "id", "facet", "operation", "mode", "ctx", "requestId", "encoding")

    def __init__(
        self,
        adapter=None,
        con=None,
        id=None,
        facet="",
        operation="",
        mode=OperationMode.Normal,
        ctx=None,
        requestId=0,
        encoding=None,
    ):
        self.adapter = adapter
        self.con = con
        self.id = id if id is not None else Identity()
        self.facet = facet
        self.operation = operation
        self.mode = mode
        self.ctx = ctx if ctx is not None else {}
        self.requestId = requestId
        self.encoding = encoding if encoding is not None else Encoding_1_1


# ---- communicators


class InitializationData(object):
    """What a communicator is made with."""

    def __init__(self):
        self.properties = None
        self.logger = None
        self.threadStart = None
        self.threadStop = None
        self.dispatcher = None
        self.batchRequestInterceptor = None
        self.valueFactoryManager = None


Properties = IcePy.Properties
ObjectAdapter = IcePy.ObjectAdapter


class Communicator(IcePy.Communicator):
    """A communicator: ``with Ice.initialize(sys.argv) as communicator:`` destroys it at the end
    of the block."""

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc_value, tb):
        self.destroy()


def initialize(args=None, data=None):
    """A new communicator. ``args`` (a list such as ``sys.argv``) loses the Ice options it holds;
    ``data`` is an ``InitializationData`` (either argument may be given alone)."""
    if isinstance(args, InitializationData):
        args, data = None, args
    properties = data.properties if data is not None else None
    if args is not None and not isinstance(args, list):
        raise ValueError("initialize: args must be a list of strings")
    return Communicator(args, properties)


def createProperties(args=None, defaults=None):
    """New properties, parsed from ``args`` (a list, changed in place) over ``defaults``."""
    return IcePy.createProperties(args, defaults)


def identityToString(id, toStringMode=None):
    """The text of an identity, escaped as Ice escapes it."""
    return IcePy.identityToString(id)


def stringToIdentity(s):
    """The identity of a text such as ``category/name``."""
    return IcePy.stringToIdentity(s)


def proxyIdentityCompare(lhs, rhs):
    """Compares two proxies by identity."""
    a, b = lhs.ice_getIdentity(), rhs.ice_getIdentity()
    return (a > b) - (a < b) if a != b else 0


def generateUUID():
    """A new UUID text."""
    import uuid

    return str(uuid.uuid4())
