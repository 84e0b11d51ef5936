"""The fleet-label checks pass on the project's alerts and dashboards and
refuse every example of broken/, with the problem its `expect:` names (a
`# expect:` line in rules, the `description` of a dashboard)."""

import json
import pathlib
import re
import unittest

import fleet_labels

ROOT = fleet_labels.ROOT
BROKEN = pathlib.Path(__file__).with_name("broken")


def expected(path):
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".json":
        return json.loads(text)["description"].removeprefix("expect: ")
    return re.search(r"^# expect: (.*)$", text, re.M)[1]


class FleetLabels(unittest.TestCase):
    def test_the_project_sources_pass(self):
        sources = [ROOT / "deploy/prometheus/alerts.yml", *sorted((ROOT / "deploy/grafana").glob("*.json"))]
        self.assertGreater(len(sources), 1)
        self.assertEqual(fleet_labels.check(sources), [])

    def test_every_broken_example_is_refused_for_its_reason(self):
        examples = sorted(BROKEN.glob("*.json")) + sorted(BROKEN.glob("*.yml"))
        self.assertGreaterEqual(len(examples), 8)
        for path in examples:
            with self.subTest(example=path.name):
                problems = fleet_labels.check([path])
                self.assertTrue(problems, f"{path.name} passed the check")
                want = expected(path)
                self.assertTrue(any(re.search(want, p) for p in problems),
                                f"{path.name}: no problem matches /{want}/: {problems}")

    def test_a_dropped_label_is_named(self):
        expr = fleet_labels.promql_parser.parse("sum by (cluster) (x) / count without (namespace) (y)")
        problems = fleet_labels.dropped_fleet_labels(expr)
        self.assertEqual(len(problems), 2, problems)
        self.assertIn("drops namespace", problems[0])
        self.assertIn("aggregates away namespace", problems[1])

    def test_grafana_ranges_and_constants_become_promql(self):
        got = fleet_labels.grafana_to_promql("rate(x[$__rate_interval]) * $price + ${price}", ["price"])
        self.assertEqual(got, "rate(x[5m]) * 1 + 1")


if __name__ == "__main__":
    unittest.main()
