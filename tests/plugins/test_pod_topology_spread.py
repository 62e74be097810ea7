"""PodTopologySpread, ported from upstream's podtopologyspread tests:
TestSingleConstraint, TestMultipleConstraints, TestPreFilterState, TestPreFilterStateAddPod and
TestPreFilterStateRemovePod (filtering_test.go), TestPodTopologySpreadScore
(scoring_test.go), plus the args validation of ValidatePodTopologySpreadArgs. The default
constraints' selector (helper.DefaultSelector) has its own tests in test_default_selector.py.

Upstream runs these with `DefaultingType: List` and no default constraints. Cases written for the
disabled NodeInclusionPolicy gate give the same answer with the GA behaviour (nodeAffinityPolicy
defaults to Honor), which is the only one kplan has.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import cluster
from topology_builders import (
    BAR, FOO, NO_SCHEDULE_UNSCHEDULABLE as TAINTS, N, P, node_affinity, on, owned, replica_set, service, snapshot_of,
    spread,
)

from kplan.api.objects import Pod
from kplan.errors import InputError
from kplan.framework import versions
from kplan.framework.interfaces import CycleState, Handle
from kplan.framework.status import Code
from kplan.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH, ERR_REASON_NODE_LABEL_NOT_MATCH, MAX_INT32, PRE_SCORE_STATE_KEY,
    PodTopologySpread,
)

DNS, SA = "DoNotSchedule", "ScheduleAnyway"
OK, U, UU = Code.SUCCESS, Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
LIST = {"defaultingType": "List"}


def zone_nodes(*, foo=None, taint_y=False):
    """node-a, node-b in zone1 and node-x, node-y in zone2, each with a "node" label."""
    return [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
            N("node-x", zone="zone2", node="node-x"), N("node-y", zone="zone2", node="node-y")]


def foo_pods(**per_node):
    """Existing pods labelled foo: count per node name (node_a=2 -> p-a1, p-a2 on node-a)."""
    out = []
    for key, count in per_node.items():
        name = key.replace("_", "-")
        out += on(name, *[f"p-{name[-1]}{k + 1}" for k in range(count)], foo="")
    return out


def incoming(*constraints, **kw):
    return P("p", spread_constraints=constraints, **kw)


def codes(want):
    return {k: v for k, v in zip(("node-a", "node-b", "node-x", "node-y"), want)}


FOO_POD = {"foo": ""}
POLICY_NODES = [N("node-a", node="node-a", foo=""), N("node-b", node="node-b", foo=""),
                N("node-x", node="node-x", foo=""), N("node-y", node="node-y")]
POLICY_PODS = on("node-a", "p-b1", foo="") + on("node-b", "p-b2", foo="") + on("node-y", "p-y1", foo="")
TAINT_NODES = POLICY_NODES[:3] + [N("node-y", taints=TAINTS, node="node-y")]
IN_FOO = node_affinity("foo", "In", [""])

# TestSingleConstraint in filtering_test.go: (pod, nodes, existing pods, want code per node)
SINGLE = [
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), zone_nodes(), [], codes([OK, OK, OK, OK]),
                 id="no existing pods"),
    pytest.param(incoming(spread(1, "zone", DNS, BAR), foo=""), zone_nodes(), [], codes([OK, OK, OK, OK]),
                 id="no existing pods, incoming pod doesn't match itself"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), zone_nodes(),
                 on("node-a", "p-a1", ns="ns1", foo="") + on("node-a", "p-b1", ns="ns2", foo="")
                 + foo_pods(node_x=1, node_y=1), codes([OK, OK, U, U]),
                 id="existing pods in a different namespace do not count"),
    pytest.param(incoming(spread(1, "zone", DNS, None), foo=""), zone_nodes(), foo_pods(node_x=1, node_y=1),
                 codes([OK, OK, OK, OK]), id="existing pods do not match null selector"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), zone_nodes(),
                 foo_pods(node_a=2, node_b=1, node_y=3), codes([OK, OK, OK, OK]),
                 id="pods spread across zones as 3/3, all nodes fit"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""),
                 [N("node-a", zone="zone1", node="node-a"), N("node-b", zon="zone1", node="node-b"),
                  N("node-x", zone="zone2", node="node-x"), N("node-y", zone="zone2", node="node-y")],
                 foo_pods(node_a=1, node_b=1, node_x=1, node_y=1), codes([OK, UU, U, U]),
                 id="pods spread across zones as 1/2 due to absence of label 'zone' on node-b"),
    pytest.param(incoming(spread(1, "rack", DNS, FOO), foo=""),
                 [N("node-a", zone="zone1", node="node-a"), N("node-x", zone="zone2", node="node-x")], [],
                 {"node-a": UU, "node-x": UU}, id="pod cannot be scheduled as all nodes don't have label 'rack'"),
    pytest.param(incoming(spread(1, "node", DNS, FOO), foo=""), zone_nodes(),
                 foo_pods(node_a=2, node_b=1, node_y=3), codes([U, U, OK, U]),
                 id="pods spread across nodes as 2/1/0/3, only node-x fits"),
    pytest.param(incoming(spread(2, "node", DNS, FOO), foo=""), zone_nodes(),
                 foo_pods(node_a=2, node_b=1, node_y=3), codes([U, OK, OK, U]),
                 id="pods spread across nodes as 2/1/0/3, maxSkew is 2, node-b and node-x fit"),
    pytest.param(incoming(spread(1, "node", DNS, FOO), bar=""), zone_nodes(),
                 foo_pods(node_a=2, node_b=1, node_y=3), codes([U, OK, OK, U]),
                 id="pods spread across nodes as 2/1/0/3, but pod doesn't match itself"),
    pytest.param(incoming(spread(1, "node", DNS, FOO), foo="",
                          affinity=node_affinity("node", "In", ["node-a", "node-y"])), zone_nodes(),
                 foo_pods(node_a=2, node_b=1, node_y=3), codes([OK, OK, OK, U]),
                 id="incoming pod has nodeAffinity, pods spread as 2/~1~/~0~/3, hence node-a fits"),
    pytest.param(incoming(spread(1, "node", DNS, FOO), foo=""),
                 [N("node-a", node="node-a"), N("node-b", node="node-b")],
                 [P("p-a", "node-a", foo="", terminating=True), P("p-b", "node-b", foo="")],
                 {"node-a": OK, "node-b": U}, id="terminating Pods should be excluded"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo="", affinity=node_affinity("node", "NotIn", ["node-b"])),
                 zone_nodes(), foo_pods(node_b=2, node_y=1), codes([OK, OK, U, U]),
                 id="incoming pod has nodeAffinity, pods spread as 0/~2~/0/1, hence node-a fits"),
    pytest.param(incoming(spread(2, "node", DNS, FOO, min_domains=4), foo=""),
                 [N("node-a", node="node-a"), N("node-b", node="node-b"), N("node-c", node="node-c")],
                 foo_pods(node_a=2, node_b=2, node_c=1), {"node-a": U, "node-b": U, "node-c": OK},
                 id="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains < minDomains, "
                    "then the third node fits"),
    pytest.param(incoming(spread(2, "node", DNS, FOO, min_domains=2), foo=""),
                 [N("node-a", node="node-a"), N("node-b", node="node-b"), N("node-c", node="node-c")],
                 foo_pods(node_a=2, node_b=2, node_c=1), {"node-a": OK, "node-b": OK, "node-c": OK},
                 id="pods spread across nodes as 2/2/1, maxSkew is 2, and the number of domains > minDomains, "
                    "then the all nodes fit"),
    pytest.param(incoming(spread(2, "zone", DNS, FOO, min_domains=3), foo=""), zone_nodes(),
                 on("node-a", "p-b1", foo="") + on("node-b", "p-b2", foo="") + on("node-y", "p-y1", foo=""),
                 codes([U, U, OK, OK]),
                 id="pods spread across zone as 2/1, maxSkew is 2 and the number of domains < minDomains, "
                    "then the third and fourth nodes fit"),
    pytest.param(incoming(spread(2, "zone", DNS, FOO, min_domains=1), foo=""), zone_nodes(),
                 on("node-a", "p-b1", foo="") + on("node-b", "p-b2", foo="") + on("node-y", "p-y1", foo=""),
                 codes([OK, OK, OK, OK]),
                 id="pods spread across zone as 2/1, maxSkew is 2 and the number of domains > minDomains, "
                    "then the all nodes fit"),
    pytest.param(incoming(spread(1, "node", DNS, FOO), foo="", node_selector={"foo": ""}), POLICY_NODES,
                 POLICY_PODS, codes([U, U, OK, OK]), id="NodeAffinityPolicy honored with labelSelectors"),
    pytest.param(incoming(spread(1, "node", DNS, FOO, affinity_policy="Ignore"), foo="", node_selector={"foo": ""}),
                 POLICY_NODES, POLICY_PODS, codes([U, U, OK, U]),
                 id="NodeAffinityPolicy ignored with labelSelectors"),
    pytest.param(incoming(spread(1, "node", DNS, FOO), foo="", affinity=IN_FOO), POLICY_NODES, POLICY_PODS,
                 codes([U, U, OK, OK]), id="NodeAffinityPolicy honored with nodeAffinity"),
    pytest.param(incoming(spread(1, "node", DNS, FOO, affinity_policy="Ignore"), foo="", affinity=IN_FOO),
                 POLICY_NODES, POLICY_PODS, codes([U, U, OK, U]),
                 id="NodeAffinityPolicy ignored with nodeAffinity"),
    pytest.param(incoming(spread(1, "node", DNS, FOO, taints_policy="Honor"), foo=""), TAINT_NODES, POLICY_PODS,
                 codes([U, U, OK, OK]), id="NodeTaintsPolicy honored"),
    pytest.param(incoming(spread(1, "node", DNS, FOO), foo=""), TAINT_NODES, POLICY_PODS,
                 codes([U, U, OK, U]), id="NodeTaintsPolicy ignored"),
]

ZONE_NODE = (spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO))
ZONE_FOO_NODE_BAR = (spread(1, "zone", DNS, FOO), spread(1, "node", DNS, BAR))
FOO_NODES = [N("node-a", zone="zone1", node="node-a", foo=""), N("node-b", zone="zone1", node="node-b", foo=""),
             N("node-x", zone="zone2", node="node-x", foo=""), N("node-y", zone="zone2", node="node-y")]
MIXED_NODES = [N("node-a", zone="zone1", node="node-a", foo=""), N("node-b", zone="zone1", node="node-b"),
               N("node-x", zone="zone2", node="node-x", foo=""),
               N("node-y", taints=TAINTS, zone="zone2", node="node-y", foo="")]
ONE_EACH = on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo="") + on("node-y", "p-y1", foo="")

# TestMultipleConstraints in filtering_test.go
MULTIPLE = [
    pytest.param(incoming(*ZONE_NODE, foo=""), zone_nodes(), foo_pods(node_a=2, node_b=1, node_y=3),
                 codes([U, U, OK, U]), id="two Constraints on zone and node, spreads = [3/3, 2/1/0/3]"),
    pytest.param(incoming(*ZONE_NODE, foo=""), zone_nodes(), foo_pods(node_a=2, node_b=1, node_y=4),
                 codes([U, U, U, U]), id="two Constraints on zone and node, spreads = [3/4, 2/1/0/4]"),
    pytest.param(incoming(*ZONE_FOO_NODE_BAR, foo="", bar=""), zone_nodes(),
                 on("node-a", "p-a1", foo="") + on("node-y", "p-y1", bar=""), codes([U, U, OK, U]),
                 id="Constraints hold different labelSelectors, spreads = [1/0, 1/0/0/1]"),
    pytest.param(incoming(*ZONE_FOO_NODE_BAR, foo="", bar=""), zone_nodes(),
                 on("node-a", "p-a1", foo="") + on("node-x", "p-x1", bar="") + on("node-y", "p-y1", bar=""),
                 codes([U, U, U, U]), id="Constraints hold different labelSelectors, spreads = [1/0, 0/0/1/1]"),
    pytest.param(incoming(*ZONE_FOO_NODE_BAR, foo="", bar=""), zone_nodes(),
                 on("node-a", "p-a1", foo="") + on("node-a", "p-a2", foo="", bar="") + on("node-y", "p-y1", foo="")
                 + on("node-y", "p-y2", foo="", bar="") + on("node-y", "p-y3", foo=""), codes([U, OK, U, U]),
                 id="Constraints hold different labelSelectors, spreads = [2/3, 1/0/0/1]"),
    pytest.param(incoming(*ZONE_FOO_NODE_BAR, bar=""), zone_nodes(),
                 on("node-a", "p-a1", foo="") + on("node-x", "p-x1", bar="") + on("node-y", "p-y1", bar=""),
                 codes([OK, OK, U, U]),
                 id="Constraints hold different labelSelectors but pod doesn't match itself on 'zone' constraint"),
    pytest.param(incoming(*ZONE_NODE, foo=""),
                 [N("node-a", zone="zone1", node="node-a"), N("node-b", zone="zone1", node="node-b"),
                  N("node-x", zone="zone2"), N("node-y", zone="zone2", node="node-y")],
                 on("node-a", "p-a1", foo="") + on("node-y", "p-y3", foo=""), codes([U, OK, UU, U]),
                 id="two Constraints on zone and node, absence of label 'node' on node-x, spreads = [1/1, 1/0/0/1]"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), spread(1, "node", DNS, FOO, affinity_policy="Ignore"),
                          foo="", node_selector={"foo": ""}), FOO_NODES, ONE_EACH, codes([U, U, OK, U]),
                 id="two node inclusion Constraints, zone: honor/ignore, node: ignore/ignore"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO, taints_policy="Honor"), spread(1, "node", DNS, FOO), foo=""),
                 FOO_NODES[:3] + [N("node-y", taints=TAINTS, zone="zone2", node="node-y")], ONE_EACH,
                 codes([U, U, OK, U]), id="two node inclusion Constraints, zone: honor/honor, node: honor/ignore"),
    pytest.param(incoming(*ZONE_NODE, foo="", node_selector={"foo": ""}), MIXED_NODES, ONE_EACH,
                 codes([U, OK, OK, U]), id="two node inclusion Constraints, zone: honor/ignore, node: honor/ignore"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO, taints_policy="Honor"),
                          spread(1, "node", DNS, FOO, affinity_policy="Ignore"), foo="", node_selector={"foo": ""}),
                 MIXED_NODES, ONE_EACH, codes([U, U, OK, U]),
                 id="two node inclusion Constraints, zone: honor/honor, node: ignore/ignore"),
]


def run_filter(pod_raw, nodes, existing, args=LIST, objs=()):
    c = cluster(nodes, existing)
    plugin = PodTopologySpread(args, Handle(snapshot=snapshot_of(*objs)))
    state = CycleState()
    pod = Pod(pod_raw)
    status = plugin.pre_filter(state, pod, c)
    assert status is None, status
    return c, plugin.filter(state, pod, c)


@pytest.mark.parametrize("pod_raw,nodes,existing,want", SINGLE + MULTIPLE)
def test_filter(pod_raw, nodes, existing, want):
    c, result = run_filter(pod_raw, nodes, existing)
    got = {name: Code(int(result.code[c.index[name]])) for name in want}
    assert got == want
    for name, code in want.items():
        reasons = result.reasons_of(c.index[name])
        if code == U:
            assert reasons == [ERR_REASON_CONSTRAINTS_NOT_MATCH]
        elif code == UU:
            assert reasons == [ERR_REASON_NODE_LABEL_NOT_MATCH]


def test_pre_filter_skips_without_hard_constraints():
    # TestPreFilterState "soft spreadConstraints should be bypassed" keeps only the DoNotSchedule ones;
    # with none at all PreFilter returns Skip.
    plugin = PodTopologySpread(LIST)
    status = plugin.pre_filter(CycleState(), Pod(incoming(spread(1, "zone", SA, FOO), foo="")),
                               cluster(zone_nodes()))
    assert status is not None and status.is_skip


def test_explain_lists_domains_and_skew():
    c, result = run_filter(incoming(spread(1, "zone", DNS, FOO), foo=""), zone_nodes(),
                           foo_pods(node_a=2, node_b=1, node_y=1))
    lines = result.explain(c.index["node-a"])
    assert "zone (maxSkew 1, minDomains 1, selector foo): domains zone1=3, zone2=1" in lines[0]
    assert lines[1] == "zone1: 3 matching pods, min 1, skew would be 3 > maxSkew 1"
    assert result.explain(c.index["node-x"])[1] == "zone2: 1 matching pods, min 1, skew would be 1 <= maxSkew 1"


# -- scoring ------------------------------------------------------------------------------------------

HOST = "kubernetes.io/hostname"


def H(name, taints=None, **labels):
    """A node labelled with its hostname (and the given labels)."""
    return N(name, taints=taints, **{HOST: name}, **labels)


def ZH(name, zone):
    return N(name, zone=zone, **{HOST: name})


def foo_on(**per_node):
    return foo_pods(**per_node)


A4_B3_C2_D1 = foo_pods(node_a=4, node_b=3, node_c=2, node_d=1)
A4_B2_X1_Y3 = foo_pods(node_a=4, node_b=2, node_x=1, node_y=3)
MIXED = (on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo="", bar="") + on("node-y", "p-y1", foo="")
         + on("node-y", "p-y2", bar=""))
ZONES4 = [ZH("node-a", "zone1"), ZH("node-b", "zone1"), ZH("node-x", "zone2"), ZH("node-y", "zone2")]
POLICY3 = [N("node-a", node="node-a", foo=""), N("node-b", node="node-b", foo=""), N("node-c", node="node-c")]
PODS_2_1_1 = foo_pods(node_a=2, node_b=1, node_c=1)
TAINT3 = [N("node-a", node="node-a"), N("node-b", node="node-b"), N("node-c", taints=TAINTS, node="node-c")]
ABCD_ZONES = [ZH("node-a", "zone1"), ZH("node-b", "zone1"), ZH("node-c", "zone2"), ZH("node-d", "zone2")]
HOST_FOO, HOST_BAR = spread(1, HOST, SA, FOO), spread(1, HOST, SA, BAR)
ZONE_FOO = spread(1, "zone", SA, FOO)
BAZ_PODS = (on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo="", bar="", baz="")
            + on("node-c", "p-c1", foo="") + on("node-c", "p-c2", bar="") + on("node-c", "p-d3", bar="", baz=""))

# TestPodTopologySpreadScore in scoring_test.go (DefaultingType System):
# (pod, candidate nodes, failed nodes, existing pods, want score per candidate)
SCORE = [
    pytest.param(incoming(HOST_FOO, foo=""), [H("node-a"), H("node-b")], [], [], [100, 100],
                 id="one constraint on node, no existing pods"),
    pytest.param(incoming(HOST_FOO, foo=""), [H("node-a")], [H("node-b")], foo_pods(node_a=2, node_b=1), [100],
                 id="one constraint on node, only one node is candidate"),
    pytest.param(incoming(HOST_FOO, foo=""), [H("node-a"), H("node-b")], [], foo_pods(node_a=1, node_b=1),
                 [100, 100], id="one constraint on node, all nodes have the same number of matching pods"),
    pytest.param(incoming(HOST_FOO, foo=""), [H("node-a"), H("node-b"), H("node-c"), H("node-d")], [],
                 foo_pods(node_a=2, node_b=1, node_d=3), [20, 60, 100, 0],
                 id="one constraint on node, all 4 nodes are candidates"),
    pytest.param(incoming(spread(1, HOST, SA, None), foo=""), [H("node-a"), H("node-b"), H("node-c"), H("node-d")],
                 [], foo_pods(node_a=2, node_b=1, node_d=3), [100, 100, 100, 100],
                 id="one constraint on node, null selector"),
    pytest.param(incoming(spread(2, HOST, SA, FOO), foo=""), [H("node-a"), H("node-b"), H("node-c"), H("node-d")],
                 [], foo_pods(node_a=2, node_b=1, node_d=3), [33, 66, 100, 16],
                 id="one constraint on node, all 4 nodes are candidates, maxSkew=2"),
    pytest.param(incoming(spread(3, HOST, SA, FOO), foo=""), [H("node-a"), H("node-b"), H("node-c"), H("node-d")],
                 [], A4_B3_C2_D1, [44, 66, 77, 100],
                 id="one constraint on node, all 4 nodes are candidates, maxSkew=3"),
    pytest.param(incoming(HOST_FOO, foo=""), [H("node-a"), H("node-b"), H("node-x")], [H("node-y")], A4_B2_X1_Y3,
                 [33, 83, 100], id="one constraint on node, 3 out of 4 nodes are candidates"),
    pytest.param(incoming(HOST_FOO, foo=""), [H("node-a"), N("node-b", n="node-b"), H("node-x")], [H("node-y")],
                 A4_B2_X1_Y3, [16, 0, 100],
                 id="one constraint on node, 3 out of 4 nodes are candidates, one node doesn't match topology key"),
    pytest.param(incoming(ZONE_FOO, foo=""), ZONES4[:3], ZONES4[3:], A4_B2_X1_Y3, [75, 75, 100],
                 id="one constraint on zone, 3 out of 4 nodes are candidates"),
    pytest.param(incoming(ZONE_FOO, HOST_FOO, foo=""), [ZONES4[0], ZONES4[2]], [ZONES4[1], ZONES4[3]],
                 foo_pods(node_a=2, node_b=1, node_x=2, node_y=4), [100, 63],
                 id="two Constraints on zone and node, 2 out of 4 nodes are candidates"),
    pytest.param(incoming(ZONE_FOO, HOST_BAR, foo="", bar=""), ZONES4, [], MIXED, [60, 20, 100, 60],
                 id="two Constraints on zone and node, with different labelSelectors"),
    pytest.param(incoming(ZONE_FOO, HOST_BAR, foo="", bar=""), ZONES4, [],
                 on("node-b", "p-b1", bar="") + on("node-x", "p-x1", foo="") + on("node-y", "p-y1", foo="", bar=""),
                 [100, 60, 40, 0], id="two Constraints on zone and node, with different labelSelectors, "
                                      "some nodes have 0 pods"),
    pytest.param(incoming(ZONE_FOO, HOST_BAR, foo="", bar=""), ZONES4[:3], ZONES4[3:], MIXED, [50, 25, 100],
                 id="two Constraints on zone and node, with different labelSelectors, 3 out of 4 nodes are candidates"),
    pytest.param(incoming(HOST_FOO, foo=""), [H("node-a"), H("node-b")], [],
                 on("node-a", "p-a1", ns="ns1", foo="") + on("node-a", "p-a2", foo="") + foo_pods(node_b=2),
                 [100, 33], id="existing pods in a different namespace do not count"),
    pytest.param(incoming(HOST_FOO, foo=""), [H("node-a"), H("node-b")], [],
                 [P("p-a", "node-a", foo="", terminating=True), P("p-b", "node-b", foo="")], [100, 0],
                 id="terminating Pods should be excluded"),
    pytest.param(incoming(spread(2, "node", SA, FOO, min_domains=10), foo=""),
                 [N("node-a", node="node-a"), N("node-b", node="node-b"), N("node-c", node="node-c")], [],
                 foo_pods(node_a=2, node_b=2, node_c=1), [75, 75, 100],
                 id="minDomains has no effect when ScheduleAnyway"),
    pytest.param(incoming(spread(1, "node", SA, FOO), foo="", node_selector={"foo": ""}), POLICY3, [], PODS_2_1_1,
                 [0, 33, 100], id="NodeAffinityPolicy honoed with labelSelectors"),
    pytest.param(incoming(spread(1, "node", SA, FOO, affinity_policy="Ignore"), foo="", node_selector={"foo": ""}),
                 POLICY3, [], PODS_2_1_1, [66, 100, 100], id="NodeAffinityPolicy ignored with labelSelectors"),
    pytest.param(incoming(spread(1, "node", SA, FOO), foo="", affinity=IN_FOO), POLICY3, [], PODS_2_1_1,
                 [0, 33, 100], id="NodeAffinityPolicy honoed with nodeAffinity"),
    pytest.param(incoming(spread(1, "node", SA, FOO, affinity_policy="Ignore"), foo="", affinity=IN_FOO), POLICY3,
                 [], PODS_2_1_1, [66, 100, 100], id="NodeAffinityPolicy ignored with nodeAffinity"),
    pytest.param(incoming(spread(1, "node", SA, FOO, taints_policy="Honor"), foo=""), TAINT3, [], PODS_2_1_1,
                 [0, 33, 100], id="NodeTaintsPolicy honored"),
    pytest.param(incoming(spread(1, "node", SA, FOO), foo=""), TAINT3, [], PODS_2_1_1, [66, 100, 100],
                 id="NodeTaintsPolicy ignored"),
    pytest.param(incoming(spread(1, "zone", SA, {}, match_label_keys=["foo"]),
                          spread(1, HOST, SA, {}, match_label_keys=["bar"]), foo="", bar=""), ABCD_ZONES, [],
                 on("node-a", "p-a1", foo="") + on("node-b", "p-b1", foo="", bar="") + on("node-c", "p-y1", foo="")
                 + on("node-c", "p-y2", bar=""), [60, 20, 60, 100],
                 id="matchLabelKeys ANDed with LabelSelector when LabelSelector is empty"),
    pytest.param(incoming(ZONE_FOO, spread(1, HOST, SA, BAR, match_label_keys=["baz"]), foo="", bar="", baz=""),
                 ABCD_ZONES, [], BAZ_PODS,
                 [60, 20, 60, 100], id="matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty"),
]


def run_score(pod_raw, nodes, failed, existing, args=None, release=None, objs=()):
    c = cluster(nodes + failed, existing)
    plugin = PodTopologySpread(args or {"defaultingType": "System"},
                               Handle(snapshot=snapshot_of(*objs), kube_version=release))
    state = CycleState()
    pod = Pod(pod_raw)
    candidates = np.array([c.index[n["metadata"]["name"]] for n in nodes], dtype=np.intp)
    status = plugin.pre_score(state, pod, c, candidates)
    if status is not None:
        return status, None
    raw = plugin.score(state, pod, c, candidates)
    return None, plugin.normalize_score(state, pod, raw)


@pytest.mark.parametrize("pod_raw,nodes,failed,existing,want", SCORE)
def test_score(pod_raw, nodes, failed, existing, want):
    status, scores = run_score(pod_raw, nodes, failed, existing)
    assert status is None
    assert scores.tolist() == want


HOSTS4 = [H("node-a"), H("node-b"), H("node-c"), H("node-d")]


@pytest.mark.parametrize("pod_raw,objs", [
    # TestPodTopologySpreadScore "system defaulting, nodes don't have zone, pods match service": same scores
    # as one hostname constraint with maxSkew 3 (a node without the zone label gets no zone term).
    pytest.param(P("p", foo=""), [service({"foo": ""})], id="pods match service"),
    pytest.param(owned(P("p", foo=""), "ReplicaSet", "rs1"), [replica_set("rs1", FOO)], id="pods match replicaset"),
    pytest.param(owned(P("p", foo=""), "ReplicaSet", "rs1"), [service({"foo": ""}), replica_set("rs1", FOO)],
                 id="service and replicaset merged"),
])
def test_score_system_defaulting(pod_raw, objs):
    status, scores = run_score(pod_raw, HOSTS4, [], A4_B3_C2_D1, objs=objs)
    assert status is None
    assert scores.tolist() == [44, 66, 77, 100]


@pytest.mark.parametrize("pod_raw,objs", [
    pytest.param(P("p", foo=""), [], id="neither service nor controller"),
    pytest.param(owned(P("p", foo=""), "ReplicaSet", "rs2"), [replica_set("rs1", FOO)],
                 id="controlled by a replicaset the snapshot lacks"),
    pytest.param(P("p", foo=""), [service({"foo": "bar"})], id="a service that does not match"),
    pytest.param(P("p", foo=""), [service(None)], id="a service without a selector"),
    pytest.param(P("p", ns="other", foo=""), [service({"foo": ""})], id="a service of another namespace"),
])
def test_system_defaulting_without_a_selector_skips(pod_raw, objs):
    # buildDefaultConstraints: an empty DefaultSelector means no default constraints, so PreScore skips.
    status, _ = run_score(pod_raw, HOSTS4, [], A4_B3_C2_D1, objs=objs)
    assert status is not None and status.is_skip


# -- matchLabelKeys in every release ------------------------------------------------------------------
# From v1.34 kube-apiserver merges matchLabelKeys into labelSelector when it creates a pod
# (MatchLabelKeysInPodTopologySpreadSelectorMerge, beta and on; kubernetes#129874). kube-scheduler 1.34 to
# 1.36 still merges them itself, as 1.33 does (KEP-3243 drops that only at GA), so a pod scores the same
# in every supported release whether or not its selector was merged already.
RELEASES = [(1, minor) for minor in range(versions.OLDEST[1], versions.NEWEST[1] + 1)]
BAR_AND_BAZ = {"matchExpressions": BAR["matchExpressions"] + [{"key": "baz", "operator": "In", "values": [""]}]}


@pytest.mark.parametrize("release", RELEASES, ids=versions.format_version)
@pytest.mark.parametrize("selector", [BAR, BAR_AND_BAZ], ids=["as written", "as merged by kube-apiserver"])
def test_match_label_keys_score_the_same_in_every_release(selector, release):
    # TestPodTopologySpreadScore "matchLabelKeys ANDed with LabelSelector when LabelSelector isn't empty"
    # (scoring_test.go); the merged selector is the one the KEP-3243 design shows kube-apiserver writing.
    pod_raw = incoming(ZONE_FOO, spread(1, HOST, SA, selector, match_label_keys=["baz"]), foo="", bar="", baz="")
    status, scores = run_score(pod_raw, ABCD_ZONES, [], BAZ_PODS, release=release)
    assert status is None
    assert scores.tolist() == [60, 20, 60, 100]


def test_pre_score_skips_without_soft_constraints():
    # TestPreScoreSkip in scoring_test.go: no ScheduleAnyway constraint (and no default one) means Skip.
    status, _ = run_score(incoming(spread(1, "zone", DNS, FOO), foo=""), zone_nodes(), [], [])
    assert status is not None and status.is_skip
    status, _ = run_score(P("p", foo=""), zone_nodes(), [], [], {"defaultingType": "List"})
    assert status is not None and status.is_skip
    # "default constraints and a replicaset that doesn't match": the pod's controller rs2 is not in the
    # snapshot (only rs1 is), so the default selector is empty and there are no default constraints.
    args = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA}]}
    status, _ = run_score(owned(P("p", foo="bar", baz="sup"), "ReplicaSet", "rs2"), [N("node-a", planet="mars")],
                          [], [], args, objs=[replica_set("rs1", {"matchExpressions": [
                              {"key": "tar", "operator": "Exists"}]})])
    assert status is not None and status.is_skip


# -- args -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("args,message", [
    ({"defaultingType": "System", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                          "whenUnsatisfiable": SA}]},
     'when .defaultingType is "System"'),
    ({"defaultingType": "Sometimes"}, "defaultingType: Unsupported value"),
    ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 0, "topologyKey": "zone",
                                                        "whenUnsatisfiable": SA}]}, "must be greater than zero"),
    ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "",
                                                        "whenUnsatisfiable": SA}]}, "topologyKey: Required value"),
    ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                        "whenUnsatisfiable": "Maybe"}]},
     "whenUnsatisfiable: Unsupported value"),
    ({"defaultingType": "List", "defaultConstraints": [{"maxSkew": 1, "topologyKey": "zone",
                                                        "whenUnsatisfiable": SA, "labelSelector": {}}]},
     "constraint must not define a selector"),
    ({"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": SA},
        {"maxSkew": 2, "topologyKey": "zone", "whenUnsatisfiable": SA}]}, "Duplicate value"),
    ({"hardPodAffinityWeight": 1}, "unknown field"),
], ids=["system with constraints", "bad defaultingType", "maxSkew 0", "empty topologyKey", "bad whenUnsatisfiable",
        "selector in default constraint", "duplicate constraint", "unknown field"])
def test_invalid_args(args, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(".", r"\.")):
        PodTopologySpread(args)


def test_list_default_constraints_take_the_controllers_selector():
    args = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": DNS}]}
    pod = owned(P("p", foo=""), "ReplicaSet", "rs1")
    c, result = run_filter(pod, zone_nodes(), foo_pods(node_a=1), args, objs=[replica_set("rs1", FOO)])
    assert [Code(int(x)) for x in result.code] == [U, U, OK, OK]
    for raw, objs in ((pod, []), (P("p", foo=""), [replica_set("rs1", FOO)])):  # controller absent / no owner
        status = PodTopologySpread(args, Handle(snapshot=snapshot_of(*objs))).pre_filter(CycleState(), Pod(raw), c)
        assert status is not None and status.is_skip


@pytest.mark.parametrize("bad,message", [
    (spread(1, "", DNS, FOO), "topologyKey: Required value"),
    (spread(1, "zone", DNS, {"matchExpressions": [{"key": "foo", "operator": "Near"}]}),
     "'Near' is not a valid label selector operator"),
    (spread(1, "zone", DNS, {"matchExpressions": [{"key": "foo", "operator": "In"}]}), "values set can't be empty"),
], ids=["empty topologyKey", "invalid operator", "In without values"])
def test_bad_constraints_are_input_errors(bad, message):
    with pytest.raises(InputError, match=message):
        run_filter(incoming(bad, foo=""), zone_nodes(), [])


# -- PreFilter state ----------------------------------------------------------------------------------------

FOO_BAR = {"matchLabels": {"foo": "bar"}}
ABXY = zone_nodes()
ABY = [ABXY[0], ABXY[1], ABXY[3]]
ZONE3 = ABXY + [N("node-o", zone="zone3", node="node-o"), N("node-p", zone="zone3", node="node-p")]
PODS_2_1_0_2 = foo_pods(node_a=2, node_b=1, node_y=2)
PODS_2_1_0_4 = foo_pods(node_a=2, node_b=1, node_y=4)
COMPLEX = (on("node-a", "p-a1", foo="") + on("node-a", "p-a2", foo="", bar="") + on("node-b", "p-b1", foo="")
           + on("node-y", "p-y1", foo="") + on("node-y", "p-y2", foo="", bar="") + on("node-y", "p-y3", foo="")
           + on("node-y", "p-y4", foo="", bar=""))
BAR_NODES = [N("node-a", node="node-a", foo=""), N("node-b", node="node-b", foo=""), N("node-c", node="node-c", bar="")]
BAR_PODS = on("node-a", "p-a", bar="") + on("node-b", "p-b", "p-c", bar="") + on("node-c", "p-d")

# TestPreFilterState in filtering_test.go: (pod, nodes, existing pods,
#   want per constraint: (topology key, {domain: matching pods}, global minimum))
PRE_FILTER_STATE = [
    pytest.param(incoming(spread(5, "zone", DNS, FOO_BAR), foo=""), ABXY, [],
                 [("zone", {"zone1": 0, "zone2": 0}, 0)], id="clean cluster with one spreadConstraint"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), ABXY, PODS_2_1_0_2,
                 [("zone", {"zone1": 3, "zone2": 2}, 2)], id="normal case with one spreadConstraint"),
    pytest.param(incoming(spread(1, "zone", DNS, None), foo=""), ABXY, PODS_2_1_0_2,
                 [("zone", {"zone1": 0, "zone2": 0}, 0)], id="normal case with null label selector"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), ZONE3, PODS_2_1_0_2,
                 [("zone", {"zone1": 3, "zone2": 2, "zone3": 0}, 0)],
                 id="normal case with one spreadConstraint, on a 3-zone cluster"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), ABXY,
                 on("node-a", "p-a1", foo="") + on("node-a", "p-a2", ns="ns1", foo="") + on("node-b", "p-b1", foo="")
                 + on("node-y", "p-y1", ns="ns2", foo="") + on("node-y", "p-y2", foo=""),
                 [("zone", {"zone1": 2, "zone2": 1}, 1)], id="namespace mismatch doesn't count"),
    pytest.param(incoming(*ZONE_NODE, foo=""), ABXY, PODS_2_1_0_4,
                 [("zone", {"zone1": 3, "zone2": 4}, 3),
                  ("node", {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}, 0)],
                 id="normal case with two spreadConstraints"),
    pytest.param(incoming(spread(1, "zone", SA, FOO), spread(1, "zone", DNS, FOO), spread(1, "node", SA, FOO),
                          spread(1, "node", DNS, FOO), foo=""), ABY, PODS_2_1_0_4,
                 [("zone", {"zone1": 3, "zone2": 4}, 3), ("node", {"node-a": 2, "node-b": 1, "node-y": 4}, 1)],
                 id="soft spreadConstraints should be bypassed"),
    pytest.param(incoming(*ZONE_FOO_NODE_BAR, foo="", bar=""), ABY,
                 on("node-a", "p-a", foo="") + on("node-b", "p-b", bar=""),
                 [("zone", {"zone1": 1, "zone2": 0}, 0), ("node", {"node-a": 0, "node-b": 1, "node-y": 0}, 0)],
                 id="different labelSelectors - simple version"),
    pytest.param(incoming(*ZONE_FOO_NODE_BAR, foo="", bar=""), ABY, COMPLEX,
                 [("zone", {"zone1": 3, "zone2": 4}, 3), ("node", {"node-a": 1, "node-b": 0, "node-y": 2}, 0)],
                 id="different labelSelectors - complex pods"),
    pytest.param(incoming(*ZONE_NODE, foo="", affinity=node_affinity("node", "NotIn", ["node-x"])), ABXY,
                 PODS_2_1_0_4,
                 [("zone", {"zone1": 3, "zone2": 4}, 3), ("node", {"node-a": 2, "node-b": 1, "node-y": 4}, 1)],
                 id="two spreadConstraints, and with podAffinity"),
    pytest.param(incoming(*ZONE_NODE, foo=""), ABXY, PODS_2_1_0_4,
                 [("zone", {"zone1": 3, "zone2": 4}, 3),
                  ("node", {"node-a": 2, "node-b": 1, "node-x": 0, "node-y": 4}, 0)],
                 id="TpKeyToDomainsNum is calculated when MinDomains is enabled"),
    pytest.param(incoming(spread(1, "node", DNS, BAR), foo="", node_selector={"foo": ""}), BAR_NODES, BAR_PODS,
                 [("node", {"node-a": 1, "node-b": 2}, 1)], id="NodeAffinityPolicy honored with labelSelectors"),
    pytest.param(incoming(spread(1, "node", DNS, BAR, affinity_policy="Ignore"), foo="", node_selector={"foo": ""}),
                 BAR_NODES, BAR_PODS, [("node", {"node-a": 1, "node-b": 2, "node-c": 0}, 0)],
                 id="NodeAffinityPolicy ignored with labelSelectors"),
]


@pytest.mark.parametrize("pod_raw,nodes,existing,want", PRE_FILTER_STATE)
def test_pre_filter_state(pod_raw, nodes, existing, want):
    c = cluster(nodes, existing)
    state = CycleState()
    assert PodTopologySpread(LIST).pre_filter(state, Pod(pod_raw), c) is None
    got = []
    for s in state.read("PreFilterPodTopologySpread").spreads:
        col = c.label_column(s.constraint.topology_key)
        counts = {col.values[d]: int(s.counts[d]) for d in np.flatnonzero(s.exists)}
        got.append((s.constraint.topology_key, counts, s.min_match))
    assert got == want


def test_pre_filter_state_default_constraints():
    # TestPreFilterState "default constraints and a service", "default constraints and a service that doesn't
    # match", "default constraints and a service, but pod has constraints", "default soft constraints and a service".
    args = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 3, "topologyKey": "node", "whenUnsatisfiable": DNS},
        {"maxSkew": 2, "topologyKey": "node", "whenUnsatisfiable": SA},
        {"maxSkew": 5, "topologyKey": "rack", "whenUnsatisfiable": DNS}]}
    handle = Handle(snapshot=snapshot_of(service({"foo": "bar"})))
    state = CycleState()
    assert PodTopologySpread(args, handle).pre_filter(state, Pod(P("p", foo="bar", baz="kar")), cluster([])) is None
    assert [(s.constraint.topology_key, s.constraint.max_skew, str(s.constraint.selector), s.domains) for s in
            state.read("PreFilterPodTopologySpread").spreads] == [("node", 3, "foo=bar", 0), ("rack", 5, "foo=bar", 0)]
    other = Handle(snapshot=snapshot_of(service({"baz": "kep"})))
    hard = {"defaultingType": "List", "defaultConstraints": args["defaultConstraints"][:1]}
    assert PodTopologySpread(hard, other).pre_filter(CycleState(), Pod(P("p", foo="bar")), cluster([])).is_skip
    own = P("p", foo="bar", baz="tar", spread_constraints=[
        spread(1, "zone", DNS, {"matchLabels": {"baz": "tar"}}), spread(2, "planet", SA, {"matchLabels": {"fot": "rok"}})])
    state = CycleState()
    assert PodTopologySpread(args, handle).pre_filter(state, Pod(own), cluster([])) is None
    assert [(s.constraint.topology_key, str(s.constraint.selector))
            for s in state.read("PreFilterPodTopologySpread").spreads] == [("zone", "baz=tar")]
    soft = {"defaultingType": "List", "defaultConstraints": [{"maxSkew": 2, "topologyKey": "node",
                                                              "whenUnsatisfiable": SA}]}
    assert PodTopologySpread(soft, handle).pre_filter(CycleState(), Pod(P("p", foo="bar")), cluster([])).is_skip


@pytest.mark.parametrize("score_by_table", [True, False], ids=["table", "per-candidate"])
def test_candidate_arrays_of_a_set_less_one_node_equal_a_fresh_build(score_by_table):
    """When a node leaves the candidates (it filled up), PreScore derives its arrays from the last
    set's; they equal those built from scratch, down to the node that held its zone alone (rebuilt)."""
    nodes = [N("a1", zone="z1", **{HOST: "a1"}), N("a2", zone="z1", **{HOST: "a2"}), N("b1", zone="z2", **{HOST: "b1"}),
             N("b2", zone="z2", **{HOST: "b2"}), N("c1", zone="z3", **{HOST: "c1"}), N("bare", **{HOST: "bare"})]
    c = cluster(nodes, foo_on(a1=2, b1=1, bare=1))
    pod = Pod(incoming(spread(1, "zone", SA, FOO), spread(2, HOST, SA, FOO), foo=""))

    def build(plugin, candidates):
        state = CycleState()
        plugin.pre_score(state, pod, c, candidates)
        return plugin.score(state, pod, c, candidates).tolist(), plugin.normalize_score(
            state, pod, plugin.score(state, pod, c, candidates)).tolist(), state

    kept = PodTopologySpread({}, Handle())
    kept.score_by_table = score_by_table
    candidates = np.arange(c.n, dtype=np.intp)
    build(kept, candidates)
    for leaving in ["b2", "a1", "bare", "c1", "a2"]:  # c1: the last candidate in zone z3
        candidates = candidates[candidates != c.index[leaving]]
        fresh = PodTopologySpread({}, Handle())
        fresh.score_by_table = score_by_table
        got, want = build(kept, candidates), build(fresh, candidates)
        assert got[:2] == want[:2], leaving
        _, got_ignored, _, got_arrays, got_any = got[2].read(PRE_SCORE_STATE_KEY)
        _, want_ignored, _, want_arrays, want_any = want[2].read(PRE_SCORE_STATE_KEY)
        assert got_ignored.tolist() == want_ignored.tolist() and got_any == want_any, leaving
        for (got_weight, _, got_parts), (want_weight, _, want_parts) in zip(got_arrays, want_arrays):
            assert got_weight == want_weight, leaving
            assert _plain(got_parts) == _plain(want_parts), leaving


