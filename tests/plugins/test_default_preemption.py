"""DefaultPreemption, ported from kube-scheduler's default_preemption_test.go (TestPostFilter,
TestDryRunPreemption, TestSelectBestCandidate, TestPodEligibleToPreemptOthers, TestPreempt).

Upstream registers NodeResourcesFit as the only Filter; kplan runs the default profile, whose
other filters pass for these plain nodes and pods. Cases that need extenders, test-only
plugins or inter-pod constraints are left out.
"""
import re
from collections import Counter

import numpy as np
import pytest
from builders import pod, placed

from kplan.api.objects import Pod, PodDisruptionBudget
from kplan.errors import InputError
from kplan.framework.interfaces import CycleState
from kplan.framework.node_filters import Diagnosis
from kplan.framework.preemption import Evaluator, earliest_start_of_most_important, pdb_selects
from kplan.framework.runtime import CycleResult
from kplan.framework.status import Code
from kplan.planning.place import Planner
from kplan.plugins.default_preemption import DefaultPreemption
from kplan.sources.snapshot import Snapshot

NEG, LOW, MID, HIGH, VERY_HIGH = -100, 0, 100, 1000, 10000
SMALL = {"cpu": "100m", "memory": "100"}
MEDIUM = {"cpu": "200m", "memory": "200"}
LARGE = {"cpu": "300m", "memory": "300"}
VERY_LARGE = {"cpu": "500m", "memory": "500"}
U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE

# kube-scheduler 1.33 to 1.36 preempt alike: pickOneNodeForPreemption's criteria and their order,
# SelectVictimsOnNode's reprieve order, PodEligibleToPreemptOthers, the candidate count and the
# "preemption: 0/N nodes are available" text did not change between them (what did change, the
# asynchronous eviction calls and workload-aware preemption behind alpha gates, leaves the nominated
# node and the victims alone), so the upstream tables below hold for every supported release.
RELEASES = ["1.33", "1.34", "1.35", "1.36"]


def mk_node(name, capacity):
    """st.MakeNode().Capacity(res): 32 pods unless res sets pods; absent resources are 0."""
    alloc = {"pods": "32", "cpu": "0", "memory": "0", **capacity}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": alloc, "capacity": dict(alloc)}}


def mk_pod(name, node="", priority=0, req=None, start=None, labels=None, policy="", nominated="", conditions=None,
           terminating=False):
    spec = {"priority": priority}
    if policy:
        spec["preemptionPolicy"] = policy
    raw = pod(name, node_name=node, requests=req, labels=labels, spec=spec)
    if start is not None:
        raw["status"]["startTime"] = f"1970-01-01T00:00:{start:02d}Z"  # epochTime<n>, in seconds
    if nominated:
        raw["status"]["nominatedNodeName"] = nominated
    if conditions:
        raw["status"]["conditions"] = conditions
    if terminating:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return raw


def pdb(allowed, disrupted=()):
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "pdb", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": "foo"}}},
            "status": {"disruptionsAllowed": allowed, "disruptedPods": {n: "2026-01-01T00:00:00Z" for n in disrupted}}}


def setup(nodes, pods, preemptor, codes=None, extra=(), release=None):
    """Builds the cluster (as kube-scheduler `release`, default the newest), runs PreFilter for the
    preemptor, and a Diagnosis with the given node codes."""
    snap = Snapshot()
    for obj in (*nodes, *pods, *extra):
        snap.add(obj, "test", 1)
    snap.finish()
    planner = Planner(snap, kube_version=release)
    fw = planner.frameworks["default-scheduler"]
    p = Pod(preemptor)
    snap.resolve_priority(p)
    state = CycleState()
    _, skipped, narrowed = fw._pre_filter(state, p, planner.cluster)
    names = [n["metadata"]["name"] for n in nodes]
    code_of = codes if codes is not None else {n: U for n in names}
    arr = np.array([int(code_of.get(n, UU)) for n in names], dtype=np.int8)
    diagnosis = Diagnosis(fw, CycleResult(p, "default-scheduler", "Unschedulable"), arr, skipped,
                          narrowed.node_mask if narrowed is not None else None)
    return fw.plugins["DefaultPreemption"], state, p, planner.cluster, diagnosis, snap


# -- TestPostFilter ----------------------------------------------------------------------------------

