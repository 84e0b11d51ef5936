#!/usr/bin/env python3
"""Renders the chart as `helm template` does, for tests that run what it
renders (tests/image): values files (`-f`, in order) over the chart's
defaults, then `--set` expressions, release `fleet` in namespace
`deepfleet` like `make helm`. Prints the manifests as one JSON array.

Usage: .venv-k8s/bin/python scripts/helm/render.py [-f VALUES]... [--set K=V]...
"""

import argparse
import json
import sys

import helm_python as helm
import yaml

import check_chart


def merge(base, over):
    """`over` merged into `base` as Helm merges values: maps key by key,
    anything else replaced."""
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            merge(base[key], value)
        else:
            base[key] = value
    return base


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-f", "--values", action="append", default=[], help="a values file")
    parser.add_argument("--set", action="append", default=[], help="a --set expression")
    args = parser.parse_args()
    values = {}
    for path in args.values:
        with open(path, encoding="utf-8") as f:
            merge(values, yaml.safe_load(f) or {})
    for expression in args.set:
        merge(values, helm.parse_set_string(expression))
    json.dump(check_chart.documents(check_chart.render(values)), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
