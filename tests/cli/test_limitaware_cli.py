"""Limit awareness through the real entry point: the seed stories as `kplan place` commands on
samples/limitaware, the `ratios` fields of the JSON contract, and `kplan nodes`."""
import json
from functools import partial
from pathlib import Path

import pytest
import yaml

from run_kplan import run_kplan

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = "samples/limitaware"
STORY = f"{SAMPLES}/story-cluster.yaml"
STORY2 = f"{SAMPLES}/story2-cluster.yaml"
POD5 = f"{SAMPLES}/pod5.yaml"
CONFIG = f"{SAMPLES}/scheduler-config.yaml"
KEP_CONFIG = f"{SAMPLES}/kep217-scheduler-config.yaml"


kplan = partial(run_kplan, columns=200)


def place_json(*args):
    code, out, err = kplan("place", *args, "-o", "json")
    assert "Traceback" not in err
    (p,) = json.loads(out)["placements"]
    return code, p, {n["name"]: n for n in p["nodes"]}


# -- the seed stories -----------------------------------------------------------------------------

def test_story1_limit_aware_places_pod5_on_node2():
    code, p, nodes = place_json(POD5, "-f", STORY, "--config", CONFIG)
    assert code == 0 and p["outcome"] == "Scheduled" and p["node"] == "node2"
    assert p["weights"]["LimitAware"] == 1 and p["weights"]["NodeResourcesLimitAware"] == 1
    assert nodes["node2"]["scores"]["LimitAware"] == 100 and nodes["node1"]["scores"]["LimitAware"] == 0
    # limits/allocatable before -> after: node1 10/8 -> 14/8, node2 5/8 -> 9/8
    assert nodes["node1"]["ratios"]["cpu"] == {"request": 0.5, "requestAfter": 0.625, "limit": 1.25, "limitAfter": 1.75}
    assert nodes["node2"]["ratios"]["cpu"] == {"request": 0.625, "requestAfter": 0.75, "limit": 0.625,
                                               "limitAfter": 1.125}


def test_story1_default_scheduler_prefers_node1():
    # Without limit awareness the least-requested node (4/8 vs 5/8) wins, as the seeds say.
    code, p, _ = place_json(POD5, "-f", STORY)
    assert code == 0 and p["node"] == "node1"
    assert "LimitAware" not in p["weights"] and "NodeResourcesLimitAware" not in p["weights"]


def test_story2_node1_rejected_at_125_percent():
    code, p, nodes = place_json(POD5, "-f", STORY2, "--config", CONFIG, "--explain", "node1")
    assert code == 1 and p["outcome"] == "Unschedulable"
    assert p["message"].startswith("0/1 nodes are available: 1 Insufficient cpu limit.")
    assert nodes["node1"]["plugin"] == "LimitAware" and nodes["node1"]["reasons"] == ["Insufficient cpu limit"]
    assert nodes["node1"]["ratios"]["cpu"]["limit"] == 1.25 and nodes["node1"]["ratios"]["cpu"]["limitAfter"] == 1.75
    (step,) = [s for s in p["explain"][0]["steps"] if s["plugin"] == "LimitAware"]
    assert step["details"] == ["cpu limit: pod 4, allocated 10, capacity 10 (125% of allocatable 8) - short by 4"]


