"""The redacting snapshot writer: only what scheduling reads, a header first, JSON/YAML/gzip."""
import gzip
import io
import json

import pytest
import yaml

from builders import node, pod
from fake_apiserver import recorded
from kplan.errors import InputError
from kplan.sources.snapshot import load_snapshot
from kplan.sources.writer import format_for, redact, write_snapshot

HEADER = {"apiVersion": "kplan/v1alpha1", "kind": "KplanSnapshot",
          "metadata": {"context": "prod", "server": "https://127.0.0.1:6443", "kubeVersion": "v1.35.2",
                       "takenAt": "2026-11-22T14:00:00Z", "seconds": 1.5, "counts": {"nodes": 1, "pods": 1}}}
SECRETS = ("hunter2", "managedFields", "last-applied-configuration", "DB_PASSWORD", "secretKeyRef", "boot-secret",
           "192.168.0.7", "/bin/server")


def full_pod():
    p = pod("web", node_name="n1", requests={"cpu": "500m", "memory": "1Gi"}, limits={"cpu": "1"},
            spec={"tolerations": [{"key": "gpu", "operator": "Exists"}], "priorityClassName": "high",
                  "priority": 1000, "schedulerName": "default-scheduler",
                  "nodeSelector": {"pool": "general"},
                  "initContainers": [{"name": "sidecar", "image": "proxy:1", "restartPolicy": "Always",
                                      "resources": {"requests": {"cpu": "100m"}},
                                      "env": [{"name": "X", "value": "hunter2-init"}]}],
                  "overhead": {"cpu": "10m"}, "schedulingGates": [{"name": "wait"}],
                  "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                 "whenUnsatisfiable": "DoNotSchedule"}]})
    p["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 8080}]
    p["metadata"]["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1",
                                         "uid": "rs", "controller": True}]
    p["metadata"]["annotations"] = {"team": "shop"}
    p["status"] = {"phase": "Running", "startTime": "2026-11-01T09:00:00Z",
                   "conditions": [{"type": "PodScheduled", "status": "True"}]}
    return recorded(p, 1)


def test_pod_keeps_what_scheduling_reads_and_nothing_secret():
    out = redact(full_pod())
    text = json.dumps(out)
    assert not [s for s in SECRETS if s in text]
    assert out["metadata"]["annotations"] == {"team": "shop"} and out["metadata"]["ownerReferences"][0]["kind"] == \
        "ReplicaSet"
    spec = out["spec"]
    assert spec["containers"] == [{"name": "c", "image": "registry.example/app:1",
                                   "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                                 "limits": {"cpu": "1"}},
                                   "ports": [{"containerPort": 80, "hostPort": 8080}]}]
    assert spec["initContainers"][0] == {"name": "sidecar", "image": "proxy:1",
                                         "resources": {"requests": {"cpu": "100m"}}, "restartPolicy": "Always"}
    for key in ("tolerations", "priorityClassName", "priority", "schedulerName", "nodeSelector", "overhead",
                "schedulingGates", "topologySpreadConstraints", "nodeName"):
        assert key in spec, key
    assert spec["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}}]
    assert "serviceAccountName" not in spec and "dnsPolicy" not in spec
    assert out["status"] == {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}],
                             "startTime": "2026-11-01T09:00:00Z"}


def test_pod_keeps_local_storage_and_its_grace_period_for_scale_down():
    """emptyDir and hostPath volumes keep a pod on its node for cluster-autoscaler (kplan consolidate), and
    the grace period tells when a deleted pod no longer counts; secrets stay out."""
    p = full_pod()
    p["spec"]["terminationGracePeriodSeconds"] = 60
    p["spec"]["volumes"] += [{"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                             {"name": "logs", "hostPath": {"path": "/var/log", "type": "Directory"}}]
    out = redact(p)
    assert out["spec"]["volumes"][1:] == [{"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "1Gi"}},
                                          {"name": "logs", "hostPath": {"path": "/var/log", "type": "Directory"}}]
    assert out["spec"]["terminationGracePeriodSeconds"] == 60
    assert not [s for s in SECRETS if s in json.dumps(out)]


def test_pod_keeps_image_volumes_reference_and_pull_policy():
    """ImageLocality scores image volumes from 1.36 on; other volumes but claims stay out."""
    p = full_pod()
    p["spec"]["volumes"].append({"name": "models", "image": {"reference": "registry.example/models:v2",
                                                            "pullPolicy": "IfNotPresent"}})
    out = redact(p)
    assert out["spec"]["volumes"] == [
        {"name": "data", "persistentVolumeClaim": {"claimName": "data-0"}},
        {"name": "models", "image": {"reference": "registry.example/models:v2", "pullPolicy": "IfNotPresent"}}]
    assert not [s for s in SECRETS if s in json.dumps(out)]


def test_node_keeps_allocatable_taints_images_kubelet_version_not_addresses():
    n = node("n1", cpu="4", memory="8Gi", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}])
    n["status"]["images"] = [{"names": ["web:1"], "sizeBytes": 100}]
    out = redact(recorded(n, 2))
    assert out["spec"]["taints"] == [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    assert out["status"]["images"] == [{"names": ["web:1"], "sizeBytes": 100}]
    assert "addresses" not in out["status"]
    # Of node info only the kubelet's version: the release a snapshot without a server version answers as.
    assert out["status"]["nodeInfo"] == {"kubeletVersion": "v1.35.2"}
    assert not [s for s in SECRETS if s in json.dumps(out)]


def test_empty_last_applied_only_annotations_are_dropped():
    ns = recorded({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}}, 3)
    assert redact(ns) == {"apiVersion": "v1", "kind": "Namespace",
                          "metadata": {"name": "shop", "uid": "uid-00003", "creationTimestamp": "2026-11-01T09:00:00Z"}}


SELECTED = [
    {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop", "labels": {"t": "x"}},
     "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}], "type": "ClusterIP"}},
    {"apiVersion": "apps/v1", "kind": "ReplicaSet",
     "metadata": {"name": "web-5c0d", "namespace": "shop", "labels": {"app": "web"},
                  "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "d"}]},
     "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web", "pod-template-hash": "5c0d"}}}},
    {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": "shop"},
     "spec": {"replicas": 1, "serviceName": "db",
              "selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["db"]}]}}},
    {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "old", "namespace": "default"},
     "spec": {"replicas": 1, "selector": {"app": "old"}}},
]


def test_services_and_controllers_keep_identity_and_selector_only():
    """What PodTopologySpread's default selector reads, nothing else: no template (env, commands), no
    labels, annotations or owners."""
    for k, obj in enumerate(SELECTED):
        out = redact(recorded(obj, 10 + k))
        assert out == {"apiVersion": obj["apiVersion"], "kind": obj["kind"],
                       "metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"],
                                    "uid": f"uid-{10 + k:05d}"},
                       "spec": {"selector": obj["spec"]["selector"]}}
        assert not [s for s in SECRETS if s in json.dumps(out)]


