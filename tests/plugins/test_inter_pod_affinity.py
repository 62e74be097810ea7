"""InterPodAffinity, ported from upstream's interpodaffinity tests: TestRequiredAffinitySingleNode,
TestRequiredAffinityMultipleNodes and TestPreFilterStateAddRemovePod (filtering_test.go),
TestPreferredAffinity and TestPreferredAffinityWithHardPodAffinitySymmetricWeight (scoring_test.go).

Upstream's pods live in the namespace "" (defaultNamespace); here they live in "default".
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import cluster
from topology_builders import N, P, affinity, term

from kplan.api.objects import Namespace, Pod
from kplan.errors import InputError
from kplan.framework.config import load_config
from kplan.framework.interfaces import CycleState, Handle
from kplan.framework.runtime import Framework
from kplan.framework.status import Code
from kplan.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH as AFF, ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH as ANTI,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH as EXISTING, InterPodAffinity,
)
from kplan.plugins.registry import REGISTRY
from kplan.sources.snapshot import Snapshot

U, UU = Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE
SKIP = "skip"
NAMESPACES = {name: Namespace(name, {"team": team}) for name, team in (
    ("subteam1.team1", "team1"), ("subteam2.team1", "team1"), ("subteam1.team2", "team2"),
    ("subteam2.team2", "team2"), ("NS1", ""))}
NAMESPACES["NS1"] = Namespace("NS1", {})


def plugin(args=None):
    return InterPodAffinity(args, Handle(snapshot=Snapshot(namespaces=dict(NAMESPACES))))


def In(key, topo, *values, **kw):
    return term(key, "In", values, topo, **kw)


def NotIn(key, topo, *values, **kw):
    return term(key, "NotIn", values, topo, **kw)


def Exists(key, topo, **kw):
    return term(key, "Exists", None, topo, **kw)


SEC = {"service": "securityscan"}
S1 = {"security": "S1"}
NODE1 = N("node1", region="r1", zone="z11")
EXISTING_POD = P("existing", "node1", labels=SEC)
TEAM1 = {"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]}


def ipod(labels=None, ns="default", **aff):
    return P("p", ns=ns, labels=labels, affinity=affinity(**aff) if aff else None)


# TestRequiredAffinitySingleNode in filtering_test.go: (pod, existing pods, want PreFilter, want Filter)
SINGLE = [
    pytest.param(P("p"), [], SKIP, None, id="A pod that has no required pod affinity scheduling rules can schedule "
                                              "onto a node with no existing pods"),
    pytest.param(ipod(S1, required=[In("service", "region", "securityscan", "value2")]), [EXISTING_POD], None, None,
                 id="satisfies with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using In operator "
                    "that matches the existing pod"),
    pytest.param(ipod(S1, required=[NotIn("service", "region", "securityscan3", "value3")]), [EXISTING_POD], None,
                 None, id="satisfies the pod with requiredDuringSchedulingIgnoredDuringExecution in PodAffinity using "
                          "not in operator in labelSelector that matches the existing pod"),
    # Upstream's term has no topologyKey (the API server requires one; kplan: an input error, tested below);
    # any key gives the same answer, as no pod of that namespace exists.
    pytest.param(ipod(S1, required=[In("service", "region", "securityscan", "value2", namespaces=["DiffNameSpace"])]),
                 [P("e", "node1", ns="ns", labels=SEC)], None, (UU, AFF),
                 id="Does not satisfy the PodAffinity with labelSelector because of diff Namespace"),
    # Upstream's term has an empty topologyKey: as above.
    pytest.param(ipod(SEC, required=[In("service", "region", "antivirusscan", "value2")]), [EXISTING_POD], None,
                 (UU, AFF), id="Doesn't satisfy the PodAffinity because of unmatching labelSelector with the "
                               "existing pod"),
    pytest.param(ipod(S1, required=[
        {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "Exists"},
                                                {"key": "wrongkey", "operator": "DoesNotExist"}]},
         "topologyKey": "region"},
        {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "In", "values": ["securityscan"]},
                                                {"key": "service", "operator": "NotIn", "values": ["WrongValue"]}]},
         "topologyKey": "region"}]), [EXISTING_POD], None, None,
        id="satisfies the PodAffinity with different label Operators in multiple "
           "RequiredDuringSchedulingIgnoredDuringExecution"),
    pytest.param(ipod(S1, required=[
        {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "Exists"},
                                                {"key": "wrongkey", "operator": "DoesNotExist"}]},
         "topologyKey": "region"},
        {"labelSelector": {"matchExpressions": [{"key": "service", "operator": "In", "values": ["securityscan2"]},
                                                {"key": "service", "operator": "NotIn", "values": ["WrongValue"]}]},
         "topologyKey": "region"}]), [EXISTING_POD], None, (UU, AFF),
        id="The labelSelector requirements(items of matchExpressions) are ANDed, the pod cannot schedule onto the "
           "node because one of the matchExpression item don't match."),
    pytest.param(ipod(S1, required=[In("service", "region", "securityscan", "value2")],
                      anti=[In("service", "node", "antivirusscan", "value2")]), [EXISTING_POD], None, None,
                 id="satisfies the PodAffinity and PodAntiAffinity with the existing pod"),
    pytest.param(ipod(S1, required=[In("service", "region", "securityscan", "value2")],
                      anti=[In("service", "node", "antivirusscan", "value2")]),
                 [P("e", "node1", labels=SEC, affinity=affinity(anti=[In("service", "node", "antivirusscan",
                                                                         "value2")]))], None, None,
                 id="satisfies the PodAffinity and PodAntiAffinity and PodAntiAffinity symmetry with the existing pod"),
    pytest.param(ipod(S1, required=[In("service", "region", "securityscan", "value2")],
                      anti=[In("service", "zone", "securityscan", "value2")]), [EXISTING_POD], None, (U, ANTI),
                 id="satisfies the PodAffinity but doesn't satisfy the PodAntiAffinity with the existing pod"),
    pytest.param(ipod(SEC, required=[In("service", "region", "securityscan", "value2")],
                      anti=[In("service", "node", "antivirusscan", "value2")]),
                 [P("e", "node1", labels=SEC, affinity=affinity(anti=[In("service", "zone", "securityscan",
                                                                         "value2")]))], None, (U, EXISTING),
                 id="satisfies the PodAffinity and PodAntiAffinity but doesn't satisfy PodAntiAffinity symmetry with "
                    "the existing pod"),
    pytest.param(ipod(SEC, required=[NotIn("service", "region", "securityscan", "value2")]),
                 [P("e", "node2", labels=SEC)], None, (UU, AFF),
                 id="pod matches its own Label in PodAffinity and that matches the existing pod Labels"),
    pytest.param(P("p", labels=SEC),
                 [P("e", "node1", labels=SEC, affinity=affinity(anti=[In("service", "zone", "securityscan",
                                                                         "value2")]))], None, (U, EXISTING),
                 id="verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
                    "constraints. doesn't satisfy PodAntiAffinity symmetry with the existing pod"),
    pytest.param(P("p", labels=SEC),
                 [P("e", "node1", labels=SEC, affinity=affinity(anti=[NotIn("service", "zone", "securityscan",
                                                                            "value2")]))], SKIP, None,
                 id="verify that PodAntiAffinity from existing pod is respected when pod has no AntiAffinity "
                    "constraints. satisfy PodAntiAffinity symmetry with the existing pod"),
    pytest.param(ipod(SEC, anti=[Exists("service", "region"), Exists("security", "region")]),
                 [P("e", "node1", labels=S1, affinity=affinity(anti=[Exists("security", "zone")]))], None, (U, ANTI),
                 id="satisfies the PodAntiAffinity with existing pod but doesn't satisfy PodAntiAffinity symmetry "
                    "with incoming pod"),
    pytest.param(ipod(SEC, anti=[Exists("service", "zone"), Exists("security", "zone")]),
                 [P("e", "node1", labels=S1, affinity=affinity(anti=[Exists("security", "zone")]))], None, (U, ANTI),
                 id="PodAntiAffinity symmetry check a1: incoming pod and existing pod partially match each other on "
                    "AffinityTerms"),
    pytest.param(ipod(S1, anti=[Exists("security", "zone")]),
                 [P("e", "node1", labels=SEC, affinity=affinity(anti=[Exists("service", "zone"),
                                                                      Exists("security", "zone")]))], None,
                 (U, EXISTING), id="PodAntiAffinity symmetry check a2: incoming pod and existing pod partially match "
                                   "each other on AffinityTerms"),
    pytest.param(ipod({"abc": "", "xyz": ""}, anti=[Exists("abc", "zone"), Exists("def", "zone")]),
                 [P("e", "node1", labels={"def": "", "xyz": ""},
                    affinity=affinity(anti=[Exists("abc", "zone"), Exists("def", "zone")]))], None, (U, ANTI),
                 id="PodAntiAffinity symmetry check b1: incoming pod and existing pod partially match each other on "
                    "AffinityTerms"),
    pytest.param(ipod({"def": "", "xyz": ""}, anti=[Exists("abc", "zone"), Exists("def", "zone")]),
                 [P("e", "node1", labels={"abc": "", "xyz": ""},
                    affinity=affinity(anti=[Exists("abc", "zone"), Exists("def", "zone")]))], None, (U, ANTI),
                 id="PodAntiAffinity symmetry check b2: incoming pod and existing pod partially match each other on "
                    "AffinityTerms"),
    pytest.param(ipod(S1, required=[In("service", "region", "securityscan", "value2", namespace_selector=TEAM1)]),
                 [P("e", "node1", ns="subteam1.team1", labels=SEC)], None, None, id="affinity with NamespaceSelector"),
    pytest.param(ipod(S1, required=[In("service", "region", "securityscan", "value2", namespace_selector=TEAM1)]),
                 [P("e", "node1", ns="subteam1.team2", labels=SEC)], None, (UU, AFF),
                 id="affinity with non-matching NamespaceSelector"),
    pytest.param(ipod(S1, ns="subteam1.team1",
                      anti=[In("service", "zone", "securityscan", "value2", namespace_selector=TEAM1)]),
                 [P("e", "node1", ns="subteam2.team1", labels=SEC)], None, (U, ANTI),
                 id="anti-affinity with matching NamespaceSelector"),
    pytest.param(ipod(S1, ns="subteam1.team1",
                      anti=[In("service", "zone", "securityscan", "value2", namespace_selector={})]),
                 [P("e", "node1", ns="subteam2.team1", labels=SEC)], None, (U, ANTI),
                 id="anti-affinity with matching all NamespaceSelector"),
    pytest.param(ipod(S1, ns="subteam1.team1",
                      anti=[In("service", "zone", "securityscan", "value2", namespace_selector=TEAM1)]),
                 [P("e", "node1", ns="subteam1.team2", labels=SEC)], None, None,
                 id="anti-affinity with non-matching NamespaceSelector"),
]


def run_filter(pod_raw, nodes, existing, args=None):
    c = cluster(nodes, existing)
    pl = plugin(args)
    state = CycleState()
    pod = Pod(pod_raw)
    status = pl.pre_filter(state, pod, c)
    if status is not None:
        return c, status, None
    return c, None, pl.filter(state, pod, c)


def verdict(result, i):
    code = Code(int(result.code[i]))
    return None if code == Code.SUCCESS else (code, result.reasons_of(i)[0])


@pytest.mark.parametrize("pod_raw,existing,want_pre,want", SINGLE)
def test_required_affinity_single_node(pod_raw, existing, want_pre, want):
    c, status, result = run_filter(pod_raw, [NODE1], existing)
    if want_pre == SKIP:
        assert status is not None and status.is_skip
        return
    assert status is None
    assert verdict(result, 0) == want
    if want:
        assert result.reasons_of(0) == [want[1]]


@pytest.mark.parametrize("value", ["{{.bad-value.}}"])
def test_invalid_label_value_is_an_input_error(value):
    # "PodAffinity/PodAntiAffinity fails PreFilter with an invalid (anti)affinity label syntax": upstream answers
    # UnschedulableAndUnresolvable "parsing pod: ..."; the API server would have refused the pod.
    for aff in (affinity(required=[In("service", "region", value), In("service", "node", "antivirusscan")]),
                affinity(required=[In("service", "region", "foo")], anti=[In("service", "node", value)])):
        with pytest.raises(InputError, match="invalid label value"):
            run_filter(P("p", labels=SEC, affinity=aff), [NODE1], [])


CHINA, CHINA_AZ1, INDIA = {"region": "China"}, {"region": "China", "az": "az1"}, {"region": "India"}


def nodes_abc(*labels, names=("nodeA", "nodeB", "nodeC")):
    return [N(name, **lab) for name, lab in zip(names, labels)]


RZH = [N("nodeA", region="r1", zone="z1", hostname="nodeA"), N("nodeB", region="r1", zone="z2", hostname="nodeB")]
RZH_SAME = [N("nodeA", region="r1", zone="z1", hostname="nodeA"), N("nodeB", region="r1", zone="z1", hostname="nodeB")]

# TestRequiredAffinityMultipleNodes in filtering_test.go: (pod, existing pods, nodes, want PreFilter, want per node)
MULTIPLE = [
    pytest.param(ipod(required=[In("foo", "region", "bar")]), [P("p1", "node1", foo="bar")],
                 nodes_abc(CHINA, CHINA_AZ1, INDIA, names=("node1", "node2", "node3")), None,
                 [None, None, (UU, AFF)],
                 id="A pod can be scheduled onto all the nodes that have the same topology key & label value with one "
                    "of them has an existing pod that matches the affinity rules"),
    pytest.param(ipod({"foo": "bar", "service": "securityscan"},
                      required=[In("foo", "zone", "bar"), In("service", "zone", "securityscan")]),
                 [P("p1", "nodeA", foo="bar")],
                 [N("nodeA", zone="az1", hostname="h1"), N("nodeB", zone="az2", hostname="h2")], None, [None, None],
                 id="The affinity rule is to schedule all of the pods of this collection to the same zone. The first "
                    "pod of the collection should not be blocked from being scheduled onto any node, even there's no "
                    "existing pod that matches the rule anywhere."),
    pytest.param(ipod({"foo": "bar", "service": "securityscan"},
                      required=[In("foo", "zone", "bar"), In("service", "zone", "securityscan")]),
                 [P("p1", "nodeA", foo="bar")],
                 [N("nodeA", zoneLabel="az1", hostname="h1"), N("nodeB", zoneLabel="az2", hostname="h2")], None,
                 [(UU, AFF), (UU, AFF)],
                 id="The first pod of the collection can only be scheduled on nodes labelled with the requested "
                    "topology keys"),
    pytest.param(ipod(anti=[In("foo", "region", "abc")]), [P("e", "nodeA", foo="abc")],
                 [N("nodeA", region="r1", hostname="nodeA"), N("nodeB", region="r1", hostname="nodeB")], None,
                 [(U, ANTI), (U, ANTI)],
                 id="NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
                    "inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB."),
    pytest.param(ipod(anti=[In("foo", "region", "abc"), In("service", "zone", "securityscan")]),
                 [P("e", "nodeA", foo="abc", service="securityscan")],
                 [N("nodeA", region="r1", zone="z1", hostname="nodeA"),
                  N("nodeB", region="r1", zone="z2", hostname="nodeB")], None, [(U, ANTI), (U, ANTI)],
                 id="This test ensures that anti-affinity matches a pod when any term of the anti-affinity rule "
                    "matches a pod."),
    pytest.param(ipod(anti=[In("foo", "region", "abc")]), [P("e", "nodeA", foo="abc")],
                 nodes_abc(CHINA, CHINA_AZ1, INDIA), None, [(U, ANTI), (U, ANTI), None],
                 id="NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
                    "inter pod affinity rule. The pod can not be scheduled onto nodeA and nodeB but can be scheduled "
                    "onto nodeC"),
    pytest.param(ipod({"foo": "123"}, ns="NS1", anti=[In("foo", "region", "bar")]),
                 [P("e1", "nodeA", ns="NS1", foo="bar"),
                  P("e2", "nodeC", ns="NS2", affinity=affinity(anti=[In("foo", "region", "123")]))],
                 nodes_abc(CHINA, CHINA_AZ1, INDIA), None, [(U, ANTI), (U, ANTI), None],
                 id="NodeA and nodeB have same topologyKey and label value. NodeA has an existing pod that matches the "
                    "inter pod affinity rule. The pod can not be scheduled onto nodeA, nodeB, but can be scheduled "
                    "onto nodeC (NodeC has an existing pod that match the inter pod affinity rule but in different "
                    "namespace)"),
    pytest.param(P("p", foo=""), [P("e", "nodeA", affinity=affinity(anti=[Exists("foo", "invalid-node-label")]))],
                 RZH_SAME, SKIP, None,
                 id="Test existing pod's anti-affinity: if an existing pod has a term with invalid topologyKey, "
                    "labelSelector of the term is firstly checked, and then topologyKey of the term is also checked"),
    pytest.param(ipod(anti=[Exists("foo", "invalid-node-label")]), [P("e", "nodeA", foo="")], RZH_SAME, None,
                 [None, None], id="Test incoming pod's anti-affinity: even if labelSelector matches, we still check if "
                                  "topologyKey matches"),
    pytest.param(P("p", foo="", bar=""),
                 [P("e1", "nodeA", affinity=affinity(anti=[Exists("foo", "zone")])),
                  P("e2", "nodeA", affinity=affinity(anti=[Exists("bar", "region")]))], RZH, None,
                 [(U, EXISTING), (U, EXISTING)],
                 id="Test existing pod's anti-affinity: incoming pod wouldn't considered as a fit as it violates each "
                    "existingPod's terms on all nodes"),
    pytest.param(ipod(anti=[Exists("foo", "zone"), Exists("bar", "region")]),
                 [P("e1", "nodeA", foo=""), P("e2", "nodeB", bar="")], RZH, None, [(U, ANTI), (U, ANTI)],
                 id="Test incoming pod's anti-affinity: incoming pod wouldn't considered as a fit as it at least "
                    "violates one anti-affinity rule of existingPod"),
    pytest.param(P("p", foo="", bar=""),
                 [P("e", "nodeA", affinity=affinity(anti=[Exists("foo", "invalid-node-label"),
                                                          Exists("bar", "zone")]))], RZH, None,
                 [(U, EXISTING), None],
                 id="Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
                    "counted as a single term match - case when one term has invalid topologyKey"),
    pytest.param(ipod(anti=[Exists("foo", "invalid-node-label"), Exists("bar", "zone")]),
                 [P("podA", "nodeA", foo="", bar="")], RZH, None, [(U, ANTI), None],
                 id="Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
                    "counted as a single term match - case when one term has invalid topologyKey"),
    pytest.param(P("p", foo="", bar=""),
                 [P("e", "nodeA", affinity=affinity(anti=[Exists("foo", "region"), Exists("bar", "zone")]))], RZH,
                 None, [(U, EXISTING), (U, EXISTING)],
                 id="Test existing pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
                    "counted as a single term match - case when all terms have valid topologyKey"),
    pytest.param(ipod(anti=[Exists("foo", "region"), Exists("bar", "zone")]), [P("e", "nodeA", foo="", bar="")],
                 RZH, None, [(U, ANTI), (U, ANTI)],
                 id="Test incoming pod's anti-affinity: only when labelSelector and topologyKey both match, it's "
                    "counted as a single term match - case when all terms have valid topologyKey"),
    pytest.param(P("p", foo="", bar=""),
                 [P("e1", "nodeA", affinity=affinity(anti=[Exists("foo", "zone"), Exists("labelA", "zone")])),
                  P("e2", "nodeB", affinity=affinity(anti=[Exists("bar", "zone"), Exists("labelB", "zone")]))],
                 RZH + [N("nodeC", region="r1", zone="z3", hostname="nodeC")], None,
                 [(U, EXISTING), (U, EXISTING), None],
                 id="Test existing pod's anti-affinity: existingPod on nodeA and nodeB has at least one anti-affinity "
                    "term matches incoming pod, so incoming pod can only be scheduled to nodeC"),
    pytest.param(ipod(required=[Exists("foo", "region"), Exists("bar", "zone")]),
                 [P("pod1", "nodeA", foo="", bar="")], RZH_SAME, None, [None, None],
                 id="Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
                    "topologyKeys match"),
    pytest.param(ipod(required=[Exists("foo", "region"), Exists("bar", "zone")]),
                 [P("pod1", "nodeA", foo=""), P("pod2", "nodeB", bar="")], RZH, None, [(UU, AFF), (UU, AFF)],
                 id="Test incoming pod's affinity: firstly check if all affinityTerms match, and then check if all "
                    "topologyKeys match, and the match logic should be satisfied on the same pod"),
]


@pytest.mark.parametrize("pod_raw,existing,nodes,want_pre,want", MULTIPLE)
def test_required_affinity_multiple_nodes(pod_raw, existing, nodes, want_pre, want):
    c, status, result = run_filter(pod_raw, nodes, existing)
    if want_pre == SKIP:
        assert status is not None and status.is_skip
        return
    assert status is None
    assert [verdict(result, i) for i in range(c.n)] == want


@pytest.mark.parametrize("aff,message", [
    (affinity(required=[In("service", "", "x")]), "topologyKey: Required value"),
    (affinity(anti=[term("service", "Near", ["x"], "zone")]), "'Near' is not a valid label selector operator"),
    (affinity(preferred=[(0, In("service", "zone", "x"))]), "weight: Invalid value: 0"),
], ids=["empty topologyKey", "invalid operator", "weight 0"])
def test_bad_terms_are_input_errors(aff, message):
    with pytest.raises(InputError, match=message):
        run_filter(P("p", labels=SEC, affinity=aff), [NODE1], [])


def test_explain_counts_the_matching_pods():
    c, _, result = run_filter(ipod(anti=[In("foo", "region", "abc")]), nodes_abc(CHINA, CHINA_AZ1, INDIA),
                              [P("e", "nodeA", foo="abc")])
    assert result.explain(c.index["nodeB"]) == ["anti-affinity term 0 (foo=abc): region=China has 1 matching pod(s)"]


# -- PreFilterExtensions: AddPod and RemovePod -------------------------------------------------------------
# TestPreFilterStateAddRemovePod in filtering_test.go (the newest version this port could read: the
# 1.32/1.33 file, framework types from pkg/scheduler/framework; the cases stand as they were).
# Upstream's topologyToMatchedTermCount maps {(key, value): count} become kplan's per key, per value
# counts; a pair whose count drops to 0 leaves upstream's map, so zero counts are left out here. The first
# two cases share upstream's name.

R1_Z11, R1_Z12, R2_Z21 = ({"region": r, "zone": z} for r, z in (("r1", "z11"), ("r1", "z12"), ("r2", "z21")))
ABC_NODES = [N("nodeA", **R1_Z11), N("nodeB", **R1_Z12), N("nodeC", **R2_Z21)]
FOO_BAR = {"foo": "bar"}
ANTI_FOO_BAR = [In("foo", "region", "bar")]
COMPLEX = [In("foo", "region", "bar", "buzz"), NotIn("service", "zone", "bar", "security", "test")]

# (pending pod, existing pods, added pod, want after AddPod: anti-affinity counts, affinity counts, and
#  the counts of existing pods' anti-affinity terms matching the pending pod, derived by hand: upstream
#  checks these through its comparison with a PreFilter over every pod)
ADD_REMOVE = [
    pytest.param(P("pending", labels=FOO_BAR, affinity=affinity(anti=ANTI_FOO_BAR)),
                 [P("p1", "nodeA", labels=FOO_BAR), P("p2", "nodeC", affinity=affinity(anti=ANTI_FOO_BAR))],
                 P("addedPod", "nodeB", labels=FOO_BAR, affinity=affinity(anti=ANTI_FOO_BAR)),
                 {("region", "r1"): 2}, {}, {("region", "r2"): 1, ("region", "r1"): 1},
                 id="preFilterState anti-affinity terms are updated correctly after adding and removing a pod"),
    pytest.param(P("pending", labels=FOO_BAR, affinity=affinity(anti=COMPLEX)),
                 [P("p1", "nodeA", labels=FOO_BAR), P("p2", "nodeC", affinity=affinity(anti=ANTI_FOO_BAR))],
                 P("addedPod", "nodeA", labels=FOO_BAR, affinity=affinity(anti=COMPLEX)),
                 {("region", "r1"): 2, ("zone", "z11"): 2, ("zone", "z21"): 1}, {},
                 {("region", "r2"): 1, ("region", "r1"): 1, ("zone", "z11"): 1},
                 id="preFilterState anti-affinity terms are updated correctly after adding and removing a pod"),
    pytest.param(P("pending", labels=FOO_BAR, affinity=affinity(required=COMPLEX)),
                 [P("p1", "nodeA", labels=FOO_BAR),
                  P("p2", "nodeC", affinity=affinity(required=COMPLEX, anti=ANTI_FOO_BAR))],
                 P("addedPod", "nodeA", labels=FOO_BAR, affinity=affinity(anti=COMPLEX)),
                 {}, {("region", "r1"): 2, ("zone", "z11"): 2},
                 {("region", "r2"): 1, ("region", "r1"): 1, ("zone", "z11"): 1},
                 id="preFilterState matching pod affinity and anti-affinity are updated correctly after adding and "
                    "removing a pod"),
    # Not in upstream's table, derived from its rules: a pod counts for the affinity terms only when it
    # matches all of them (podMatchesAllAffinityTerms); the pending pod's terms without namespaces
    # look at its own namespace only.
    pytest.param(P("pending", labels=FOO_BAR, affinity=affinity(required=COMPLEX)), [P("p1", "nodeA", labels=FOO_BAR)],
                 P("addedPod", "nodeC"), {}, {("region", "r1"): 1, ("zone", "z11"): 1}, {},
                 id="a pod matching one of two affinity terms counts for none"),
    pytest.param(P("pending", labels=FOO_BAR, affinity=affinity(required=COMPLEX, anti=ANTI_FOO_BAR)),
                 [P("p1", "nodeA", labels=FOO_BAR)], P("addedPod", "nodeB", ns="other", labels=FOO_BAR),
                 {("region", "r1"): 1}, {("region", "r1"): 1, ("zone", "z11"): 1}, {},
                 id="a pod of another namespace counts for none of the pending pod's terms"),
]


def affinity_counts(c, state):
    """The state's three tables as upstream's maps: {(key, value): count}, zero counts left out."""
    pre = state.read("PreFilterInterPodAffinity")
    tables = []
    for domains in (pre.anti_counts, pre.affinity_counts, pre.existing):
        tables.append({(key, c.label_column(key).values[code]): int(n)
                       for key, counts in domains.by_key.items() for code, n in enumerate(counts) if n})
    return tables


def pre_filtered(pending, pods):
    c = cluster(ABC_NODES, pods)
    state = CycleState()
    assert plugin().pre_filter(state, pending, c) is None
    return c, state


@pytest.mark.parametrize("pending_raw,existing,added_raw,want_anti,want_affinity,want_existing", ADD_REMOVE)
def test_pre_filter_state_add_remove_pod(pending_raw, existing, added_raw, want_anti, want_affinity, want_existing):
    pending, added = Pod(pending_raw), Pod(added_raw)
    c, state = pre_filtered(pending, existing)
    before = affinity_counts(c, state)
    pl, i = plugin(), c.index[added.node_name]
    assert pl.add_pod(state, pending, added, c, i) is None
    assert affinity_counts(c, state) == [want_anti, want_affinity, want_existing]
    assert affinity_counts(*pre_filtered(pending, [*existing, added_raw])) == [want_anti, want_affinity, want_existing]
    assert pl.remove_pod(state, pending, added, c, i) is None
    assert affinity_counts(c, state) == before


# -- scoring ---------------------------------------------------------------------------------------------

SEC_S1, SEC_S2 = {"security": "S1"}, {"security": "S2"}
RG_CHINA, RG_INDIA, AZ1, AZ2 = {"region": "China"}, {"region": "India"}, {"az": "az1"}, {"az": "az2"}
RG_CHINA_AZ1 = {"region": "China", "az": "az1"}


def sel(*exprs):
    return {"matchExpressions": [dict(zip(("key", "operator", "values"), e)) if len(e) == 3
                                 else {"key": e[0], "operator": e[1]} for e in exprs]}


def wterm(selector, topo, **kw):
    return {"labelSelector": selector, "topologyKey": topo, **kw}


STAY_S1_REGION = affinity(preferred=[(5, wterm(sel(("security", "In", ["S1"])), "region"))])
STAY_S2_REGION = affinity(preferred=[(6, wterm(sel(("security", "In", ["S2"])), "region"))])
AFFINITY3 = affinity(preferred=[
    (8, wterm(sel(("security", "NotIn", ["S1"]), ("security", "In", ["S2"])), "region")),
    (2, wterm(sel(("security", "Exists"), ("wrongkey", "DoesNotExist")), "region"))])
HARD = affinity(required=[
    wterm(sel(("security", "In", ["S1", "value2"])), "region"),
    wterm(sel(("security", "Exists"), ("wrongkey", "DoesNotExist")), "region")])
AWAY_S1_AZ = affinity(preferred_anti=[(5, wterm(sel(("security", "In", ["S1"])), "az"))])
AWAY_S2_AZ = affinity(preferred_anti=[(5, wterm(sel(("security", "In", ["S2"])), "az"))])
STAY_S1_AWAY_S2 = affinity(preferred=[(8, wterm(sel(("security", "In", ["S1"])), "region"))],
                           preferred_anti=[(5, wterm(sel(("security", "In", ["S2"])), "az"))])
NS_SEL_TERM = wterm(sel(("security", "In", ["S1"])), "region", namespaces=["subteam2.team2"],
                    namespaceSelector=sel(("team", "In", ["team1"])))
AFFINITY_NS_SELECTOR = affinity(preferred=[(5, NS_SEL_TERM)])
ANTI_AFFINITY_NS_SELECTOR = affinity(preferred_anti=[(5, NS_SEL_TERM)])


def nodes_named(*labels):
    return [N(f"node{k}", **lab) for k, lab in enumerate(labels, start=1)]


def ex(node_name, labels=None, aff=None, ns="default", name=None):
    """An existing pod (upstream's pods carry no name; the builder needs one)."""
    ex.count += 1
    return P(name or f"e{ex.count}", node_name, ns=ns, labels=labels, affinity=aff)


ex.count = 0


def inc(labels=None, aff=None, ns="default"):
    return P("p", ns=ns, labels=labels, affinity=aff)


NS_PODS = [ex("node1", SEC_S1, ns="subteam1.team1"), ex("node1", SEC_S1, ns="subteam1.team1"),
           ex("node1", SEC_S1, ns="subteam1.team2"), ex("node2", SEC_S1, ns="subteam2.team1")]
NS_PODS_BOTH = NS_PODS[:2] + [ex("node1", SEC_S1, ns="subteam2.team2"), NS_PODS[3]]

# TestPreferredAffinity in scoring_test.go (hardPodAffinityWeight 1):
# (pod, existing pods, nodes, ignorePreferredTermsOfExistingPods, want scores or SKIP)
PREFERRED = [
    pytest.param(inc(SEC_S1), [], nodes_named(RG_CHINA, RG_INDIA, AZ1), False, SKIP,
                 id="all nodes are same priority as Affinity is nil"),
    pytest.param(inc(SEC_S1, STAY_S1_REGION), [ex("node1", SEC_S1), ex("node2", SEC_S2), ex("node3", SEC_S1)],
                 nodes_named(RG_CHINA, RG_INDIA, AZ1), False, [100, 0, 0],
                 id="Affinity: pod that matches topology key & pods in nodes will get high score comparing to "
                    "otherswhich doesn't match either pods in nodes or in topology key"),
    pytest.param(inc(None, STAY_S1_REGION), [ex("node1", SEC_S1)], nodes_named(RG_CHINA, RG_CHINA_AZ1, RG_INDIA),
                 False, [100, 100, 0],
                 id="All the nodes that have the same topology key & label value with one of them has an existing pod "
                    "that match the affinity rules, have the same score"),
    pytest.param(inc(SEC_S1, STAY_S2_REGION), [ex(n, SEC_S2) for n in ("node1", "node1", "node2", "node3", "node4",
                                                                       "node5")],
                 nodes_named(RG_CHINA, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA), False, [100, 0, 100, 100, 0],
                 id="Affinity: nodes in one region has more matching pods comparing to other region, so the region "
                    "which has more matches will get high score"),
    pytest.param(inc(SEC_S1, AFFINITY3), [ex("node1", SEC_S1), ex("node2", SEC_S2), ex("node3", SEC_S1)],
                 nodes_named(RG_CHINA, RG_INDIA, AZ1), False, [20, 100, 0],
                 id="Affinity: different Label operators and values for pod affinity scheduling preference, including "
                    "some match failures"),
    pytest.param(inc(SEC_S2), [ex("node1", SEC_S1, STAY_S1_REGION), ex("node2", SEC_S2, STAY_S2_REGION)],
                 nodes_named(RG_CHINA, RG_INDIA, AZ1), False, [0, 100, 0],
                 id="Affinity symmetry: considered only the preferredDuringSchedulingIgnoredDuringExecution in pod "
                    "affinity symmetry"),
    pytest.param(inc(SEC_S1, ns="subteam1.team1"),
                 [ex("node1", SEC_S1, AFFINITY_NS_SELECTOR), ex("node2", SEC_S2, STAY_S2_REGION)],
                 nodes_named(RG_CHINA, RG_INDIA, AZ1), False, [100, 0, 0],
                 id="Affinity symmetry with namespace selector"),
    pytest.param(inc(SEC_S1, ns="subteam1.team1"),
                 [ex("node1", SEC_S1, ANTI_AFFINITY_NS_SELECTOR), ex("node2", SEC_S2, STAY_S2_REGION)],
                 nodes_named(RG_CHINA, RG_INDIA, AZ1), False, [0, 100, 100],
                 id="AntiAffinity symmetry with namespace selector"),
    pytest.param(inc(SEC_S1), [ex("node1", SEC_S1, HARD), ex("node2", SEC_S2, HARD)],
                 nodes_named(RG_CHINA, RG_INDIA, AZ1), False, [100, 100, 0],
                 id="Affinity symmetry: considered RequiredDuringSchedulingIgnoredDuringExecution in pod affinity "
                    "symmetry"),
    pytest.param(inc(SEC_S1, AWAY_S1_AZ), [ex("node1", SEC_S1), ex("node2", SEC_S2)], nodes_named(AZ1, RG_CHINA),
                 False, [0, 100], id="Anti Affinity: pod that does not match existing pods in node will get high score"),
    pytest.param(inc(SEC_S1, AWAY_S1_AZ), [ex("node1", SEC_S1), ex("node2", SEC_S1)], nodes_named(AZ1, RG_CHINA),
                 False, [0, 100], id="Anti Affinity: pod that does not match topology key & match the pods in nodes "
                                     "will get higher score comparing to others"),
    pytest.param(inc(SEC_S1, AWAY_S1_AZ), [ex("node1", SEC_S1), ex("node1", SEC_S1), ex("node2", SEC_S2)],
                 nodes_named(AZ1, RG_INDIA), False, [0, 100],
                 id="Anti Affinity: one node has more matching pods comparing to other node, so the node which has "
                    "more unmatches will get high score"),
    pytest.param(inc(SEC_S2), [ex("node1", SEC_S1, AWAY_S2_AZ), ex("node2", SEC_S2, AWAY_S1_AZ)],
                 nodes_named(AZ1, AZ2), False, [0, 100],
                 id="Anti Affinity symmetry: the existing pods in node which has anti affinity match will get high "
                    "score"),
    pytest.param(inc(SEC_S1, STAY_S1_AWAY_S2), [ex("node1", SEC_S1), ex("node2", SEC_S1)],
                 nodes_named(RG_CHINA, AZ1), False, [100, 0],
                 id="Affinity and Anti Affinity: considered only preferredDuringSchedulingIgnoredDuringExecution in "
                    "both pod affinity & anti affinity"),
    pytest.param(inc(SEC_S1, STAY_S1_AWAY_S2), [ex(n, SEC_S1) for n in ("node1", "node1", "node2", "node3", "node3",
                                                                        "node4", "node5")],
                 nodes_named(RG_CHINA_AZ1, RG_INDIA, RG_CHINA, RG_CHINA, RG_INDIA), False, [100, 0, 100, 100, 0],
                 id="Affinity and Anti Affinity: considering both affinity and anti-affinity, the pod to schedule and "
                    "existing pods have the same labels"),
    pytest.param(inc(SEC_S1, STAY_S1_AWAY_S2),
                 [ex("node1", SEC_S1), ex("node2", SEC_S2), ex("node3", None, STAY_S1_AWAY_S2),
                  ex("node4", None, AWAY_S1_AZ)],
                 nodes_named(RG_CHINA, AZ1, RG_INDIA, AZ2), False, [100, 0, 100, 0],
                 id="Affinity and Anti Affinity and symmetry: considered only preferredDuringSchedulingIgnoredDuring"
                    "Execution in both pod affinity & anti affinity & symmetry"),
    pytest.param(inc(SEC_S1), [ex("node1", SEC_S1), ex("node2", None, STAY_S1_AWAY_S2)],
                 nodes_named(RG_CHINA, RG_CHINA), False, [0, 0],
                 id="Avoid panic when partial nodes in a topology don't have pods with affinity"),
    pytest.param(inc(SEC_S1, AFFINITY_NS_SELECTOR, ns="subteam1.team1"), NS_PODS, nodes_named(RG_CHINA, RG_INDIA),
                 False, [100, 0], id="Affinity with pods matching NamespaceSelector"),
    pytest.param(inc(SEC_S1, AFFINITY_NS_SELECTOR, ns="subteam1.team1"), NS_PODS_BOTH,
                 nodes_named(RG_CHINA, RG_INDIA), False, [100, 0],
                 id="Affinity with pods matching both NamespaceSelector and Namespaces fields"),
    pytest.param(inc(SEC_S1, ANTI_AFFINITY_NS_SELECTOR, ns="subteam1.team1"), NS_PODS,
                 nodes_named(RG_CHINA, RG_INDIA), False, [0, 100],
                 id="Anti-affinity with pods matching NamespaceSelector"),
    pytest.param(inc(SEC_S1, ANTI_AFFINITY_NS_SELECTOR, ns="subteam1.team1"), NS_PODS_BOTH,
                 nodes_named(RG_CHINA, RG_INDIA), False, [0, 100],
                 id="Anti-affinity with pods matching both NamespaceSelector and Namespaces fields"),
    pytest.param(inc(SEC_S2), [ex("node1", SEC_S1, STAY_S1_AWAY_S2), ex("node2", SEC_S2, STAY_S2_REGION)],
                 nodes_named(RG_CHINA, RG_INDIA), True, SKIP, id="Ignore preferred terms of existing pods"),
    pytest.param(inc(SEC_S2), [ex("node1", SEC_S1, STAY_S1_AWAY_S2), ex("node2", SEC_S2, STAY_S2_REGION)],
                 nodes_named(RG_CHINA, RG_INDIA), False, [0, 100], id="Do not ignore preferred terms of existing pods"),
    pytest.param(inc(SEC_S2), [], [], False, SKIP, id="No nodes to score"),
]


def run_score(pod_raw, existing, nodes, args=None):
    c = cluster(nodes, existing)
    pl = plugin(args)
    state = CycleState()
    pod = Pod(pod_raw)
    candidates = np.arange(c.n, dtype=np.intp)
    status = pl.pre_score(state, pod, c, candidates)
    if status is not None:
        return status, None
    return None, pl.normalize_score(state, pod, pl.score(state, pod, c, candidates))


@pytest.mark.parametrize("pod_raw,existing,nodes,ignore,want", PREFERRED)
def test_preferred_affinity(pod_raw, existing, nodes, ignore, want):
    status, scores = run_score(pod_raw, existing, nodes,
                               {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": ignore})
    if want == SKIP:
        assert status is not None and status.is_skip
    else:
        assert status is None and scores.tolist() == want


@pytest.mark.parametrize("aff", [
    affinity(preferred=[(8, wterm(sel(("security", "In", ["{{.bad-value.}}"])), "region"))]),
    affinity(preferred_anti=[(5, wterm(sel(("security", "In", ["{{.bad-value.}}"])), "az"))]),
], ids=["invalid Affinity fails PreScore", "invalid AntiAffinity fails PreScore"])
def test_invalid_preferred_terms_are_input_errors(aff):
    # Upstream returns Error `Invalid value: "{{.bad-value.}}"`; the API server would have refused the pod.
    with pytest.raises(InputError, match="invalid label value"):
        run_score(inc(None, aff), [], nodes_named(RG_CHINA, RG_CHINA))


HARD_NS = affinity(required=[wterm(sel(("service", "In", ["S1"])), "region", namespaces=["default", "subteam2.team2"],
                                   namespaceSelector=sel(("team", "In", ["team1"])))])
THREE = nodes_named(RG_CHINA, RG_INDIA, AZ1)

# TestPreferredAffinityWithHardPodAffinitySymmetricWeight in scoring_test.go
# (upstream's namespace "" in the term's namespaces is the pods' namespace, "default" here)
HARD_WEIGHT = [
    pytest.param("default", 1, [100, 100, 0], id="with default weight"),
    pytest.param("default", 0, SKIP, id="with zero weight"),
    pytest.param("subteam1.team2", 1, SKIP, id="with no matching namespace"),
    pytest.param("subteam1.team1", 1, [100, 100, 0], id="with matching NamespaceSelector"),
    pytest.param("subteam2.team2", 1, [100, 100, 0], id="with matching Namespaces"),
]


@pytest.mark.parametrize("ns,weight,want", HARD_WEIGHT)
def test_preferred_affinity_with_hard_pod_affinity_symmetric_weight(ns, weight, want):
    existing = [ex("node1", None, HARD_NS), ex("node2", None, HARD_NS)]
    status, scores = run_score(inc({"service": "S1"}, ns=ns), existing, THREE, {"hardPodAffinityWeight": weight})
    if want == SKIP:
        assert status is not None and status.is_skip
    else:
        assert status is None and scores.tolist() == want


def configured_plugin(plugin_config: list | None) -> InterPodAffinity:
    """InterPodAffinity as a KubeSchedulerConfiguration's default-scheduler profile builds it."""
    profile = {"schedulerName": "default-scheduler"}
    if plugin_config is not None:
        profile["pluginConfig"] = plugin_config
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [profile]}
    handle = Handle(snapshot=Snapshot(namespaces=dict(NAMESPACES)))
    return Framework(load_config(doc, "scheduler-config.yaml")[0], REGISTRY, handle).plugins[InterPodAffinity.name]


@pytest.mark.parametrize("plugin_config", [
    None, [{"name": "InterPodAffinity", "args": {"ignorePreferredTermsOfExistingPods": False}}],
], ids=["no pluginConfig", "args without hardPodAffinityWeight"])
def test_hard_pod_affinity_weight_defaults_to_1(plugin_config):
    # SetDefaults_InterPodAffinityArgs: an unset hardPodAffinityWeight is 1, so the existing pods'
    # required affinity terms that match the incoming pod score as upstream's "with default weight".
    pl = configured_plugin(plugin_config)
    assert pl.hard_weight == 1
    c = cluster(THREE, [ex("node1", None, HARD_NS), ex("node2", None, HARD_NS)])
    state, pod, candidates = CycleState(), Pod(inc({"service": "S1"}, ns="default")), np.arange(c.n, dtype=np.intp)
    assert pl.pre_score(state, pod, c, candidates) is None
    assert pl.normalize_score(state, pod, pl.score(state, pod, c, candidates)).tolist() == [100, 100, 0]


@pytest.mark.parametrize("args,message", [
    ({"hardPodAffinityWeight": 101}, "not in valid range"),
    ({"hardPodAffinityWeight": -1}, "not in valid range"),
    ({"ignorePreferredTermsOfExistingPods": "yes"}, "must be a boolean"),
    ({"defaultConstraints": []}, "unknown field"),
], ids=["weight above 100", "negative weight", "non-boolean ignore", "unknown field"])
def test_invalid_args(args, message):
    with pytest.raises(InputError, match=message):
        InterPodAffinity(args)