def _plain(parts):
    """Arrays (and tuples of them) as lists, for comparing."""
    if isinstance(parts, (tuple, list)):
        return [_plain(p) for p in parts]
    return parts.tolist() if isinstance(parts, np.ndarray) else parts


# -- PreFilterExtensions: AddPod and RemovePod --------------------------------------------------------
# TestPreFilterStateAddPod and TestPreFilterStateRemovePod in filtering_test.go (the 1.35 file: fwk
# types, per-constraint CriticalPaths and TpValueToMatchNum). Upstream's want is, per constraint, the
# matching pods per domain and two critical paths; kplan keeps the counts per domain and their
# minimum, which is upstream's CriticalPaths[i][0].MatchNum (the second path only serves later
# updates). The "NodeInclusionPolicy disabled" twins of the cases below have the same inputs and
# the same want as the enabled ones (GA behaviour), so each pair is ported once.

AFFINITY_NODES = [N("node-a", zone="zone1", node="node-a", foo="bar"), N("node-b", zone="zone2", node="node-b", foo="")]
TAINTED_NODES = [N("node-a", taints=TAINTS, zone="zone1", node="node-a"), N("node-b", zone="zone2", node="node-b")]
AB = [ABXY[0], ABXY[1]]
AX = [ABXY[0], N("node-x", zone="zone2", node="node-x")]
ABX = [ABXY[0], ABXY[1], N("node-x", zone="zone2", node="node-x")]
NOT_BAR = node_affinity("foo", "NotIn", ["bar"])
UNSCHEDULABLE_TOLERATION = [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                             "effect": "NoSchedule"}]
Z1_Z2 = on("node-a", "p-a1", foo="", zone="zone1") + on("node-b", "p-b2", foo="", zone="zone2")