ONE_POD = {"pods": "1"}
NODE_RES = {"cpu": "200m", "memory": "400"}
POST_FILTER = [
    ("pod with higher priority can be made schedulable",
     [mk_node("node1", ONE_POD)], [mk_pod("p1", "node1")], mk_pod("p", priority=HIGH), {"node1": U},
     "node1", ""),
    ("pod with tied priority is still unschedulable",
     [mk_node("node1", ONE_POD)], [mk_pod("p1", "node1")], mk_pod("p"), {"node1": U},
     None, "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."),
    ("preemption should respect filteredNodesStatuses",
     [mk_node("node1", ONE_POD)], [mk_pod("p1", "node1")], mk_pod("p", priority=HIGH), {"node1": UU},
     None, "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."),
    ("pod can be made schedulable on one node",
     [mk_node("node1", ONE_POD), mk_node("node2", ONE_POD)],
     [mk_pod("p1", "node1", HIGH), mk_pod("p2", "node2", LOW)], mk_pod("p", priority=MID),
     {"node1": U, "node2": U}, "node2", ""),
    ("no candidate nodes found, no enough resource after removing low priority pods",
     [mk_node("node1", NODE_RES), mk_node("node2", NODE_RES)], [mk_pod("p1", "node1"), mk_pod("p2", "node2")],
     mk_pod("p", priority=HIGH, req=LARGE), {"node1": U, "node2": U},
     None, "preemption: 0/2 nodes are available: 2 Insufficient cpu."),
    ("no candidate nodes found with mixed reasons, no lower priority pod and no enough CPU resource",
     [mk_node("node1", ONE_POD), mk_node("node2", NODE_RES), mk_node("node3", ONE_POD)],
     [mk_pod("p1", "node1", HIGH), mk_pod("p2", "node2"), mk_pod("p3", "node3", HIGH)],
     mk_pod("p", priority=HIGH, req=LARGE), {"node1": U, "node2": U, "node3": U},
     None, "preemption: 0/3 nodes are available: 1 Insufficient cpu, 2 No preemption victims found for incoming pod."),
    ("no candidate nodes found with mixed reason, 2 UnschedulableAndUnresolvable nodes and 2 nodes don't have "
     "enough CPU resource",
     [mk_node(f"node{k}", NODE_RES) for k in (1, 2, 3, 4)], [mk_pod("p1", "node1"), mk_pod("p2", "node2")],
     mk_pod("p", priority=HIGH, req=LARGE), {"node1": U, "node2": U, "node4": UU},
     None, "preemption: 0/4 nodes are available: 2 Insufficient cpu, 2 Preemption is not helpful for scheduling."),
]


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("nodes,pods,preemptor,codes,want_node,want_msg", [c[1:] for c in POST_FILTER],
                         ids=[c[0] for c in POST_FILTER])
def test_post_filter(nodes, pods, preemptor, codes, want_node, want_msg, release):
    plugin, state, p, cluster, diagnosis, _ = setup(nodes, pods, preemptor, codes, release=release)
    result = plugin.post_filter(state, p, cluster, diagnosis)
    if want_node:
        assert result.status.code == Code.SUCCESS and cluster.names[result.nominated] == want_node
    else:
        assert result.status.code == Code.UNSCHEDULABLE and result.nominated is None
    assert result.status.message == want_msg


# -- TestDryRunPreemption ----------------------------------------------------------------------------

