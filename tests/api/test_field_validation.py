"""Strict field validation (kplan.api.field_validation): the API server's fieldValidation=Strict, from
the kubernetes client's models. Expectations come from kubernetes' own table
(test/integration/apiserver/field_validation_test.go, testFieldValidationPost) and by hand."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

from kplan.api import field_validation
from kplan.api.field_validation import (
    IGNORE, STRICT, WARN, FieldValidation, field_errors, model_of, parse_flag,
)
from kplan.api.validation import Invalid
from kplan.errors import InputError
from kplan.sources.files import _parse

ROOT = Path(__file__).resolve().parents[2]

# kubernetes' invalidBodyJSON: unknown and repeated fields at every depth.
UPSTREAM_BODY = """{
  "apiVersion": "apps/v1", "kind": "Deployment",
  "metadata": {"name": "dupe", "name": "dupe", "unknownMeta": "metaVal", "labels": {"app": "nginx"}},
  "spec": {
    "unknown1": "val1", "unknownDupe": "valDupe", "unknownDupe": "valDupe2",
    "paused": true, "paused": false,
    "selector": {"matchLabels": {"app": "nginx"}},
    "template": {"metadata": {"labels": {"app": "nginx"}},
      "spec": {"containers": [{"name": "nginx", "image": "nginx:latest", "unknownNested": "val1",
                               "imagePullPolicy": "Always", "imagePullPolicy": "Never"}]}}}}"""
UPSTREAM_ERRORS = ('duplicate field "metadata.name", unknown field "metadata.unknownMeta", unknown field '
                   '"spec.unknown1", unknown field "spec.unknownDupe", duplicate field "spec.paused", unknown field '
                   '"spec.template.spec.containers[0].unknownNested", duplicate field '
                   '"spec.template.spec.containers[0].imagePullPolicy"')


def manifest(text: str):
    (doc,) = _parse(text.encode(), "m", manifests=True)
    return doc


def test_upstream_table_json():
    assert ", ".join(field_errors(manifest(UPSTREAM_BODY))) == UPSTREAM_ERRORS


def test_upstream_table_yaml():
    # The same body as YAML: the same fields, the same paths, in document order.
    text = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: dupe
  name: dupe
  unknownMeta: metaVal
  labels: {app: nginx}
spec:
  unknown1: val1
  unknownDupe: valDupe
  unknownDupe: valDupe2
  paused: true
  paused: false
  selector: {matchLabels: {app: nginx}}
  template:
    metadata: {labels: {app: nginx}}
    spec:
      containers:
      - name: nginx
        image: nginx:latest
        unknownNested: val1
        imagePullPolicy: Always
        imagePullPolicy: Never
"""
    assert ", ".join(field_errors(manifest(text))) == UPSTREAM_ERRORS


def test_the_issue_typos():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"nodeselector": {"pool": "gpu"},
                    "containers": [{"name": "c", "image": "x", "resources": {"requets": {"cpu": "1"}}},
                                   {"name": "d", "image": "x", "resources": {}, "requests": {"cpu": "1"}}]}}
    assert field_errors(pod) == ['unknown field "spec.nodeselector"',
                                 'unknown field "spec.containers[0].resources.requets"',
                                 'unknown field "spec.containers[1].requests"']


def test_yaml_merge_keys_may_override():
    text = """apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers:
  - &base {name: a, image: x, imagePullPolicy: Always}
  - <<: *base
    name: b
    name: c
"""
    # The merged-in name is overridden (YAML's own override); the name written twice is a duplicate.
    assert field_errors(manifest(text)) == ['duplicate field "spec.containers[1].name"']


def test_maps_and_free_form_values():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"any-key": "v"},
                                                           "annotations": {"x/y": "z"}},
           "spec": {"containers": [{"name": "c", "image": "x",
                                    "resources": {"requests": {"cpu": 1, "example.com/foo": "2"}}}],
                    "overhead": {"cpu": "100m"}}}
    assert field_errors(pod) == []  # map keys are data, quantities may be numbers
    text = '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "1", "a": "2"}}}'
    assert field_errors(manifest(text)) == ['duplicate field "metadata.labels.a"']


@pytest.mark.parametrize("mutate, expected", [
    (lambda s: s.update(replicas="3"),
     'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"'),
    (lambda s: s.update(paused="yes"),
     'spec.paused: Invalid value: "string": spec.paused in body must be of type boolean: "string"'),
    (lambda s: s["template"]["spec"].update(securityContext="none"),
     'spec.template.spec.securityContext: Invalid value: "string": spec.template.spec.securityContext in body must '
     'be of type object: "string"'),
    (lambda s: s["template"]["spec"].update(containers={"name": "c"}),
     'spec.template.spec.containers: Invalid value: "object": spec.template.spec.containers in body must be of '
     'type array: "object"'),
    (lambda s: s.update(replicas=True),
     'spec.replicas: Invalid value: "boolean": spec.replicas in body must be of type integer: "boolean"'),
], ids=["int-as-string", "bool-as-string", "object-as-string", "list-as-map", "int-as-bool"])
def test_a_value_of_the_wrong_type_cannot_be_decoded(mutate, expected):
    deployment = json.loads(UPSTREAM_BODY.replace('"unknownNested": "val1",', ""))
    mutate(deployment["spec"])
    with pytest.raises(Invalid) as info:
        field_errors(deployment)
    assert str(info.value) == expected


