"""LimitAware, ported from koordinator pull request #1486 (pkg/scheduler/plugins/limitaware, the
only implementation; never merged): filtering_test.go (TestEnoughLimits, 32 cases),
scoring_test.go (TestScore, 4 cases), util_test.go (Test_getPodResourceLimit, 5 cases;
Test_getNodeLimitCapacity, 1 case), plus the proposal's user stories 1 and 2 and kplan's
handling of the node annotation (a malformed one rejects that node instead of failing the cycle).

Upstream adds existing pods to the plugin's cache by hand; here they are bound to the node, which
ClusterState.allocated_limits sums the same way.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

from builders import cluster, container, pod
from kplan.api.objects import Pod
from kplan.errors import InputError
from kplan.framework.interfaces import CycleState
from kplan.framework.status import Code
from kplan.plugins.limit_aware import (
    ANNOTATION, NAME, LimitAware, insufficient_limit_reason, limit_capacity, min_max_normalize,
)

EXT_A = "example.com/aaa"
EXT_B = "example.com/bbb"
K8S_A = "kubernetes.io/something"
K8S_B = "subdomain.kubernetes.io/something"
HUGE_A = "hugepages-2Mi"
U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

# defaultLimitToAllocatableRatio in filtering_test.go (no ephemeral-storage).
DEFAULT_RATIO = {"cpu": 100, "memory": 100, EXT_A: 100, EXT_B: 100, K8S_A: 100, K8S_B: 100, HUGE_A: 100}


def reason(resource: str) -> str:
    return f"Insufficient {resource} limit"


# -- builders mirroring the upstream test helpers ------------------------------------------------

def res(cpu=0, mem=0, eph=0, x=None, drop_zero=False) -> dict:
    """A container's limits as newResourcePod writes them: cpu milli, memory, pods 0, storage, scalars."""
    out = {"cpu": f"{cpu}m", "memory": str(mem), "pods": "0", "ephemeral-storage": str(eph)}
    if drop_zero:  # newResourcePodForNonZeroTest(zeroNotSet=true)
        if not cpu:
            del out["cpu"]
        if not mem:
            del out["memory"]
    out.update({name: str(v) for name, v in (x or {}).items()})
    return out


def limit_pod(*usages, init=(), overhead=None, name="p", drop_zero=False, owner_kind="") -> dict:
    """newResourcePod / newResourceInitPod / newResourceOverheadPod: limits only, no requests."""
    containers = [container(f"c{i}", limits=res(**u, drop_zero=drop_zero)) for i, u in enumerate(usages)]
    init_containers = [container(f"i{i}", limits=res(**u)) for i, u in enumerate(init)]
    return pod(name, containers=containers, init_containers=init_containers or None,
               spec={"overhead": overhead} if overhead else None, owner_kind=owner_kind)


def bare_node(name: str, allocatable: dict, annotations=None) -> dict:
    n = {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": name, "labels": {}, "annotations": dict(annotations or {})},
         "spec": {}, "status": {"allocatable": dict(allocatable), "capacity": dict(allocatable)}}
    return n


def the_test_node(annotations=None) -> dict:
    """makeAllocatableResources(10, 20, 32, 5, 20, 5)."""
    return bare_node("test-node", {"cpu": "10m", "memory": "20", "pods": "32", EXT_A: "5",
                                   "ephemeral-storage": "20", HUGE_A: "5"}, annotations)


def bind(p: dict, node_name: str, name: str) -> dict:
    p["spec"]["nodeName"] = node_name
    p["metadata"]["name"] = name
    p["metadata"]["uid"] = f"uid-{name}"
    p["status"]["phase"] = "Running"
    return p


def run_filter(plugin: LimitAware, p: dict, c):
    state = CycleState()
    the_pod = Pod(p)
    assert plugin.pre_filter(state, the_pod, c) is None
    return plugin.filter(state, the_pod, c), state


def plugin_with(ratio=None, **args) -> LimitAware:
    return LimitAware({"defaultLimitToAllocatableRatio": ratio, **args} if ratio is not None else args)


# -- TestEnoughLimits in filtering_test.go --------------------------------------------------------
# (name, pod, existing pod, reasons, insufficient [(resource, requested, used, capacity)])

