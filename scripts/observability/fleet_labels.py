"""Checks that alerts and dashboards are made for a cluster, where one
Prometheus scrapes several fleets.

Usage: fleet_labels.py RULES.yml... DASHBOARD.json...

Alert rules:
- every aggregation keeps `cluster` and `namespace` (`by` names them,
  `without` does not), and every `on(...)` match names them too, so two
  fleets alert apart instead of being summed together;
- every alert links its runbook by an absolute URL whose fragment is the
  alert's name in lower case, and docs/runbook.md has that section.

Dashboards:
- `cluster`, `namespace` and `job` variables; `cluster` and `namespace`
  pick one value (no multi-select, no "All"), so a panel never sums two
  fleets;
- every selector of every panel query, and of every variable query after
  them, filters by each of them (`cluster="$cluster"`, ...);
- every declared variable is used by a panel.

Queries are read with promql-parser (the Rust PromQL parser's Python
binding); Grafana's `$__interval`-style ranges and constants are replaced
by plain values first, label values such as `$cluster` parse as they are.
"""

import json
import pathlib
import re
import sys

import promql_parser
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
FLEET_LABELS = ("cluster", "namespace")
# The dashboard variables every query filters by, in the order they chain.
FLEET_VARIABLES = ("cluster", "namespace", "job")
# A reference to a Grafana variable: $name, ${name}, ${name:format}, [[name]].
VARIABLE_REF = r"\$\{{{0}(?::[a-z]+)?\}}|\${0}\b|\[\[{0}\]\]"
LABEL_VALUES = re.compile(r"^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$", re.S)


def grafana_to_promql(expr, constants):
    """`expr` with Grafana's built-in range variables and the dashboard's
    constants replaced, so it parses as PromQL."""
    expr = re.sub(r"\$\{?__(rate_interval|interval|range)\}?", "5m", expr)
    for name in constants:
        expr = re.sub(VARIABLE_REF.format(re.escape(name)), "1", expr)
    return expr


def nodes(expr, kind):
    """Every node of type `kind` in the parsed `expr`."""
    found = []
    promql_parser.walk(expr, lambda n: found.append(n) if isinstance(n, kind) else None)
    return found


def dropped_fleet_labels(expr):
    """Why `expr` may sum several fleets together, one line per place."""
    problems = []
    for agg in nodes(expr, promql_parser.AggregateExpr):
        mod = agg.modifier
        if mod is None:
            problems.append(f"`{agg}` aggregates without `by ({', '.join(FLEET_LABELS)})`")
        elif mod.type == promql_parser.AggModifierType.By:
            missing = [l for l in FLEET_LABELS if l not in mod.labels]
            if missing:
                problems.append(f"`{agg}` drops {', '.join(missing)}")
        elif any(l in mod.labels for l in FLEET_LABELS):
            problems.append(f"`{agg}` aggregates away {', '.join(l for l in FLEET_LABELS if l in mod.labels)}")
    for binary in nodes(expr, promql_parser.BinaryExpr):
        matching = binary.modifier.matching if binary.modifier else None
        if matching is not None and matching.type == promql_parser.LabelModifierType.Include:
            missing = [l for l in FLEET_LABELS if l not in matching.labels]
            if missing:
                problems.append(f"`{binary}` matches on labels without {', '.join(missing)}")
    return problems


def runbook_anchors(path):
    """GitHub's anchors of the headings of the runbook."""
    anchors = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^a-z0-9 _-]", "", title).replace(" ", "-"))
    return anchors


def check_rules(path, runbook=ROOT / "docs/runbook.md"):
    """Problems of the alert rules file at `path`."""
    problems = []
    anchors = runbook_anchors(runbook)
    doc = yaml.safe_load(pathlib.Path(path).read_text(encoding="utf-8"))
    for group in doc.get("groups", []):
        for rule in group.get("rules", []):
            name = rule.get("alert") or rule.get("record")
            try:
                expr = promql_parser.parse(rule["expr"])
            except ValueError as e:
                problems.append(f"{path}: {name}: does not parse: {e}")
                continue
            problems.extend(f"{path}: {name}: {p}" for p in dropped_fleet_labels(expr))
            if "alert" not in rule:
                continue
            url = rule.get("annotations", {}).get("runbook_url", "")
            base, _, fragment = url.partition("#")
            if not re.match(r"^https?://[^/#]+/", base):
                problems.append(f"{path}: {name}: runbook_url {url!r} is not an absolute http(s) URL")
            if fragment != name.lower():
                problems.append(f"{path}: {name}: runbook_url {url!r} does not end in #{name.lower()}")
            elif fragment not in anchors:
                problems.append(f"{path}: {name}: {runbook.name} has no section #{fragment}")
    return problems


