"""The chart values the READMEs name exist.

- every `--set KEY=...` (also `--set-string`, and `a=1,b=2` lists) of
  README.md and the chart's README names a value of values.yaml that
  values.schema.json declares;
- every values key the README's Deployment section names in backticks
  (`config.queueName`, `worker.autoscaling.mode=keda`) is in values.yaml.
  A backticked dotted name is taken as a values key when its first part is
  a top-level value (so `deepfleet.steps.submissions`, a queue, is not).

Keys below a map (`agents.NAME`, `config.providers.NAME`, labels) resolve
through the schema's `additionalProperties`; list items through `items`.
"""

import re

import yaml

SET_ARG = re.compile(r"--set(?:-string)?[ =](?:'([^']*)'|\"([^\"]*)\"|(\S+))")
KEY = r"[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])?(?:\.[A-Za-z_][A-Za-z0-9_]*(?:\[\d+\])?)*"
BACKTICKED = re.compile(rf"`({KEY})(?:=[^`]*)?`")
PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def set_keys(text):
    """The keys of every `--set` argument in `text`."""
    keys = []
    for m in SET_ARG.finditer(text):
        arg = next(g for g in m.groups() if g is not None)
        for pair in re.split(r",(?![^{]*\})", arg):
            key = pair.partition("=")[0]
            if re.fullmatch(KEY, key):
                keys.append(key)
    return keys


def section(text, title):
    """The body of the `## title` section of a Markdown text."""
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    return m[1] if m else ""


def prose_keys(text, top_level):
    """Backticked dotted names of `text` that start with a top-level value."""
    return [k for k in BACKTICKED.findall(text) if "." in k and PART.match(k)[1] in top_level]


def missing(key, values, schema):
    """Why `key` is not a value of the chart, or None when it is."""
    node, spec = values, schema
    for name, index in PART.findall(key):
        if index:
            if not isinstance(node, list) or spec.get("type") != "array":
                return f"{key}: `[{index}]` indexes no list"
            node, spec = (node[0] if node else None), spec.get("items", {})
            continue
        props = spec.get("properties", {})
        if name in props and isinstance(node, dict) and name in node:
            node, spec = node[name], props[name]
        elif name not in props and isinstance(spec.get("additionalProperties"), dict):
            node, spec = (node or {}).get(name) if isinstance(node, dict) else None, spec["additionalProperties"]
        elif node is None and name in props:
            node, spec = None, props[name]
        else:
            return f"{key}: no such value in values.yaml"
        if "$ref" in spec:
            # Agent specs: checked against proto/schema, not walked further.
            return None
    return None


def problems(readmes, values_text, schema):
    """(readme name, problem) of every value the READMEs name wrongly;
    `readmes` maps a name to its text, the first being the project's."""
    values = yaml.safe_load(values_text)
    out = []
    for i, (name, text) in enumerate(readmes.items()):
        keys = set_keys(text)
        if i == 0:
            keys += prose_keys(section(text, "Deployment"), set(values))
        for key in dict.fromkeys(keys):
            why = missing(key, values, schema)
            if why:
                out.append((name, why))
    return out