VERY_LARGE_NODES = [mk_node("node1", VERY_LARGE), mk_node("node2", VERY_LARGE)]
DRY_RUN = [
    ("a pod that fits on both nodes when lower priority pods are preempted", VERY_LARGE_NODES,
     [mk_pod("p1", "node1", MID, LARGE), mk_pod("p2", "node2", MID, LARGE)], mk_pod("p", priority=HIGH, req=LARGE), [],
     {"node1": (["p1"], 0), "node2": (["p2"], 0)}),
    ("a pod that would fit on the nodes, but other pods running are higher priority, no preemption would happen",
     VERY_LARGE_NODES, [mk_pod("p1", "node1", MID, LARGE), mk_pod("p2", "node2", MID, LARGE)],
     mk_pod("p", priority=LOW, req=LARGE), [], {}),
    ("medium priority pod is preempted, but lower priority one stays as it is small", VERY_LARGE_NODES,
     [mk_pod("p1.1", "node1", LOW, SMALL), mk_pod("p1.2", "node1", MID, LARGE), mk_pod("p2", "node2", MID, LARGE)],
     mk_pod("p", priority=HIGH, req=LARGE), [], {"node1": (["p1.2"], 0), "node2": (["p2"], 0)}),
    ("mixed priority pods are preempted", VERY_LARGE_NODES,
     [mk_pod("p1.1", "node1", MID, SMALL), mk_pod("p1.2", "node1", LOW, SMALL), mk_pod("p1.3", "node1", MID, MEDIUM),
      mk_pod("p1.4", "node1", HIGH, SMALL), mk_pod("p2", "node2", HIGH, LARGE)],
     mk_pod("p", priority=HIGH, req=LARGE), [], {"node1": (["p1.2", "p1.3"], 0)}),
    ("mixed priority pods are preempted, pick later StartTime one when priorities are equal", VERY_LARGE_NODES,
     [mk_pod("p1.1", "node1", LOW, SMALL, 5), mk_pod("p1.2", "node1", LOW, SMALL, 4),
      mk_pod("p1.3", "node1", MID, MEDIUM, 3), mk_pod("p1.4", "node1", HIGH, SMALL, 2),
      mk_pod("p2", "node2", HIGH, LARGE, 1)],
     mk_pod("p", priority=HIGH, req=LARGE), [], {"node1": (["p1.1", "p1.3"], 0)}),
    ("preemption with violation of same pdb", [mk_node("node1", VERY_LARGE)],
     [mk_pod("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}), mk_pod("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"})],
     mk_pod("p", priority=HIGH, req=VERY_LARGE), [pdb(1)], {"node1": (["p1.1", "p1.2"], 1)}),
    ("preemption with violation of the pdb with pod whose eviction was processed, the victim doesn't belong to "
     "DisruptedPods", [mk_node("node1", VERY_LARGE)],
     [mk_pod("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}), mk_pod("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"})],
     mk_pod("p", priority=HIGH, req=VERY_LARGE), [pdb(1, ["p2"])], {"node1": (["p1.1", "p1.2"], 1)}),
    ("preemption with violation of the pdb with pod whose eviction was processed, the victim belongs to "
     "DisruptedPods", [mk_node("node1", VERY_LARGE)],
     [mk_pod("p1.1", "node1", MID, MEDIUM, labels={"app": "foo"}), mk_pod("p1.2", "node1", MID, MEDIUM, labels={"app": "foo"})],
     mk_pod("p", priority=HIGH, req=VERY_LARGE), [pdb(1, ["p1.2"])], {"node1": (["p1.1", "p1.2"], 0)}),
]


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("nodes,pods,preemptor,pdbs,want", [c[1:] for c in DRY_RUN], ids=[c[0] for c in DRY_RUN])
def test_dry_run_preemption(nodes, pods, preemptor, pdbs, want, release):
    assert dry_run_over_every_node(*setup(nodes, pods, preemptor, extra=pdbs, release=release)) == want


def dry_run_over_every_node(plugin, state, p, cluster, diagnosis, snap):
    """Candidates from offset 0 over every node, as {node: (victims, PDB violations)}."""
    candidates, _ = Evaluator(plugin, snap.pdbs).dry_run(state, p, cluster, diagnosis, np.arange(cluster.n), 0,
                                                         plugin.calculate_num_candidates(cluster.n))
    return {c.name: (sorted(v.name for v in c.victims), c.pdb_violations) for c in candidates}


@pytest.mark.parametrize("nodes,pods,preemptor,pdbs,want", [c[1:] for c in DRY_RUN], ids=[c[0] for c in DRY_RUN])
def test_dry_run_on_the_whole_table_agrees(nodes, pods, preemptor, pdbs, want, monkeypatch):
    """The default profile reads only the pod and the node here, so the dry run works on a scratch
    row; the general path (every change through the table, undone per node) gives the same."""
    import kplan.framework.preemption as preemption
    ran = setup(nodes, pods, preemptor, extra=pdbs)
    cluster, diagnosis = ran[3], ran[4]
    assert preemption.node_local(diagnosis)
    monkeypatch.setattr(preemption, "node_local", lambda diagnosis: False)
    rows = [[q.name for q in pods_on] for pods_on in cluster.pods_by_node]
    assert dry_run_over_every_node(*ran) == want
    assert [[q.name for q in pods_on] for pods_on in cluster.pods_by_node] == rows


# The TestDryRunPreemption cases that limit the candidate count. Upstream seeds its random offset so
# that, over these five potential nodes, successive cycles start at offsets 4, 1 and 3.
FIVE_NODES = [mk_node(f"node{k}", VERY_LARGE) for k in range(1, 6)]
FOO = {"app": "foo"}
LIMITED = [
    ("all nodes are possible candidates, but DefaultPreemptionArgs limits to 2", (40, 1),
     [mk_pod(f"p{k}", f"node{k}", MID, LARGE) for k in range(1, 6)], [], [(4, {"node1": 0, "node5": 0})]),
    ("some nodes are not possible candidates, DefaultPreemptionArgs limits to 2", (40, 1),
     [mk_pod(f"p{k}", f"node{k}", VERY_HIGH if k in (2, 5) else MID, LARGE) for k in range(1, 6)], [],
     [(4, {"node1": 0, "node3": 0})]),
    ("preemption offset across multiple scheduling cycles and wrap around", (40, 1),
     [mk_pod(f"p{k}", f"node{k}", MID, LARGE) for k in range(1, 6)], [],
     [(4, {"node1": 0, "node5": 0}), (1, {"node2": 0, "node3": 0}), (3, {"node4": 0, "node5": 0})]),
    # Two PDB-violating candidates fill that kind's list, so node2 is dropped while the search goes
    # on to node3, the first candidate without a violation.
    ("preemption looks past numCandidates until a non-PDB violating node is found", (40, 2),
     [mk_pod(f"p{k}", f"node{k}", MID, LARGE, labels=None if k in (3, 4) else FOO) for k in range(1, 6)],
     [pdb(0)], [(4, {"node1": 1, "node3": 0, "node5": 1})]),
]


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("limits,pods,pdbs,cycles", [c[1:] for c in LIMITED], ids=[c[0] for c in LIMITED])
def test_dry_run_preemption_limits_candidates(limits, pods, pdbs, cycles, release):
    default, state, p, cluster, diagnosis, snap = setup(FIVE_NODES, pods, mk_pod("p", priority=HIGH, req=LARGE),
                                                        extra=pdbs, release=release)
    pct, absolute = limits
    plugin = DefaultPreemption({"minCandidateNodesPercentage": pct, "minCandidateNodesAbsolute": absolute},
                               default.handle)
    for offset, want in cycles:
        candidates, _ = Evaluator(plugin, snap.pdbs).dry_run(state, p, cluster, diagnosis, np.arange(cluster.n), offset,
                                                             plugin.calculate_num_candidates(cluster.n))
        assert {c.name: c.pdb_violations for c in candidates} == want


# -- TestSelectBestCandidate -------------------------------------------------------------------------

def nodes_of(*names):
    return [mk_node(n, VERY_LARGE) for n in names]


SELECT = [
    ("a pod that fits on both nodes when lower priority pods are preempted", nodes_of("node1", "node2"),
     mk_pod("p", priority=HIGH, req=LARGE),
     [mk_pod("p1", "node1", MID, LARGE, 0), mk_pod("p2", "node2", MID, LARGE, 0)], "node1"),  # node1 or node2; kplan: by name
    ("node with min highest priority pod is picked", nodes_of("node1", "node2", "node3"),
     mk_pod("p", priority=HIGH, req=VERY_LARGE),
     [mk_pod("p1.1", "node1", MID, MEDIUM, 0), mk_pod("p1.2", "node1", MID, LARGE, 0),
      mk_pod("p2.1", "node2", MID, MEDIUM, 0), mk_pod("p2.2", "node2", LOW, MEDIUM, 0),
      mk_pod("p3.1", "node3", LOW, MEDIUM, 0), mk_pod("p3.2", "node3", LOW, MEDIUM, 0)], "node3"),
    ("when highest priorities are the same, minimum sum of priorities is picked", nodes_of("node1", "node2", "node3"),
     mk_pod("p", priority=HIGH, req=VERY_LARGE),
     [mk_pod("p1.1", "node1", MID, MEDIUM, 0), mk_pod("p1.2", "node1", MID, LARGE, 0),
      mk_pod("p2.1", "node2", MID, LARGE, 0), mk_pod("p2.2", "node2", LOW, MEDIUM, 0),
      mk_pod("p3.1", "node3", MID, MEDIUM, 0), mk_pod("p3.2", "node3", MID, MEDIUM, 0)], "node2"),
    ("when highest priority and sum are the same, minimum number of pods is picked", nodes_of("node1", "node2", "node3"),
     mk_pod("p", priority=HIGH, req=VERY_LARGE),
     [mk_pod("p1.1", "node1", MID, SMALL, 0), mk_pod("p1.2", "node1", NEG, SMALL, 0),
      mk_pod("p1.3", "node1", MID, SMALL, 0), mk_pod("p1.4", "node1", NEG, SMALL, 0),
      mk_pod("p2.1", "node2", MID, LARGE, 0), mk_pod("p2.2", "node2", NEG, MEDIUM, 0),
      mk_pod("p3.1", "node3", MID, MEDIUM, 0), mk_pod("p3.2", "node3", NEG, SMALL, 0),
      mk_pod("p3.3", "node3", LOW, SMALL, 0)], "node2"),
    ("sum of adjusted priorities is considered", nodes_of("node1", "node2", "node3"),
     mk_pod("p", priority=HIGH, req=VERY_LARGE),
     [mk_pod("p1.1", "node1", MID, SMALL, 0), mk_pod("p1.2", "node1", NEG, SMALL, 0),
      mk_pod("p1.3", "node1", NEG, SMALL, 0),
      mk_pod("p2.1", "node2", MID, LARGE, 0), mk_pod("p2.2", "node2", NEG, MEDIUM, 0),
      mk_pod("p3.1", "node3", MID, MEDIUM, 0), mk_pod("p3.2", "node3", NEG, SMALL, 0),
      mk_pod("p3.3", "node3", LOW, SMALL, 0)], "node2"),
    ("non-overlapping lowest high priority, sum priorities, and number of pods", nodes_of("node1", "node2", "node3", "node4"),
     mk_pod("p", priority=VERY_HIGH, req=VERY_LARGE),
     [mk_pod("p1.1", "node1", MID, SMALL, 0), mk_pod("p1.2", "node1", LOW, SMALL, 0),
      mk_pod("p1.3", "node1", LOW, SMALL, 0), mk_pod("p2.1", "node2", HIGH, LARGE, 0),
      mk_pod("p3.1", "node3", MID, MEDIUM, 0), mk_pod("p3.2", "node3", LOW, SMALL, 0),
      mk_pod("p3.3", "node3", LOW, SMALL, 0), mk_pod("p3.4", "node3", LOW, MEDIUM, 0),
      mk_pod("p4.1", "node4", MID, MEDIUM, 0), mk_pod("p4.2", "node4", MID, SMALL, 0),
      mk_pod("p4.3", "node4", MID, SMALL, 0), mk_pod("p4.4", "node4", NEG, SMALL, 0)], "node1"),
    ("same priority, same number of victims, different start time for each node's pod", nodes_of("node1", "node2", "node3"),
     mk_pod("p", priority=HIGH, req=VERY_LARGE),
     [mk_pod("p1.1", "node1", MID, MEDIUM, 2), mk_pod("p1.2", "node1", MID, MEDIUM, 2),
      mk_pod("p2.1", "node2", MID, MEDIUM, 3), mk_pod("p2.2", "node2", MID, MEDIUM, 3),
      mk_pod("p3.1", "node3", MID, MEDIUM, 1), mk_pod("p3.2", "node3", MID, MEDIUM, 1)], "node2"),
    ("same priority, same number of victims, different start time for all pods", nodes_of("node1", "node2", "node3"),
     mk_pod("p", priority=HIGH, req=VERY_LARGE),
     [mk_pod("p1.1", "node1", MID, MEDIUM, 4), mk_pod("p1.2", "node1", MID, MEDIUM, 2),
      mk_pod("p2.1", "node2", MID, MEDIUM, 5), mk_pod("p2.2", "node2", MID, MEDIUM, 1),
      mk_pod("p3.1", "node3", MID, MEDIUM, 3), mk_pod("p3.2", "node3", MID, MEDIUM, 6)], "node3"),
    ("different priority, same number of victims, different start time for all pods", nodes_of("node1", "node2", "node3"),
     mk_pod("p", priority=HIGH, req=VERY_LARGE),
     [mk_pod("p1.1", "node1", LOW, MEDIUM, 4), mk_pod("p1.2", "node1", MID, MEDIUM, 2),
      mk_pod("p2.1", "node2", MID, MEDIUM, 6), mk_pod("p2.2", "node2", LOW, MEDIUM, 1),
      mk_pod("p3.1", "node3", LOW, MEDIUM, 3), mk_pod("p3.2", "node3", MID, MEDIUM, 5)], "node2"),
    # Not upstream's: its start-time cases pick the same node whether each node's earliest or latest
    # start decides. pickOneNodeForPreemption keeps the node whose earliest start (GetEarliestPodStartTime)
    # is latest: node1's is 1, node2's 5, so node2, though node1 holds the latest start of all (10).
    ("same priority, same number of victims: each node's earliest start decides", nodes_of("node1", "node2"),
     mk_pod("p", priority=HIGH, req=VERY_LARGE),
     [mk_pod("p1.1", "node1", MID, MEDIUM, 1), mk_pod("p1.2", "node1", MID, MEDIUM, 10),
      mk_pod("p2.1", "node2", MID, MEDIUM, 5), mk_pod("p2.2", "node2", MID, MEDIUM, 6)], "node2"),
]


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("nodes,preemptor,pods,want", [c[1:] for c in SELECT], ids=[c[0] for c in SELECT])
def test_select_best_candidate(nodes, preemptor, pods, want, release):
    plugin, state, p, cluster, diagnosis, _ = setup(nodes, pods, preemptor, release=release)
    result = plugin.post_filter(state, p, cluster, diagnosis)
    assert cluster.names[result.nominated] == want


# -- TestGetEarliestPodStartTime (pkg/scheduler/util/utils_test.go) ---------------------------------

@pytest.mark.parametrize("victims, want", [
    # The earliest start among the highest-priority victims only: pod1's priority is lower.
    ([mk_pod("pod1", priority=1, start=11), mk_pod("pod2", priority=2, start=11), mk_pod("pod3", priority=2, start=10)],
     10),
    ([mk_pod("pod1", priority=2, start=10), mk_pod("pod2", priority=2, start=11), mk_pod("pod3", priority=2, start=12)],
     10),
], ids=["earliest of the highest priority", "earliest of equals"])
def test_get_earliest_pod_start_time(victims, want):
    assert earliest_start_of_most_important([Pod(v) for v in victims]) == want


# -- filterPodsWithPDBViolation's selector: metav1.LabelSelectorAsSelector, then Matches; an empty
# selector matches nothing there, and an invalid one is ignored (matches no pod) ---------------------------

LABELS = {"app": "foo", "tier": "web"}


@pytest.mark.parametrize("selector, want", [
    (None, False), ({}, False), ({"matchLabels": {}, "matchExpressions": []}, False),
    ({"matchLabels": {"app": "foo"}}, True), ({"matchLabels": {"app": "bar"}}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "db"]}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["db"]}]}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["web"]}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]}, True),
    ({"matchExpressions": [{"key": "app", "operator": "Exists"}]}, True),
    ({"matchExpressions": [{"key": "zone", "operator": "Exists"}]}, False),
    ({"matchExpressions": [{"key": "zone", "operator": "DoesNotExist"}]}, True),
    ({"matchExpressions": [{"key": "app", "operator": "DoesNotExist"}]}, False),
    ({"matchLabels": {"app": "foo"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]}]},
     False),
    ({"matchExpressions": [{"key": "app", "operator": "Gt", "values": ["1"]}]}, False),
    # labels.NewRequirement refuses these, so LabelSelectorAsSelector fails and the budget is skipped:
    ({"matchExpressions": [{"key": "app", "operator": "Exists", "values": ["foo"]}]}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": []}]}, False),
    ({"matchLabels": {"app": "foo", "bad key!": "x"}}, False),
])
def test_pdb_selector_matches(selector, want):
    assert pdb_selects(PodDisruptionBudget("default", "pdb", selector, 1), LABELS) is want


