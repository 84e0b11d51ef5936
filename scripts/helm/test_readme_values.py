"""readme_values.py finds the keys a README names and refuses those that
values.yaml lacks (run by check_chart.py before it checks the READMEs)."""

import json
import unittest

import chart_sources
import readme_values

VALUES = (chart_sources.CHART / "values.yaml").read_text()
SCHEMA = json.loads((chart_sources.CHART / "values.schema.json").read_text())

README = """# x

## Deployment

```sh
helm install fleet helm/deepfleet --set rabbitmq.existingSecret=broker \\
  --set 'providerSecrets[0].env=OPENAI_API_KEY,providerSecrets[0].secretName=openai' \\
  --set worker.autoscaling.mod=keda
```

KEDA watches `config.queueName`; set `metrics.prometheusRule.runbookUrl` and
`agents.briefings.model`; submissions go to `deepfleet.steps.submissions`.

## Other

`config.notInDeployment` is outside the section.
"""


class ReadmeValues(unittest.TestCase):
    def test_set_arguments_and_comma_lists_are_split(self):
        self.assertEqual(
            readme_values.set_keys(README),
            ["rabbitmq.existingSecret", "providerSecrets[0].env", "providerSecrets[0].secretName",
             "worker.autoscaling.mod"],
        )

    def test_only_backticked_values_keys_of_the_deployment_section_count(self):
        section = readme_values.section(README, "Deployment")
        keys = readme_values.prose_keys(section, {"config", "metrics", "agents"})
        self.assertEqual(keys, ["config.queueName", "metrics.prometheusRule.runbookUrl", "agents.briefings.model"])

    def test_unknown_keys_are_refused_and_known_ones_pass(self):
        got = readme_values.problems({"README.md": README}, VALUES, SCHEMA)
        self.assertEqual(
            got,
            [("README.md", "worker.autoscaling.mod: no such value in values.yaml"),
             ("README.md", "metrics.prometheusRule.runbookUrl: no such value in values.yaml")],
        )

    def test_maps_and_lists_resolve_through_the_schema(self):
        values = readme_values.yaml.safe_load(VALUES)
        for key in ("agents.support.model", "config.providers.openai.baseUrl", "providerSecrets[0].secretKey",
                    "metrics.prometheusRule.runbookBaseUrl"):
            self.assertIsNone(readme_values.missing(key, values, SCHEMA), key)
        self.assertIsNotNone(readme_values.missing("config.providers.openai.apiKey", values, SCHEMA))
        self.assertIsNotNone(readme_values.missing("worker[0]", values, SCHEMA))


if __name__ == "__main__":
    unittest.main()