ENOUGH_LIMITS = [
    ("no resources requested always fits",
     pod("p", containers=[]), limit_pod(dict(cpu=10, mem=20)), [], []),
    ("too many resources fails",
     limit_pod(dict(cpu=1, mem=1)), limit_pod(dict(cpu=10, mem=20)),
     [reason("cpu"), reason("memory")], [("cpu", 1, 10, 10), ("memory", 1, 20, 20)]),
    ("too many resources fails, but daemonset pod pass",
     limit_pod(dict(cpu=1, mem=1), owner_kind="DaemonSet"), limit_pod(dict(cpu=10, mem=20)),
     [], [("cpu", 1, 10, 10), ("memory", 1, 20, 20)]),
    ("too many resources fails due to init container cpu",
     limit_pod(dict(cpu=1, mem=1), init=[dict(cpu=3, mem=1)]), limit_pod(dict(cpu=8, mem=19)),
     [reason("cpu")], [("cpu", 3, 8, 10)]),
    ("too many resources fails due to highest init container cpu",
     limit_pod(dict(cpu=1, mem=1), init=[dict(cpu=3, mem=1), dict(cpu=2, mem=1)]), limit_pod(dict(cpu=8, mem=19)),
     [reason("cpu")], [("cpu", 3, 8, 10)]),
    ("too many resources fails due to init container memory",
     limit_pod(dict(cpu=1, mem=1), init=[dict(cpu=1, mem=3)]), limit_pod(dict(cpu=9, mem=19)),
     [reason("memory")], [("memory", 3, 19, 20)]),
    ("too many resources fails due to highest init container memory",
     limit_pod(dict(cpu=1, mem=1), init=[dict(cpu=1, mem=3), dict(cpu=1, mem=2)]), limit_pod(dict(cpu=9, mem=19)),
     [reason("memory")], [("memory", 3, 19, 20)]),
    ("init container fits because it's the max, not sum, of containers and init containers",
     limit_pod(dict(cpu=1, mem=1), init=[dict(cpu=1, mem=1)]), limit_pod(dict(cpu=9, mem=19)), [], []),
    ("multiple init containers fit because it's the max, not sum, of containers and init containers",
     limit_pod(dict(cpu=1, mem=1), init=[dict(cpu=1, mem=1), dict(cpu=1, mem=1)]), limit_pod(dict(cpu=9, mem=19)),
     [], []),
    ("both resources fit",
     limit_pod(dict(cpu=1, mem=1)), limit_pod(dict(cpu=5, mem=5)), [], []),
    ("one resource memory fits",
     limit_pod(dict(cpu=2, mem=1)), limit_pod(dict(cpu=9, mem=5)), [reason("cpu")], [("cpu", 2, 9, 10)]),
    ("one resource cpu fits",
     limit_pod(dict(cpu=1, mem=2)), limit_pod(dict(cpu=5, mem=19)), [reason("memory")], [("memory", 2, 19, 20)]),
    ("equal edge case",
     limit_pod(dict(cpu=5, mem=1)), limit_pod(dict(cpu=5, mem=19)), [], []),
    ("equal edge case for init container",
     limit_pod(dict(cpu=4, mem=1), init=[dict(cpu=5, mem=1)]), limit_pod(dict(cpu=5, mem=19)), [], []),
    ("extended resource fits",
     limit_pod(dict(x={EXT_A: 1})), pod("p", containers=[]), [], []),
    ("extended resource fits for init container",
     limit_pod(dict(), init=[dict(x={EXT_A: 1})]), pod("p", containers=[]), [], []),
    ("extended resource capacity enforced",
     limit_pod(dict(cpu=1, mem=1, x={EXT_A: 10})), limit_pod(dict(x={EXT_A: 0})),
     [reason(EXT_A)], [(EXT_A, 10, 0, 5)]),
    ("extended resource capacity enforced for init container",
     limit_pod(dict(), init=[dict(cpu=1, mem=1, x={EXT_A: 10})]), limit_pod(dict(x={EXT_A: 0})),
     [reason(EXT_A)], [(EXT_A, 10, 0, 5)]),
    ("extended resource allocatable enforced",
     limit_pod(dict(cpu=1, mem=1, x={EXT_A: 1})), limit_pod(dict(x={EXT_A: 5})),
     [reason(EXT_A)], [(EXT_A, 1, 5, 5)]),
    ("extended resource allocatable enforced for init container",
     limit_pod(dict(), init=[dict(cpu=1, mem=1, x={EXT_A: 1})]), limit_pod(dict(x={EXT_A: 5})),
     [reason(EXT_A)], [(EXT_A, 1, 5, 5)]),
    ("extended resource allocatable enforced for multiple containers",
     limit_pod(dict(cpu=1, mem=1, x={EXT_A: 3}), dict(cpu=1, mem=1, x={EXT_A: 3})), limit_pod(dict(x={EXT_A: 2})),
     [reason(EXT_A)], [(EXT_A, 6, 2, 5)]),
    ("extended resource allocatable admits multiple init containers",
     limit_pod(dict(), init=[dict(cpu=1, mem=1, x={EXT_A: 3}), dict(cpu=1, mem=1, x={EXT_A: 3})]),
     limit_pod(dict(x={EXT_A: 2})), [], []),
    ("extended resource allocatable enforced for multiple init containers",
     limit_pod(dict(), init=[dict(cpu=1, mem=1, x={EXT_A: 6}), dict(cpu=1, mem=1, x={EXT_A: 3})]),
     limit_pod(dict(x={EXT_A: 2})), [reason(EXT_A)], [(EXT_A, 6, 2, 5)]),
    ("extended resource allocatable enforced for unknown resource",
     limit_pod(dict(cpu=1, mem=1, x={EXT_B: 1})), limit_pod(dict()), [reason(EXT_B)], [(EXT_B, 1, 0, 0)]),
    ("extended resource allocatable enforced for unknown resource for init container",
     limit_pod(dict(), init=[dict(cpu=1, mem=1, x={EXT_B: 1})]), limit_pod(dict()),
     [reason(EXT_B)], [(EXT_B, 1, 0, 0)]),
    ("kubernetes.io resource capacity enforced",
     limit_pod(dict(cpu=1, mem=1, x={K8S_A: 10})), limit_pod(dict()), [reason(K8S_A)], [(K8S_A, 10, 0, 0)]),
    ("kubernetes.io resource capacity enforced for init container",
     limit_pod(dict(), init=[dict(cpu=1, mem=1, x={K8S_B: 10})]), limit_pod(dict()),
     [reason(K8S_B)], [(K8S_B, 10, 0, 0)]),
    ("hugepages resource capacity enforced",
     limit_pod(dict(cpu=1, mem=1, x={HUGE_A: 10})), limit_pod(dict(x={HUGE_A: 0})),
     [reason(HUGE_A)], [(HUGE_A, 10, 0, 5)]),
    ("hugepages resource capacity enforced for init container",
     limit_pod(dict(), init=[dict(cpu=1, mem=1, x={HUGE_A: 10})]), limit_pod(dict(x={HUGE_A: 0})),
     [reason(HUGE_A)], [(HUGE_A, 10, 0, 5)]),
    ("hugepages resource allocatable enforced for multiple containers",
     limit_pod(dict(cpu=1, mem=1, x={HUGE_A: 3}), dict(cpu=1, mem=1, x={HUGE_A: 3})),
     limit_pod(dict(x={HUGE_A: 2})), [reason(HUGE_A)], [(HUGE_A, 6, 2, 5)]),
    ("resources + pod overhead fits",
     limit_pod(dict(cpu=1, mem=1), overhead={"cpu": "3m", "memory": "13"}), limit_pod(dict(cpu=5, mem=5)), [], []),
    ("requests + overhead does not fit for memory",
     limit_pod(dict(cpu=1, mem=1), overhead={"cpu": "1m", "memory": "15"}), limit_pod(dict(cpu=5, mem=5)),
     [reason("memory")], [("memory", 16, 5, 20)]),
]