# (preemptor, nodes, existing pods, added pod, node it is added to,
#  want per constraint: (topology key, {domain: matching pods}, minimum))
ADD_POD = [
    pytest.param(incoming(spread(1, "node", DNS, FOO), foo=""), AB, [], P("p-a1", "node-a", foo=""), "node-a",
                 [("node", {"node-a": 1, "node-b": 0}, 0)], id="node a and b both impact current min match"),
    pytest.param(incoming(spread(1, "node", DNS, FOO), foo=""), AB, foo_pods(node_b=1), P("p-a1", "node-a", foo=""),
                 "node-a", [("node", {"node-a": 1, "node-b": 1}, 1)], id="only node a impacts current min match"),
    pytest.param(incoming(spread(1, "node", DNS, FOO), foo=""), AB, foo_pods(node_b=1),
                 P("p-a1", "node-a", ns="ns1", foo=""), "node-a", [("node", {"node-a": 0, "node-b": 1}, 0)],
                 id="add a pod in a different namespace doesn't change topologyKeyToMinPodsMap"),
    pytest.param(incoming(spread(1, "node", DNS, FOO), foo=""), AB, foo_pods(node_b=1), P("p-b2", "node-b", foo=""),
                 "node-b", [("node", {"node-a": 0, "node-b": 2}, 0)],
                 id="add pod on non-critical node won't trigger re-calculation"),
    pytest.param(incoming(*ZONE_NODE, foo=""), AX, [], P("p-a1", "node-a", foo=""), "node-a",
                 [("zone", {"zone1": 1, "zone2": 0}, 0), ("node", {"node-a": 1, "node-x": 0}, 0)],
                 id="node a and x both impact topologyKeyToMinPodsMap on zone and node"),
    pytest.param(incoming(*ZONE_NODE, foo=""), AX, foo_pods(node_x=1), P("p-a1", "node-a", foo=""), "node-a",
                 [("zone", {"zone1": 1, "zone2": 1}, 1), ("node", {"node-a": 1, "node-x": 1}, 1)],
                 id="only node a impacts topologyKeyToMinPodsMap on zone and node"),
    pytest.param(incoming(*ZONE_NODE, foo=""), ABX, foo_pods(node_b=2, node_x=1), P("p-a1", "node-a", foo=""),
                 "node-a", [("zone", {"zone1": 3, "zone2": 1}, 1),
                            ("node", {"node-a": 1, "node-b": 2, "node-x": 1}, 1)],
                 id="node a impacts topologyKeyToMinPodsMap on node, node x impacts topologyKeyToMinPodsMap on zone"),
    pytest.param(incoming(*ZONE_FOO_NODE_BAR, foo="", bar=""), ABX,
                 on("node-b", "p-b1", foo="", bar="") + on("node-x", "p-x1", foo="", bar="")
                 + on("node-x", "p-x2", bar=""),
                 P("p-a1", "node-a", foo=""), "node-a",
                 [("zone", {"zone1": 2, "zone2": 1}, 1), ("node", {"node-a": 0, "node-b": 1, "node-x": 2}, 0)],
                 id="Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on zone"),
    pytest.param(incoming(*ZONE_FOO_NODE_BAR, foo="", bar=""), ABX,
                 on("node-b", "p-b1", bar="") + on("node-x", "p-x1", foo="", bar="") + on("node-x", "p-x2", bar=""),
                 P("p-a1", "node-a", foo="", bar=""), "node-a",
                 [("zone", {"zone1": 1, "zone2": 1}, 1), ("node", {"node-a": 1, "node-b": 1, "node-x": 2}, 1)],
                 id="Constraints hold different labelSelectors, node a impacts topologyKeyToMinPodsMap on both zone "
                    "and node"),
    # node-a (foo=bar) fails the preemptor's node affinity, so zone1 is no domain and nothing is added
    # there; upstream's second critical path is the empty {MatchNum: MaxInt32}.
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo="", affinity=NOT_BAR), AFFINITY_NODES,
                 on("node-a", "p-a2", foo="", zone="zone1") + on("node-b", "p-b1", foo="", zone="zone2"),
                 P("p-a1", "node-a", foo="", zone="zone1"), "node-a", [("zone", {"zone2": 1}, 1)],
                 id="add a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), AFFINITY_NODES, Z1_Z2,
                 P("p-b1", "node-b", foo="", zone="zone2"), "node-b", [("zone", {"zone1": 1, "zone2": 2}, 1)],
                 id="add a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), AFFINITY_NODES, Z1_Z2,
                 P("p-b1", "node-b", zone="zone2"), "node-b", [("zone", {"zone1": 1, "zone2": 1}, 1)],
                 id="add a label selector not matched pod when with NodeInclusionPolicy enabled"),
    # nodeTaintsPolicy defaults to Ignore: the tainted node-a counts either way.
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), TAINTED_NODES, Z1_Z2,
                 P("p-b1", "node-b", foo="", zone="zone2"), "node-b", [("zone", {"zone1": 1, "zone2": 2}, 1)],
                 id="add a pod when scheduling taint untolerated pod with NodeInclusionPolicy disabled"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo="", tolerations=UNSCHEDULABLE_TOLERATION),
                 TAINTED_NODES, Z1_Z2, P("p-b1", "node-b", foo="", zone="zone2"), "node-b",
                 [("zone", {"zone1": 1, "zone2": 2}, 1)],
                 id="add a pod when scheduling taint tolerated pod with NodeInclusionPolicy enabled"),
]

