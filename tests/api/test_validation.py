"""What the API server would refuse (kplan/api/validation.py): each rule with upstream's words."""
import copy
from pathlib import Path

import pytest

from kplan.api.field_validation import field_errors
from kplan.api.validation import Invalid, check_manifest, check_node, validate_manifest, validate_node
from kplan.api.workloads import WORKLOAD_KINDS
from kplan.errors import InputError
from kplan.sources.files import iter_documents

ROOT = Path(__file__).resolve().parents[2]

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "shop", "labels": {"app": "web"}},
       "spec": {"containers": [{"name": "main", "image": "web:1",
                                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"},
                                              "limits": {"cpu": "1", "memory": "2Gi"}}}]}}
NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-x", "labels": {"zone": "a"}},
        "spec": {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"}}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
              "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                       "template": {"metadata": {"labels": {"app": "web"}}, "spec": copy.deepcopy(POD["spec"])}}}


def pod(mutate):
    doc = copy.deepcopy(POD)
    mutate(doc)
    return doc


def container(doc):
    return doc["spec"]["containers"][0]


def error(check, doc) -> str:
    with pytest.raises(Invalid) as info:
        check(doc)
    return str(info.value)


LABEL_MSG = "a valid label must be an empty string or consist of alphanumeric characters"
SUBDOMAIN_MSG = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"


@pytest.mark.parametrize("mutate,expected", [
    # names
    (lambda d: d["metadata"].pop("name"), "metadata.name: Required value: name or generateName is required"),
    (lambda d: d["metadata"].update(name="Web_1"), f'metadata.name: Invalid value: "Web_1": {SUBDOMAIN_MSG}'),
    (lambda d: d["metadata"].update(name="a" * 254), "metadata.name: Invalid value: \"" + "a" * 254
     + '": must be no more than 253 characters'),
    (lambda d: d["metadata"].update(namespace="Shop"), 'metadata.namespace: Invalid value: "Shop": a lowercase '
                                                       'RFC 1123 label must consist of'),
    (lambda d: d["metadata"].update(labels={"a b": "x"}), 'metadata.labels: Invalid value: "a b": name part must'),
    (lambda d: d["metadata"].update(labels={"app": "-web"}), f'metadata.labels: Invalid value: "-web": {LABEL_MSG}'),
    # quantities
    (lambda d: container(d)["resources"]["requests"].update(cpu="-500m"),
     'spec.containers[0].resources.requests[cpu]: Invalid value: "-500m": must be greater than or equal to 0'),
    (lambda d: container(d)["resources"]["limits"].update(memory="-1"),
     'spec.containers[0].resources.limits[memory]: Invalid value: "-1": must be greater than or equal to 0'),
    (lambda d: container(d)["resources"]["requests"].update(cpu="2"),
     'spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1'),
    (lambda d: container(d)["resources"]["requests"].update(memory="1Gb"),
     'spec.containers[0].resources.requests[memory]: Invalid value: "1Gb": quantities must match the regular '
     "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"),
    (lambda d: container(d)["resources"]["requests"].update(cpu="1e400"),
     'spec.containers[0].resources.requests[cpu]: Invalid value: "1e400": must be no more than'),
    (lambda d: container(d)["resources"]["requests"].update(cpu=[1]),
     'spec.containers[0].resources.requests[cpu]: Invalid value: "array": quantities must match'),
    (lambda d: container(d).update(resources=[{"cpu": "1"}]),
     'spec.containers[0].resources: Invalid value: "array": spec.containers[0].resources in body must be of '
     'type object: "array"'),
    (lambda d: container(d)["resources"]["requests"].update({"example.com/foo": "1"}),
     "spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"),
    (lambda d: container(d)["resources"]["limits"].update({"example.com/foo": "500m"}),
     'spec.containers[0].resources.limits[example.com/foo]: Invalid value: "500m": must be an integer'),
    (lambda d: container(d)["resources"]["requests"].update(gpu="1"),
     'spec.containers[0].resources.requests[gpu]: Invalid value: "gpu": must be a standard resource type or fully '
     'qualified'),
    (lambda d: container(d)["resources"]["requests"].update(pods="1"),
     'spec.containers[0].resources.requests[pods]: Invalid value: "pods": must be a standard resource for '
     'containers'),
    (lambda d: d["spec"].update(overhead={"cpu": "-1"}),
     'spec.overhead[cpu]: Invalid value: "-1": must be greater than or equal to 0'),
    (lambda d: d["spec"].update(resources={"requests": {"cpu": "3"}, "limits": {"cpu": "2"}}),
     'spec.resources.requests: Invalid value: "3": must be less than or equal to cpu limit of 2'),
    # enums
    (lambda d: d["spec"].update(restartPolicy="Sometimes"),
     'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'),
    (lambda d: d["spec"].update(tolerations=[{"key": "a", "operator": "In", "value": "b"}]),
     'spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", "Exists"'),
    (lambda d: d["spec"].update(tolerations=[{"key": "a", "operator": "Exists", "value": "b"}]),
     "spec.tolerations[0].operator: Invalid value: core.Toleration{Key:\"a\", Operator:\"Exists\", Value:\"b\", "
     "Effect:\"\", TolerationSeconds:(*int64)(nil)}: value must be empty when `operator` is 'Exists'"),
    (lambda d: d["spec"].update(tolerations=[{"key": "a", "effect": "NoAdmit"}]),
     'spec.tolerations[0].effect: Unsupported value: "NoAdmit": supported values: "NoSchedule", '
     '"PreferNoSchedule", "NoExecute"'),
    (lambda d: d["spec"].update(tolerations=[{"operator": "Equal", "value": "x"}]),
     'spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty'),
    (lambda d: d["spec"].update(tolerations=[{"key": "a", "operator": "Exists", "effect": "NoSchedule",
                                              "tolerationSeconds": 5}]),
     "spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
     "`tolerationSeconds` is set"),
    (lambda d: d["spec"].update(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}]}}}),
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     '.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator'),
    (lambda d: d["spec"].update(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In"}]}]}}}),
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
     ".matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'"),
    (lambda d: d["spec"].update(affinity={"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": []}}}),
     "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required "
     "value: must have at least one node selector term"),
    (lambda d: d["spec"].update(affinity={"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 0, "preference": {"matchExpressions": [{"key": "zone", "operator": "Exists"}]}}]}}),
     "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: "
     "must be in the range 1-100"),
    (lambda d: d["spec"].update(affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"topologyKey": "zone", "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Exists",
                                                                        "values": ["x"]}]}}]}}),
     "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].labelSelector"
     ".matchExpressions[0].values: Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"),
    (lambda d: d["spec"].update(topologySpreadConstraints=[{"maxSkew": 1, "topologyKey": "zone",
                                                            "whenUnsatisfiable": "Sometimes"}]),
     'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": supported values: '
     '"DoNotSchedule", "ScheduleAnyway"'),
    (lambda d: d["spec"].update(topologySpreadConstraints=[{"maxSkew": 0, "topologyKey": "zone",
                                                            "whenUnsatisfiable": "DoNotSchedule"}]),
     "spec.topologySpreadConstraints[0].maxSkew: Invalid value: 0: must be greater than zero"),
    (lambda d: d["spec"].update(nodeSelector={"zone": "a b"}),
     f'spec.nodeSelector: Invalid value: "a b": {LABEL_MSG}'),
    # shapes
    (lambda d: d["spec"].update(containers={"main": {"image": "x"}}),
     'spec.containers: Invalid value: "object": spec.containers in body must be of type array: "object"'),
    (lambda d: d["spec"].update(tolerations={"key": "a"}),
     'spec.tolerations: Invalid value: "object": spec.tolerations in body must be of type array: "object"'),
    (lambda d: d["spec"].update(containers=[None]),
     'spec.containers[0]: Invalid value: "null": spec.containers[0] in body must be of type object: "null"'),
    (lambda d: d["metadata"].update(ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs"}]),
     'metadata.ownerReferences[0].uid: Invalid value: "": uid must not be empty'),
    (lambda d: d["metadata"].update(ownerReferences="rs"),
     'metadata.ownerReferences: Invalid value: "string": metadata.ownerReferences in body must be of type array'),
    (lambda d: d["spec"].update(nodeSelector=["zone=a"]),
     'spec.nodeSelector: Invalid value: "array": spec.nodeSelector in body must be of type object: "array"'),
    (lambda d: container(d).update(ports=[{"containerPort": 80, "hostPort": "80"}]),
     'spec.containers[0].ports[0].hostPort: Invalid value: "string": spec.containers[0].ports[0].hostPort in body '
     'must be of type integer: "string"'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 60 else None)
def test_pod_errors(mutate, expected):
    assert error(check_manifest, pod(mutate)).startswith(expected)


def test_valid_pods_pass():
    check_manifest(POD)
    check_manifest(pod(lambda d: d["spec"].update(containers=[])))  # no containers: zero requests, as upstream tests
    check_manifest(pod(lambda d: d["metadata"].update(name=None, generateName="web-")))
    check_manifest(pod(lambda d: container(d)["resources"]["requests"].update(cpu="1")))  # request == limit
    check_manifest(pod(lambda d: d["spec"].update(tolerations=[{"operator": "Exists"}])))
    check_manifest(pod(lambda d: container(d)["resources"].update(  # extended resources at their limit
        requests={"nvidia.com/gpu": 1, "hugepages-2Mi": "64Mi"},
        limits={"nvidia.com/gpu": "1", "hugepages-2Mi": "64Mi"})))


def test_workload_template_paths():
    def deployment(mutate):
        doc = copy.deepcopy(DEPLOYMENT)
        mutate(doc)
        return doc
    check_manifest(DEPLOYMENT)
    assert error(check_manifest, deployment(lambda d: d["metadata"].pop("name"))).startswith(
        "metadata.name: Required value")
    assert error(check_manifest, deployment(
        lambda d: d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"].update(cpu="-1"))) == (
        'spec.template.spec.containers[0].resources.requests[cpu]: Invalid value: "-1": '
        "must be greater than or equal to 0")
    assert error(check_manifest, deployment(lambda d: d["spec"]["template"]["spec"].update(restartPolicy="Never"))) \
        == 'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"'
    assert error(check_manifest, deployment(lambda d: d["spec"]["selector"].update(
        matchExpressions=[{"key": "app", "operator": "Like"}]))) == (
        'spec.selector.matchExpressions[0].operator: Invalid value: "Like": not a valid selector operator')
    cron = {"kind": "CronJob", "metadata": {"name": "nightly"},
            "spec": {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"template": {"spec": {
                "restartPolicy": "Always", "containers": [{"name": "c", "image": "x"}]}}}}}}
    assert error(check_manifest, cron) == ('spec.jobTemplate.spec.template.spec.restartPolicy: Unsupported value: '
                                           '"Always": supported values: "OnFailure", "Never"')


