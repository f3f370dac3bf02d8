"""The sequences of Ice's `Ice/BuiltinSequences.ice` (`Ice._t_IntSeq`, …), which generated code
that includes it imports."""

import IcePy

import Ice

for _name, _element in [
    ("BoolSeq", IcePy._t_bool),
    ("ByteSeq", IcePy._t_byte),
    ("ShortSeq", IcePy._t_short),
    ("IntSeq", IcePy._t_int),
    ("LongSeq", IcePy._t_long),
    ("FloatSeq", IcePy._t_float),
    ("DoubleSeq", IcePy._t_double),
    ("StringSeq", IcePy._t_string),
    ("ObjectProxySeq", IcePy._t_ObjectPrx),
]:
    if not hasattr(Ice, "_t_" + _name):
        setattr(Ice, "_t_" + _name, IcePy.defineSequence("::Ice::" + _name, (), _element))
