#!/usr/bin/env python3
"""`make helm`: lint, render and validate the chart, then the image and
compose files.

1. the chart's copies match their single sources, every value is
   documented and declared in values.schema.json (chart_sources.py,
   values_doc.py), and every value the READMEs name exists
   (readme_values.py);
2. `helm lint --strict` with every value set;
3. renders with every value set of helm/deepfleet/ci/ (plus the defaults),
   checks what the fleet relies on (the KEDA trigger watches the queue the
   workers consume, through the same broker Secret; the worker's grace
   period outlasts its drain; probes hit /healthz and /readyz; alerts and
   dashboards equal their sources) and the kinds each set expects;
   the rendered deepfleet.toml is loaded by the binary when one is built
   (`DEEPFLEET_BIN`, set by scripts/helm.sh);
4. `kubernetes-validate --strict` of every built-in manifest for several
   Kubernetes versions, and a structural check of the CRD kinds (KEDA,
   Prometheus Operator) whose schemas kubernetes-validate does not carry;
5. yamllint over the rendered output and the values files;
6. every file of helm/tests/broken/ is refused, with the error its
   `# expect:` line names;
7. hadolint over deploy/Dockerfile and deploy/compose.yaml against the
   compose specification's JSON schema (check_deploy.py).
"""

import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import tomllib
import unittest

import helm_python as helm
import yaml

import chart_sources
import check_deploy
import readme_values
import test_readme_values
import values_doc

ROOT = chart_sources.ROOT
CHART = chart_sources.CHART
VENV_BIN = pathlib.Path(sys.executable).parent
KUBE_VERSIONS = ["1.29.0", "1.33.0", "1.37.0"]
RELEASE, NAMESPACE = "fleet", "deepfleet"
YAMLLINT = (
    "{extends: default, rules: {document-start: disable, line-length: {max: 400},"
    " indentation: {indent-sequences: whatever}, comments: {min-spaces-from-content: 1}}}"
)
# Kinds without a schema in kubernetes-validate, with the fields their
# operators refuse to work without (dotted paths, `[]` = every item).
CRD_REQUIRED = {
    ("keda.sh/v1alpha1", "ScaledObject"): [
        "spec.scaleTargetRef.name", "spec.triggers[].type", "spec.triggers[].metadata.queueName",
        "spec.triggers[].authenticationRef.name",
    ],
    ("keda.sh/v1alpha1", "TriggerAuthentication"): [
        "spec.secretTargetRef[].parameter", "spec.secretTargetRef[].name", "spec.secretTargetRef[].key",
    ],
    ("monitoring.coreos.com/v1", "ServiceMonitor"): ["spec.selector.matchLabels", "spec.endpoints[].port"],
    ("monitoring.coreos.com/v1", "PrometheusRule"): ["spec.groups[].name", "spec.groups[].rules[].expr"],
}


class Failures:
    def __init__(self):
        self.items = []

    def add(self, what):
        self.items.append(what)
        print(f"FAIL {what}", file=sys.stderr)

    def check(self, ok, what):
        if not ok:
            self.add(what)


def value_sets():
    """(name, values, expected kinds, forbidden kinds) of every value set."""
    sets = [("defaults", {}, set(), {"ScaledObject", "HorizontalPodAutoscaler"})]
    for path in sorted((CHART / "ci").glob("*-values.yaml")):
        text = path.read_text()
        want = set(re.findall(r"^# expect-kinds: (.*)$", text, re.M)[0].split(",")) if "# expect-kinds:" in text else set()
        deny = set(re.findall(r"^# deny-kinds: (.*)$", text, re.M)[0].split(",")) if "# deny-kinds:" in text else set()
        sets.append((path.stem, yaml.safe_load(text) or {}, {k.strip() for k in want}, {k.strip() for k in deny}))
    return sets


def render(values):
    with helm.Chart.load(str(CHART)) as chart:
        return chart.render(values, name=RELEASE, namespace=NAMESPACE)


def documents(rendered):
    docs = []
    for path, text in sorted(rendered.items()):
        if path.endswith("NOTES.txt"):
            continue
        docs.extend(d for d in yaml.safe_load_all(text) if d)
    return docs


def field(doc, dotted):
    """Values at `dotted` in `doc` (`a.b[].c`); empty when missing."""
    nodes = [doc]
    for part in dotted.split("."):
        many = part.endswith("[]")
        key = part[:-2] if many else part
        nxt = []
        for node in nodes:
            if isinstance(node, dict) and key in node:
                value = node[key]
                if many:
                    nxt.extend(value if isinstance(value, list) else [])
                else:
                    nxt.append(value)
        nodes = nxt
    return [n for n in nodes if n not in (None, "", [], {})]