@pytest.mark.parametrize("name,the_pod,existing,reasons,insufficient", ENOUGH_LIMITS,
                         ids=[c[0] for c in ENOUGH_LIMITS])
def test_enough_limits(name, the_pod, existing, reasons, insufficient):
    c = cluster([the_test_node()], [bind(existing, "test-node", "existing")])
    plugin = plugin_with(DEFAULT_RATIO)
    status, state = run_filter(plugin, the_pod, c)
    assert status.reasons_of(0) == reasons
    assert int(status.code[0]) == (U if reasons else 0)
    # fitsLimit's InsufficientResource numbers, daemonset pods included (upstream calls it directly).
    lc = limit_capacity(c, DEFAULT_RATIO)
    limit = state.read("preFilter" + NAME).limit
    short = [(r, int(limit[c.res_index[r]]), int(c.allocated_limits[0, c.res_index[r]]),
              int(lc.capacity[0, c.res_index[r]])) for r in c.resources
             if lc.configured[0, c.res_index[r]]
             and limit[c.res_index[r]] > lc.capacity[0, c.res_index[r]] - c.allocated_limits[0, c.res_index[r]]]
    assert sorted(short) == sorted(insufficient)


# -- TestScore in scoring_test.go -------------------------------------------------------------------

def req_pod(name, node_name="", **requests) -> dict:
    """st.MakePod().Req(...): requests only."""
    return pod(name, node_name=node_name, containers=[container("c", requests=requests)])