ONE_EACH_ABX = foo_pods(node_a=1, node_b=1, node_x=1)
ONE_EACH_ABXY = foo_pods(node_a=1, node_b=1, node_x=1, node_y=1)
TWO_ZONES_PODS = foo_pods(node_a=2, node_b=1, node_x=2)

# (preemptor, nodes, existing pods, removed pod, its node, want as ADD_POD's)
REMOVE_POD = [
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), ABX, ONE_EACH_ABX, ONE_EACH_ABX[0], "node-a",
                 [("zone", {"zone1": 1, "zone2": 1}, 1)],
                 id="one spreadConstraint on zone, topologyKeyToMinPodsMap unchanged"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), ABXY, ONE_EACH_ABXY, ONE_EACH_ABXY[0], "node-a",
                 [("zone", {"zone1": 1, "zone2": 2}, 1)],
                 id="one spreadConstraint on node, topologyKeyToMinPodsMap changed"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), ABXY, on("node-a", "p-a0", bar="") + ONE_EACH_ABXY,
                 P("p-a0", "node-a", bar=""), "node-a", [("zone", {"zone1": 2, "zone2": 2}, 2)],
                 id="delete an irrelevant pod won't help"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), ABXY, ONE_EACH_ABXY, P("p-a0", "node-a", bar=""),
                 "node-a", [("zone", {"zone1": 2, "zone2": 2}, 2)], id="delete a non-existing pod won't help"),
    pytest.param(incoming(*ZONE_NODE, foo=""), ABX, TWO_ZONES_PODS, TWO_ZONES_PODS[3], "node-x",
                 [("zone", {"zone1": 3, "zone2": 1}, 1), ("node", {"node-a": 2, "node-b": 1, "node-x": 1}, 1)],
                 id="two spreadConstraints"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo="", affinity=NOT_BAR), AFFINITY_NODES,
                 on("node-a", "p-a2", foo="", zone="zone1") + on("node-b", "p-b1", foo="", zone="zone2"),
                 P("p-a1", "node-a", foo="", zone="zone1"), "node-a", [("zone", {"zone2": 1}, 1)],
                 id="remove a pod when scheduling node affinity unmatched pod with NodeInclusionPolicy enabled"),
    pytest.param(incoming(spread(1, "zone", DNS, FOO), foo=""), AFFINITY_NODES, Z1_Z2,
                 P("p-b1", "node-b", foo="", zone="zone2"), "node-b", [("zone", {"zone1": 1, "zone2": 0}, 0)],
                 id="remove a pod when scheduling node affinity matched pod with NodeInclusionPolicy enabled"),
]