# -- TestPodEligibleToPreemptOthers ------------------------------------------------------------------

PREEMPTED = [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]
ELIGIBLE = [
    ("Pod with nominated node", mk_pod("p_with_nominated_node", priority=HIGH, nominated="node1"),
     [mk_pod("p1", "node1", LOW, terminating=True)], UU, True),
    ("Pod without nominated node", mk_pod("p_without_nominated_node", priority=HIGH), [], None, True),
    ("Pod with 'PreemptNever' preemption policy", mk_pod("p_with_preempt_never_policy", priority=HIGH, policy="Never"),
     [], None, False),
    ("preemption victim pod terminating, as indicated by the dedicated DisruptionTarget condition",
     mk_pod("p_with_nominated_node", priority=HIGH, nominated="node1"),
     [mk_pod("p1", "node1", LOW, terminating=True, conditions=PREEMPTED)], Code.SUCCESS, False),
    ("non-victim Pods terminating", mk_pod("p_with_nominated_node", priority=HIGH, nominated="node1"),
     [mk_pod("p1", "node1", LOW, terminating=True)], Code.SUCCESS, True),
]


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("preemptor,pods,nominated_code,want", [c[1:] for c in ELIGIBLE], ids=[c[0] for c in ELIGIBLE])
def test_pod_eligible_to_preempt_others(preemptor, pods, nominated_code, want, release):
    plugin, state, p, cluster, _, _ = setup([mk_node("node1", VERY_LARGE)], pods, preemptor, release=release)
    assert plugin.pod_eligible_to_preempt_others(state, p, cluster, nominated_code)[0] is want


