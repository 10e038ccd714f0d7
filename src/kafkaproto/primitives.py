"""Kafka's primitive types: a zero-copy :class:`Reader`, a growable :class:`Writer`,
and batch varint codecs that fill NumPy arrays.

Reader methods (``read_int16``, ``read_compact_string(nullable)``,
``read_tagged_fields``...) advance a cursor and raise a
:class:`~kafkaproto.errors.KafkaProtocolError` subclass naming the type and
byte offset on bad input; a length or count larger than what is left is
rejected before anything is allocated.
"""

from ._impl import COMPILED, codec
from ._limits import MAX_STRING_LENGTH

Reader = codec.Reader
Writer = codec.Writer
decode_uvarints = codec.decode_uvarints
decode_varints = codec.decode_varints
decode_varlongs = codec.decode_varlongs
encode_uvarints = codec.encode_uvarints
encode_varints = codec.encode_varints
encode_varlongs = codec.encode_varlongs
uvarint_size = codec.uvarint_size
varint_size = codec.varint_size
varlong_size = codec.varlong_size

__all__ = [
    "COMPILED",
    "MAX_STRING_LENGTH",
    "Reader",
    "Writer",
    "decode_uvarints",
    "decode_varints",
    "decode_varlongs",
    "encode_uvarints",
    "encode_varints",
    "encode_varlongs",
    "uvarint_size",
    "varint_size",
    "varlong_size",
]