def panel_targets(panels):
    for panel in panels:
        yield panel, panel.get("targets", [])
        yield from panel_targets(panel.get("panels", []))


def unfiltered(expr, fleet):
    """Selectors of `expr` that do not filter by every variable of `fleet`
    (name -> whether it allows several values)."""
    problems = []
    for selector in nodes(expr, promql_parser.VectorSelector):
        matchers = {m.name: m for m in selector.matchers.matchers}
        for name, multi in fleet.items():
            m = matchers.get(name)
            ops = (promql_parser.MatchOp.Re,) if multi else (promql_parser.MatchOp.Equal, promql_parser.MatchOp.Re)
            if m is None or m.op not in ops or not re.fullmatch(VARIABLE_REF.format(name), m.value):
                want = f'{name}=~"${name}"' if multi else f'{name}="${name}"'
                problems.append(f"`{selector}` is not filtered by {want}")
    return problems


def check_variables(path, variables):
    """The fleet variables exist and `cluster` and `namespace` pick one
    fleet; returns their multi-value flags by name."""
    problems = []
    fleet = {}
    by_name = {v.get("name"): v for v in variables}
    for name in FLEET_VARIABLES:
        var = by_name.get(name)
        if var is None or var.get("type") != "query":
            problems.append(f"{path}: declares no `{name}` query variable")
            continue
        multi = bool(var.get("multi") or var.get("includeAll"))
        if multi and name in FLEET_LABELS:
            problems.append(f"{path}: `{name}` allows several values, so panels would sum fleets together")
        query = var.get("query", "")
        query = query.get("query", "") if isinstance(query, dict) else query
        got = LABEL_VALUES.match(query)
        if not got or got[2] != name:
            problems.append(f"{path}: `{name}` is not `label_values(..., {name})`")
        fleet[name] = multi
    return problems, fleet


def check_dashboard(path):
    """Problems of the Grafana dashboard at `path`."""
    dash = json.loads(pathlib.Path(path).read_text(encoding="utf-8"))
    variables = dash.get("templating", {}).get("list", [])
    problems, fleet = check_variables(path, variables)
    constants = [v["name"] for v in variables if v.get("type") == "constant"]
    queries = []
    for panel, targets in panel_targets(dash.get("panels", [])):
        for target in targets:
            if "expr" in target:
                queries.append((f"panel {panel.get('title')!r}", target["expr"], fleet))
    # Each variable's own query filters by the fleet variables before it.
    for i, var in enumerate(variables):
        got = LABEL_VALUES.match(var.get("query", "")) if isinstance(var.get("query"), str) else None
        if var.get("type") == "query" and got:
            before = {n: m for n, m in fleet.items() if any(v.get("name") == n for v in variables[:i])}
            queries.append((f"variable `{var['name']}`", got[1], before))
    for where, text, filters in queries:
        try:
            expr = promql_parser.parse(grafana_to_promql(text, constants))
        except ValueError as e:
            problems.append(f"{path}: {where}: does not parse: {e}")
            continue
        problems.extend(f"{path}: {where}: {p}" for p in unfiltered(expr, filters))
    used_by_panels = json.dumps(dash.get("panels", []))
    for var in variables:
        name = var.get("name", "")
        if not re.search(VARIABLE_REF.format(re.escape(name)), used_by_panels):
            problems.append(f"{path}: variable `{name}` is used by no panel")
    return problems


def check(paths):
    problems = []
    for path in paths:
        problems.extend(check_dashboard(path) if str(path).endswith(".json") else check_rules(path))
    return problems


def main(paths):
    problems = check(paths)
    for p in problems:
        print(p, file=sys.stderr)
    print(f"fleet labels: {len(paths)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
