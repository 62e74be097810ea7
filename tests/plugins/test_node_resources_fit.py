"""NodeResourcesFit, ported from upstream's noderesources tests (newest versions in the index):

fit_test.go (TestEnoughRequests, TestNotEnoughRequests, TestStorageRequests,
TestRestartableInitContainers, TestFitScore), least_allocated_test.go
(TestLeastAllocatedScoringStrategy), most_allocated_test.go (TestMostAllocatedScoringStrategy),
requested_to_capacity_ratio_test.go (TestRequestedToCapacityRatioScoringStrategy,
TestBrokenLinearFunction, TestResourceBinPackingSingleExtended,
TestResourceBinPackingMultipleExtended, TestRequestedToCapacityRatioScorerOverflow,
TestScaledUtilization). Cases that need DRA device classes are left out (kplan does not simulate
DRA-backed extended resources), as are cases only reachable through the internal (undefaulted)
config API: a nil resource list and weight 0, which the v1 API defaults to cpu/memory and 1.
"""
from __future__ import annotations

import re

import numpy as np
import pytest

from builders import cluster, container, node, pod
from kplan.api.quantity import format_quantity
from kplan.errors import InputError
from kplan.framework.interfaces import CycleState
from kplan.framework.resource_scoring import broken_linear, scaled_utilization
from kplan.framework.status import Code
from kplan.plugins.node_resources_fit import (
    NAME, TOO_MANY_PODS, NodeResourcesFit, requested_to_capacity_ratio,
)

INT64_MAX = 2**63 - 1
EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
DRA_RES = "extended.resource.dra.io/something"
EXTENDED_RES = "abc.com/xyz"
DEFAULT_RESOURCES = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
EXTENDED_RESOURCE_SET = DEFAULT_RESOURCES + [{"name": EXTENDED_RES, "weight": 1}]

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


# -- builders mirroring the upstream test helpers ------------------------------------------------

def rl(cpu=0, mem=0, eph=0, x=None) -> dict:
    """framework.Resource as newResourcePod writes it: cpu milli, memory, pods 0, storage, scalars `x`."""
    out = {"cpu": f"{cpu}m", "memory": str(mem), "pods": "0", "ephemeral-storage": str(eph)}
    out.update({name: str(v) for name, v in (x or {}).items()})
    return out


def resource_pod(*usages, init=(), overhead=None, pod_level=None, name="p", node_name="", sidecars=()):
    """newResourcePod/newResourceInitPod/newResourceOverheadPod/newPodLevelResourcesPod."""
    containers = [container(f"c{i}", requests=u) for i, u in enumerate(usages)]
    init_containers = [container(f"i{i}", requests=u) for i, u in enumerate(init)]
    init_containers += [container(f"s{i}", requests=u, restart_policy="Always") for i, u in enumerate(sidecars)]
    spec = {}
    if overhead:
        spec["overhead"] = overhead
    if pod_level:
        spec["resources"] = {"requests": pod_level}
    return pod(name, node_name=node_name, containers=containers, init_containers=init_containers or None,
               spec=spec)


def bare_node(name: str, allocatable: dict) -> dict:
    """A node whose allocatable is exactly `allocatable` (st.MakeNode().Capacity(...))."""
    n = node(name)
    n["status"]["allocatable"] = dict(allocatable)
    n["status"]["capacity"] = dict(allocatable)
    return n


def make_resources_node(milli_cpu, memory, pods, ext_a, storage, huge_a, name="node") -> dict:
    """makeAllocatableResources(milliCPU, memory, pods, extendedA, storage, hugePageA)."""
    return bare_node(name, {"cpu": f"{milli_cpu}m", "memory": str(memory), "pods": str(pods), EXT_A: str(ext_a),
                            "ephemeral-storage": str(storage), HUGE_A: str(huge_a)})


def node_with_existing(node_dict: dict, existing: dict | None) -> object:
    pods = []
    if existing is not None:
        existing["spec"]["nodeName"] = node_dict["metadata"]["name"]
        existing["metadata"]["name"] = "existing"
        existing["status"]["phase"] = "Running"
        pods.append(existing)
    return cluster([node_dict], pods)


def run_filter(plugin: NodeResourcesFit, p: dict, c):
    from kplan.api.objects import Pod
    state = CycleState()
    the_pod = Pod(p)
    assert plugin.pre_filter(state, the_pod, c) is None
    return plugin.filter(state, the_pod, c)


def fmt(resource: str, amount: int) -> str:
    if resource == "cpu":
        return format_quantity(amount, "milli")
    if resource in ("memory", "ephemeral-storage") or resource.startswith("hugepages-"):
        return format_quantity(amount, "bytes")
    return format_quantity(amount, "value")


# -- TestEnoughRequests in fit_test.go ------------------------------------------------------------
# (pod, existing pod on the node, args, reasons, code, insufficient (resource, requested, used, capacity))