# -- TestPreempt (the cases without extenders or topology spread) ------------------------------------

def test_preempt_basic_preemption_logic():
    nodes = nodes_of("node1", "node2", "node3")
    pods = [mk_pod("p1.1", "node1", LOW, SMALL), mk_pod("p1.2", "node1", LOW, SMALL),
            mk_pod("p2.1", "node2", HIGH, LARGE), mk_pod("p3.1", "node3", MID, MEDIUM)]
    plugin, state, p, cluster, diagnosis, _ = setup(nodes, pods, mk_pod("p", priority=HIGH, req=VERY_LARGE,
                                                                        policy="PreemptLowerPriority"))
    result = plugin.post_filter(state, p, cluster, diagnosis)
    assert cluster.names[result.nominated] == "node1"
    assert sorted(v.name for v in result.victims) == ["p1.1", "p1.2"]


def test_preempt_no_preempting_in_pod():
    nodes = nodes_of("node1", "node2", "node3")
    pods = [mk_pod("p1.1", "node1", LOW, SMALL), mk_pod("p1.2", "node1", LOW, SMALL),
            mk_pod("p2.1", "node2", HIGH, LARGE), mk_pod("p3.1", "node3", MID, MEDIUM)]
    plugin, state, p, cluster, diagnosis, _ = setup(nodes, pods, mk_pod("p", priority=HIGH, req=VERY_LARGE, policy="Never"))
    result = plugin.post_filter(state, p, cluster, diagnosis)
    assert result.nominated is None
    assert result.status.message == "preemption: not eligible due to preemptionPolicy=Never."


