"""Filters as ``(column, op, value)`` terms, all of which a row must pass --
the form ``pyarrow.parquet.read_table(filters=...)`` takes -- and Spark's
data-source filters in that form.

The capture dataset (:func:`kafkaproto.capture.open_capture`) takes its
filters as such terms (and pyarrow expressions beside them, applied to the
rows only), pushing into its walk what it can (api keys, brokers, time
ranges, captures) and applying the rest to the rows.  Both Spark sources
read each of Spark's filters as a term with :func:`spark_term`, the one
translation they share (:func:`from_spark`: a list of them); the capture
source hands the terms to its dataset, the log source turns those on
``offset``, ``timestamp``, ``topic`` and ``partition`` into the bounds of
:meth:`kafkaproto.log.Log.read`.

Operators: ``==`` (or ``=``), ``!=``, ``<``, ``<=``, ``>``, ``>=``, ``in``,
``not in`` (a list of values), ``is_valid`` (not null; no value).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["OPERATORS", "Term", "from_spark", "normalize", "spark_term"]

Term = tuple[str, str, object]

#: the operators a term may use, and the name each stands for
OPERATORS = {"=": "==", "==": "==", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">=", "in": "in",
             "not in": "not in", "is_valid": "is_valid"}

# Spark's filter classes (pyspark.sql.datasource), by name: comparisons of one column with one value
_SPARK_OPS = {"EqualTo": "==", "GreaterThan": ">", "GreaterThanOrEqual": ">=", "LessThan": "<",
              "LessThanOrEqual": "<="}
_NEGATED = {"EqualTo": "!=", "In": "not in"}


def normalize(filters) -> list[Term]:
    """``filters`` (None, one term, or a list of terms) as a list of terms
    with canonical operators; ValueError names what is wrong with a term."""
    if filters is None:
        return []
    if isinstance(filters, tuple) and len(filters) == 3 and isinstance(filters[0], str):
        filters = [filters]
    out: list[Term] = []
    for term in filters:
        if not (isinstance(term, (tuple, list)) and len(term) == 3 and isinstance(term[0], str)):
            raise ValueError(f"a filter is (column, op, value), not {term!r}")
        col, op, value = term
        if op not in OPERATORS:
            raise ValueError(f"filter on {col}: no operator {op!r} (operators: {', '.join(OPERATORS)})")
        op = OPERATORS[op]
        if op in ("in", "not in"):
            if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
                raise ValueError(f"filter on {col}: {op!r} takes a list of values, not {value!r}")
            value = tuple(value)
        out.append((col, op, value))
    return out


def from_spark(filters: Sequence, columns: Iterable[str] | None = None) -> tuple[list[Term], list]:
    """Spark's data-source filters (``DataSourceReader.pushFilters``) as terms:
    ``(terms, rest)``, ``rest`` the filters not translated (another kind, a
    nested column, a column not in ``columns``), which Spark applies itself.
    A translated filter must then be applied exactly by the reader."""
    keep = None if columns is None else set(columns)
    terms: list[Term] = []
    rest = []
    for f in filters:
        term = spark_term(f)
        if term is None or (keep is not None and term[0] not in keep):
            rest.append(f)
        else:
            terms.append(term)
    return terms, rest


def spark_term(f) -> Term | None:
    """One Spark filter as a term, or None when it is not one column compared
    with a value (``=``, ``<``, ``<=``, ``>``, ``>=``, ``IN``, ``IS NOT NULL``,
    and ``NOT`` of ``=`` or ``IN``)."""
    kind = type(f).__name__
    if kind == "Not":
        inner = getattr(f, "child", None)
        name = type(inner).__name__
        col = _column(inner)
        if col is None or name not in _NEGATED:
            return None
        value = tuple(inner.value) if name == "In" else inner.value
        return None if value is None else (col, _NEGATED[name], value)
    col = _column(f)
    if col is None:
        return None
    if kind == "IsNotNull":
        return col, "is_valid", None
    if kind == "In":
        return col, "in", tuple(f.value)
    op = _SPARK_OPS.get(kind)
    if op is None:
        return None
    return col, op, f.value


def _column(f) -> str | None:
    attr = getattr(f, "attribute", None)
    if not isinstance(attr, tuple) or len(attr) != 1 or not isinstance(attr[0], str):
        return None
    return attr[0]