def by_kind(docs, kind, suffix=""):
    return [d for d in docs if d["kind"] == kind and d["metadata"]["name"].endswith(suffix)]


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def check_invariants(name, values, docs, fail):
    """What the fleet relies on, whatever the values."""
    config = by_kind(docs, "ConfigMap", "-config")[0]
    toml = config["data"]["deepfleet.toml"]
    settings = tomllib.loads(toml)
    queue_name = settings["queue_name"]
    grace = settings["worker"]["grace_secs"]
    worker = by_kind(docs, "Deployment", "-worker")[0]
    pod = worker["spec"]["template"]["spec"]
    container = pod["containers"][0]
    fail.check(pod["terminationGracePeriodSeconds"] > grace, f"{name}: worker grace period does not outlast grace_secs")
    scheduler_grace = settings["scheduler"]["grace_secs"]
    for scheduler in by_kind(docs, "Deployment", "-scheduler"):
        fail.check(scheduler["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > scheduler_grace,
                   f"{name}: scheduler grace period does not outlast scheduler.grace_secs")
    port = container["ports"][0]["containerPort"]
    fail.check(f"0.0.0.0:{port}" in container["args"], f"{name}: worker does not listen on its container port")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        for deployment in by_kind(docs, "Deployment"):
            got = deployment["spec"]["template"]["spec"]["containers"][0][probe]["httpGet"]["path"]
            fail.check(got == path, f"{name}: {deployment['metadata']['name']} {probe} is {got}, not {path}")
    for deployment in by_kind(docs, "Deployment"):
        sc = deployment["spec"]["template"]["spec"]["containers"][0]["securityContext"]
        fail.check(sc.get("readOnlyRootFilesystem") and sc.get("capabilities", {}).get("drop") == ["ALL"],
                   f"{name}: {deployment['metadata']['name']} is not restricted")
    queue_ref = env_of(container)["DEEPFLEET__QUEUE"]["valueFrom"]["secretKeyRef"]
    for scaled in by_kind(docs, "ScaledObject"):
        trigger = scaled["spec"]["triggers"][0]
        fail.check(trigger["metadata"]["queueName"] == queue_name, f"{name}: KEDA watches another queue than {queue_name}")
        fail.check(scaled["spec"]["scaleTargetRef"]["name"] == worker["metadata"]["name"], f"{name}: KEDA scales another Deployment")
        auth = by_kind(docs, "TriggerAuthentication")[0]["spec"]["secretTargetRef"][0]
        fail.check({"name": auth["name"], "key": auth["key"]} == queue_ref, f"{name}: KEDA reads another broker Secret than the workers")
    if by_kind(docs, "ScaledObject") or by_kind(docs, "HorizontalPodAutoscaler"):
        fail.check("replicas" not in worker["spec"], f"{name}: an autoscaled Deployment sets replicas")
    check_encryption(name, values, docs, fail)
    check_api_keys(name, values, docs, fail)
    check_alerts(name, values, docs, fail)
    for dashboards in by_kind(docs, "ConfigMap", "-dashboards"):
        source = {p.name: p.read_text() for p in (ROOT / "deploy/grafana").glob("*.json")}
        got = {k: v for k, v in dashboards["data"].items()}
        fail.check({k: json.loads(v) for k, v in got.items()} == {k: json.loads(v) for k, v in source.items()},
                   f"{name}: dashboards ConfigMap differs from deploy/grafana")


def check_encryption(name, values, docs, fail):
    """Encryption at rest is on in every pod exactly when a keyring Secret
    is given: a scheduler sealing under keys a worker lacks would leave
    runs the workers cannot read."""
    keyring = values.get("encryption", {})
    want = {"name": keyring["existingSecret"], "key": keyring.get("existingSecretKey", "keys")} \
        if keyring.get("existingSecret") else None
    for deployment in by_kind(docs, "Deployment"):
        env = env_of(deployment["spec"]["template"]["spec"]["containers"][0])
        got = env.get("DEEPFLEET__ENCRYPTION__KEYS", {}).get("valueFrom", {}).get("secretKeyRef")
        fail.check(got == want, f"{name}: {deployment['metadata']['name']} reads the keyring from {got}, not {want}")
        current = env.get("DEEPFLEET__ENCRYPTION__CURRENT", {}).get("value")
        fail.check(current == (keyring.get("current") or None) or want is None,
                   f"{name}: {deployment['metadata']['name']} seals under {current}")


def check_api_keys(name, values, docs, fail):
    """The scheduler listens on 0.0.0.0, so it reads API key lines (the
    given Secret's, else a generated admin key's) unless the values say
    `api.allowOpen`; workers never see the keys."""
    api = values.get("api", {})
    if api.get("allowOpen"):
        want = None
    elif api.get("existingSecret"):
        want = (api["existingSecret"], api.get("existingSecretKey", "keys"))
    elif not values.get("scheduler", {}).get("enabled", True):
        want = None
    else:
        want = (f"{RELEASE}-deepfleet-api-key", "keys")
        generated = by_kind(docs, "Secret", "-api-key")
        line = generated[0]["stringData"]["keys"].split() if generated else []
        key = generated[0]["stringData"]["api-key"] if generated else ""
        fail.check(len(line) == 3 and line[0] == hashlib.sha256(key.encode()).hexdigest() and line[1:] == ["default", "admin"],
                   f"{name}: the generated API key's line does not admit it as the default tenant's admin")
    for deployment in by_kind(docs, "Deployment"):
        pod = deployment["spec"]["template"]["spec"]
        env = env_of(pod["containers"][0])
        secrets = {(v["secret"]["secretName"], v["secret"]["items"][0]["key"]) for v in pod["volumes"] if "secret" in v}
        if deployment["metadata"]["name"].endswith("-scheduler"):
            fail.check((env.get("DEEPFLEET__API__KEYS_FILE") is not None) == (want is not None) and secrets == ({want} if want else set()),
                       f"{name}: the scheduler reads API keys from {secrets}, not {want}")
            fail.check((env.get("DEEPFLEET__API__ALLOW_OPEN", {}).get("value") == "true") == bool(api.get("allowOpen")),
                       f"{name}: the scheduler's allow_open differs from api.allowOpen")
        else:
            fail.check(not secrets and "DEEPFLEET__API__KEYS_FILE" not in env,
                       f"{name}: {deployment['metadata']['name']} mounts the API keys")


def check_alerts(name, values, docs, fail):
    """The PrometheusRule holds the alerts of deploy/prometheus/alerts.yml,
    their runbook links on the value set's runbookBaseUrl; the source links
    the chart's default, so compose's Prometheus and the chart agree."""
    default = yaml.safe_load((CHART / "values.yaml").read_text())["metrics"]["prometheusRule"]["runbookBaseUrl"]
    base = values.get("metrics", {}).get("prometheusRule", {}).get("runbookBaseUrl", default)
    source = yaml.safe_load((ROOT / "deploy/prometheus/alerts.yml").read_text())["groups"]
    for group in source:
        for alert in group["rules"]:
            url = alert.get("annotations", {}).get("runbook_url", "")
            fail.check(url.startswith(default + "#"), f"alerts.yml: {alert['alert']} does not link the chart's default runbook {default}")
            alert["annotations"]["runbook_url"] = f"{base}#{url.partition('#')[2]}"
    for rule in by_kind(docs, "PrometheusRule"):
        fail.check(rule["spec"]["groups"] == source, f"{name}: PrometheusRule differs from deploy/prometheus/alerts.yml")


def check_config_loads(name, docs, outdir, fail):
    """The rendered deepfleet.toml is TOML, and the binary (when built)
    accepts it: every command loads the settings first, and unknown keys
    are refused there."""
    toml = by_kind(docs, "ConfigMap", "-config")[0]["data"]["deepfleet.toml"]
    try:
        tomllib.loads(toml)
    except tomllib.TOMLDecodeError as e:
        fail.add(f"{name}: deepfleet.toml is not TOML: {e}")
        return
    binary = os.environ.get("DEEPFLEET_BIN", "")
    if not binary or not pathlib.Path(binary).exists():
        return
    path = outdir / f"{name}.toml"
    path.write_text(toml)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEEPFLEET")}
    run = subprocess.run([binary, "--config", str(path), "keygen"], capture_output=True, text=True, env=env)
    fail.check(run.returncode == 0, f"{name}: deepfleet refuses the rendered deepfleet.toml: {run.stderr}")


def check_crds(name, docs, fail):
    for doc in docs:
        required = CRD_REQUIRED.get((doc["apiVersion"], doc["kind"]))
        if required is None:
            continue
        for path in required:
            fail.check(field(doc, path), f"{name}: {doc['kind']} {doc['metadata']['name']} lacks {path}")


def kubernetes_validate(name, docs, outdir, fail):
    builtin = [d for d in docs if (d["apiVersion"], d["kind"]) not in CRD_REQUIRED]
    path = outdir / "builtin" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump_all(builtin, sort_keys=False))
    for version in KUBE_VERSIONS:
        run = subprocess.run([VENV_BIN / "kubernetes-validate", "--strict", "--quiet", "-k", version, str(path)],
                             capture_output=True, text=True)
        fail.check(run.returncode == 0, f"{name}: kubernetes-validate {version}: {run.stdout}{run.stderr}")


