#!/usr/bin/env python3
"""Keeps the chart's derived files in step with their single sources.

The chart can only read files inside its own folder (`.Files.Get`), and a
symlink would not survive `helm package` on every platform, so it carries
copies; this script is the only writer of those copies:

- helm/deepfleet/files/alerts.yml      <- deploy/prometheus/alerts.yml
- helm/deepfleet/files/dashboards/*.json <- deploy/grafana/*.json
- values.schema.json `$defs.agent_*`    <- proto/schema/agent_spec.json
- the values table of helm/deepfleet/README.md <- the `# --` comments of
  values.yaml (see values_doc.py)

`--check` (what `make helm` runs) changes nothing and fails when any copy
differs from its source byte for byte; without it, the copies are
rewritten (`make helm-sync`).
"""

import argparse
import json
import pathlib
import sys

import values_doc

ROOT = pathlib.Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "deepfleet"
AGENT_PREFIX = "agent_"


def copies():
    """(source, copy) pairs of the files the chart carries."""
    pairs = [(ROOT / "deploy/prometheus/alerts.yml", CHART / "files/alerts.yml")]
    for src in sorted((ROOT / "deploy/grafana").glob("*.json")):
        pairs.append((src, CHART / "files/dashboards" / src.name))
    return pairs


def stale_copies():
    """Copies in files/dashboards whose source is gone."""
    sources = {p.name for p in (ROOT / "deploy/grafana").glob("*.json")}
    return [p for p in (CHART / "files/dashboards").glob("*.json") if p.name not in sources]


def prefixed_refs(node):
    """The agent spec schema with its `#/$defs/X` refs renamed to
    `#/$defs/agent_X`, so they resolve at the root of the values schema."""
    if isinstance(node, dict):
        out = {}
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
                out[key] = "#/$defs/" + AGENT_PREFIX + value[len("#/$defs/"):]
            else:
                out[key] = prefixed_refs(value)
        return out
    if isinstance(node, list):
        return [prefixed_refs(v) for v in node]
    return node


def schema_text():
    """values.schema.json with the agent spec's definitions from proto."""
    schema = json.loads((CHART / "values.schema.json").read_text())
    agent = prefixed_refs(json.loads((ROOT / "proto/schema/agent_spec.json").read_text()))
    defs = {k: v for k, v in schema.get("$defs", {}).items() if not k.startswith(AGENT_PREFIX) and k != "AgentSpec"}
    spec = {k: v for k, v in agent.items() if k not in ("$schema", "$defs")}
    defs["AgentSpec"] = spec
    for name, definition in agent.get("$defs", {}).items():
        defs[AGENT_PREFIX + name] = definition
    schema["$defs"] = defs
    return json.dumps(schema, indent=2) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail on drift instead of rewriting")
    args = parser.parse_args()
    wanted = [(dst, src.read_bytes()) for src, dst in copies()]
    wanted.append((CHART / "values.schema.json", schema_text().encode()))
    readme = CHART / "README.md"
    wanted.append((readme, values_doc.readme_with_table(readme.read_text(), CHART / "values.yaml").encode()))
    drift = [dst for dst, data in wanted if not dst.exists() or dst.read_bytes() != data]
    drift += stale_copies()
    if args.check:
        for path in drift:
            print(f"drift: {path.relative_to(ROOT)} differs from its source; run `make helm-sync`", file=sys.stderr)
        return 1 if drift else 0
    for dst, data in wanted:
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(data)
    for path in stale_copies():
        path.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
