"""Options of kafkaproto's Spark data sources (strings, as Spark hands
them): read once, each error naming the option it is about."""

from __future__ import annotations

import json

__all__ = ["duration", "flag", "names", "paths", "ports", "size"]


def flag(options, name: str, default: bool) -> bool:
    v = options.get(name)
    if v is None:
        return default
    t = str(v).strip().lower()
    if t in ("1", "true", "yes", "on"):
        return True
    if t in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"option {name} must be true or false, not {v!r}")


def names(options, name: str) -> list[str] | None:
    """A comma-separated list (None when the option is not given)."""
    v = options.get(name)
    if v is None or not str(v).strip():
        return None
    return [x.strip() for x in str(v).split(",") if x.strip()]


def size(options, name: str, default: int) -> int:
    """A size in bytes: ``134217728``, ``128m``, ``128MiB``, ``1.5g``; positive."""
    v = options.get(name)
    if v is None:
        return default
    t = str(v).strip().lower().replace("ib", "").rstrip("b")
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}.get(t[-1:], 1)
    try:
        n = int(float(t[:-1] if t[-1:] in "kmgt" else t) * scale)
    except (ValueError, OverflowError):
        raise ValueError(f"option {name} must be a size in bytes (e.g. 134217728, 128m), not {v!r}") from None
    if n <= 0:
        raise ValueError(f"option {name} must be positive, not {v!r}")
    return n


def duration(options, name: str) -> int | None:
    """A duration in nanoseconds: ``30s``, ``500ms``, ``2m``, ``1h``, or a
    number of milliseconds (None when the option is not given)."""
    v = options.get(name)
    if v is None or not str(v).strip():
        return None
    t = str(v).strip().lower().replace(" ", "")
    units = (("ms", 1_000_000), ("us", 1_000), ("s", 1_000_000_000), ("m", 60_000_000_000),
             ("h", 3_600_000_000_000))
    scale = 1_000_000
    for suffix, k in units:
        if t.endswith(suffix):
            t, scale = t[:-len(suffix)], k
            break
    try:
        n = int(float(t) * scale)
    except (ValueError, OverflowError):
        raise ValueError(f"option {name} must be a duration (e.g. 30s, 500ms, 2m), not {v!r}") from None
    if n <= 0:
        raise ValueError(f"option {name} must be positive, not {v!r}")
    return n


def ports(options, name: str = "ports") -> list[int] | None:
    """TCP ports, comma-separated (None when not given)."""
    got = names(options, name)
    if got is None:
        return None
    out = []
    for p in got:
        if not p.isdigit() or not 0 < int(p) < 65536:
            raise ValueError(f"option {name} must be TCP ports (1-65535), comma-separated, not {options.get(name)!r}")
        out.append(int(p))
    return sorted(set(out))


def paths(options, source: str) -> list[str]:
    """``load(path)`` gives ``path``; ``load([a, b])`` gives ``paths`` (a JSON list)."""
    got: list[str] = []
    if options.get("path"):
        got.append(str(options["path"]))
    raw = options.get("paths")
    if raw:
        try:
            more = json.loads(raw)
        except ValueError:
            more = [raw]
        got += [str(p) for p in (more if isinstance(more, list) else [more])]
    if not got:
        raise ValueError(f"{source} needs a path: spark.read.format('{source}').load(PATH)")
    return got