def cap_node(name, cpu, memory) -> dict:
    return bare_node(name, {"cpu": cpu, "memory": memory})


SCORE_CASES = [
    ("LeastAllocated",
     [cap_node("node1", "4000", "10000"), cap_node("node2", "6000", "10000")],
     [req_pod("pod-1", "node1", cpu="2000", memory="4000"), req_pod("pod-2", "node2", cpu="1000", memory="2000")],
     None, [32, 63], [0, 100]),
    ("LeastAllocated, zero when set explicitly",
     [cap_node("node1", "4000", "10000"), cap_node("node2", "6000", "10000")],
     [req_pod("pod-1", "node1", cpu="2000", memory="4000"), req_pod("pod-2", "node2", cpu="1000", memory="2000")],
     {"cpu": "0", "memory": "0"}, [32, 63], [0, 100]),
    ("LeastAllocated, nonZero when not-set",
     [cap_node("node1", "4000", "10000"), cap_node("node2", "6000", "10000")],
     [req_pod("pod-1", "node1", cpu="2000", memory="4000"), req_pod("pod-2", "node2", cpu="1000", memory="2000")],
     {"memory": "0"}, [31, 63], [0, 100]),
    ("Negative Score when allocated limit > allocatable limit",
     [cap_node("node1", "4000", "10000"), cap_node("node2", "6000", "10000"), cap_node("node3", "6000", "10000")],
     [req_pod("pod-1", "node1", cpu="6000", memory="4000"), req_pod("pod-2", "node2", cpu="1000", memory="2000"),
      req_pod("pod-3", "node3", cpu="2000", memory="2000")],
     None, [-17, 63, 55], [0, 100, 90]),
]


@pytest.mark.parametrize("name,nodes,existing,best_effort,raw,normalized", SCORE_CASES,
                         ids=[c[0] for c in SCORE_CASES])
def test_score(name, nodes, existing, best_effort, raw, normalized):
    pods = list(existing)
    if best_effort is not None:  # 1000 pods with these requests on node1
        pods += [req_pod(f"pod-1-{i}", "node1", **best_effort) for i in range(1000)]
    c = cluster(nodes, pods)
    plugin = plugin_with(DEFAULT_RATIO)
    the_pod = Pod(req_pod("p", cpu="1000", memory="2000"))
    state = CycleState()
    candidates = np.arange(c.n)
    assert plugin.pre_score(state, the_pod, c, candidates) is None
    scores = plugin.score(state, the_pod, c, candidates)
    assert scores.tolist() == raw
    assert plugin.normalize_score(state, the_pod, scores).tolist() == normalized


# -- Test_getPodResourceLimit and Test_getNodeLimitCapacity in util_test.go ------------------------

def _nonzero(rl: dict) -> dict:
    return {k: v for k, v in rl.items() if v and k != "pods"}


POD_LIMIT_CASES = [
    ("no resource", pod("p", containers=[]), False, {}),
    ("init container resource", limit_pod(dict(), init=[dict(x={EXT_A: 1})]), False, {EXT_A: 1}),
    ("limit not set, but request set", req_pod("p", cpu="1", memory="2000"), False, {"cpu": 1000, "memory": 2000}),
    ("cpu,mem nonZero for not set", limit_pod(dict(), init=[dict(x={EXT_A: 1})], drop_zero=True), True,
     {"cpu": 100, "memory": 200 * 1024 * 1024, EXT_A: 1}),
    ("cpu,mem zero if set zero", limit_pod(dict(), init=[dict(x={EXT_A: 1})]), True, {EXT_A: 1}),
]


@pytest.mark.parametrize("name,raw,non_zero,want", POD_LIMIT_CASES, ids=[c[0] for c in POD_LIMIT_CASES])
def test_get_pod_resource_limit(name, raw, non_zero, want):
    p = Pod(raw)
    assert _nonzero(p.non_zero_max_limits if non_zero else p.max_limits) == want