def test_kep217_example_node2_wins_with_exact_raw_scores():
    code, p, nodes = place_json(POD5, "-f", STORY, "--config", KEP_CONFIG, "--explain", "node1", "--explain", "node2")
    assert code == 0 and p["node"] == "node2"
    assert nodes["node1"]["scores"]["NodeResourcesLimitAware"] == 0
    assert nodes["node2"]["scores"]["NodeResourcesLimitAware"] == 100
    raw = {e["node"]: s["raw"] for e in p["explain"] for s in e["steps"] if s["plugin"] == "NodeResourcesLimitAware"}
    # cpu (8-14)*100/8 = -75 and (8-9)*100/8 = -12; memory (32Gi-3Gi)*100/32Gi = 90 on both.
    assert raw == {"node1": (-75 + 90) // 2, "node2": (-12 + 90) // 2}


def test_story_tables_show_limit_ratio_before_and_after():
    code, out, _ = kplan("place", POD5, "-f", STORY, "--config", CONFIG)
    assert code == 0 and "Scheduled on node2" in out
    assert "CPU LIM" in out and "62%\u2192112%" in out and "125%\u2192175%" in out


# -- a malformed annotation -----------------------------------------------------------------------

@pytest.fixture
def bad_annotation(tmp_path):
    docs = list(yaml.safe_load_all((ROOT / STORY).read_text()))
    for d in docs:
        if d["kind"] == "Node" and d["metadata"]["name"] == "node1":
            d["metadata"]["annotations"] = {"node.koordinator.sh/limit-to-allocatable": '{"cpu": 1.5}'}
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return str(path)


def test_malformed_annotation_rejects_that_node_by_name(bad_annotation):
    code, p, nodes = place_json(POD5, "-f", bad_annotation, "--config", CONFIG)
    assert code == 0 and p["node"] == "node2"
    (why,) = nodes["node1"]["reasons"]
    assert nodes["node1"]["plugin"] == "LimitAware"
    assert why.startswith("invalid node.koordinator.sh/limit-to-allocatable annotation on node node1: cpu:")


def test_malformed_annotation_is_a_warning_in_nodes(bad_annotation):
    code, out, err = kplan("nodes", "-f", bad_annotation, "--config", CONFIG, "-o", "json")
    assert code == 0 and "Traceback" not in err
    assert "warning: node node1: invalid node.koordinator.sh/limit-to-allocatable annotation" in err
    nodes = {n["name"]: n for n in json.loads(out)["nodes"]}
    assert nodes["node1"]["warnings"] and nodes["node1"]["ratios"]["cpu"]["limitToAllocatable"] is None
    assert nodes["node2"]["warnings"] == [] and nodes["node2"]["ratios"]["cpu"]["limitToAllocatable"] == 2.0


# -- kplan nodes ----------------------------------------------------------------------------------

def test_nodes_json_ratios():
    code, out, _ = kplan("nodes", "-f", STORY, "--config", CONFIG, "-o", "json")
    assert code == 0
    report = json.loads(out)
    assert report["apiVersion"] == "kplan/v1alpha1" and report["kind"] == "NodeReport"
    assert report["resources"] == ["cpu", "memory"]
    node1 = report["nodes"][0]
    assert node1["name"] == "node1" and node1["pods"] == 2
    assert node1["qos"] == {"Guaranteed": 0, "Burstable": 2, "BestEffort": 0}
    assert node1["allocatable"]["cpu"] == "8" and node1["requests"]["cpu"] == "4" and node1["limits"]["cpu"] == "10"
    assert node1["ratios"]["cpu"] == {"request": 0.5, "limit": 1.25, "limitToAllocatable": 2.0,
                                      "limitCapacity": "16", "headroom": "6", "overSubscribed": True,
                                      "overLimitCapacity": False}
    assert node1["ratios"]["memory"]["limitToAllocatable"] == 1.5
    assert report["totals"]["allocatable"]["cpu"] == "16" and report["totals"]["limits"]["cpu"] == "15"
    assert report["totals"]["ratios"]["cpu"] == {"request": 0.5625, "limit": 0.9375}
    assert report["totals"]["qos"] == {"Guaranteed": 2, "Burstable": 2, "BestEffort": 0}


def test_nodes_without_config_uses_annotations_only():
    code, out, _ = kplan("nodes", "-f", STORY2, "-o", "json")
    (node1,) = json.loads(out)["nodes"]
    assert node1["ratios"]["cpu"]["limitToAllocatable"] == 1.25 and node1["ratios"]["cpu"]["headroom"] == "0"
    assert node1["ratios"]["memory"]["limitToAllocatable"] is None and node1["ratios"]["memory"]["headroom"] is None


def test_nodes_after_places_the_pod_as_place_would():
    code, out, _ = kplan("nodes", "-f", STORY, "--config", CONFIG, "--after", POD5, "-o", "json")
    assert code == 0
    report = json.loads(out)
    assert report["placed"] == [{"pod": "default/pod5", "outcome": "Scheduled", "node": "node2"}]
    nodes = {n["name"]: n for n in report["nodes"]}
    assert nodes["node2"]["ratios"]["cpu"]["limit"] == 0.625 and nodes["node2"]["ratios"]["cpu"]["limitAfter"] == 1.125
    assert nodes["node2"]["ratios"]["cpu"]["headroomAfter"] == "7" and nodes["node2"]["podsAfter"] == 3
    assert nodes["node1"]["ratios"]["cpu"]["limitAfter"] == 1.25 and nodes["node1"]["podsAfter"] == 2


def test_nodes_after_unplaceable_pod_exits_1():
    code, out, _ = kplan("nodes", "-f", STORY2, "--config", CONFIG, "--after", POD5, "-o", "json")
    assert code == 1 and json.loads(out)["placed"][0]["outcome"] == "Unschedulable"


@pytest.mark.parametrize("sort,order", [
    ("name", ["gpu-a1", "node-a1", "node-b1", "node-b2", "node-c1", "node-c2"]),
    ("limit-ratio", ["node-a1", "node-b1", "node-c2", "gpu-a1", "node-c1", "node-b2"]),
    ("pods", ["node-a1", "node-b1", "gpu-a1", "node-c1", "node-c2", "node-b2"]),
])
def test_nodes_sort(sort, order):
    code, out, _ = kplan("nodes", "-f", "samples/cluster.yaml", "--sort", sort, "-o", "json")
    assert code == 0 and [n["name"] for n in json.loads(out)["nodes"]] == order


def test_nodes_selector_and_extended_resources():
    code, out, _ = kplan("nodes", "-f", "samples/cluster.yaml", "-l", "pool=gpu", "-o", "yaml")
    report = yaml.safe_load(out)
    assert [n["name"] for n in report["nodes"]] == ["gpu-a1"]
    assert "nvidia.com/gpu" in report["resources"]
    code, out, _ = kplan("nodes", "-f", "samples/cluster.yaml", "-l", "pool in (general),topology.kubernetes.io/zone!=zone-a",
                         "-o", "json")
    assert [n["name"] for n in json.loads(out)["nodes"]] == ["node-b1", "node-b2", "node-c1"]


def test_nodes_table():
    code, out, _ = kplan("nodes", "-f", STORY, "--config", CONFIG, "--after", POD5)
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split()[:6] == ["NODE", "STATUS", "TAINTS", "PODS", "QOS", "G/B/BE"]
    node2 = next(line for line in lines if line.startswith("node2"))
    assert "5 (62%) \u2192 9 (112%)" in node2 and "11 of 16 (200%) \u2192 7" in node2
    # The * row sums both nodes before -> after: cpu requests 4 + 5 -> 4 + 6 of 16, limits 10 + 5 -> 10 + 9.
    assert lines[3].startswith("*") and "default/pod5: Scheduled on node2" in out
    assert "9 (56%) \u2192 10 (62%)" in lines[3] and "15 (94%) \u2192 19 (119%)" in lines[3]


@pytest.mark.parametrize("args,message", [
    (["nodes", "-f", STORY, "-l", "a in b"], "invalid label selector"),
    (["nodes", "-f", STORY, "--sort", "size"], "size"),
    (["nodes"], "no cluster state given"),
    (["nodes", "-f", STORY, "--profile", "nope"], "--profile 'nope'"),
])
def test_nodes_usage_errors(args, message):
    code, _, err = kplan(*args)
    assert code == 2 and message in err and "Traceback" not in err


def test_bad_limit_aware_args_are_input_errors(tmp_path):
    cfg = yaml.safe_load((ROOT / CONFIG).read_text())
    cfg["profiles"][0]["pluginConfig"][0]["args"]["defaultLimitToAllocatableRatio"] = {"cpu": "lots"}
    (tmp_path / "cfg.yaml").write_text(yaml.safe_dump(cfg))
    for cmd in (["place", POD5], ["nodes"]):
        code, _, err = kplan(*cmd, "-f", STORY, "--config", str(tmp_path / "cfg.yaml"))
        assert code == 2 and "LimitAware args: defaultLimitToAllocatableRatio: cpu:" in err
        assert len(err.strip().splitlines()) == 1