ENOUGH_REQUESTS = [
    ("no resources requested always fits",
     resource_pod(), resource_pod(rl(cpu=10, mem=20)), {}, [], 0, []),
    ("too many resources fails",
     resource_pod(rl(cpu=1, mem=1)), resource_pod(rl(cpu=10, mem=20)), {},
     ["Insufficient cpu", "Insufficient memory"], U, [("cpu", 1, 10, 10), ("memory", 1, 20, 20)]),
    ("too many resources fails due to init container cpu",
     resource_pod(rl(cpu=1, mem=1), init=[rl(cpu=3, mem=1)]), resource_pod(rl(cpu=8, mem=19)), {},
     ["Insufficient cpu"], U, [("cpu", 3, 8, 10)]),
    ("too many resources fails due to highest init container cpu",
     resource_pod(rl(cpu=1, mem=1), init=[rl(cpu=3, mem=1), rl(cpu=2, mem=1)]), resource_pod(rl(cpu=8, mem=19)), {},
     ["Insufficient cpu"], U, [("cpu", 3, 8, 10)]),
    ("too many resources fails due to init container memory",
     resource_pod(rl(cpu=1, mem=1), init=[rl(cpu=1, mem=3)]), resource_pod(rl(cpu=9, mem=19)), {},
     ["Insufficient memory"], U, [("memory", 3, 19, 20)]),
    ("too many resources fails due to highest init container memory",
     resource_pod(rl(cpu=1, mem=1), init=[rl(cpu=1, mem=3), rl(cpu=1, mem=2)]), resource_pod(rl(cpu=9, mem=19)), {},
     ["Insufficient memory"], U, [("memory", 3, 19, 20)]),
    ("init container fits because it's the max, not sum, of containers and init containers",
     resource_pod(rl(cpu=1, mem=1), init=[rl(cpu=1, mem=1)]), resource_pod(rl(cpu=9, mem=19)), {}, [], 0, []),
    ("multiple init containers fit because it's the max, not sum, of containers and init containers",
     resource_pod(rl(cpu=1, mem=1), init=[rl(cpu=1, mem=1), rl(cpu=1, mem=1)]), resource_pod(rl(cpu=9, mem=19)),
     {}, [], 0, []),
    ("both resources fit",
     resource_pod(rl(cpu=1, mem=1)), resource_pod(rl(cpu=5, mem=5)), {}, [], 0, []),
    ("one resource memory fits",
     resource_pod(rl(cpu=2, mem=1)), resource_pod(rl(cpu=9, mem=5)), {},
     ["Insufficient cpu"], U, [("cpu", 2, 9, 10)]),
    ("one resource cpu fits",
     resource_pod(rl(cpu=1, mem=2)), resource_pod(rl(cpu=5, mem=19)), {},
     ["Insufficient memory"], U, [("memory", 2, 19, 20)]),
    ("equal edge case",
     resource_pod(rl(cpu=5, mem=1)), resource_pod(rl(cpu=5, mem=19)), {}, [], 0, []),
    ("equal edge case for init container",
     resource_pod(rl(cpu=4, mem=1), init=[rl(cpu=5, mem=1)]), resource_pod(rl(cpu=5, mem=19)), {}, [], 0, []),
    ("extended resource fits",
     resource_pod(rl(x={EXT_A: 1})), resource_pod(rl()), {}, [], 0, []),
    ("extended resource fits for init container",
     resource_pod(rl(), init=[rl(x={EXT_A: 1})]), resource_pod(rl()), {}, [], 0, []),
    ("extended resource capacity enforced",
     resource_pod(rl(cpu=1, mem=1, x={EXT_A: 10})), resource_pod(rl(x={EXT_A: 0})), {},
     [f"Insufficient {EXT_A}"], UU, [(EXT_A, 10, 0, 5)]),
    ("extended resource capacity enforced for init container",
     resource_pod(rl(), init=[rl(cpu=1, mem=1, x={EXT_A: 10})]), resource_pod(rl(x={EXT_A: 0})), {},
     [f"Insufficient {EXT_A}"], UU, [(EXT_A, 10, 0, 5)]),
    ("extended resource allocatable enforced",
     resource_pod(rl(cpu=1, mem=1, x={EXT_A: 1})), resource_pod(rl(x={EXT_A: 5})), {},
     [f"Insufficient {EXT_A}"], U, [(EXT_A, 1, 5, 5)]),
    ("extended resource allocatable enforced for init container",
     resource_pod(rl(), init=[rl(cpu=1, mem=1, x={EXT_A: 1})]), resource_pod(rl(x={EXT_A: 5})), {},
     [f"Insufficient {EXT_A}"], U, [(EXT_A, 1, 5, 5)]),
    ("extended resource allocatable enforced for multiple containers",
     resource_pod(rl(cpu=1, mem=1, x={EXT_A: 3}), rl(cpu=1, mem=1, x={EXT_A: 3})),
     resource_pod(rl(x={EXT_A: 2})), {},
     [f"Insufficient {EXT_A}"], UU, [(EXT_A, 6, 2, 5)]),
    ("extended resource allocatable admits multiple init containers",
     resource_pod(rl(), init=[rl(cpu=1, mem=1, x={EXT_A: 3}), rl(cpu=1, mem=1, x={EXT_A: 3})]),
     resource_pod(rl(x={EXT_A: 2})), {}, [], 0, []),
    ("extended resource allocatable enforced for multiple init containers",
     resource_pod(rl(), init=[rl(cpu=1, mem=1, x={EXT_A: 6}), rl(cpu=1, mem=1, x={EXT_A: 3})]),
     resource_pod(rl(x={EXT_A: 2})), {},
     [f"Insufficient {EXT_A}"], UU, [(EXT_A, 6, 2, 5)]),
    ("extended resource allocatable enforced for unknown resource",
     resource_pod(rl(cpu=1, mem=1, x={EXT_B: 1})), resource_pod(rl()), {},
     [f"Insufficient {EXT_B}"], UU, [(EXT_B, 1, 0, 0)]),
    ("extended resource allocatable enforced for unknown resource for init container",
     resource_pod(rl(), init=[rl(cpu=1, mem=1, x={EXT_B: 1})]), resource_pod(rl()), {},
     [f"Insufficient {EXT_B}"], UU, [(EXT_B, 1, 0, 0)]),
    ("kubernetes.io resource capacity enforced",
     resource_pod(rl(cpu=1, mem=1, x={K8S_A: 10})), resource_pod(rl()), {},
     [f"Insufficient {K8S_A}"], UU, [(K8S_A, 10, 0, 0)]),
    ("kubernetes.io resource capacity enforced for init container",
     resource_pod(rl(), init=[rl(cpu=1, mem=1, x={K8S_B: 10})]), resource_pod(rl()), {},
     [f"Insufficient {K8S_B}"], UU, [(K8S_B, 10, 0, 0)]),
    ("hugepages resource capacity enforced",
     resource_pod(rl(cpu=1, mem=1, x={HUGE_A: 10})), resource_pod(rl(x={HUGE_A: 0})), {},
     [f"Insufficient {HUGE_A}"], UU, [(HUGE_A, 10, 0, 5)]),
    ("hugepages resource capacity enforced for init container",
     resource_pod(rl(), init=[rl(cpu=1, mem=1, x={HUGE_A: 10})]), resource_pod(rl(x={HUGE_A: 0})),
     {}, [f"Insufficient {HUGE_A}"], UU, [(HUGE_A, 10, 0, 5)]),
    ("hugepages resource allocatable enforced for multiple containers",
     resource_pod(rl(cpu=1, mem=1, x={HUGE_A: 3}), rl(cpu=1, mem=1, x={HUGE_A: 3})),
     resource_pod(rl(x={HUGE_A: 2})), {},
     [f"Insufficient {HUGE_A}"], UU, [(HUGE_A, 6, 2, 5)]),
    ("skip checking ignored extended resource",
     resource_pod(rl(cpu=1, mem=1, x={EXT_B: 1})), resource_pod(rl()),
     {"ignoredResources": ["example.com/bbb"]}, [], 0, []),
    ("resources + pod overhead fits",
     resource_pod(rl(cpu=1, mem=1), overhead={"cpu": "3m", "memory": "13"}), resource_pod(rl(cpu=5, mem=5)), {},
     [], 0, []),
    ("requests + overhead does not fit for memory",
     resource_pod(rl(cpu=1, mem=1), overhead={"cpu": "1m", "memory": "15"}), resource_pod(rl(cpu=5, mem=5)), {},
     ["Insufficient memory"], U, [("memory", 16, 5, 20)]),
    ("skip checking ignored extended resource via resource groups",
     resource_pod(rl(cpu=1, mem=1, x={EXT_B: 1, K8S_A: 1})), resource_pod(rl()),
     {"ignoredResourceGroups": ["example.com"]},
     [f"Insufficient {K8S_A}"], UU, [(K8S_A, 1, 0, 0)]),
    ("skip checking extended resource request with quantity zero via resource groups",
     resource_pod(rl(cpu=1, mem=1, x={EXT_A: 0})), resource_pod(rl(x={EXT_A: 6})), {}, [], 0, []),
    ("skip checking resource request with quantity zero",
     resource_pod(rl(x={EXT_A: 1})), resource_pod(rl(cpu=20, mem=30, x={EXT_A: 1})), {}, [], 0, []),
    ("both pod-level and container-level resources fit",
     resource_pod(rl(cpu=1, mem=1), pod_level={"cpu": "1m", "memory": "2"}), resource_pod(rl(cpu=5, mem=5)), {},
     [], 0, []),
    ("pod-level cpu resource not fit",
     resource_pod(rl(cpu=1, mem=1), pod_level={"cpu": "7m", "memory": "2"}), resource_pod(rl(cpu=5, mem=5)), {},
     ["Insufficient cpu"], U, [("cpu", 7, 5, 10)]),
    ("pod-level memory resource not fit",
     resource_pod(rl(cpu=1, mem=1), pod_level={"cpu": "3m", "memory": "2"}), resource_pod(rl(cpu=5, mem=19)), {},
     ["Insufficient memory"], U, [("memory", 2, 19, 20)]),
    ("pod-level hugepages resource fit",
     resource_pod(pod_level={"cpu": "3m", "memory": "2", HUGE_A: "5"}), None, {}, [], 0, []),
    ("both pod-level and container-level hugepages resource fit",
     resource_pod(rl(cpu=1, mem=1, x={HUGE_A: 3}), pod_level={"cpu": "3m", "memory": "2", HUGE_A: "5"}),
     None, {}, [], 0, []),
    ("pod-level hugepages resource not fit",
     resource_pod(pod_level={"cpu": "3m", "memory": "2", HUGE_A: "10"}), None, {},
     [f"Insufficient {HUGE_A}"], UU, [(HUGE_A, 10, 0, 5)]),
    ("one pod-level cpu resource fits and all init and non-init containers resources fit",
     resource_pod(rl(cpu=1, mem=1), init=[rl(cpu=1, mem=1)], pod_level={"cpu": "3m", "memory": "2"}),
     resource_pod(rl(cpu=5, mem=19)), {},
     ["Insufficient memory"], U, [("memory", 2, 19, 20)]),
    # DRA feature off (or no device class for the resource): checked like any extended resource.
    ("extended resource backed by DRA not enabled",
     resource_pod(rl(cpu=1, mem=1, x={DRA_RES: 1})), resource_pod(rl()), {},
     [f"Insufficient {DRA_RES}"], UU, [(DRA_RES, 1, 0, 0)]),
    ("extended resource NOT backed by DRA",
     resource_pod(rl(cpu=1, mem=1, x={EXT_B: 1})), resource_pod(rl()), {},
     [f"Insufficient {EXT_B}"], UU, [(EXT_B, 1, 0, 0)]),
    ("extended resource backed by device plugin",
     resource_pod(rl(x={EXT_A: 1})), resource_pod(rl()), {}, [], 0, []),
    ("extended resource was backed by Device Plugin (Allocatable: 0), global cache",
     resource_pod(rl(x={EXT_A: 1})), resource_pod(rl(x={EXT_A: 0})), {}, [], 0, []),
]


