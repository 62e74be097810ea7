"""A pod, workload or node the API server would refuse is an input error on every command that
takes manifests or --add-node: exit 2, one line naming file, document, object and field."""
import copy
from functools import partial
from pathlib import Path

import pytest
import yaml

from run_kplan import run_kplan

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"
CLUSTER = str(SAMPLES / "cluster.yaml")
BURSTABLE = yaml.safe_load((SAMPLES / "pod-burstable.yaml").read_text())
LARGE_NODE = yaml.safe_load((SAMPLES / "check" / "node-c-large.yaml").read_text())


kplan = partial(run_kplan, columns=120)


def pod(mutate):
    doc = copy.deepcopy(BURSTABLE)
    mutate(doc)
    return doc


def main(doc):
    return doc["spec"]["containers"][0]


def assert_input_error(code, out, err, expected):
    assert code == 2, (code, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].startswith("kplan: error: ") and expected in lines[0], lines[0]


CASES = {
    "no name": (lambda d: d["metadata"].pop("name"),
                'Pod "": metadata.name: Required value: name or generateName is required'),
    "invalid name": (lambda d: d["metadata"].update(name="Web.New_1"),
                     'Pod "Web.New_1": metadata.name: Invalid value: "Web.New_1": a lowercase RFC 1123 subdomain'),
    "negative request": (lambda d: main(d)["resources"]["requests"].update(cpu="-500m"),
                         'Pod "web-new": spec.containers[0].resources.requests[cpu]: Invalid value: "-500m": '
                         "must be greater than or equal to 0"),
    "negative limit": (lambda d: main(d)["resources"]["limits"].update(memory="-2Gi"),
                       'spec.containers[0].resources.limits[memory]: Invalid value: "-2Gi": must be greater'),
    "request above limit": (lambda d: main(d)["resources"]["limits"].update(cpu="250m"),
                            'spec.containers[0].resources.requests: Invalid value: "500m": must be less than or '
                            "equal to cpu limit of 250m"),
    "not a quantity": (lambda d: main(d)["resources"]["requests"].update(memory="1Gb"),
                       'spec.containers[0].resources.requests[memory]: Invalid value: "1Gb": quantities must match'),
    "quantity out of range": (lambda d: main(d)["resources"]["requests"].update(cpu="1e400"),
                              'spec.containers[0].resources.requests[cpu]: Invalid value: "1e400": must be no more'),
    "resources a list": (lambda d: main(d).update(resources=[{"requests": {"cpu": "1"}}]),
                         'spec.containers[0].resources: Invalid value: "array": spec.containers[0].resources in '
                         'body must be of type object'),
    "requests a list": (lambda d: main(d)["resources"].update(requests=["cpu"]),
                        "spec.containers[0].resources.requests in body must be of type object"),
    "taint effect of a toleration": (lambda d: d["spec"].update(tolerations=[{"key": "a", "effect": "Never"}]),
                                     'spec.tolerations[0].effect: Unsupported value: "Never": supported values: '
                                     '"NoSchedule", "PreferNoSchedule", "NoExecute"'),
    "toleration operator": (lambda d: d["spec"].update(tolerations=[{"key": "a", "operator": "In"}]),
                            'spec.tolerations[0].operator: Unsupported value: "In": supported values: "Equal", '
                            '"Exists"'),
    "Exists with a value": (lambda d: d["spec"].update(tolerations=[{"key": "a", "operator": "Exists",
                                                                     "value": "b"}]),
                            "value must be empty when `operator` is 'Exists'"),
    "tolerations a map": (lambda d: d["spec"].update(tolerations={"key": "a"}),
                          "spec.tolerations in body must be of type array"),
    "node selector operator": (lambda d: d["spec"].update(affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "pool", "operator": "Is", "values": ["general"]}]}]}}}),
        '.nodeSelectorTerms[0].matchExpressions[0].operator: Invalid value: "Is": not a valid selector operator'),
    "label selector operator": (lambda d: d["spec"].update(topologySpreadConstraints=[{
        "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchExpressions": [{"key": "app", "operator": "Equals", "values": ["web"]}]}}]),
        'spec.topologySpreadConstraints[0].labelSelector.matchExpressions[0].operator: Invalid value: "Equals"'),
    "whenUnsatisfiable": (lambda d: d["spec"].update(topologySpreadConstraints=[{
        "maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "Sometimes"}]),
        'spec.topologySpreadConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes"'),
    "restartPolicy": (lambda d: d["spec"].update(restartPolicy="Sometimes"),
                      'spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", '
                      '"Never"'),
    "label key": (lambda d: d["metadata"].update(labels={"app web": "x"}),
                  'metadata.labels: Invalid value: "app web": name part must consist of'),
    "label value": (lambda d: d["metadata"].update(labels={"app": "web!"}),
                    'metadata.labels: Invalid value: "web!": a valid label must be an empty string'),
    "nodeSelector value": (lambda d: d["spec"].update(nodeSelector={"pool": "a/b"}),
                           'spec.nodeSelector: Invalid value: "a/b": a valid label must be'),
    "containers a map": (lambda d: d["spec"].update(containers={"main": {}}),
                         "spec.containers in body must be of type array"),
}


@pytest.mark.parametrize("case", CASES)
def test_place_refuses_what_the_api_server_refuses(tmp_path, case):
    mutate, expected = CASES[case]
    ok = copy.deepcopy(BURSTABLE)
    ok["metadata"]["name"] = "first"
    (tmp_path / "pods.yaml").write_text(yaml.safe_dump_all([ok, pod(mutate)]))
    code, out, err = kplan("place", str(tmp_path / "pods.yaml"), "-f", CLUSTER)
    assert_input_error(code, out, err, "pods.yaml (document 2): ")
    assert expected in err, err


def deployment(mutate=None):
    template = copy.deepcopy(BURSTABLE)
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "shop"},
           "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": template["spec"]}}}
    if mutate:
        mutate(doc)
    return doc


