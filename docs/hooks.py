"""mkdocs hooks (mkdocs.yml loads this file; it is not a page).

The messages reference lists every generated class from the registry itself,
so the page cannot fall behind the generator: one row per api key (request
and response classes, their versions: those in Kafka's newest schemas and
those only an older schema layer has), then the header and data schemas.
"""

from __future__ import annotations

PLACEHOLDER = "<!-- message classes -->"


def _versions(cls) -> str:
    text = f"{cls.NEWEST_VERSIONS or '–'}"
    if cls.SNAPSHOT_ONLY_VERSIONS:
        text += f" (+ {cls.SNAPSHOT_ONLY_VERSIONS}, removed in Kafka 4.0)"
    return text


def message_tables() -> str:
    from kafkaproto import messages

    rows = ["| api key | name | request class | response class | versions | flexible from |",
            "| ---: | --- | --- | --- | --- | --- |"]
    for key, (req, resp) in sorted(messages.APIS.items()):
        r = messages.get(req)
        rows.append(f"| {key} | {messages.api_name(key)} | `{req}` | `{resp}` | {_versions(r)} | "
                    f"{r.FLEXIBLE_VERSIONS or 'never'} |")
    others = sorted(name for name, (_, kind, key) in messages.CLASSES.items() if key is None)
    rows += ["", "Header and data schemas (records, group protocols, the log's own records):", "",
             "| class | versions |", "| --- | --- |"]
    rows += [f"| `{name}` | {messages.get(name).VALID_VERSIONS} |" for name in others]
    return "\n".join(rows)


def on_page_markdown(markdown: str, page, config, files) -> str:
    if PLACEHOLDER in markdown:
        return markdown.replace(PLACEHOLDER, message_tables())
    return markdown