@pytest.mark.parametrize("mutate,expected", [
    (lambda d: d["metadata"].pop("name"), "metadata.name: Required value: name or generateName is required"),
    (lambda d: d["metadata"].update(name="Node_X"), f'metadata.name: Invalid value: "Node_X": {SUBDOMAIN_MSG}'),
    (lambda d: d["spec"]["taints"][0].update(effect="NoAdmit"),
     'spec.taints[0].effect: Unsupported value: "NoAdmit": supported values: "NoSchedule", "PreferNoSchedule", '
     '"NoExecute"'),
    (lambda d: d["spec"]["taints"][0].pop("effect"), "spec.taints[0].effect: Required value"),
    (lambda d: d["spec"]["taints"].append(dict(d["spec"]["taints"][0])),
     'spec.taints[1]: Duplicate value: core.Taint{Key:"gpu", Value:"yes", Effect:"NoSchedule", TimeAdded:<nil>}: '
     "taints must be unique by key and effect pair"),
    (lambda d: d["spec"]["taints"][0].update(key="a b"), 'spec.taints[0].key: Invalid value: "a b": name part'),
    (lambda d: d["status"]["allocatable"].update(cpu="-4"),
     'status.allocatable[cpu]: Invalid value: "-4": must be greater than or equal to 0'),
    (lambda d: d["spec"].update(taints={"key": "gpu"}),
     'spec.taints: Invalid value: "object": spec.taints in body must be of type array: "object"'),
], ids=lambda v: v if isinstance(v, str) and len(v) < 60 else None)
def test_node_errors(mutate, expected):
    doc = copy.deepcopy(NODE)
    mutate(doc)
    assert error(check_node, doc).startswith(expected)