def spread_state(c, state):
    """PreFilter's state per constraint: (topology key, {domain: matching pods}, minimum). A count
    moved on a value that is no domain shows up too, as upstream's map would gain that entry."""
    got = []
    for s in state.read("PreFilterPodTopologySpread").spreads:
        col = c.label_column(s.constraint.topology_key)
        shown = np.flatnonzero(s.exists | (s.counts != 0))
        got.append((s.constraint.topology_key, {col.values[d]: int(s.counts[d]) for d in shown}, s.min_match))
    return got


def updated_state(pod_raw, nodes, existing, other_raw, node_name, delta):
    """PreFilter on the cluster, then AddPod (delta 1) or RemovePod (-1) of `other` on its node."""
    c = cluster(nodes, existing)
    plugin, state, pod = PodTopologySpread(LIST), CycleState(), Pod(pod_raw)
    assert plugin.pre_filter(state, pod, c) is None
    update = plugin.add_pod if delta > 0 else plugin.remove_pod
    assert update(state, pod, Pod(other_raw), c, c.index[node_name]) is None
    return spread_state(c, state)


@pytest.mark.parametrize("pod_raw,nodes,existing,added,node_name,want", ADD_POD)
def test_pre_filter_state_add_pod(pod_raw, nodes, existing, added, node_name, want):
    assert updated_state(pod_raw, nodes, existing, added, node_name, +1) == want


