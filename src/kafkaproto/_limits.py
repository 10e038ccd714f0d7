"""Protocol limits shared by the compiled core and the pure twin."""

#: Kafka strings (legacy and compact) are at most 32767 UTF-8 bytes.
MAX_STRING_LENGTH = 0x7FFF

#: Default cap on one frame's size, Kafka's socket.request.max.bytes default (100 MiB).
DEFAULT_MAX_FRAME_SIZE = 104857600