def test_input_error_names_file_document_object_field():
    doc = pod(lambda d: container(d)["resources"]["requests"].update(cpu="-500m"))
    with pytest.raises(InputError) as info:
        validate_manifest(doc, "pods.yaml (document 2)")
    assert str(info.value) == ('pods.yaml (document 2): Pod "web": spec.containers[0].resources.requests[cpu]: '
                               'Invalid value: "-500m": must be greater than or equal to 0')
    with pytest.raises(InputError, match=r'^node.yaml: Node "node-x": spec.taints\[0\].effect: Required value$'):
        validate_node({**NODE, "spec": {"taints": [{"key": "a"}]}}, "node.yaml")


def test_every_sample_manifest_and_node_is_valid():
    """The samples' manifests, as kubectl would apply them; the clusters' objects (files named *cluster*,
    what `kplan snapshot` keeps of them: a StatefulSet without its template) only as nodes."""
    refused = ROOT / "samples" / "invalid"  # what the API server refuses, shown in the README
    for path in sorted(p for p in ROOT.joinpath("samples").rglob("*.y*ml") if refused not in p.parents):
        manifest = "cluster" not in path.name
        for _, _, obj in iter_documents(str(path), manifests=manifest):
            if manifest:
                assert field_errors(obj) == [], path
            if manifest and (obj.get("kind") == "Pod" or obj.get("kind") in WORKLOAD_KINDS):
                check_manifest(obj)
            elif obj.get("kind") == "Node":
                check_node(obj)