@pytest.mark.parametrize("fmt", ["json", "yaml"])
def test_services_and_controllers_read_back(tmp_path, fmt):
    out = tmp_path / f"c.{fmt}"
    write_snapshot(HEADER, [recorded(o, k) for k, o in enumerate(SELECTED)], str(out), fmt)
    snap = load_snapshot([str(out)])
    assert not snap.skipped
    assert [(s.namespace, s.name, s.selector) for s in snap.services] == [("shop", "web", {"app": "web"})]
    assert {key: c.selector for key, c in snap.controllers.items()} == {
        ("ReplicaSet", "shop", "web-5c0d"): SELECTED[1]["spec"]["selector"],
        ("StatefulSet", "shop", "db"): SELECTED[2]["spec"]["selector"],
        ("ReplicationController", "default", "old"): {"app": "old"}}


@pytest.mark.parametrize("name,fmt", [("c.json", "json"), ("c.yaml", "yaml"), ("c.yml", "yaml"),
                                      ("c.json.gz", "json"), ("c.yaml.gz", "yaml")])
def test_written_file_reads_back_with_its_header(tmp_path, name, fmt):
    objects = [recorded(node("n1"), 0), full_pod()]
    out = tmp_path / name
    assert format_for(str(out), None) == fmt
    write_snapshot(HEADER, objects, str(out), fmt)
    raw = out.read_bytes()
    assert (raw[:2] == b"\x1f\x8b") == name.endswith(".gz")
    text = gzip.decompress(raw).decode() if name.endswith(".gz") else raw.decode()
    assert not [s for s in SECRETS if s in text]
    first = json.loads(text)["items"][0] if fmt == "json" else next(yaml.safe_load_all(text))
    assert first == HEADER
    snap = load_snapshot([str(out)])
    assert snap.header == HEADER["metadata"] and [p.key for p in snap.pods] == ["default/web"]
    assert snap.pods[0].requests == {"cpu": 610, "memory": 1 << 30}  # 500m + 100m sidecar + 10m overhead
    assert not list(tmp_path.glob(".*.tmp"))


def test_stdout_and_format_rules():
    buf = io.StringIO()
    write_snapshot(HEADER, [recorded(node("n1"), 0)], None, "json", stdout=buf)
    assert [o["kind"] for o in json.loads(buf.getvalue())["items"]] == ["KplanSnapshot", "Node"]
    assert format_for(None, None) == "json" and format_for(None, "yaml") == "yaml"
    assert format_for("dump.txt", None) == "json"
    with pytest.raises(InputError, match="-o yaml does not match the extension of --out c.json"):
        format_for("c.json", "yaml")


def test_unwritable_target_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot write"):
        write_snapshot(HEADER, [], str(tmp_path / "no" / "such" / "dir.json"), "json")