def test_get_node_limit_capacity():
    # "normal flow": cpu 120, ephemeral-storage 137, kubernetes.io/something 150.
    n = bare_node("n", {"cpu": "100m", "memory": "2000", "ephemeral-storage": "30", K8S_A: "30", K8S_B: "30"})
    c = cluster([n])
    lc = limit_capacity(c, {"cpu": 120, "ephemeral-storage": 137, K8S_A: 150})
    got = {r: int(lc.capacity[0, k]) for r, k in c.res_index.items()}
    assert got == {"cpu": 120, "memory": 2000, "ephemeral-storage": 41, K8S_A: 45, K8S_B: 30}


# -- the proposal's user stories -------------------------------------------------------------------

def story_pod(name, request, limit, node_name="") -> dict:
    return pod(name, node_name=node_name, containers=[container("c", requests={"cpu": str(request)},
                                                                limits={"cpu": str(limit)})])


def story_cluster(annotations=None, two_nodes=True):
    nodes = [bare_node("node1", {"cpu": "8", "memory": "32Gi"}, annotations)]
    pods = [story_pod("pod1", 2, 6, "node1"), story_pod("pod2", 2, 4, "node1")]
    if two_nodes:
        nodes.append(bare_node("node2", {"cpu": "8", "memory": "32Gi"}))
        pods += [story_pod("pod3", 3, 3, "node2"), story_pod("pod4", 2, 2, "node2")]
    return cluster(nodes, pods)


def test_story1_score_prefers_node2():
    # node1 limits 10/8, node2 5/8; pod5 (request 1, limit 4). With a 200% cpu ratio both pass
    # the filter: node1 (16 - 14) * 100 / 16 = 12, node2 (16 - 9) * 100 / 16 = 43.
    c = story_cluster()
    plugin = plugin_with({"cpu": "200%"})
    pod5 = Pod(story_pod("pod5", 1, 4))
    status, state = run_filter(plugin, story_pod("pod5", 1, 4), c)
    assert not status.rejected.any()
    candidates = np.arange(2)
    plugin.pre_score(state, pod5, c, candidates)
    raw = plugin.score(state, pod5, c, candidates)
    assert raw.tolist() == [12, 43]
    assert plugin.normalize_score(state, pod5, raw).tolist() == [0, 100]


@pytest.mark.parametrize("source", ["annotation", "args"])
def test_story2_filter_rejects_node1_at_125_percent(source):
    # 10 + 4 = 14 > 8 x 125% = 10.
    if source == "annotation":
        c, plugin = story_cluster({ANNOTATION: json.dumps({"cpu": "125%"})}, two_nodes=False), plugin_with()
    else:
        c, plugin = story_cluster(two_nodes=False), plugin_with({"cpu": 125})
    status, _ = run_filter(plugin, story_pod("pod5", 1, 4), c)
    assert status.reasons_of(0) == [insufficient_limit_reason("cpu")]
    assert int(status.code[0]) == U
    assert status.explain(0) == ["cpu limit: pod 4, allocated 10, capacity 10 (125% of allocatable 8) - short by 4"]


# -- ratios, args and the annotation -----------------------------------------------------------------

def test_without_any_ratio_nothing_is_checked_and_scores_are_zero():
    c = story_cluster()
    plugin = plugin_with()
    status, state = run_filter(plugin, story_pod("pod5", 1, 400), c)
    assert not status.rejected.any()
    pod5 = Pod(story_pod("pod5", 1, 400))
    plugin.pre_score(state, pod5, c, np.arange(2))
    assert plugin.score(state, pod5, c, np.arange(2)).tolist() == [0, 0]


def test_annotation_replaces_the_default_entirely():
    # The default names cpu at 100%; node1's annotation names only memory, so cpu is unchecked there.
    c = story_cluster({ANNOTATION: '{"memory": 150}'})
    status, _ = run_filter(plugin_with({"cpu": 100}), story_pod("pod5", 1, 4), c)
    assert status.reasons_of(0) == []
    assert status.reasons_of(1) == [insufficient_limit_reason("cpu")]  # 5 + 4 > 8


@pytest.mark.parametrize("text", ['{"cpu": "abc"}', '{"cpu": "1.5%"}', "not json", '["cpu"]', '{"cpu": 1.5}',
                                  '{"cpu": "125"}'])
