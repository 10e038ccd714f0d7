"""A griffe extension for the API reference (mkdocs.yml loads it; it is not a page).

The docstrings are written for Python's help() and reST readers: Sphinx roles
(``:func:`split_frames```), literal blocks after ``::`` and doctest examples
(``>>>``).  mkdocstrings renders docstrings as Markdown, where a role would
show as ``:func:`` text and a ``>>>`` line as a quotation.  This turns them
into Markdown once, when the package is loaded:

- a role becomes an optional cross-reference: a link to the object's entry
  when the reference documents it, plain code otherwise (the docstrings name
  private helpers too, which the reference leaves out on purpose);
- ``text::`` loses one colon (the indented block after it is a Markdown code
  block already);
- a run of doctest lines becomes a ``pycon`` code block;
- a class's ``__slots__`` is left out (how it stores its fields, not API).
"""

from __future__ import annotations

import html
import re

import griffe

ROLE = re.compile(r":(?:py:)?(?:mod|func|class|meth|attr|data|exc|obj|const):`(~?)([^`<>]+?)`")


def _resolve(obj: griffe.Object, target: str) -> str:
    """The full path ``target`` most likely names, seen from ``obj``'s docstring."""
    if target.startswith("."):
        module = obj if obj.is_module else obj.module
        base = module.path if module.is_package else module.parent.path if module.parent else module.path
        up = len(target) - len(target.lstrip("."))
        parts = base.split(".")
        if up > 1:
            parts = parts[: len(parts) - (up - 1)]
        return ".".join(parts + [target.lstrip(".")])
    if target.startswith("kafkaproto"):
        return target
    head = target.split(".", 1)[0]
    scope: griffe.Object | None = obj if (obj.is_class or obj.is_module) else obj.parent
    while scope is not None:
        try:
            if head in scope.members:
                return f"{scope.path}.{target}"
        except Exception:  # an alias that does not resolve: try the next scope
            pass
        scope = scope.parent
    return target


def _code(text: str) -> str:
    return f"<code>{html.escape(text)}</code>"


def _roles(obj: griffe.Object, text: str) -> str:
    def one(m: re.Match) -> str:
        short, target = m.group(1), m.group(2).strip()
        shown = target.rsplit(".", 1)[-1] if short else target.lstrip(".")
        if not target.replace(".", "").replace("_", "").isalnum():
            return f"`{shown}`"
        path = _resolve(obj, target)
        return f'<autoref identifier="{html.escape(path)}" optional>{_code(shown)}</autoref>'

    return ROLE.sub(one, text)


def _doctests(text: str) -> str:
    out: list[str] = []
    lines = text.split("\n")
    i = 0
    in_fence = False
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            in_fence = not in_fence
        if not in_fence and line.lstrip().startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            block = []
            while i < len(lines) and lines[i].strip() and lines[i].startswith(indent):
                block.append(re.sub(r"\s*# doctest:.*$", "", lines[i][len(indent):]))
                i += 1
            out += [indent + "```pycon", *(indent + b for b in block), indent + "```"]
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _literal_blocks(text: str) -> str:
    # "way::" -> "way:"; a lone "::" line goes
    text = re.sub(r"(?m)^\s*::\s*$", "", text)
    return re.sub(r"(?m)(\S)::$", r"\1:", text)


def markdown(obj: griffe.Object, text: str) -> str:
    return _roles(obj, _literal_blocks(_doctests(text)))


class RstToMarkdown(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        seen: set[int] = set()

        def walk(obj: griffe.Object) -> None:
            if id(obj) in seen:
                return
            seen.add(id(obj))
            if obj.docstring is not None:
                obj.docstring.value = markdown(obj, obj.docstring.value)
            if obj.is_class and "__slots__" in obj.members:  # an implementation detail, not API
                obj.del_member("__slots__")
            for member in list(obj.members.values()):
                if member.is_alias:
                    continue
                walk(member)

        walk(pkg)
