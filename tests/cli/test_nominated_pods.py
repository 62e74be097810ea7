"""Pods nominated to a node hold room on it (RunFilterPluginsWithNominatedPods).

A pending pod with status.nominatedNodeName is, for every pod of lower or equal priority, added
to its nominated node before the filters run there (addGENominatedPods); a pod of higher priority
does not see it. The node then fails with the status of that pass.
"""
import json

import pytest
import yaml

from test_place_cli import kplan


def node(name, cpu="2"):
    alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": alloc, "capacity": alloc}}


def pod(name, cpu, priority=0, node_name="", nominated="", phase="Running"):
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
           "spec": {"priority": priority, "containers": [{"name": "c", "image": "busybox",
                                                           "resources": {"requests": {"cpu": cpu}}}]},
           "status": {"phase": phase}}
    if node_name:
        raw["spec"]["nodeName"] = node_name
    if nominated:
        raw["status"] = {"phase": "Pending", "nominatedNodeName": nominated}
    return raw


@pytest.fixture
def snapshot(tmp_path):
    # node-a is empty but promised to "nominee" (1500m); node-b already runs 1500m that no
    # candidate here may preempt.
    items = [node("node-a"), node("node-b"), pod("busy", "1500m", priority=1000, node_name="node-b"),
             pod("nominee", "1500m", priority=100, nominated="node-a")]
    path = tmp_path / "cluster.json"
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def place(tmp_path, snapshot, incoming):
    path = tmp_path / "pod.yaml"
    path.write_text(yaml.safe_dump(incoming))
    code, out, err = kplan("place", str(path), "-f", str(snapshot), "-o", "json", "--top", "0")
    assert code in (0, 1), err
    return json.loads(out)["placements"][0]


@pytest.mark.parametrize("priority", [0, 100])
def test_nominated_pod_holds_its_room_for_lower_and_equal_priority(tmp_path, snapshot, priority):
    p = place(tmp_path, snapshot, pod("new", "1", priority=priority))
    assert p["outcome"] == "Unschedulable"
    nodes = {n["name"]: n for n in p["nodes"]}
    assert nodes["node-a"]["plugin"] == "NodeResourcesFit" and nodes["node-a"]["reasons"] == ["Insufficient cpu"]
    assert p["message"].startswith("0/2 nodes are available: 2 Insufficient cpu.")


def test_higher_priority_pod_does_not_see_the_nomination(tmp_path, snapshot):
    p = place(tmp_path, snapshot, pod("new", "1", priority=1000))
    assert p["outcome"] == "Scheduled" and p["node"] == "node-a"


def test_pod_that_fits_beside_the_nominated_one_is_scheduled_there(tmp_path, snapshot):
    p = place(tmp_path, snapshot, pod("new", "500m"))
    assert p["outcome"] == "Scheduled"
    assert {n["name"] for n in p["nodes"] if n["feasible"]} == {"node-a", "node-b"}
