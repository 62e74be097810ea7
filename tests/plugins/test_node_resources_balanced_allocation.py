"""NodeResourcesBalancedAllocation, both scoring formulas.

V1_35 is TestNodeResourcesBalancedAllocation in balanced_allocation_test.go as stored at commit
00fdb4ffc64976886691c99434ab5b01fa54f8fe (the v1.35 line: fwk import, ktesting, SignPod tests);
its two DRA cases are left out (kplan does not simulate DRA-backed extended resources).

V1_36 is the same upstream test after kubernetes PR #135573 (released in v1.36.0-alpha.1): the
table that adds the memoryOnly pod and the "nodes to reach min/max score" case, and annotates each
node with "Score: N (balance without -> with the pod)". Its two DRA cases are left out as above.
"""
from __future__ import annotations

import numpy as np
import pytest

from builders import cluster, container, node, pod
from kplan.api.objects import Pod
from kplan.errors import InputError
from kplan.framework.interfaces import CycleState, Handle
from kplan.framework.status import Code
from kplan.plugins.node_resources_balanced_allocation import (
    NAME, NodeResourcesBalancedAllocation, Semantics, semantics,
)

GPU = "nvidia.com/gpu"
DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
WITH_GPU = DEFAULT_RESOURCES + [{"name": GPU, "weight": 1}]


def make_node(name, milli_cpu, memory, extended=None):
    """makeNode(name, milliCPU, memory, extendedResources) in test_util.go."""
    n = node(name)
    alloc = {"cpu": f"{milli_cpu}m", "memory": str(memory), **{k: str(v) for k, v in (extended or {}).items()}}
    n["status"]["allocatable"] = alloc
    n["status"]["capacity"] = dict(alloc)
    return n


def spec_pod(name, requests_per_container, node_name=""):
    return pod(name, node_name=node_name,
               containers=[container(f"c{i}", requests=r) for i, r in enumerate(requests_per_container)])