def yamllint(paths, fail):
    run = subprocess.run([VENV_BIN / "yamllint", "-s", "-d", YAMLLINT, *map(str, paths)], capture_output=True, text=True)
    fail.check(run.returncode == 0, f"yamllint: {run.stdout}{run.stderr}")


def check_broken(fail):
    broken = sorted((ROOT / "helm/tests/broken").glob("*.yaml"))
    fail.check(len(broken) >= 4, "fewer than four broken value sets in helm/tests/broken")
    for path in broken:
        text = path.read_text()
        expect = re.search(r"^# expect: (.*)$", text, re.M)
        if not expect:
            fail.add(f"{path.name}: no `# expect:` line")
            continue
        try:
            render(yaml.safe_load(text) or {})
        except Exception as e:  # helm_python raises its own error types
            fail.check(re.search(expect[1], str(e)), f"{path.name}: refused, but not with /{expect[1]}/: {e}")
            continue
        fail.add(f"{path.name}: rendered, but it should be refused")


def check_documented_values(fail):
    """Every value the READMEs name (`--set`, and the Deployment section's
    backticked keys) is in values.yaml (readme_values.py); the module's own
    tests run first, so a check that accepts anything fails here."""
    suite = unittest.defaultTestLoader.loadTestsFromModule(test_readme_values)
    result = unittest.TextTestRunner(stream=sys.stderr, verbosity=0).run(suite)
    fail.check(result.wasSuccessful(), "readme_values.py: its tests fail")
    readmes = {p.relative_to(ROOT).as_posix(): p.read_text() for p in (ROOT / "README.md", CHART / "README.md")}
    schema = json.loads((CHART / "values.schema.json").read_text())
    for readme, why in readme_values.problems(readmes, (CHART / "values.yaml").read_text(), schema):
        fail.add(f"{readme}: {why}")