# Workload rules (pkg/apis/apps/validation ValidateDeploymentSpec, ValidateReplicaSetSpec,
# ValidateStatefulSetSpec, ValidateDaemonSetSpec; pkg/apis/batch/validation), in the API server's words.
TEMPLATE = {"metadata": {"labels": {"app": "web", "tier": "front"}}, "spec": copy.deepcopy(POD["spec"])}
JOB_TEMPLATE = {**TEMPLATE, "spec": {**TEMPLATE["spec"], "restartPolicy": "Never"}}
SELECTOR = {"matchLabels": {"app": "web"}}
EMPTY_SELECTOR = "&LabelSelector{MatchLabels:map[string]string{},MatchExpressions:[]LabelSelectorRequirement{},}"
MISMATCH = ('spec.template.metadata.labels: Invalid value: map[string]string{"app":"web", "tier":"front"}: '
            "`selector` does not match template `labels`")


def workload(kind, spec, name="web", api="apps/v1"):
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "shop"}, "spec": spec}


@pytest.mark.parametrize("kind", ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"])
def test_valid_workloads(kind):
    check_manifest(workload(kind, {"selector": SELECTOR, "template": TEMPLATE}))


@pytest.mark.parametrize("doc, expected", [
    (workload("Deployment", {"template": TEMPLATE}), "spec.selector: Required value"),
    (workload("ReplicaSet", {"template": TEMPLATE}), "spec.selector: Required value"),
    (workload("StatefulSet", {"template": TEMPLATE}), "spec.selector: Required value"),
    (workload("Deployment", {"selector": {"matchLabels": {"app": "api"}}, "template": TEMPLATE}), MISMATCH),
    (workload("ReplicaSet", {"selector": {"matchExpressions": [{"key": "tier", "operator": "NotIn",
                                                                "values": ["front"]}]}, "template": TEMPLATE}),
     MISMATCH),
    (workload("StatefulSet", {"selector": {"matchLabels": {"app": "db"}}, "template": TEMPLATE}), MISMATCH),
    (workload("DaemonSet", {"selector": {"matchLabels": {"app": "agent"}}, "template": TEMPLATE}), MISMATCH),
    # apps/v1 defaults no selector: a DaemonSet without one selects none of its pods
    (workload("DaemonSet", {"template": TEMPLATE}), MISMATCH),
    (workload("Deployment", {"selector": SELECTOR, "template": {**TEMPLATE, "metadata": {}}}),
     "spec.template.metadata.labels: Invalid value: map[string]string(nil): `selector` does not match template "
     "`labels`"),
    (workload("Deployment", {"selector": {}, "template": TEMPLATE}),
     f"spec.selector: Invalid value: {EMPTY_SELECTOR}: empty selector is invalid for deployment"),
    (workload("ReplicaSet", {"selector": {"matchLabels": {}}, "template": TEMPLATE}),
     f"spec.selector: Invalid value: {EMPTY_SELECTOR}: empty selector is invalid for deployment"),
    (workload("StatefulSet", {"selector": {}, "template": TEMPLATE}),
     f"spec.selector: Invalid value: {EMPTY_SELECTOR}: empty selector is invalid for statefulset"),
    (workload("DaemonSet", {"selector": {}, "template": TEMPLATE}),
     f"spec.selector: Invalid value: {EMPTY_SELECTOR}: empty selector is invalid for daemonset"),
    (workload("Deployment", {"replicas": -1, "selector": SELECTOR, "template": TEMPLATE}),
     "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
    (workload("ReplicaSet", {"replicas": -2, "selector": SELECTOR, "template": TEMPLATE}),
     "spec.replicas: Invalid value: -2: must be greater than or equal to 0"),
    (workload("StatefulSet", {"replicas": -1, "selector": SELECTOR, "template": TEMPLATE}),
     "spec.replicas: Invalid value: -1: must be greater than or equal to 0"),
    (workload("StatefulSet", {"serviceName": "Web_Headless", "selector": SELECTOR, "template": TEMPLATE}),
     'spec.serviceName: Invalid value: "Web_Headless": a lowercase RFC 1123 label must consist of lower case '
     "alphanumeric characters or '-', and must start and end with an alphanumeric character"),
    (workload("StatefulSet", {"selector": SELECTOR, "template": TEMPLATE}, name="web.v2"),
     'metadata.name: Invalid value: "web.v2": a lowercase RFC 1123 label must consist of'),
    (workload("StatefulSet", {"selector": SELECTOR, "template": TEMPLATE,
                              "volumeClaimTemplates": [{"metadata": {"name": "Data"}}]}),
     'spec.volumeClaimTemplates[0].metadata.name: Invalid value: "Data": a lowercase RFC 1123 label must consist'),
    (workload("StatefulSet", {"selector": SELECTOR, "template": TEMPLATE,
                              "volumeClaimTemplates": [{"metadata": {}}]}),
     "spec.volumeClaimTemplates[0].metadata.name: Required value"),
    (workload("StatefulSet", {"selector": SELECTOR, "template": TEMPLATE,
                              "volumeClaimTemplates": [{"metadata": {"name": "data"}},
                                                       {"metadata": {"name": "data"}}]}),
     'spec.volumeClaimTemplates[1].metadata.name: Duplicate value: "data"'),
    (workload("Deployment", {"selector": SELECTOR, "template": {**TEMPLATE, "spec": {
        **TEMPLATE["spec"], "activeDeadlineSeconds": 60}}}),
     "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"),
    (workload("Job", {"template": TEMPLATE}, api="batch/v1"),  # a template's restartPolicy defaults to Always
     'spec.template.spec.restartPolicy: Unsupported value: "Always": supported values: "OnFailure", "Never"'),
    (workload("Job", {"parallelism": -1, "template": JOB_TEMPLATE}, api="batch/v1"),
     "spec.parallelism: Invalid value: -1: must be greater than or equal to 0"),
    (workload("Job", {"completions": -3, "template": JOB_TEMPLATE}, api="batch/v1"),
     "spec.completions: Invalid value: -3: must be greater than or equal to 0"),
    (workload("Job", {"manualSelector": True, "template": JOB_TEMPLATE}, api="batch/v1"),
     "spec.selector: Required value"),
    (workload("Job", {"manualSelector": True, "selector": {"matchLabels": {"job": "x"}}, "template": JOB_TEMPLATE},
              api="batch/v1"), MISMATCH),
    (workload("CronJob", {"jobTemplate": {"spec": {"template": JOB_TEMPLATE}}}, api="batch/v1"),
     "spec.schedule: Required value"),
    (workload("CronJob", {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"selector": SELECTOR,
                                                                            "template": JOB_TEMPLATE}}},
              api="batch/v1"),
     "spec.jobTemplate.spec.selector: Invalid value: &LabelSelector{MatchLabels:map[string]string{app: web,},"
     "MatchExpressions:[]LabelSelectorRequirement{},}: `selector` will be auto-generated"),
    (workload("CronJob", {"schedule": "0 3 * * *", "jobTemplate": {"spec": {"manualSelector": True,
                                                                            "template": JOB_TEMPLATE}}},
              api="batch/v1"),
     'spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: "nil", "false"'),
], ids=lambda v: None)
def test_workload_rules(doc, expected):
    assert error(check_manifest, doc).startswith(expected)


def test_jobs_with_their_selectors():
    check_manifest(workload("Job", {"template": JOB_TEMPLATE}, api="batch/v1"))
    check_manifest(workload("Job", {"manualSelector": True, "selector": SELECTOR, "template": JOB_TEMPLATE},
                            api="batch/v1"))
    check_manifest(workload("CronJob", {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": JOB_TEMPLATE}}},
                            api="batch/v1"))