# The pod specs of the upstream test (as pending pods they ignore their NodeName).
CPU_ONLY = [{"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"}]
CPU_AND_MEMORY = [{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"}]
CPU_AND_MEMORY_AND_GPU = [{"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000", GPU: "3"}]
MEMORY_ONLY = [{"cpu": "0", "memory": "2000"}, {"cpu": "0", "memory": "3000"}]
SCALAR = {GPU: 8}


def cpu_only(node_name="node1", name="cpu-only"):
    return spec_pod(name, CPU_ONLY, node_name)


def cpu_and_memory(node_name="node2", name="cpu-and-memory"):
    return spec_pod(name, CPU_AND_MEMORY, node_name)


def run(args, the_pod, nodes, existing, *, pre_score=True, kube_version=None):
    c = cluster(nodes, existing)
    plugin = NodeResourcesBalancedAllocation(args, kube_version=kube_version)
    state = CycleState()
    p = Pod(the_pod)
    candidates = np.arange(c.n)
    if pre_score:
        status = plugin.pre_score(state, p, c, candidates)
        if status is not None and status.is_skip:
            return "skip"
        assert status is None
    scores = plugin.score(state, p, c, candidates)
    assert scores.dtype == np.int64
    return scores.tolist()


DEFAULT = {"resources": DEFAULT_RESOURCES}
GPU_ARGS = {"resources": WITH_GPU}

# (args, pod, nodes, existing pods, expected, run PreScore)
V1_35 = [
    ("nothing scheduled, nothing requested, skip in PreScore",
     DEFAULT, pod("p", containers=[]), [make_node("node1", 4000, 10000), make_node("node2", 4000, 10000)], [],
     "skip", True),
    ("nothing scheduled, resources requested, differently sized nodes",
     DEFAULT, spec_pod("p", CPU_AND_MEMORY), [make_node("node1", 4000, 10000), make_node("node2", 6000, 10000)], [],
     [87, 100], True),
    ("resources requested, pods scheduled with resources",
     DEFAULT, spec_pod("p", CPU_AND_MEMORY), [make_node("node1", 10000, 20000), make_node("node2", 10000, 20000)],
     [cpu_only(), cpu_and_memory()], [82, 95], True),
    ("resources requested, pods scheduled with resources, differently sized nodes",
     DEFAULT, spec_pod("p", CPU_AND_MEMORY), [make_node("node1", 10000, 20000), make_node("node2", 10000, 50000)],
     [cpu_only(), cpu_and_memory()], [82, 80], True),
    ("requested resources at node capacity",
     DEFAULT, spec_pod("p", CPU_ONLY), [make_node("node1", 6000, 10000), make_node("node2", 6000, 10000)],
     [cpu_only(), cpu_and_memory()], [50, 75], True),
    ("include scalar resource on a node for balanced resource allocation",
     GPU_ARGS, spec_pod("p", [{"memory": "0", GPU: "1"}]),
     [make_node("node1", 3500, 40000, SCALAR), make_node("node2", 3500, 40000, SCALAR)],
     [cpu_and_memory(), spec_pod("cpu-memory-gpu", CPU_AND_MEMORY_AND_GPU, "node1")], [70, 65], True),
    ("node without the scalar resource should skip the scalar resource",
     GPU_ARGS, spec_pod("p", CPU_AND_MEMORY),
     [make_node("node1", 3500, 40000, SCALAR), make_node("node2", 3500, 40000)],
     [], [63, 63], True),
    ("resources requested, pods scheduled with resources if PreScore not called",
     DEFAULT, spec_pod("p", CPU_AND_MEMORY), [make_node("node1", 10000, 20000), make_node("node2", 10000, 20000)],
     [cpu_only(), cpu_and_memory()], [82, 95], False),
]

V1_36 = [
    ("nothing scheduled, nothing requested, skip in PreScore",
     DEFAULT, pod("p", containers=[]), [make_node("node1", 4000, 10000), make_node("node2", 4000, 10000)], [],
     "skip", True),
    # node1: balance 100 -> 87; node2: 100 -> 100 (no change scores 75).
    ("nothing scheduled, resources requested, differently sized nodes",
     DEFAULT, spec_pod("p", CPU_AND_MEMORY), [make_node("node1", 4000, 10000), make_node("node2", 6000, 10000)], [],
     [68, 75], True),
    # node1: 85 -> 82; node2: 97 -> 95.
    ("resources requested, pods scheduled with resources",
     DEFAULT, spec_pod("p", CPU_AND_MEMORY), [make_node("node1", 10000, 20000), make_node("node2", 10000, 20000)],
     [cpu_only(), cpu_and_memory()], [73, 74], True),
    # node1: 85 -> 82; node2: 90 -> 80.
    ("resources requested, pods scheduled with resources, differently sized nodes",
     DEFAULT, spec_pod("p", CPU_AND_MEMORY), [make_node("node1", 10000, 20000), make_node("node2", 10000, 50000)],
     [cpu_only(), cpu_and_memory()], [73, 70], True),
    # node1: 50 -> 100 (the top score); node2: 100 -> 50 (the bottom score).
    ("resources requested, pods scheduled with resources, nodes to reach min/max score",
     DEFAULT, spec_pod("p", MEMORY_ONLY), [make_node("node1", 3000, 5000), make_node("node2", 3000, 5000)],
     [cpu_only()], [100, 50], True),
    # node1: 75 -> 50; node2: 100 -> 75 (v1.35 scored 50 and 75).
    ("requested resources at node capacity",
     DEFAULT, spec_pod("p", CPU_ONLY), [make_node("node1", 6000, 10000), make_node("node2", 6000, 10000)],
     [cpu_only(), cpu_and_memory()], [62, 62], True),
    # Three fractions (the gpu counts on both sides): node1: 69 -> 70; node2: 62 -> 65.
    ("include scalar resource on a node for balanced resource allocation",
     GPU_ARGS, spec_pod("p", [{"memory": "0", GPU: "1"}]),
     [make_node("node1", 3500, 40000, SCALAR), make_node("node2", 3500, 40000, SCALAR)],
     [cpu_and_memory(), spec_pod("cpu-memory-gpu", CPU_AND_MEMORY_AND_GPU, "node1")], [75, 76], True),
    # The gpu is not requested, so it is left out: empty nodes 100 -> 63.
    ("node without the scalar resource should skip the scalar resource",
     GPU_ARGS, spec_pod("p", CPU_AND_MEMORY),
     [make_node("node1", 3500, 40000, SCALAR), make_node("node2", 3500, 40000)],
     [], [56, 56], True),
    ("resources requested, pods scheduled with resources if PreScore not called",
     DEFAULT, spec_pod("p", CPU_AND_MEMORY), [make_node("node1", 10000, 20000), make_node("node2", 10000, 20000)],
     [cpu_only(), cpu_and_memory()], [73, 74], False),
]


def _params(table):
    return [pytest.param(*case[1:], id=case[0]) for case in table]


@pytest.mark.parametrize("args, the_pod, nodes, existing, expected, pre_score", _params(V1_35))
def test_balanced_allocation_v1_35(args, the_pod, nodes, existing, expected, pre_score):
    assert run(args, the_pod, nodes, existing, pre_score=pre_score, kube_version=(1, 35)) == expected


@pytest.mark.parametrize("args, the_pod, nodes, existing, expected, pre_score", _params(V1_36))
def test_balanced_allocation_newest(args, the_pod, nodes, existing, expected, pre_score):
    assert run(args, the_pod, nodes, existing, pre_score=pre_score) == expected
    assert run(args, the_pod, nodes, existing, pre_score=pre_score, kube_version=(1, 36)) == expected


def test_handle_kube_version_selects_the_formula():
    nodes = [make_node("node1", 6000, 10000), make_node("node2", 6000, 10000)]
    c = cluster(nodes, [cpu_only(), cpu_and_memory()])
    p = Pod(spec_pod("p", CPU_ONLY))
    candidates = np.arange(c.n)
    for version, expected in (((1, 35), [50, 75]), ((1, 36), [62, 62]), (None, [62, 62])):
        plugin = NodeResourcesBalancedAllocation(None, Handle(kube_version=version))
        state = CycleState()
        assert plugin.pre_score(state, p, c, candidates) is None
        assert plugin.score(state, p, c, candidates).tolist() == expected


def test_semantics_by_release():
    assert semantics(None) == Semantics(score_balance_change=True, skip_best_effort=True)
    assert semantics((1, 36)) == Semantics(True, True)
    assert semantics((1, 35)) == Semantics(False, True)
    assert semantics((1, 33)) == Semantics(False, True)
    assert semantics((1, 32)) == Semantics(False, False)


def test_score_without_pre_score_for_best_effort_pod_is_zero():
    c = cluster([make_node("node1", 4000, 10000)])
    plugin = NodeResourcesBalancedAllocation()
    assert plugin.score(CycleState(), Pod(pod("p", containers=[])), c, np.arange(1)).tolist() == [0]


def test_skip_status_code():
    c = cluster([make_node("node1", 4000, 10000)])
    status = NodeResourcesBalancedAllocation().pre_score(CycleState(), Pod(pod("p", containers=[])), c, np.arange(1))
    assert status.code == Code.SKIP


def test_default_args():
    plugin = NodeResourcesBalancedAllocation()
    assert plugin.name == NAME
    assert [(r.name, r.weight) for r in plugin.resources] == [("cpu", 1), ("memory", 1)]


@pytest.mark.parametrize("args", [
    pytest.param({"resources": [{"name": "cpu", "weight": 2}]}, id="weight must be 1"),
    pytest.param({"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 1}]}, id="duplicate"),
    pytest.param({"resources": "cpu"}, id="not a list"),
    pytest.param({"shape": []}, id="unknown field"),
])
def test_invalid_args(args):
    with pytest.raises(InputError):
        NodeResourcesBalancedAllocation(args)
