"""Turns Grafana dashboards into a rules file promtool can parse, and
checks that dashboards and alert rules name only exported metrics.

Usage: dashboards.py SCRAPE OUT_RULES DASHBOARD.json... ALERTS.yml...

SCRAPE is a full text exposition of the metrics registry; its `# TYPE`
lines are the exported families. Each panel query becomes a recording
rule `dash:<uid>:<n>` with Grafana's variables replaced by plain values.
"""

import json
import re
import sys

HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
METRIC = re.compile(r"\bdeepfleet_[a-z_]+\b")


def exported(scrape_path):
    names = set()
    with open(scrape_path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("# TYPE "):
                name, kind = line.split()[2:4]
                names.add(name)
                if kind == "histogram":
                    names.update(name + s for s in HISTOGRAM_SUFFIXES)
    return names


def substitute(expr):
    expr = re.sub(r"\$__(rate_interval|interval|range)", "5m", expr)
    return re.sub(r"\$\{?[A-Za-z_][A-Za-z0-9_]*\}?", "x", expr)


def targets(panels):
    for panel in panels:
        yield from panel.get("targets", [])
        yield from targets(panel.get("panels", []))


def main(scrape, out, files):
    known = exported(scrape)
    errors = []
    rules = []
    for path in files:
        if path.endswith(".json"):
            with open(path, encoding="utf-8") as f:
                dash = json.load(f)
            for key in ("uid", "title", "schemaVersion", "panels"):
                if key not in dash:
                    errors.append(f"{path}: no `{key}`")
            exprs = [t["expr"] for t in targets(dash.get("panels", [])) if "expr" in t]
            if not exprs:
                errors.append(f"{path}: no queries")
            for n, expr in enumerate(exprs):
                rules.append((f"dash:{dash.get('uid', 'x').replace('-', '_')}:q{n}", substitute(expr)))
        else:
            with open(path, encoding="utf-8") as f:
                exprs = re.findall(r"expr: (.*(?:\n {12}.*)*)", f.read())
        for expr in exprs:
            for name in METRIC.findall(expr):
                if name not in known:
                    errors.append(f"{path}: `{name}` is not exported by the code")
    with open(out, "w", encoding="utf-8") as f:
        f.write("groups:\n  - name: dashboards\n    rules:\n")
        for record, expr in rules:
            f.write(f"      - record: {record}\n        expr: {json.dumps(expr)}\n")
    for e in errors:
        print(e, file=sys.stderr)
    print(f"{len(rules)} dashboard queries from {sum(p.endswith('.json') for p in files)} dashboards")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3:]))
