"""The image and compose checks of `make helm`.

- hadolint over deploy/Dockerfile, failing on any finding;
- deploy/compose.yaml against the compose specification's JSON schema
  (`compose/config/compose_spec.json` of the `docker-compose` package on
  PyPI, installed without its dependencies just for the file), then what
  the stack relies on: the services the issue lists, Redis with AOF, both
  RabbitMQ plugins, Prometheus loading deploy/prometheus/alerts.yml and
  Grafana the dashboards of deploy/grafana, every bind mount existing, the
  workers' stop grace period outlasting their drain;
- the compose agent specs against proto/schema/agent_spec.json;
- yamllint over the compose files.
"""

import importlib.util
import json
import pathlib
import re
import subprocess
import sys

import jsonschema
import yaml

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
VENV_BIN = pathlib.Path(sys.executable).parent
SERVICES = {"rabbitmq", "redis", "scheduler", "prometheus", "grafana"}
# worker.grace_secs by default (src/settings.rs).
WORKER_GRACE_SECS = 30


def compose_schema():
    spec = importlib.util.find_spec("compose")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the docker-compose package (for compose_spec.json) is not installed")
    path = pathlib.Path(list(spec.submodule_search_locations)[0]) / "config" / "compose_spec.json"
    return json.loads(path.read_text())


def seconds(duration):
    match = re.fullmatch(r"(\d+)s", str(duration))
    return int(match[1]) if match else 0


def check_dockerfile(fail):
    run = subprocess.run([VENV_BIN / "hadolint", "--failure-threshold", "style", str(DEPLOY / "Dockerfile")],
                         capture_output=True, text=True)
    fail.check(run.returncode == 0, f"hadolint deploy/Dockerfile: {run.stdout}{run.stderr}")


def mounts(service):
    """(source, target) of the service's bind mounts (relative sources)."""
    out = []
    for volume in service.get("volumes", []):
        source, target = volume.split(":")[:2]
        if source.startswith("."):
            out.append((source, target))
    return out


def check_compose(fail):
    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    schema = compose_schema()
    # The file declares draft 2019-09 (with a trailing `#` the library does
    # not recognise).
    validator = jsonschema.Draft201909Validator(schema)
    for error in validator.iter_errors(compose):
        fail.add(f"compose.yaml: {'/'.join(map(str, error.absolute_path))}: {error.message}")
    services = compose.get("services", {})
    fail.check(SERVICES <= services.keys(), f"compose.yaml: missing services {sorted(SERVICES - services.keys())}")
    workers = [s for name, s in services.items() if s.get("command", [None])[0] == "worker"]
    fail.check(len(workers) >= 2, "compose.yaml: fewer than two workers")
    for worker in workers:
        fail.check(seconds(worker.get("stop_grace_period")) > WORKER_GRACE_SECS,
                   "compose.yaml: a worker's stop_grace_period does not outlast its drain")
    redis = services.get("redis", {})
    fail.check("--appendonly" in redis.get("command", []) and "yes" in redis.get("command", []),
               "compose.yaml: Redis without AOF")
    plugins = (DEPLOY / "compose/rabbitmq/enabled_plugins").read_text()
    fail.check("rabbitmq_management" in plugins and "rabbitmq_prometheus" in plugins,
               "compose: RabbitMQ lacks the management or prometheus plugin")
    for name, service in services.items():
        for source, _ in mounts(service):
            fail.check((DEPLOY / source).exists(), f"compose.yaml: {name} mounts missing {source}")
    prometheus = services.get("prometheus", {})
    prom = dict(mounts(prometheus))
    config_target = prom.get("./compose/prometheus.yml")
    fail.check(f"--config.file={config_target}" in prometheus.get("command", []),
               "compose: Prometheus does not read deploy/compose/prometheus.yml")
    rule_files = yaml.safe_load((DEPLOY / "compose/prometheus.yml").read_text()).get("rule_files") or []
    fail.check(prom.get("./prometheus/alerts.yml") in rule_files,
               "compose: Prometheus does not load deploy/prometheus/alerts.yml")
    grafana = dict(mounts(services.get("grafana", {})))
    provider = yaml.safe_load((DEPLOY / "compose/grafana/dashboards.yaml").read_text())["providers"][0]
    fail.check(grafana.get("./grafana") == provider["options"]["path"],
               "compose: Grafana does not provision the dashboards of deploy/grafana")
    agent_schema = json.loads((ROOT / "proto/schema/agent_spec.json").read_text())
    for spec in sorted((DEPLOY / "compose/agents").glob("*.yaml")):
        try:
            jsonschema.validate(yaml.safe_load(spec.read_text()), agent_schema)
        except jsonschema.ValidationError as e:
            fail.add(f"{spec.relative_to(ROOT)}: {e.message}")
    lint = [DEPLOY / "compose.yaml", *sorted((DEPLOY / "compose").rglob("*.y*ml"))]
    run = subprocess.run([VENV_BIN / "yamllint", "-s", "-d", "{extends: default, rules: {line-length: {max: 200}, document-start: disable}}",
                          *map(str, lint)], capture_output=True, text=True)
    fail.check(run.returncode == 0, f"yamllint compose: {run.stdout}{run.stderr}")


def check(fail):
    check_dockerfile(fail)
    check_compose(fail)