def check_sources(fail):
    run = subprocess.run([sys.executable, str(pathlib.Path(__file__).with_name("chart_sources.py")), "--check"])
    fail.check(run.returncode == 0, "chart copies differ from their sources")
    values = CHART / "values.yaml"
    for leaf in values_doc.undocumented(values):
        fail.add(f"values.yaml: {leaf} has no `# --` description")
    for gap in values_doc.schema_gaps(values, json.loads((CHART / "values.schema.json").read_text())):
        fail.add(f"values.schema.json: {gap}")


def main():
    fail = Failures()
    check_sources(fail)
    check_documented_values(fail)
    with tempfile.TemporaryDirectory() as tmp:
        outdir = pathlib.Path(tmp)
        for name, values, want, deny in value_sets():
            lint = helm.lint(str(CHART), strict=True, values=values)
            fail.check(not lint["errors"], f"{name}: helm lint --strict: {lint['errors']}")
            rendered = render(values)
            docs = documents(rendered)
            # yamllint reads the output as Helm wrote it, not re-serialised.
            raw = [t for p, t in sorted(rendered.items()) if not p.endswith("NOTES.txt") and t.strip()]
            (outdir / f"{name}.yaml").write_text("---\n" + "\n---\n".join(t.strip("\n") for t in raw) + "\n")
            kinds = {d["kind"] for d in docs}
            fail.check(want <= kinds, f"{name}: missing kinds {sorted(want - kinds)}")
            fail.check(not deny & kinds, f"{name}: unexpected kinds {sorted(deny & kinds)}")
            check_invariants(name, values, docs, fail)
            check_crds(name, docs, fail)
            check_config_loads(name, docs, outdir, fail)
            kubernetes_validate(name, docs, outdir, fail)
            print(f"ok   {name}: {len(docs)} manifests ({', '.join(sorted(kinds))})")
        yamllint([*sorted(outdir.glob("*.yaml")), CHART / "values.yaml", *sorted((CHART / "ci").glob("*.yaml"))], fail)
    check_broken(fail)
    check_deploy.check(fail)
    if fail.items:
        print(f"make helm: {len(fail.items)} failure(s)", file=sys.stderr)
        return 1
    print("make helm: chart, image and compose checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