def dra_objects():
    from dra_builders import allocation, claim, device_class, exact, gpus, resource_slice, template
    cls = device_class()
    cls["spec"]["config"] = [{"opaque": {"driver": "gpu.example.com", "parameters": {"key": "hunter2-class"}}}]
    held = claim("c", exact(), allocated=allocation("n1", "gpu-0"), reserved_for=["web"])
    held["spec"]["devices"]["config"] = [{"opaque": {"driver": "gpu.example.com",
                                                     "parameters": {"token": "hunter2-claim"}}}]
    held["status"]["allocation"]["devices"]["config"] = held["spec"]["devices"]["config"]
    tpl = template("t", exact())
    tpl["spec"]["spec"]["devices"]["config"] = held["spec"]["devices"]["config"]
    return [cls, resource_slice("n1", gpus(2, model="t4")), held, tpl]


def test_dra_objects_keep_what_allocation_reads_and_no_driver_parameters(tmp_path):
    out = [redact(recorded(o, 20 + k)) for k, o in enumerate(dra_objects())]
    assert not [s for s in SECRETS if s in json.dumps(out)]
    cls, slc, held, tpl = out
    assert cls["spec"] == {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}
    assert slc["spec"]["devices"][1] == {"name": "gpu-1", "attributes": {"model": {"string": "t4"}}, "capacity": {}}
    assert held["status"]["allocation"]["devices"] == {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                                                    "pool": "n1", "device": "gpu-0"}]}
    assert held["status"]["reservedFor"] == [{"resource": "pods", "name": "web", "uid": "uid-default-web"}]
    assert tpl["spec"] == {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
        "deviceClassName": "gpu.example.com", "count": 1}}]}}}
    path = tmp_path / "s.json"
    write_snapshot(HEADER, [recorded(o, 20 + k) for k, o in enumerate(dra_objects())], str(path), "json")
    snap = load_snapshot([str(path)])
    assert not snap.skipped and snap.devices.claims[("default", "c")].allocation.results[0].device == "gpu-0"


ROLLED_OUT = [
    {"apiVersion": "apps/v1", "kind": "Deployment",
     "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
     "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "revisionHistoryLimit": 10,
              "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 0}}}},
    {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": "kube-system"},
     "spec": {"selector": {"matchLabels": {"app": "agent"}},
              "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}}},
]
AUTOSCALER = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
              "metadata": {"name": "web", "namespace": "shop", "labels": {"team": "x"}},
              "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                       "minReplicas": 2, "maxReplicas": 9,
                       "metrics": [{"type": "External", "external": {"metric": {"name": "queue-hunter2"}}}]},
              "status": {"currentReplicas": 3, "desiredReplicas": 4, "currentMetrics": [{"type": "External"}]}}


def test_rolled_out_workloads_and_autoscalers_keep_what_check_reads(tmp_path):
    """Deployments and DaemonSets: identity, selector, replicas and update strategy (no template with its
    env and commands); HPAs: their target and bounds, not their metrics."""
    for k, obj in enumerate(ROLLED_OUT):
        out = redact(recorded(obj, 20 + k))
        spec = {key: obj["spec"][key] for key in ("selector", "replicas", "strategy", "updateStrategy")
                if key in obj["spec"]}
        assert out == {"apiVersion": "apps/v1", "kind": obj["kind"],
                       "metadata": {"name": obj["metadata"]["name"], "namespace": obj["metadata"]["namespace"],
                                    "uid": f"uid-{20 + k:05d}"}, "spec": spec}
        assert not [s for s in SECRETS if s in json.dumps(out)]
    out = redact(recorded(AUTOSCALER, 30))
    assert out["spec"] == {"scaleTargetRef": AUTOSCALER["spec"]["scaleTargetRef"], "minReplicas": 2, "maxReplicas": 9}
    assert out["status"] == {"currentReplicas": 3, "desiredReplicas": 4} and "labels" not in out["metadata"]
    path = tmp_path / "w.json"
    write_snapshot(HEADER, [recorded(o, k) for k, o in enumerate([*ROLLED_OUT, AUTOSCALER])], str(path), "json")
    snap = load_snapshot([str(path)])
    assert [o["metadata"]["name"] for o in snap.objects["Deployment"]] == ["web"]
    assert [(h.target, h.min_replicas, h.max_replicas) for h in snap.hpas] == [(("Deployment", "shop", "web"), 2, 9)]


def test_an_invalid_autoscaler_in_a_dump_is_one_line(tmp_path):
    bad = {**AUTOSCALER, "spec": {**AUTOSCALER["spec"], "minReplicas": 5, "maxReplicas": 3}}
    path = tmp_path / "hpa.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(InputError, match=r'HorizontalPodAutoscaler "web": spec.maxReplicas: Invalid value: 3: must be '
                                         r'greater than or equal to `minReplicas`'):
        load_snapshot([str(path)])