def _case_params(table):
    return [pytest.param(*case[1:], id=case[0]) for case in table]


@pytest.mark.parametrize("the_pod, existing, args, reasons, code, insufficient", _case_params(ENOUGH_REQUESTS))
def test_enough_requests(the_pod, existing, args, reasons, code, insufficient):
    c = node_with_existing(make_resources_node(10, 20, 32, 5, 20, 5), existing)
    status = run_filter(NodeResourcesFit(args), the_pod, c)
    assert status.reasons_of(0) == reasons
    assert status.code[0] == code
    if insufficient:
        lines = status.explain(0)
        assert len(lines) == len(insufficient)
        for line, (res, requested, used, capacity) in zip(lines, insufficient):
            assert line.startswith(f"{res}: requested {fmt(res, requested)}, used {fmt(res, used)}, "
                                   f"allocatable {fmt(res, capacity)}")
            assert line.endswith("(more than the node's whole allocatable)") == (requested > capacity)


# -- TestNotEnoughRequests in fit_test.go -----------------------------------------------------------

NOT_ENOUGH_REQUESTS = [
    ("even without specified resources, predicate fails when there's no space for additional pod",
     resource_pod(), resource_pod(rl(cpu=10, mem=20))),
    ("even if both resources fit, predicate fails when there's no space for additional pod",
     resource_pod(rl(cpu=1, mem=1)), resource_pod(rl(cpu=5, mem=5))),
    ("even for equal edge case, predicate fails when there's no space for additional pod",
     resource_pod(rl(cpu=5, mem=1)), resource_pod(rl(cpu=5, mem=19))),
    ("even for equal edge case, predicate fails when there's no space for additional pod due to init container",
     resource_pod(rl(cpu=5, mem=1), init=[rl(cpu=5, mem=1)]), resource_pod(rl(cpu=5, mem=19))),
]


