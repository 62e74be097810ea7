"""Manifests as kubectl sees them, through the command line: unknown and repeated fields refused as the
API server's strict field validation refuses them (--validate strict, the default), or warned about
(warn) or dropped (ignore); workloads the apps and batch validation would refuse; on every command
that reads manifests or --add-node files. Exit 2 and one line naming file, object and fields."""
import copy
import json
from functools import partial
from pathlib import Path

import pytest
import yaml

from run_kplan import run_kplan

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = str(ROOT / "samples" / "cluster.yaml")
NODE = yaml.safe_load((ROOT / "samples" / "check" / "node-c-large.yaml").read_text())
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "mism", "namespace": "team-03"},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "mism"}},
                       "template": {"metadata": {"labels": {"app": "mism"}},
                                    "spec": {"containers": [{"name": "main", "image": "registry.example/app:1",
                                                             "resources": {"requests": {"cpu": "100m"}}}]}}}}

kplan = partial(run_kplan, columns=120)


def changed(mutate, doc=DEPLOYMENT):
    doc = copy.deepcopy(doc)
    mutate(doc)
    return doc


def write(tmp_path, doc, name="deploy.yaml") -> str:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return str(path)


def assert_one_error(code, out, err, expected):
    assert code == 2 and out == "", (code, out, err)
    assert "Traceback" not in err and err.strip() == f"kplan: error: {expected}", err


# The false passes of the issue: each answered "ok" before.
ISSUE = {
    "selector does not match the template": (
        lambda d: d["spec"]["template"]["metadata"].update(labels={"app": "web"}),
        'Deployment "mism": spec.template.metadata.labels: Invalid value: map[string]string{"app":"web"}: '
        "`selector` does not match template `labels`"),
    "no selector": (lambda d: d["spec"].pop("selector"), 'Deployment "mism": spec.selector: Required value'),
    "requests beside resources": (
        lambda d: d["spec"]["template"]["spec"]["containers"][0].update(
            requests=d["spec"]["template"]["spec"]["containers"][0].pop("resources")["requests"]),
        'Deployment "mism": strict decoding error: unknown field "spec.template.spec.containers[0].requests"'),
    "nodeselector": (
        lambda d: d["spec"]["template"]["spec"].update(nodeselector={"pool": "gpu"}),
        'Deployment "mism": strict decoding error: unknown field "spec.template.spec.nodeselector"'),
}


def test_the_valid_deployment_fits(tmp_path):
    code, out, err = kplan("check", write(tmp_path, DEPLOYMENT), "-f", CLUSTER)
    assert code == 0 and "Deployment/team-03/mism" in out, err


@pytest.mark.parametrize("case", list(ISSUE))
def test_what_the_api_server_refuses_is_an_input_error(tmp_path, case):
    mutate, expected = ISSUE[case]
    path = write(tmp_path, changed(mutate))
    assert_one_error(*kplan("check", path, "-f", CLUSTER), f"{path}: {expected}")


def test_validate_warn_and_ignore(tmp_path):
    mutate, _ = ISSUE["nodeselector"]
    path = write(tmp_path, changed(mutate))
    for flag in ("warn",):
        code, out, err = kplan("check", path, "-f", CLUSTER, "--validate", flag)
        assert code == 0 and "mism" in out
        assert err.splitlines() == [f'kplan: warning: {path}: Deployment "mism": unknown field '
                                    '"spec.template.spec.nodeselector"']
    for flag in ("ignore", "false"):
        code, out, err = kplan("check", path, "-f", CLUSTER, "--validate", flag)
        assert code == 0 and "mism" in out and err == "", err
    assert_one_error(*kplan("check", path, "-f", CLUSTER, "--validate", "true"),
                     f'{path}: Deployment "mism": strict decoding error: unknown field '
                     '"spec.template.spec.nodeselector"')
    # --validate is about fields only: what the API server's validation refuses stays refused.
    path = write(tmp_path, changed(ISSUE["no selector"][0]), "no-selector.yaml")
    assert_one_error(*kplan("check", path, "-f", CLUSTER, "--validate", "ignore"),
                     f'{path}: Deployment "mism": spec.selector: Required value')


def test_a_bad_validate_value(tmp_path):
    assert_one_error(*kplan("check", write(tmp_path, DEPLOYMENT), "-f", CLUSTER, "--validate", "loose"),
                     'invalid - validate option "loose"; must be one of: strict (or true), warn, ignore (or false)')


def test_repeated_fields_in_yaml_and_json(tmp_path):
    text = yaml.safe_dump(DEPLOYMENT, sort_keys=False).replace("  replicas: 2\n", "  replicas: 2\n  replicas: 3\n")
    path = tmp_path / "dupe.yaml"
    path.write_text(text)
    assert_one_error(*kplan("check", str(path), "-f", CLUSTER),
                     f'{path}: Deployment "mism": strict decoding error: duplicate field "spec.replicas"')
    text = json.dumps(DEPLOYMENT).replace('"image": "registry.example/app:1"',
                                          '"image": "registry.example/app:1", "image": "registry.example/app:2"')
    path = tmp_path / "dupe.json"
    path.write_text(text)
    assert_one_error(*kplan("check", str(path), "-f", CLUSTER),
                     f'{path}: Deployment "mism": strict decoding error: duplicate field '
                     '"spec.template.spec.containers[0].image"')
    code, out, err = kplan("check", str(path), "-f", CLUSTER, "--validate", "warn")
    assert code == 0 and err.strip().endswith('duplicate field "spec.template.spec.containers[0].image"'), err