# -- args and the whole cycle --------------------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    ({"minCandidateNodesPercentage": 101}, "not in valid range [0, 100]"),
    ({"minCandidateNodesAbsolute": -1}, "not in valid range [0, inf)"),
    ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}, "cannot be zero at the same time"),
    ({"unknown": 1}, "unknown field"),
])
def test_invalid_args(args, message):
    with pytest.raises(InputError, match=re.escape(message)):
        DefaultPreemption(args)


@pytest.mark.parametrize("n,pct,absolute,want", [(10, 10, 100, 10), (5000, 10, 100, 500), (500, 10, 100, 100)])
def test_calculate_num_candidates(n, pct, absolute, want):
    plugin = DefaultPreemption({"minCandidateNodesPercentage": pct, "minCandidateNodesAbsolute": absolute})
    assert plugin.calculate_num_candidates(n) == want


def test_cycle_reports_needs_preemption_and_applies_it():
    """Through Framework.schedule: NeedsPreemption, the unchanged FailedScheduling message, and the
    victims evicted with the pod on its nominated node when the preemption is applied."""
    snap = Snapshot()
    for obj in (mk_node("node1", VERY_LARGE), mk_pod("p1", "node1", LOW, LARGE)):
        snap.add(obj, "test", 1)
    snap.finish()
    planner = Planner(snap)
    result, entry = placed(planner, Pod(mk_pod("p", priority=HIGH, req=LARGE)))
    assert result.outcome == "NeedsPreemption" and entry["node"] == "node1"
    assert entry["message"] == "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient memory."
    assert entry["preemption"]["victims"] == ["default/p1"]
    assert entry["candidates"] == [{"node": "node1", "victims": ["default/p1"], "pdbViolations": 0}]
    assert [q.name for q in planner.cluster.pods_by_node[0]] == ["p"]