@pytest.mark.parametrize("pod_raw,nodes,existing,removed,node_name,want", REMOVE_POD)
def test_pre_filter_state_remove_pod(pod_raw, nodes, existing, removed, node_name, want):
    assert updated_state(pod_raw, nodes, existing, removed, node_name, -1) == want


class CriticalPaths:
    """Upstream's criticalPaths, as a reference: the two domains with the fewest matching pods as
    PreFilter finds them, then updated one domain value at a time (paths[0] is the minimum Filter
    reads)."""

    def __init__(self, counts):
        self.paths = [["", MAX_INT32], ["", MAX_INT32]]
        for value, num in counts.items():
            self.update(value, num)

    def update(self, value, num):
        for path in self.paths:
            if path[0] == value:
                path[1] = num
                if self.paths[0][1] > self.paths[1][1]:
                    self.paths.reverse()
                return
        if num < self.paths[0][1]:
            self.paths = [[value, num], self.paths[0]]
        elif num < self.paths[1][1]:
            self.paths[1] = [value, num]


APP_WEB = {"matchLabels": {"app": "web"}}


def random_spread_cluster(rng):
    """Up to 7 nodes over 3 zones, each running a few pods: matching or not, some terminating,
    some of another namespace."""
    nodes = [N(f"n{k}", zone=f"zone{rng.integers(3)}", node=f"n{k}") for k in range(rng.integers(2, 8))]
    pods = []
    for n in nodes:
        name = n["metadata"]["name"]
        for k in range(rng.integers(0, 5)):
            labels = {key: value for key, value in (("foo", ""), ("app", "web")) if rng.random() < 0.6}
            pods.append(P(f"{name}-{k}", name, ns="other" if rng.random() < 0.15 else "default",
                          terminating=bool(rng.random() < 0.2), **labels))
    return nodes, pods