@pytest.mark.parametrize("api_version, kind, expected", [
    ("apps/v1", "Deployment", "V1Deployment"),
    ("v1", "Pod", "V1Pod"),
    ("batch/v1", "CronJob", "V1CronJob"),
    ("v1", "PersistentVolumeClaim", "V1PersistentVolumeClaim"),
    ("storage.k8s.io/v1", "StorageClass", "V1StorageClass"),
    ("storage.k8s.io/v1", "CSINode", "V1CSINode"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate", "V1ResourceClaimTemplate"),
    ("resource.k8s.io/v1", "ResourceClaim", "ResourceV1ResourceClaim"),
    ("resource.k8s.io/v1", "DeviceClass", "V1DeviceClass"),
    ("events.k8s.io/v1", "Event", "EventsV1Event"),
    ("scheduling.x-k8s.io/v1alpha1", "ElasticQuota", None),  # custom resources: no model, not checked
    ("slo.koordinator.sh/v1alpha1", "NodeMetric", None),
])
def test_models_of_kinds(api_version, kind, expected):
    assert model_of({"apiVersion": api_version, "kind": kind}) == expected


def test_every_kind_kplan_reads_has_a_model():
    for kind in field_validation.READ_KINDS:
        version = "batch/v1" if kind in ("Job", "CronJob") else "v1" if kind in ("Pod", "Service", "Node") \
            else "apps/v1"
        assert model_of({"apiVersion": version, "kind": kind})


@pytest.mark.parametrize("obj, expected", [
    ({"kind": "Pod"}, "Object 'apiVersion' is missing"),
    ({"apiVersion": "apps/v1", "kind": "Deploymnet"}, 'no matches for kind "Deploymnet" in version "apps/v1"'),
    ({"apiVersion": "extensions/v1beta1", "kind": "Deployment"},
     'no matches for kind "Deployment" in version "extensions/v1beta1"'),
])
def test_kinds_the_api_server_does_not_serve(obj, expected):
    with pytest.raises(Invalid, match=expected):
        model_of(obj)


def test_storage_and_device_kinds_are_checked_too():
    template = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "gpu"},
                "spec": {"spec": {"devices": {"requests": [{"name": "g", "exactly": {
                    "deviceClassName": "gpu.example.com", "count": 1, "alocationMode": "All"}}]}}}}
    assert field_errors(template) == ['unknown field "spec.spec.devices.requests[0].exactly.alocationMode"']
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
             "spec": {"accessModes": ["ReadWriteOnce"], "storageClass": "fast",
                      "resources": {"requests": {"storage": "1Gi"}}}}
    assert field_errors(claim) == ['unknown field "spec.storageClass"']


@pytest.mark.parametrize("value, mode", [("strict", STRICT), ("true", STRICT), ("1", STRICT), ("warn", WARN),
                                         ("ignore", IGNORE), ("false", IGNORE), ("F", IGNORE)])
def test_flag_values_as_kubectl_reads_them(value, mode):
    assert parse_flag(value) == mode


def test_a_bad_flag_value_in_kubectls_words():
    with pytest.raises(InputError, match=r'^invalid - validate option "Strict"; must be one of: strict \(or true\), '
                                         r'warn, ignore \(or false\)$'):
        parse_flag("Strict")


def test_modes():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"nodeselector": {}}}
    with pytest.raises(InputError, match=r'^pod.yaml: Pod "p": strict decoding error: unknown field '
                                         r'"spec.nodeselector"$'):
        FieldValidation(STRICT).check(pod, "pod.yaml")
    said = []
    warn = FieldValidation(WARN, warn=said.append)
    warn.check(pod, "pod.yaml")
    warn.check(pod, "pod.yaml")  # read again (an --add-node file, per count searched): said once
    assert said == ['pod.yaml: Pod "p": unknown field "spec.nodeselector"']
    FieldValidation(IGNORE, warn=said.append).check(pod, "pod.yaml")
    assert len(said) == 1
    with pytest.raises(InputError, match=r'^pod.yaml: Pod "p": Object \'apiVersion\' is missing$'):
        FieldValidation(IGNORE).check({"kind": "Pod", "metadata": {"name": "p"}}, "pod.yaml")


def test_the_table_is_the_installed_clients():
    """schemas.json is what scripts/gen_schemas.py derives from the client it was made with."""
    import kubernetes
    made_with = json.loads(field_validation.SCHEMAS.read_text())["client"]
    if kubernetes.__version__ != made_with:
        pytest.skip(f"schemas.json was made from kubernetes {made_with}; {kubernetes.__version__} is installed")
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_schemas.py"), "--check"], capture_output=True,
                           text=True)
    assert check.returncode == 0, check.stderr