# -- preemption that resolves a PodTopologySpread failure (TestDryRunPreemption, TestPreempt) ---------

SPREAD = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}


def zoned_node(name, zone):
    raw = mk_node(name, VERY_LARGE)
    raw["metadata"]["labels"].update({"hostname": name, "zone": zone})
    return raw


def spread_pod():
    raw = mk_pod("p", priority=HIGH, labels={"foo": ""})
    raw["spec"]["topologySpreadConstraints"] = [
        {"maxSkew": 1, "topologyKey": key, "whenUnsatisfiable": "DoNotSchedule", "labelSelector": SPREAD}
        for key in ("zone", "hostname")]
    return raw


ZONED = [zoned_node("node-a", "zone1"), zoned_node("node-b", "zone1"), zoned_node("node-x", "zone2")]


def test_dry_run_preemption_to_resolve_pod_topology_spread_filter_failure():
    pods = [mk_pod("pod-a1", "node-a", MID, labels={"foo": ""}), mk_pod("pod-a2", "node-a", LOW, labels={"foo": ""}),
            mk_pod("pod-b1", "node-b", LOW, labels={"foo": ""}), mk_pod("pod-x1", "node-x", HIGH, labels={"foo": ""}),
            mk_pod("pod-x2", "node-x", HIGH, labels={"foo": ""})]
    plugin, state, p, cluster, diagnosis, _ = setup(ZONED, pods, spread_pod())
    candidates, _ = Evaluator(plugin, []).dry_run(state, p, cluster, diagnosis, np.arange(cluster.n), 0, cluster.n)
    assert {c.name: [v.name for v in c.victims] for c in candidates} == {"node-a": ["pod-a2"], "node-b": ["pod-b1"]}


def test_preempt_for_topology_spread_constraints():
    pods = [mk_pod("p-a1", "node-a", HIGH, labels={"foo": ""}), mk_pod("p-a2", "node-a", HIGH, labels={"foo": ""}),
            mk_pod("p-b1", "node-b", LOW, labels={"foo": ""}), mk_pod("p-x1", "node-x", HIGH, labels={"foo": ""}),
            mk_pod("p-x2", "node-x", HIGH, labels={"foo": ""})]
    plugin, state, p, cluster, diagnosis, _ = setup(ZONED, pods, spread_pod())
    result = plugin.post_filter(state, p, cluster, diagnosis)
    assert cluster.names[result.nominated] == "node-b" and [v.name for v in result.victims] == ["p-b1"]



def hostname_node(name):
    raw = mk_node(name, VERY_LARGE)
    raw["metadata"]["labels"]["hostname"] = name
    return raw


