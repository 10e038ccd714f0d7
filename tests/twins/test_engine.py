"""The compiled message engine and its pure twin agree on every class: same
objects from valid bytes, same error (class, message, offset) from damaged ones."""

import random

import pytest

from kafkaproto.messages import CLASSES, _engine, _engine_py, get
from kafkaproto.messages._runtime import build_plan
from support.message_values import random_message
from support.outcomes import outcome

pytestmark = pytest.mark.compiled_only

NAMES = sorted(n for n in CLASSES if get(n).NAME == n)


def as_dict(decoded):
    """(message, end) as (its to_dict(), end)."""
    obj, end = decoded
    return obj.to_dict(), end


def plans(cls, v):
    twin = build_plan(cls, v, cls.is_flexible(v), f"{cls.NAME} v{v}", eng=_engine_py, cache={})
    return cls.plan(v), twin


@pytest.mark.parametrize("name", NAMES)
def test_engines_agree(name):
    cls = get(name)
    rng = random.Random(name)
    for v in range(cls.LOWEST_VERSION, cls.HIGHEST_VERSION + 1):
        if not cls.supports(v):
            continue
        cplan, pplan = plans(cls, v)
        data = random_message(cls, v, rng).encode(v)
        variants = [data, data[: len(data) // 2], data[:-1]]
        for _ in range(6):
            b = bytearray(data)
            if b:
                b[rng.randrange(len(b))] = rng.choice([0x00, 0xFF, 0x7F, 0x80, rng.randrange(256)])
            variants.append(bytes(b))
        for d in variants:
            a = outcome(lambda: _engine.decode_struct(cplan, d, 0), convert=as_dict)
            b = outcome(lambda: _engine_py.decode_struct(pplan, d, 0), convert=as_dict)
            assert a == b, (name, v, d.hex())