@pytest.mark.parametrize("the_pod, existing", _case_params(NOT_ENOUGH_REQUESTS))
def test_not_enough_requests(the_pod, existing):
    c = node_with_existing(make_resources_node(10, 20, 1, 0, 0, 0), existing)
    status = run_filter(NodeResourcesFit(), the_pod, c)
    assert status.reasons_of(0) == [TOO_MANY_PODS]
    assert status.code[0] == Code.UNSCHEDULABLE
    assert status.explain(0) == ["pods: requested 1, used 1, allocatable 1"]


# -- TestStorageRequests in fit_test.go -------------------------------------------------------------

STORAGE_REQUESTS = [
    ("empty storage requested, and pod fits", resource_pod(rl(cpu=1, mem=1)), resource_pod(rl(cpu=2, mem=10)),
     [], 0),
    ("storage ephemeral local storage request exceeds allocatable", resource_pod(rl(eph=25)),
     resource_pod(rl(cpu=2, mem=2)), ["Insufficient ephemeral-storage"], UU),
    ("ephemeral local storage is sufficient", resource_pod(rl(eph=5)), resource_pod(rl(cpu=2, mem=2, eph=10)),
     [], 0),
    ("pod fits", resource_pod(rl(eph=10)), resource_pod(rl(cpu=2, mem=2)), [], 0),
]


@pytest.mark.parametrize("the_pod, existing, reasons, code", _case_params(STORAGE_REQUESTS))
def test_storage_requests(the_pod, existing, reasons, code):
    c = node_with_existing(make_resources_node(10, 20, 32, 5, 20, 5), existing)
    status = run_filter(NodeResourcesFit(), the_pod, c)
    assert status.reasons_of(0) == reasons
    assert status.code[0] == code


# -- TestRestartableInitContainers in fit_test.go (SidecarContainers is GA: the enabled cases) ------

def _sidecar_pod(request=None, sidecar_request=None):
    return pod("p", containers=[container("regular", requests=request)],
               init_containers=[container("restartable-init", requests=sidecar_request, restart_policy="Always")])


RESTARTABLE_INIT = [
    ("allow pod without restartable init containers if sidecar containers is enabled",
     pod("p", containers=[container("regular")]), [], 0),
    ("allow pod with restartable init containers if sidecar containers is enabled", _sidecar_pod(), [], 0),
    ("allow pod if the total requested resources do not exceed the node's allocatable resources",
     _sidecar_pod({"cpu": "1m"}, {"cpu": "1m"}), [], 0),
    ("not allow pod if the total requested resources do exceed the node's allocatable resources",
     _sidecar_pod({"cpu": "1m"}, {"cpu": "2m"}), ["Insufficient cpu"], UU),
]


@pytest.mark.parametrize("the_pod, reasons, code", _case_params(RESTARTABLE_INIT))
def test_restartable_init_containers(the_pod, reasons, code):
    c = node_with_existing(make_resources_node(2, 0, 1, 0, 0, 0), None)
    status = run_filter(NodeResourcesFit(), the_pod, c)
    assert status.reasons_of(0) == reasons
    assert status.code[0] == code


# -- scoring ---------------------------------------------------------------------------------------

def _req_pod(*requests, name="p", node_name="", sidecar=None):
    """st.MakePod().Req(...).Req(...): one container per Req call; SidecarReq adds a sidecar."""
    init = [container("sidecar", requests=sidecar, restart_policy="Always")] if sidecar else None
    return pod(name, node_name=node_name, containers=[container(f"c{i}", requests=r) for i, r in enumerate(requests)],
               init_containers=init)


def _existing(node_name, *requests, i=0, sidecar=None):
    return _req_pod(*requests, name=f"existing-{node_name}-{i}", node_name=node_name, sidecar=sidecar)


def run_score(args, the_pod, nodes, existing, pre_score=True):
    from kplan.api.objects import Pod
    c = cluster(nodes, existing)
    plugin = NodeResourcesFit(args)
    state = CycleState()
    p = Pod(the_pod)
    candidates = np.arange(c.n)
    if pre_score:
        assert plugin.pre_score(state, p, c, candidates) is None
    scores = plugin.score(state, p, c, candidates)
    assert scores.dtype == np.int64
    return scores.tolist()


def _two(cpu1, mem1, cpu2, mem2, extra1=None, extra2=None):
    return [bare_node("node1", {"cpu": cpu1, "memory": mem1, **(extra1 or {})}),
            bare_node("node2", {"cpu": cpu2, "memory": mem2, **(extra2 or {})})]


def _strategy(kind, resources=None, shape=None):
    s = {"type": kind, "resources": resources if resources is not None else DEFAULT_RESOURCES}
    if shape is not None:
        s["requestedToCapacityRatio"] = {"shape": shape}
    return {"scoringStrategy": s}