def test_dry_run_preempts_the_pod_whose_anti_affinity_rejects_the_preemptor():
    """TestDryRunPreemption "pod with anti-affinity is preempted": without p1.1 no existing pod's term
    matches the preemptor, so InterPodAffinity has nothing left to check on node1 (RemovePod empties
    its counts) and p1.1 is the only victim."""
    anti = mk_pod("p1.1", "node1", LOW, SMALL, labels={"foo": ""})
    anti["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}, "topologyKey": "hostname"}]}}
    pods = [anti, mk_pod("p1.2", "node1", MID, SMALL), mk_pod("p1.3", "node1", HIGH, SMALL),
            mk_pod("p2", "node2", HIGH, SMALL)]
    preemptor = mk_pod("p", priority=HIGH, req=SMALL, labels={"foo": ""})
    plugin, state, p, cluster, diagnosis, _ = setup([hostname_node("node1"), hostname_node("node2")], pods, preemptor)
    candidates, _ = Evaluator(plugin, []).dry_run(state, p, cluster, diagnosis, np.arange(cluster.n), 0, cluster.n)
    assert {c.name: [v.name for v in c.victims] for c in candidates} == {"node1": ["p1.1"]}


# -- PreFilterExtensions against PreFilter re-run: random clusters ----------------------------------------

WEB_SELECTOR = {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}


def anti_term(app, key):
    return {"labelSelector": {"matchExpressions": [{"key": "app", "operator": "In", "values": [app]}]},
            "topologyKey": key}


def random_spread_anti_cluster(rng):
    """Six to nine 2-CPU nodes over three zones, each running two to five pods of mixed priority: web,
    db and batch pods, some batch pods with a required anti-affinity to web pods in their zone; and
    up to two pending pods nominated to a node. No pod is terminating and every selector is non-empty."""
    objects = []
    for k in range(rng.integers(6, 10)):
        raw = mk_node(f"n{k}", {"cpu": "2", "memory": "4Gi"})
        raw["metadata"]["labels"]["topology.kubernetes.io/zone"] = f"zone{rng.integers(3)}"
        objects.append(raw)
        for j in range(rng.integers(2, 6)):
            app = str(rng.choice(["web", "db", "batch"]))
            priority = int(rng.choice([0, 100, 500, 2000], p=[0.3, 0.3, 0.25, 0.15]))
            raw_pod = mk_pod(f"n{k}-{j}", f"n{k}", priority, {"cpu": str(rng.choice(["200m", "300m", "500m"]))},
                             start=int(rng.integers(60)), labels={"app": app})
            if app == "batch" and rng.random() < 0.3:
                raw_pod["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    anti_term("web", "topology.kubernetes.io/zone")]}}
            objects.append(raw_pod)
    nodes = [obj["metadata"]["name"] for obj in objects if obj["kind"] == "Node"]
    for j in range(rng.integers(0, 3)):  # pending pods nominated to a node, of the preemptor's priority or above
        objects.append(mk_pod(f"nominee-{j}", priority=int(rng.choice([1000, 2000])), req={"cpu": "200m"},
                              labels={"app": str(rng.choice(["web", "db", "batch"]))},
                              nominated=str(rng.choice(nodes))))
    return objects


def spread_anti_preemptor():
    """A web pod spread over zones (maxSkew 1) that must not share a node with a db pod."""
    raw = mk_pod("web-new", priority=1000, req={"cpu": "1"}, labels={"app": "web"})
    raw["spec"]["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                                 "whenUnsatisfiable": "DoNotSchedule", "labelSelector": WEB_SELECTOR}]
    raw["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        anti_term("db", "kubernetes.io/hostname")]}}
    return raw


def place_preemptor(objects):
    """`kplan place`'s entry for the preemptor."""
    snap = Snapshot()
    for obj in objects:
        snap.add(obj, "test", 1)
    snap.finish()
    return placed(Planner(snap), Pod(spread_anti_preemptor()))[1]


def preemption_answer(entry):
    """Outcome, nominated node, victims, and every candidate with its victims."""
    return entry["outcome"], entry["node"], entry["preemption"], entry["candidates"]


def test_dry_run_with_extensions_agrees_with_pre_filter_rerun_on_random_clusters(monkeypatch):
    """PodTopologySpread and InterPodAffinity update a clone of their PreFilter state per victim
    (AddPod/RemovePod); the reference re-runs their PreFilter on the table with the victims removed,
    as kplan did before. With no terminating pod and no empty selector (where upstream's updates
    knowingly differ from a recount) both give the same nominated node, victims and candidates."""
    import kplan.framework.node_filters as node_filters
    answers, rejecting = [], Counter()
    for seed in range(36):
        entry = place_preemptor(random_spread_anti_cluster(np.random.default_rng(seed)))
        answers.append(preemption_answer(entry))
        if entry["outcome"] == "NeedsPreemption":
            rejecting.update({n["plugin"] for n in entry["nodes"] if not n["feasible"]} | {"preempting"})
    with monkeypatch.context() as patch:
        patch.setattr(node_filters, "extensions", lambda diagnosis: [])  # every PreFilter re-run per what-if
        for seed, want in enumerate(answers):
            entry = place_preemptor(random_spread_anti_cluster(np.random.default_rng(seed)))
            assert preemption_answer(entry) == want, seed
    # The scenarios do exercise both plugins: preemptions where some node failed their Filter first.
    assert rejecting["preempting"] >= 20 and rejecting["PodTopologySpread"] >= 15
    assert rejecting["InterPodAffinity"] >= 8