def test_every_object_of_a_manifest_file_is_checked(tmp_path):
    config_map = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "dta": {"a": "b"}}
    path = tmp_path / "all.yaml"
    path.write_text(yaml.safe_dump_all([DEPLOYMENT, config_map], sort_keys=False))
    assert_one_error(*kplan("check", str(path), "-f", CLUSTER),
                     f'{path} (document 2): ConfigMap "cfg": strict decoding error: unknown field "dta"')
    typo = {"apiVersion": "apps/v1", "kind": "Deploymnet", "metadata": {"name": "web"}}
    path.write_text(yaml.safe_dump_all([DEPLOYMENT, typo], sort_keys=False))
    assert_one_error(*kplan("check", str(path), "-f", CLUSTER),
                     f'{path} (document 2): Deploymnet "web": no matches for kind "Deploymnet" in version "apps/v1"')


POD = yaml.safe_load((ROOT / "samples" / "pod-burstable.yaml").read_text())
BAD_POD = changed(lambda d: d["spec"].update(nodeselector={"pool": "gpu"}), POD)
BAD_POD_ERROR = 'Pod "web-new": strict decoding error: unknown field "spec.nodeselector"'
BAD_NODE = changed(lambda d: d["status"].update(alocatable={"cpu": "8"}), NODE)
BAD_NODE_ERROR = 'Node "node-c-large": strict decoding error: unknown field "status.alocatable"'


@pytest.mark.parametrize("command", [
    lambda pod, node: ["place", pod, "-f", CLUSTER],
    lambda pod, node: ["check", pod, "-f", CLUSTER],
    lambda pod, node: ["capacity", pod, "-f", CLUSTER],
    lambda pod, node: ["compare", pod, "-f", CLUSTER, "--kube-version", "1.35", "--kube-version", "1.36"],
    lambda pod, node: ["quota", "check", pod, "-f", CLUSTER],
    lambda pod, node: ["nodes", "-f", CLUSTER, "--after", pod],
    lambda pod, node: ["nodes", "-f", CLUSTER, "--usage", "--pod", pod],
], ids=["place", "check", "capacity", "compare", "quota check", "nodes --after", "nodes --usage --pod"])
def test_every_command_reading_manifests(tmp_path, command):
    pod = write(tmp_path, BAD_POD, "pod.yaml")
    assert_one_error(*kplan(*command(pod, None)), f"{pod}: {BAD_POD_ERROR}")
    code, _, err = kplan(*command(pod, None), "--validate", "warn")
    assert code in (0, 1) and f"kplan: warning: {pod}: Pod \"web-new\": unknown field \"spec.nodeselector\"" in err


@pytest.mark.parametrize("command", [
    lambda pod, node: ["place", pod, "-f", CLUSTER, "--add-node", node],
    lambda pod, node: ["check", pod, "-f", CLUSTER, "--add-node", f"{node}:auto"],
    lambda pod, node: ["capacity", pod, "-f", CLUSTER, "--add-node", f"{node}:2"],
    lambda pod, node: ["nodes", "-f", CLUSTER, "--add-node", node],
    lambda pod, node: ["quota", "status", "-f", CLUSTER, "--add-node", node],
    lambda pod, node: ["compare", pod, "-f", CLUSTER, "--variant", f"big=--add-node {node}", "--variant", "as-is="],
], ids=["place", "check :auto", "capacity", "nodes", "quota status", "compare variant"])
def test_every_add_node(tmp_path, command):
    pod = write(tmp_path, POD, "pod.yaml")
    node = write(tmp_path, BAD_NODE, "node.yaml")
    assert_one_error(*kplan(*command(pod, node)), f"{node}: {BAD_NODE_ERROR}")
    code, _, err = kplan(*command(pod, node), "--validate", "ignore")
    assert code in (0, 1) and "alocatable" not in err, err


def test_storage_objects_among_the_manifests_are_checked_too(tmp_path):
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "team-03"},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClass": "fast",
                      "resources": {"requests": {"storage": "1Gi"}}}}
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump_all([DEPLOYMENT, claim], sort_keys=False))
    assert_one_error(*kplan("check", str(path), "-f", CLUSTER),
                     f'{path} (document 2): PersistentVolumeClaim "data": strict decoding error: unknown field '
                     '"spec.storageClass"')
    cache = yaml.safe_load((ROOT / "samples" / "storage" / "cache.yaml").read_text())
    cache["spec"]["volumeClaimTemplates"][0]["spec"]["acessModes"] = ["ReadWriteOnce"]
    path = write(tmp_path, cache, "cache.yaml")
    assert_one_error(*kplan("check", path, "-f", str(ROOT / "samples" / "storage" / "cluster.yaml")),
                     f'{path}: StatefulSet "cache": strict decoding error: unknown field '
                     '"spec.volumeClaimTemplates[0].spec.acessModes"')
