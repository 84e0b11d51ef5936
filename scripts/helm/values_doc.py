#!/usr/bin/env python3
"""The chart README's values table, generated from values.yaml.

A key is documented by a `# -- text` comment right above it (continued by
further `#` lines); the table lists every documented key with its type and
default. `undocumented()` names the values that no documented key covers
(a leaf is covered by its own comment or by an ancestor's), and
`schema_gaps()` the values that values.schema.json does not declare:
`make helm` fails on both.
"""

import json
import re

import yaml

BEGIN = "<!-- values:begin (generated from values.yaml by scripts/helm/values_doc.py) -->"
END = "<!-- values:end -->"
KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.-]+):(?P<rest>.*)$")


def documented_keys(text):
    """(dotted path, description) of every documented key, in file order."""
    stack = []  # (indent, key)
    pending = None
    found = []
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("# --"):
            pending = stripped[4:].strip()
            continue
        if stripped.startswith("#"):
            if pending is not None:
                pending += " " + stripped[1:].strip()
            continue
        match = KEY.match(line)
        if not match:
            if stripped and not stripped.startswith("-"):
                pending = None
            continue
        indent = len(match["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, match["key"]))
        if pending is not None:
            found.append((".".join(k for _, k in stack), pending))
        pending = None
    return found


def lookup(values, path):
    node = values
    for part in path.split("."):
        node = node[part]
    return node


def type_name(value):
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    return "object"


def cell(text):
    return text.replace("|", "\\|")


def table(values_path):
    text = values_path.read_text()
    values = yaml.safe_load(text)
    rows = ["| Key | Type | Default | Description |", "|---|---|---|---|"]
    for path, description in documented_keys(text):
        value = lookup(values, path)
        default = json.dumps(value, separators=(",", ":"))
        if len(default) > 60:
            default = "see values.yaml"
        rows.append(f"| `{path}` | {type_name(value)} | `{cell(default)}` | {cell(description)} |")
    return "\n".join(rows)


def readme_with_table(readme, values_path):
    """`readme` with the text between the markers replaced by the table."""
    start, end = readme.index(BEGIN) + len(BEGIN), readme.index(END)
    return readme[:start] + "\n" + table(values_path) + "\n" + readme[end:]


def leaves(node, prefix=""):
    """Dotted paths of every leaf (scalars, lists and empty maps)."""
    if isinstance(node, dict) and node:
        for key, value in node.items():
            yield from leaves(value, f"{prefix}{key}" if not prefix else f"{prefix}.{key}")
    else:
        yield prefix


def undocumented(values_path):
    text = values_path.read_text()
    documented = {path for path, _ in documented_keys(text)}
    missing = []
    for leaf in leaves(yaml.safe_load(text)):
        parts = leaf.split(".")
        if not any(".".join(parts[:n]) in documented for n in range(1, len(parts) + 1)):
            missing.append(leaf)
    return missing


def schema_gaps(values_path, schema):
    """Paths of values.yaml the schema does not declare, and schema
    objects that accept undeclared keys (no `additionalProperties`)."""
    gaps = []

    def walk(node, sub, path):
        if sub.get("$ref"):
            return
        if isinstance(node, dict) and sub.get("type") == "object":
            if "additionalProperties" not in sub:
                gaps.append(f"{path or '<root>'}: object without additionalProperties")
            props = sub.get("properties", {})
            extra = sub.get("additionalProperties")
            for key, value in node.items():
                if key in props:
                    walk(value, props[key], f"{path}.{key}" if path else key)
                elif isinstance(extra, dict):
                    walk(value, extra, f"{path}.{key}" if path else key)
                elif extra is not True:
                    gaps.append(f"{path}.{key}: not in values.schema.json")

    walk(yaml.safe_load(values_path.read_text()), schema, "")
    return gaps