@pytest.mark.parametrize("command", [["check"], ["capacity"], ["nodes", "--after"], ["quota", "check"]])
def test_every_command_taking_manifests_validates_them(tmp_path, command):
    doc = deployment(lambda d: d["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"].update(
        cpu="-1"))
    (tmp_path / "apps.yaml").write_text(yaml.safe_dump(doc))
    code, out, err = kplan(*command, str(tmp_path / "apps.yaml"), "-f", CLUSTER)
    assert_input_error(code, out, err, 'apps.yaml: Deployment "web": spec.template.spec.containers[0].resources.'
                                       'requests[cpu]: Invalid value: "-1": must be greater than or equal to 0')


def test_workload_without_name_and_list_items_not_a_list(tmp_path):
    (tmp_path / "apps.yaml").write_text(yaml.safe_dump(deployment(lambda d: d["metadata"].pop("name"))))
    code, out, err = kplan("place", str(tmp_path / "apps.yaml"), "-f", CLUSTER)
    assert_input_error(code, out, err, 'Deployment "": metadata.name: Required value: name or generateName is '
                                       'required')
    (tmp_path / "list.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                        "items": {"pod": BURSTABLE}}))
    code, out, err = kplan("place", str(tmp_path / "list.yaml"), "-f", CLUSTER)
    assert_input_error(code, out, err, 'list.yaml: List "": items: Invalid value: "object": items in body must '
                                       'be of type array: "object"')


def test_a_pod_without_containers_is_still_placed(tmp_path):
    (tmp_path / "empty.yaml").write_text(yaml.safe_dump(pod(lambda d: d["spec"].update(containers=[]))))
    code, out, err = kplan("place", str(tmp_path / "empty.yaml"), "-f", CLUSTER)
    assert code == 0, err


@pytest.mark.parametrize("mutate,expected", [
    (lambda d: d["spec"].update(taints=[{"key": "gpu", "effect": "NoAdmit"}]),
     'Node "node-c-large": spec.taints[0].effect: Unsupported value: "NoAdmit": supported values: "NoSchedule", '
     '"PreferNoSchedule", "NoExecute"'),
    (lambda d: d["metadata"].update(name="Node_C"), 'Node "Node_C": metadata.name: Invalid value: "Node_C"'),
    (lambda d: d["metadata"].pop("name"), 'Node "": metadata.name: Required value'),
    (lambda d: d["status"]["allocatable"].update(cpu="-2"),
     'Node "node-c-large": status.allocatable[cpu]: Invalid value: "-2": must be greater than or equal to 0'),
    (lambda d: d["metadata"].update(labels={"zone": "a b"}), 'Node "node-c-large": metadata.labels: Invalid value: '
                                                               '"a b"'),
], ids=["taint effect", "node name", "no name", "negative allocatable", "label value"])
def test_add_node_refuses_what_the_api_server_refuses(tmp_path, mutate, expected):
    node = copy.deepcopy(LARGE_NODE)
    mutate(node)
    (tmp_path / "node.yaml").write_text(yaml.safe_dump(node))
    code, out, err = kplan("check", str(SAMPLES / "check" / "too-big.yaml"), "-f", CLUSTER,
                           "--add-node", f"{tmp_path / 'node.yaml'}:2")
    assert_input_error(code, out, err, f"node.yaml: {expected}")


@pytest.mark.parametrize("sample, exit_code", [
    ("pod-burstable.yaml", 0),  # fits on the four general nodes
    ("pod-gpu.yaml", 0),  # tolerates the GPU taint; gpu-a1 has one of its two GPUs free
    ("pod-gpu-no-toleration.yaml", 1),  # only gpu-a1 has GPUs, and its taint is not tolerated
    ("pod-too-big.yaml", 1),  # asks for more than any node's whole allocatable
])
def test_samples_still_place(sample, exit_code):
    code, out, err = kplan("place", str(SAMPLES / sample), "-f", CLUSTER)
    assert code == exit_code and err == "", (sample, err)