@pytest.mark.parametrize("seed", range(40))
def test_minimum_after_updates_on_one_node_is_upstreams_first_critical_path(seed):
    """A preemption dry run updates one node's domains only (its victims, then the pods added back
    and those nominated to it); then kplan's minimum over the domains is what upstream's two
    critical paths give. Checked against the reference above for random removals and re-additions
    on one node, terminating pods included (PreFilter skips them, the update does not)."""
    rng = np.random.default_rng(seed)
    nodes, pods = random_spread_cluster(rng)
    c = cluster(nodes, pods)
    preemptor = Pod(incoming(spread(1, "zone", DNS, FOO), spread(1, "node", DNS, APP_WEB), foo="", app="web"))
    plugin, state = PodTopologySpread(LIST), CycleState()
    assert plugin.pre_filter(state, preemptor, c) is None
    selectors = [("zone", lambda p: "foo" in p.labels), ("node", lambda p: p.labels.get("app") == "web")]
    counts = []
    for key, matches in selectors:
        per_domain = {n["metadata"]["labels"][key]: 0 for n in nodes}
        for node_pods, n in zip(c.pods_by_node, c.nodes):
            per_domain[n.labels[key]] += sum(p.namespace == "default" and not p.terminating and matches(p)
                                             for p in node_pods)
        counts.append(per_domain)
    paths = []
    for per_domain in counts:
        order = list(per_domain.items())
        rng.shuffle(order)  # upstream walks a Go map
        paths.append(CriticalPaths(dict(order)))
    i = int(rng.integers(c.n))
    on_node = list(c.pods_by_node[i])
    rng.shuffle(on_node)
    back = [p for p in on_node if rng.random() < 0.5]
    for other, delta in [(p, -1) for p in on_node] + [(p, +1) for p in back]:
        (plugin.add_pod if delta > 0 else plugin.remove_pod)(state, preemptor, other, c, i)
        for (key, matches), per_domain, reference in zip(selectors, counts, paths):
            if other.namespace == "default" and matches(other):
                value = c.nodes[i].labels[key]
                per_domain[value] += delta
                reference.update(value, per_domain[value])
        got = spread_state(c, state)
        assert [domains for _, domains, _ in got] == counts
        assert [minimum for _, _, minimum in got] == [reference.paths[0][1] for reference in paths]