def test_malformed_annotation_rejects_that_node_naming_it(text):
    c = story_cluster({ANNOTATION: text})
    plugin = plugin_with({"cpu": 200})
    status, state = run_filter(plugin, story_pod("pod5", 1, 4), c)
    (why,) = status.reasons_of(0)
    assert why.startswith(f"invalid {ANNOTATION} annotation on node node1: ")
    assert int(status.code[0]) == UU and not status.rejected[1]
    # Scored as if it had no ratio (0), not an error.
    pod5 = Pod(story_pod("pod5", 1, 4))
    plugin.pre_score(state, pod5, c, np.arange(2))
    assert plugin.score(state, pod5, c, np.arange(2)).tolist() == [0, 43]


def test_daemonset_pod_skips_filter_even_on_malformed_annotation():
    c = story_cluster({ANNOTATION: "{"})
    ds = story_pod("ds", 1, 400)
    ds["metadata"]["ownerReferences"] = [{"kind": "DaemonSet", "name": "x", "apiVersion": "apps/v1", "uid": "u"}]
    status, _ = run_filter(plugin_with({"cpu": 100}), ds, c)
    assert not status.rejected.any()


def test_pod_without_limits_passes_overcommitted_node():
    c = story_cluster({ANNOTATION: '{"cpu": 50}'})
    status, _ = run_filter(plugin_with(), pod("be", containers=[container("c")]), c)
    assert not status.rejected.any()


def test_zero_cpu_pod_is_rejected_where_cpu_is_already_over_capacity():
    # fitsLimit checks cpu even when the pod's cpu limit is 0 (0 > 4 - 10).
    c = story_cluster({ANNOTATION: '{"cpu": 50, "memory": 100}'})
    p = pod("m", containers=[container("c", limits={"memory": "1Gi"})])
    status, _ = run_filter(plugin_with(), p, c)
    assert status.reasons_of(0) == [insufficient_limit_reason("cpu")]


def test_placing_updates_allocated_limits():
    c = story_cluster()
    before = c.allocated_limits[1, c.res_index["cpu"]]
    p = Pod(story_pod("pod5", 1, 4))
    c.assume(p, 1)
    assert c.allocated_limits[1, c.res_index["cpu"]] == before + 4000
    c.forget(p, 1)
    assert c.allocated_limits[1, c.res_index["cpu"]] == before


ARG_CASES = [
    ({}, {"cpu": 1, "memory": 1}),
    ({"scoringResourceWeights": {}}, {"cpu": 1, "memory": 1}),
    ({"scoringResourceWeights": {"cpu": 0, "memory": 3}}, {"cpu": 1, "memory": 3}),
    ({"resources": [{"name": "cpu", "weight": 2}]}, {"cpu": 2}),
    ({"resources": []}, {"cpu": 1, "memory": 1}),
]


@pytest.mark.parametrize("args,weights", ARG_CASES, ids=[str(a) for a, _ in ARG_CASES])
def test_args_weights(args, weights):
    assert LimitAware(args).weights == weights


@pytest.mark.parametrize("args,message", [
    ({"scoringResourceWeights": {"cpu": -1}}, "resource Weight of cpu should be a positive value, got -1"),
    ({"scoringResourceWeights": {"cpu": 101}}, "resource Weight of cpu should be less than 100, got 101"),
    ({"scoringResourceWeights": {"cpu": 1}, "resources": [{"name": "cpu"}]}, "not both"),
    ({"defaultLimitToAllocatableRatio": {"cpu": "x"}}, "defaultLimitToAllocatableRatio: cpu:"),
    ({"defaultLimitToAllocatableRatio": [1]}, "defaultLimitToAllocatableRatio: must be a JSON object"),
    ({"resourceWeights": {}}, "unknown field(s) resourceWeights"),
])
def test_bad_args(args, message):
    with pytest.raises(InputError, match=None) as err:
        LimitAware(args)
    assert message in str(err.value)


def test_percent_string_and_int_mean_the_same():
    c = story_cluster()
    a = limit_capacity(c, {"cpu": 125})
    b = limit_capacity(c, LimitAware({"defaultLimitToAllocatableRatio": {"cpu": "125%"}}).default_ratio)
    assert (a.capacity == b.capacity).all() and a.capacity[0, c.res_index["cpu"]] == 10000


def test_min_max_normalize_truncates_like_go():
    assert min_max_normalize(np.array([-17, 63, 55])).tolist() == [0, 100, 90]
    assert min_max_normalize(np.array([5, 5])).tolist() == [0, 0]
    assert min_max_normalize(np.array([0, 1, 2])).tolist() == [0, 50, 100]