SHAPE_DOWN = [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
SHAPE_UP = [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]
_EXISTING_21 = [_existing("node1", {"cpu": "2000", "memory": "4000"}),
                _existing("node2", {"cpu": "1000", "memory": "2000"})]

# TestFitScore in fit_test.go: (args, pod, nodes, existing, expected, run PreScore)
FIT_SCORE = [
    ("test case for ScoringStrategy RequestedToCapacityRatio case1",
     _strategy("RequestedToCapacityRatio", shape=SHAPE_DOWN), _req_pod({"cpu": "3000", "memory": "5000"}),
     _two("4000", "10000", "6000", "10000"), _EXISTING_21, [10, 32], True),
    ("test case for ScoringStrategy RequestedToCapacityRatio case2",
     _strategy("RequestedToCapacityRatio", shape=SHAPE_UP), _req_pod({"cpu": "3000", "memory": "5000"}),
     _two("4000", "10000", "6000", "10000"), _EXISTING_21, [95, 68], True),
    ("test case for ScoringStrategy MostAllocated",
     _strategy("MostAllocated"), _req_pod({"cpu": "1000", "memory": "2000"}),
     _two("4000", "10000", "6000", "10000"), _EXISTING_21, [67, 36], True),
    ("test case for ScoringStrategy LeastAllocated",
     _strategy("LeastAllocated"), _req_pod({"cpu": "1000", "memory": "2000"}),
     _two("4000", "10000", "6000", "10000"), _EXISTING_21, [32, 63], True),
    ("test case for ScoringStrategy RequestedToCapacityRatio case1 if PreScore is not called",
     _strategy("RequestedToCapacityRatio", shape=SHAPE_DOWN), _req_pod({"cpu": "3000", "memory": "5000"}),
     _two("4000", "10000", "6000", "10000"), _EXISTING_21, [10, 32], False),
    ("test case for ScoringStrategy MostAllocated if PreScore is not called",
     _strategy("MostAllocated"), _req_pod({"cpu": "1000", "memory": "2000"}),
     _two("4000", "10000", "6000", "10000"), _EXISTING_21, [67, 36], False),
    ("test case for ScoringStrategy LeastAllocated if PreScore is not called",
     _strategy("LeastAllocated"), _req_pod({"cpu": "1000", "memory": "2000"}),
     _two("4000", "10000", "6000", "10000"), _EXISTING_21, [32, 63], False),
    ("test case for ScoringStrategy MostAllocated with sidecar container",
     _strategy("MostAllocated"), _req_pod({"cpu": "1000", "memory": "2000"}),
     _two("4000", "10000", "4000", "10000"),
     [_existing("node1", {"cpu": "1000", "memory": "2000"}, sidecar={"cpu": "1000", "memory": "2000"}),
      _existing("node2", {"cpu": "1000", "memory": "2000"})], [67, 45], True),
    ("test case for ScoringStrategy LeastAllocated with sidecar container",
     _strategy("LeastAllocated"), _req_pod({"cpu": "1000", "memory": "2000"}),
     _two("4000", "10000", "4000", "10000"),
     [_existing("node1", {"cpu": "1000", "memory": "2000"}, sidecar={"cpu": "1000", "memory": "2000"}),
      _existing("node2", {"cpu": "1000", "memory": "2000"})], [32, 55], True),
]


@pytest.mark.parametrize("args, the_pod, nodes, existing, expected, pre_score", _case_params(FIT_SCORE))
def test_fit_score(args, the_pod, nodes, existing, expected, pre_score):
    assert run_score(args, the_pod, nodes, existing, pre_score) == expected


_CPU_MEM_23 = ({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})

# TestLeastAllocatedScoringStrategy in least_allocated_test.go: (resources, pod, nodes, existing, expected)
LEAST_ALLOCATED = [
    ("nothing scheduled, nothing requested", DEFAULT_RESOURCES, _req_pod(),
     _two("4000", "10000", "4000", "10000"), [], [100, 100]),
    ("nothing scheduled, resources requested, differently sized nodes", DEFAULT_RESOURCES, _req_pod(*_CPU_MEM_23),
     _two("4000", "10000", "6000", "10000"), [], [37, 50]),
    ("no resources requested, pods scheduled", DEFAULT_RESOURCES, _req_pod(),
     _two("4000", "10000", "4000", "10000"),
     [_existing("node1", i=0), _existing("node1", i=1), _existing("node2", i=0), _existing("node2", i=1)],
     [100, 100]),
    ("no resources requested, pods scheduled with resources", DEFAULT_RESOURCES, _req_pod(),
     _two("10000", "20000", "10000", "20000"),
     [_existing("node1", {"cpu": "3000", "memory": "0"}, i=0), _existing("node1", {"cpu": "3000", "memory": "0"}, i=1),
      _existing("node2", {"cpu": "3000", "memory": "0"}, i=0),
      _existing("node2", {"cpu": "3000", "memory": "5000"}, i=1)], [70, 57]),
    ("resources requested, pods scheduled with resources", DEFAULT_RESOURCES, _req_pod(*_CPU_MEM_23),
     _two("10000", "20000", "10000", "20000"),
     [_existing("node1", {"cpu": "3000", "memory": "0"}), _existing("node2", {"cpu": "3000", "memory": "5000"})],
     [57, 45]),
    ("resources requested, pods scheduled with resources, differently sized nodes", DEFAULT_RESOURCES,
     _req_pod(*_CPU_MEM_23), _two("10000", "20000", "10000", "50000"),
     [_existing("node1", {"cpu": "3000", "memory": "0"}), _existing("node2", {"cpu": "3000", "memory": "5000"})],
     [57, 60]),
    ("requested resources exceed node capacity", DEFAULT_RESOURCES, _req_pod({"cpu": "3000", "memory": "0"}),
     _two("4000", "10000", "4000", "10000"),
     [_existing("node1", {"cpu": "3000", "memory": "0"}), _existing("node2", {"cpu": "3000", "memory": "5000"})],
     [50, 25]),
    ("zero node resources, pods scheduled with resources", DEFAULT_RESOURCES, _req_pod(),
     [bare_node("node1", {}), bare_node("node2", {})],
     [_existing("node1", {"cpu": "3000", "memory": "0"}), _existing("node2", {"cpu": "3000", "memory": "5000"})],
     [0, 0]),
    ("nothing scheduled, resources requested with different weight on CPU and memory, differently sized nodes",
     [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}], _req_pod(*_CPU_MEM_23),
     _two("4000", "10000", "6000", "10000"), [], [41, 50]),
    ("bypass extended resource if the pod does not request", EXTENDED_RESOURCE_SET, _req_pod(*_CPU_MEM_23),
     _two("6000", "10000", "6000", "10000", extra2={EXTENDED_RES: "4"}), [], [50, 50]),
    ("honor extended resource if the pod requests", EXTENDED_RESOURCE_SET,
     _req_pod({"cpu": "3000", "memory": "5000", EXTENDED_RES: "2"}),
     _two("6000", "10000", "6000", "10000", extra1={EXTENDED_RES: "4"}, extra2={EXTENDED_RES: "10"}), [], [50, 60]),
    ("if the node doesn't have a resource",
     [{"name": EXTENDED_RES, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
     _req_pod({"cpu": "3000", "memory": "4000"}),
     _two("6000", "10000", "6000", "10000", extra2={EXTENDED_RES: "4"}), [], [55, 55]),
]


@pytest.mark.parametrize("resources, the_pod, nodes, existing, expected", _case_params(LEAST_ALLOCATED))
def test_least_allocated_scoring_strategy(resources, the_pod, nodes, existing, expected):
    assert run_score(_strategy("LeastAllocated", resources), the_pod, nodes, existing) == expected


# TestMostAllocatedScoringStrategy in most_allocated_test.go
MOST_ALLOCATED = [
    ("nothing scheduled, nothing requested", DEFAULT_RESOURCES, _req_pod(),
     _two("4000", "10000", "4000", "10000"), [], [0, 0]),
    ("nothing scheduled, resources requested, differently sized nodes", DEFAULT_RESOURCES, _req_pod(*_CPU_MEM_23),
     _two("4000", "10000", "6000", "10000"), [], [62, 50]),
    ("no resources requested, pods scheduled with resources", DEFAULT_RESOURCES, _req_pod(),
     _two("10000", "20000", "10000", "20000"),
     [_existing("node1", {"cpu": "3000", "memory": "0"}, i=0), _existing("node1", {"cpu": "3000", "memory": "0"}, i=1),
      _existing("node2", {"cpu": "3000", "memory": "0"}, i=0),
      _existing("node2", {"cpu": "3000", "memory": "5000"}, i=1)], [30, 42]),
    ("resources requested, pods scheduled with resources", DEFAULT_RESOURCES, _req_pod(*_CPU_MEM_23),
     _two("10000", "20000", "10000", "20000"),
     [_existing("node1", {"cpu": "3000", "memory": "0"}), _existing("node2", {"cpu": "3000", "memory": "5000"})],
     [42, 55]),
    ("resources requested equal node capacity", DEFAULT_RESOURCES,
     _req_pod({"cpu": "2000", "memory": "4000"}, {"cpu": "3000", "memory": "5000"}),
     _two("5000", "10000", "10000", "9000"), [], [95, 75]),
    ("nothing scheduled, resources requested, differently sized nodes (weights memory 2, cpu 1)",
     [{"name": "memory", "weight": 2}, {"name": "cpu", "weight": 1}], _req_pod(*_CPU_MEM_23),
     _two("4000", "10000", "6000", "10000"), [], [58, 50]),
    ("no resources requested, pods scheduled, nonzero request for resource", DEFAULT_RESOURCES,
     pod("p", containers=[container("container")]), _two("250m", "1000Mi", "250m", "1000Mi"),
     [pod("e0", node_name="node1", containers=[container("container")]),
      pod("e1", node_name="node1", containers=[container("container")])], [80, 30]),
    ("bypass extended resource if the pod does not request", EXTENDED_RESOURCE_SET, _req_pod(*_CPU_MEM_23),
     _two("6000", "10000", "6000", "10000", extra2={EXTENDED_RES: "4"}), [], [50, 50]),
    ("honor extended resource if the pod request", EXTENDED_RESOURCE_SET,
     _req_pod({"cpu": "3000", "memory": "5000", EXTENDED_RES: "2"}),
     _two("6000", "10000", "6000", "10000", extra1={EXTENDED_RES: "4"}, extra2={EXTENDED_RES: "10"}), [], [50, 40]),
    ("if the node doesn't have a resource",
     [{"name": EXTENDED_RES, "weight": 2}, {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
     _req_pod({"cpu": "3000", "memory": "4000"}),
     _two("6000", "10000", "6000", "10000", extra2={EXTENDED_RES: "4"}), [], [45, 45]),
]


@pytest.mark.parametrize("resources, the_pod, nodes, existing, expected", _case_params(MOST_ALLOCATED))
def test_most_allocated_scoring_strategy(resources, the_pod, nodes, existing, expected):
    assert run_score(_strategy("MostAllocated", resources), the_pod, nodes, existing) == expected


# Invalid weights from least_allocated_test.go and most_allocated_test.go ("resource with negative
# weight", "resource weight larger than MaxNodeScore"): field scoringStrategy.resources[i].weight.
@pytest.mark.parametrize("kind", ["LeastAllocated", "MostAllocated"])
@pytest.mark.parametrize("resources, field", [
    pytest.param([{"name": "memory", "weight": -1}, {"name": "cpu", "weight": 1}], "resources[0].weight",
                 id="resource with negative weight"),
    pytest.param([{"name": "memory", "weight": 1}, {"name": "cpu", "weight": 101}], "resources[1].weight",
                 id="resource weight larger than MaxNodeScore"),
])
def test_invalid_weights(kind, resources, field):
    with pytest.raises(InputError, match=re.escape(f"scoringStrategy.{field}")):
        NodeResourcesFit(_strategy(kind, resources))


# TestRequestedToCapacityRatioScoringStrategy in requested_to_capacity_ratio_test.go
RTCR = [
    ("nothing scheduled, nothing requested (default - least requested nodes have priority)", _req_pod(),
     _two("4000", "10000", "4000", "10000"), [_existing("node1", i=0), _existing("node1", i=1)], [100, 100]),
    ("nothing scheduled, resources requested, differently sized nodes (default - least requested nodes have "
     "priority)", _req_pod(*_CPU_MEM_23), _two("4000", "10000", "6000", "10000"),
     [_existing("node1", i=0), _existing("node1", i=1)], [38, 50]),
    ("no resources requested, pods scheduled with resources (default - least requested nodes have priority)",
     _req_pod(), _two("4000", "10000", "6000", "10000"),
     [_existing("node1", {"cpu": "3000", "memory": "5000"}), _existing("node2", {"cpu": "3000", "memory": "5000"})],
     [38, 50]),
]


@pytest.mark.parametrize("the_pod, nodes, existing, expected", _case_params(RTCR))
def test_requested_to_capacity_ratio_scoring_strategy(the_pod, nodes, existing, expected):
    args = _strategy("RequestedToCapacityRatio", DEFAULT_RESOURCES, SHAPE_DOWN)
    assert run_score(args, the_pod, nodes, existing) == expected


# TestBrokenLinearFunction in requested_to_capacity_ratio_test.go: (points, [(p, expected)])
BROKEN_LINEAR = [
    ("case_0", [(10, 1), (90, 9)],
     [(-10, 1), (0, 1), (9, 1), (10, 1), (15, 1), (19, 1), (20, 2), (89, 8), (90, 9), (99, 9), (100, 9), (110, 9)]),
    ("case_1", [(0, 2), (40, 10), (100, 0)],
     [(-10, 2), (0, 2), (20, 6), (30, 8), (40, 10), (70, 5), (100, 0), (110, 0)]),
    ("case_2", [(0, 2), (40, 2), (100, 2)],
     [(-10, 2), (0, 2), (20, 2), (30, 2), (40, 2), (70, 2), (100, 2), (110, 2)]),
]


@pytest.mark.parametrize("points, assertions", _case_params(BROKEN_LINEAR))
def test_broken_linear_function(points, assertions):
    p = np.array([a for a, _ in assertions])
    assert broken_linear(points, p).tolist() == [e for _, e in assertions]


def _make_node(name, milli_cpu, memory, extended):
    """makeNode in test_util.go: cpu in milli, memory in bytes, extended resources as counts."""
    return bare_node(name, {"cpu": f"{milli_cpu}m", "memory": str(memory),
                            **{k: str(v) for k, v in extended.items()}})


_FOO4, _FOO8 = {"intel.com/foo": 4}, {"intel.com/foo": 8}
_BIN_NODES_SINGLE = [_make_node("node1", 4000, 10000 * 1024 * 1024, _FOO8),
                     _make_node("node2", 4000, 10000 * 1024 * 1024, _FOO4)]

# TestResourceBinPackingSingleExtended in requested_to_capacity_ratio_test.go
BIN_PACKING_SINGLE = [
    ("nothing scheduled, nothing requested", _req_pod(), [], [0, 0]),
    ("resources requested, pods scheduled with less resources", _req_pod({"intel.com/foo": "2"}),
     [_req_pod(name="e")], [2, 5]),
    ("resources requested, pods scheduled with resources, on node with existing pod running ",
     _req_pod({"intel.com/foo": "2"}), [_existing("node2", {"intel.com/foo": "2"})], [2, 10]),
    ("resources requested, pods scheduled with more resources", _req_pod({"intel.com/foo": "4"}),
     [_req_pod(name="e")], [5, 10]),
]


@pytest.mark.parametrize("the_pod, existing, expected", _case_params(BIN_PACKING_SINGLE))
def test_resource_bin_packing_single_extended(the_pod, existing, expected):
    args = _strategy("RequestedToCapacityRatio", [{"name": "intel.com/foo", "weight": 1}], SHAPE_UP[:1] + [
        {"utilization": 100, "score": 1}])
    assert run_score(args, the_pod, _BIN_NODES_SINGLE, existing) == expected


_BIN_NODES_MULTI = [_make_node("node1", 4000, 10000 * 1024 * 1024, {"intel.com/foo": 8, "intel.com/bar": 4}),
                    _make_node("node2", 4000, 10000 * 1024 * 1024, {"intel.com/foo": 4, "intel.com/bar": 8})]
_POD1 = {"intel.com/foo": "2", "intel.com/bar": "2"}
_POD2 = {"intel.com/foo": "4", "intel.com/bar": "2"}

# TestResourceBinPackingMultipleExtended in requested_to_capacity_ratio_test.go
BIN_PACKING_MULTI = [
    ("nothing scheduled, nothing requested", _req_pod(), [], [0, 0]),
    ("resources requested, pods scheduled with less resources", _req_pod(_POD1), [_req_pod(name="e")], [4, 3]),
    ("resources requested, pods scheduled with resources, on node with existing pod running ", _req_pod(_POD1),
     [_existing("node2", _POD2)], [4, 7]),
    ("resources requested, pods scheduled with more resources", _req_pod(_POD2), [_req_pod(name="e")], [5, 5]),
]


@pytest.mark.parametrize("the_pod, existing, expected", _case_params(BIN_PACKING_MULTI))
def test_resource_bin_packing_multiple_extended(the_pod, existing, expected):
    args = _strategy("RequestedToCapacityRatio",
                     [{"name": "intel.com/foo", "weight": 3}, {"name": "intel.com/bar", "weight": 5}],
                     [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 1}])
    assert run_score(args, the_pod, _BIN_NODES_MULTI, existing) == expected


# TestRequestedToCapacityRatioScorerOverflow in requested_to_capacity_ratio_test.go (shape scores
# given already scaled to 0..100, as upstream passes them to the scorer function).
LINEAR = ((0, 0), (100, 100))
STEEP = ((0, 0), (99, 0), (100, 100))
SCORER_OVERFLOW = [
    ("requested above the multiplication overflow threshold", LINEAR, INT64_MAX // 100 + 1, INT64_MAX, 1),
    ("saturated requested and capacity", LINEAR, INT64_MAX, INT64_MAX, 100),
    ("no requested", LINEAR, 0, INT64_MAX, 0),
    ("steep shape stays at 0 for utilization 99", STEEP, 999999999999999999, 1000000000000000000, 0),
    ("steep shape full score at utilization 100", STEEP, 1000000000000000000, 1000000000000000000, 100),
]


@pytest.mark.parametrize("shape, requested, capacity, want", _case_params(SCORER_OVERFLOW))
def test_requested_to_capacity_ratio_scorer_overflow(shape, requested, capacity, want):
    got = requested_to_capacity_ratio(shape, np.array([[requested]], dtype=np.int64),
                                      np.array([[capacity]], dtype=np.int64), [1], np.array([[True]]))
    assert got.tolist() == [want]


# TestScaledUtilization in requested_to_capacity_ratio_test.go
SCALED_UTILIZATION = [
    ("negative requested from wrapped totals", -1, 1000, 0),
    ("zero requested", 0, 1000, 0),
    ("zero capacity", 500, 0, 0),
    ("negative capacity", 500, -1000, 0),
    ("requested at capacity", 1000, 1000, 100),
    ("requested above capacity", 2000, 1000, 100),
    ("requested far above capacity avoids Div64 panic", INT64_MAX, 1, 100),
    ("normal range", 250, 1000, 25),
    ("exact in the math/bits path", 999999999999999999, 1000000000000000000, 99),
    ("math/bits path just below capacity", INT64_MAX - 1, INT64_MAX, 99),
]


@pytest.mark.parametrize("requested, capacity, want", _case_params(SCALED_UTILIZATION))
def test_scaled_utilization(requested, capacity, want):
    got = scaled_utilization(np.array([requested], dtype=np.int64), np.array([capacity], dtype=np.int64), 100)
    assert got.tolist() == [want]


@pytest.mark.parametrize("huge", [True, False])
def test_scaled_utilization_over_node_arrays(huge):
    # The same table over arrays (a real cycle's shape): the direct division when no product can
    # overflow, the long division when one could.
    cases = [c for c in SCALED_UTILIZATION if huge or max(c[1], c[2]) < 10**15] * 3
    requested = np.array([c[1] for c in cases], dtype=np.int64)
    capacity = np.array([c[2] for c in cases], dtype=np.int64)
    assert scaled_utilization(requested, capacity, 100).tolist() == [c[3] for c in cases]


# -- args (NodeResourcesFitArgs as the v1 API defaults and validates it) --------------------------

def test_default_args_are_least_allocated_cpu_memory():
    plugin = NodeResourcesFit()
    assert plugin.name == NAME
    assert plugin.strategy == "LeastAllocated"
    assert [(r.name, r.weight) for r in plugin.resources] == [("cpu", 1), ("memory", 1)]


def test_missing_weight_defaults_to_one():
    plugin = NodeResourcesFit({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}]}})
    assert [(r.name, r.weight) for r in plugin.resources] == [("cpu", 1)]


@pytest.mark.parametrize("args", [
    pytest.param({"scoringStrategy": {"type": "Bogus"}}, id="unsupported strategy"),
    pytest.param({"scoringStrategy": {"resources": DEFAULT_RESOURCES}}, id="strategy without type"),
    pytest.param({"scoringStrategy": {"type": "RequestedToCapacityRatio"}}, id="ratio without shape"),
    pytest.param(_strategy("RequestedToCapacityRatio", shape=[]), id="empty shape"),
    pytest.param(_strategy("RequestedToCapacityRatio", shape=[{"utilization": 50, "score": 1},
                                                             {"utilization": 10, "score": 2}]), id="unsorted shape"),
    pytest.param(_strategy("RequestedToCapacityRatio", shape=[{"utilization": 101, "score": 1}]),
                 id="utilization out of range"),
    pytest.param(_strategy("RequestedToCapacityRatio", shape=[{"utilization": 10, "score": 11}]),
                 id="score out of range"),
    pytest.param({"ignoredResourceGroups": ["example.com/x"]}, id="resource group with slash"),
    pytest.param({"ignoredResources": "example.com/x"}, id="ignoredResources not a list"),
    pytest.param({"bogus": 1}, id="unknown field"),
])
def test_invalid_args(args):
    with pytest.raises(InputError):
        NodeResourcesFit(args)


def test_filter_is_vectorized_over_nodes():
    """Three nodes at once: fits, short of memory, too small for the request altogether."""
    nodes = [node("a", cpu="4", memory="4Gi"), node("b", cpu="4", memory="4Gi"), node("c", cpu="1", memory="4Gi")]
    existing = [pod("e", node_name="b", requests={"memory": "3Gi"})]
    c = cluster(nodes, existing)
    status = run_filter(NodeResourcesFit(), pod("p", requests={"cpu": "2", "memory": "2Gi"}), c)
    assert status.code.tolist() == [0, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE]
    assert [status.reasons_of(i) for i in range(3)] == [[], ["Insufficient memory"], ["Insufficient cpu"]]
    assert status.explain(1) == ["memory: requested 2Gi, used 3Gi, allocatable 4Gi"]
    assert status.explain(2) == ["cpu: requested 2, used 0, allocatable 1 (more than the node's whole allocatable)"]


def test_weighted_mean_over_node_arrays_matches_go_division():
    # Every resource counted (the direct path) and some left out (the masked path) agree with
    # sum(score * weight) / sum(weight), truncated, per node.
    from kplan.framework.resource_scoring import weighted_mean
    scores = np.array([[100, 33], [7, 0], [99, 98], [0, 0]], dtype=np.int64)
    weights = [2, 1]
    assert weighted_mean(scores, weights, np.ones_like(scores, dtype=bool)).tolist() == [
        (100 * 2 + 33) // 3, 14 // 3, (99 * 2 + 98) // 3, 0]
    counted = np.array([[True, False], [True, True], [False, True], [False, False]])
    assert weighted_mean(scores, weights, counted).tolist() == [100, 14 // 3, 98, 0]
