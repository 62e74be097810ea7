"""NodeAffinity, ported from TestNodeAffinity and TestNodeAffinityPriority in node_affinity_test.go."""
from __future__ import annotations

import numpy as np
import pytest
from builders import cluster, node, pod

from kplan.api.objects import Pod
from kplan.errors import InputError
from kplan.framework.interfaces import (
    CycleState, FilterPlugin, NormalizeScorePlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin,
)
from kplan.framework.status import Code
from kplan.plugins.node_affinity import NodeAffinity

ERR_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_CONFLICT = "pod affinity terms conflict"
NAME_PART_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                 "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                 "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")
SKIP = "skip"


def expr(key, op, *values):
    r = {"key": key, "operator": op}
    if values:
        r["values"] = list(values)
    return r


def name_in(*names):
    return {"key": "metadata.name", "operator": "In", "values": list(names)}


def required(*terms):
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": list(terms)}}}}


def bare_node(name, labels=None):
    """A node with exactly these labels (the builder's hostname label removed), as the upstream tests build them."""
    n = node(name)
    n["metadata"]["labels"] = dict(labels or {})
    return n


ADDED_NODE2 = {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
    "nodeSelectorTerms": [{"matchFields": [name_in("node2")]}]}}}

# TestNodeAffinity in node_affinity_test.go:
# (spec, labels, node name, args, run PreFilter, want PreFilter (None | SKIP | reason | set of names), want Filter reason)
CASES = [
    pytest.param({"nodeSelector": {"foo": "bar"}}, {}, "", None, True, None, ERR_POD, id="missing labels"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, "", None, True, None, None, id="same labels"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, "", None, True, None, None,
                 id="node labels are superset"),
    pytest.param({"nodeSelector": {"foo": "bar", "baz": "blah"}}, {"foo": "bar"}, "", None, True, None, ERR_POD,
                 id="node labels are subset"),
    pytest.param(required({"matchExpressions": [expr("foo", "In", "bar", "value2")]}), {"foo": "bar"}, "", None, True,
                 None, None, id="Pod with matchExpressions using In operator that matches the existing node"),
    pytest.param(required({"matchExpressions": [expr("kernel-version", "Gt", "0204")]}), {"kernel-version": "0206"},
                 "", None, True, None, None,
                 id="Pod with matchExpressions using Gt operator that matches the existing node"),
    pytest.param(required({"matchExpressions": [expr("mem-type", "NotIn", "DDR", "DDR2")]}), {"mem-type": "DDR3"},
                 "", None, True, None, None,
                 id="Pod with matchExpressions using NotIn operator that matches the existing node"),
    pytest.param(required({"matchExpressions": [expr("GPU", "Exists")]}), {"GPU": "NVIDIA-GRID-K1"}, "", None, True,
                 None, None, id="Pod with matchExpressions using Exists operator that matches the existing node"),
    pytest.param(required({"matchExpressions": [expr("foo", "In", "value1", "value2")]}), {"foo": "bar"}, "", None,
                 True, None, ERR_POD, id="Pod with affinity that don't match node's labels won't schedule onto the node"),
    pytest.param(required({"matchExpressions": []}), {"foo": "bar"}, "", None, True, None, ERR_POD,
                 id="Pod with empty MatchExpressions is not a valid value will match no objects and won't schedule "
                    "onto the node"),
    pytest.param({}, {"foo": "bar"}, "", None, True, SKIP, None, id="Pod with no Affinity will schedule onto a node"),
    pytest.param({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": None}}},
                 {"foo": "bar"}, "", None, True, SKIP, None,
                 id="Pod with Affinity but nil NodeSelector will schedule onto a node"),
    pytest.param(required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}),
                 {"GPU": "NVIDIA-GRID-K1"}, "", None, True, None, None,
                 id="Pod with multiple matchExpressions ANDed that matches the existing node"),
    pytest.param(required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "In", "AMD", "INTER")]}),
                 {"GPU": "NVIDIA-GRID-K1"}, "", None, True, None, ERR_POD,
                 id="Pod with multiple matchExpressions ANDed that doesn't match the existing node"),
    pytest.param(required({"matchExpressions": [expr("foo", "In", "bar", "value2")]},
                          {"matchExpressions": [expr("diffkey", "In", "wrong", "value2")]}),
                 {"foo": "bar"}, "", None, True, None, None,
                 id="Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels and will schedule "
                    "onto the node"),
    pytest.param({"nodeSelector": {"foo": "bar"}, **required({"matchExpressions": [expr("foo", "Exists")]})},
                 {"foo": "bar"}, "", None, True, None, None,
                 id="Pod with an Affinity and a PodSpec.NodeSelector(the old thing that we are deprecating) both are "
                    "satisfied, will schedule onto the node"),
    pytest.param({"nodeSelector": {"foo": "bar"}, **required({"matchExpressions": [expr("foo", "Exists")]})},
                 {"foo": "barrrrrr"}, "", None, True, None, ERR_POD,
                 id="Pod with an Affinity matches node's labels but the PodSpec.NodeSelector(the old thing that we are "
                    "deprecating) is not satisfied, won't schedule onto the node"),
    pytest.param(required({"matchExpressions": [expr("foo", "NotIn", "invalid value: ___@#$%^")]}), {"foo": "bar"},
                 "", None, True, None, ERR_POD,
                 id="Pod with an invalid value in Affinity term won't be scheduled onto the node"),
    pytest.param(required({"matchFields": [name_in("node1")]}), {}, "node1", None, True, {"node1"}, None,
                 id="Pod with matchFields using In operator that matches the existing node"),
    pytest.param(required({"matchFields": [name_in("node1")]}), {}, "node2", None, True, {"node1"}, ERR_POD,
                 id="Pod with matchFields using In operator that does not match the existing node"),
    pytest.param(required({"matchFields": [name_in("node1"), name_in("node2")]},
                          {"matchExpressions": [expr("foo", "In", "bar")]}),
                 {"foo": "bar"}, "node2", None, True, None, None,
                 id="Pod with two terms: matchFields does not match, but matchExpressions matches"),
    pytest.param(required({"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}),
                 {"foo": "bar"}, "node2", None, True, {"node1"}, ERR_POD,
                 id="Pod with one term: matchFields does not match, but matchExpressions matches"),
    pytest.param(required({"matchFields": [name_in("node1")], "matchExpressions": [expr("foo", "In", "bar")]}),
                 {"foo": "bar"}, "node1", None, True, {"node1"}, None,
                 id="Pod with one term: both matchFields and matchExpressions match"),
    pytest.param(required({"matchFields": [name_in("node1")]},
                          {"matchExpressions": [expr("foo", "In", "not-match-to-bar")]}),
                 {"foo": "bar"}, "node2", None, True, None, ERR_POD,
                 id="Pod with two terms: both matchFields and matchExpressions do not match"),
    pytest.param(required({"matchFields": [name_in("node1")]}, {"matchFields": [name_in("node2")]}), {}, "node2",
                 None, True, {"node1", "node2"}, None, id="Pod with two terms of node.Name affinity"),
    pytest.param(required({"matchFields": [name_in("node1"), name_in("node2")]}), {"foo": "bar"}, "node2", None,
                 True, ERR_CONFLICT, ERR_POD, id="Pod with two conflicting mach field requirements"),
    pytest.param(required({"matchExpressions": [expr("zone", "In", "foo")]}), {"zone": "foo"}, "node2", ADDED_NODE2,
                 True, None, None, id="Matches added affinity and Pod's node affinity"),
    pytest.param(required({"matchExpressions": [expr("zone", "In", "bar")]}), {"zone": "foo"}, "node2", ADDED_NODE2,
                 True, None, ERR_POD, id="Matches added affinity but not Pod's node affinity"),
    pytest.param({}, {"zone": "foo"}, "node2",
                 {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                     "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "In", "bar")]}]}}},
                 True, None, ERR_ENFORCED, id="Doesn't match added affinity"),
    pytest.param({"nodeSelector": {"foo": "bar"}}, {"foo": "bar", "baz": "blah"}, "", None, False, None, None,
                 id="Matches node selector correctly even if PreFilter is not called"),
    pytest.param(required({"matchExpressions": [expr("GPU", "Exists"), expr("GPU", "NotIn", "AMD", "INTER")]}),
                 {"GPU": "NVIDIA-GRID-K1"}, "", None, False, None, None,
                 id="Matches node affinity correctly even if PreFilter is not called"),
]


@pytest.mark.parametrize("spec, labels, node_name, args, run_pre_filter, want_pre, want_reason", CASES)
def test_node_affinity(spec, labels, node_name, args, run_pre_filter, want_pre, want_reason):
    name = node_name or "the-node"
    # node1/node2 are added (unlabelled) so a narrowing PreFilter result can be read back as names.
    nodes = [bare_node(name, labels)] + [bare_node(n) for n in ("node1", "node2") if n != name]
    c = cluster(nodes)
    p = Pod(pod("p", spec=spec))
    pl = NodeAffinity(args)
    state = CycleState()
    if run_pre_filter:
        pre = pl.pre_filter(state, p, c)
        if want_pre is None:
            assert pre is None
        elif want_pre == SKIP:
            assert pre.code == Code.SKIP
        elif isinstance(want_pre, str):
            assert (pre.code, pre.reasons) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (want_pre,))
        else:
            assert pre.code == Code.SUCCESS
            assert {c.names[i] for i in np.flatnonzero(pre.node_mask)} == want_pre
    status = pl.filter(state, p, c)
    if want_reason is None:
        assert status.code[0] == Code.SUCCESS
        assert status.reasons_of(0) == []
    else:
        assert status.code[0] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons_of(0) == [want_reason]
        assert status.explain(0)


def test_filter_explains_unmet_requirements():
    c = cluster([bare_node("a", {"zone": "z1"}), bare_node("b", {"zone": "z2", "disk": "ssd"})])
    p = Pod(pod("p", spec={"nodeSelector": {"disk": "ssd"},
                           **required({"matchExpressions": [expr("zone", "In", "z2")]})}))
    pl = NodeAffinity()
    state = CycleState()
    pl.pre_filter(state, p, c)
    status = pl.filter(state, p, c)
    assert status.rejected.tolist() == [True, False]
    assert status.explain(0) == ["nodeSelector disk=ssd: node has no label disk",
                                 "term 0: zone in (z2) not met (node has zone=z1)"]


def test_added_affinity_args_are_validated():
    bad = {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [expr("invalid key", "In", "x")]}]}}}
    with pytest.raises(InputError, match="invalid key"):
        NodeAffinity(bad)
    with pytest.raises(InputError):
        NodeAffinity({"addedAffinityy": {}})


LABEL1 = {"foo": "bar"}
LABEL2 = {"key": "value"}
LABEL3 = {"az": "az1"}
LABEL4 = {"abc": "az11", "def": "az22"}
LABEL5 = {"foo": "bar", "key": "value", "az": "az1"}
AFFINITY1 = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", "bar")]}}]}}
AFFINITY2 = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 2, "preference": {"matchExpressions": [expr("foo", "In", "bar")]}},
    {"weight": 4, "preference": {"matchExpressions": [expr("key", "In", "value")]}},
    {"weight": 5, "preference": {"matchExpressions": [expr("foo", "In", "bar"), expr("key", "In", "value"),
                                                      expr("az", "In", "az1")]}},
]}}
BROKEN = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
    {"weight": 2, "preference": {"matchExpressions": [expr("invalid key", "In", "bar")]}}]}}


# TestNodeAffinityPriority in node_affinity_test.go:
# (pod affinity, nodes, args, run PreScore, want PreScore (None | SKIP | error message), want normalized scores)
PRIORITY_CASES = [
    pytest.param(None, [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], None, False, None, [0, 0, 0],
                 id="all nodes are same priority as NodeAffinity is nil"),
    pytest.param(None, [("node1", LABEL1)], None, True, SKIP, None,
                 id="Skip is returned in PreScore when NodeAffinity is nil"),
    pytest.param(BROKEN, [("node1", LABEL1)], None, True,
                 f'[0].matchExpressions[0].key: Invalid value: "invalid key": {NAME_PART_MSG}', None,
                 id="PreScore returns error when an incoming Pod has a broken affinity"),
    pytest.param(AFFINITY1, [("node1", LABEL4), ("node2", LABEL2), ("node3", LABEL3)], None, True, None, [0, 0, 0],
                 id="no node matches preferred scheduling requirements in NodeAffinity of pod so all nodes' "
                    "priority is zero"),
    pytest.param(AFFINITY1, [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL3)], None, True, None, [100, 0, 0],
                 id="only node1 matches the preferred scheduling requirements of pod"),
    pytest.param(AFFINITY2, [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)], None, True, None, [18, 100, 36],
                 id="all nodes matches the preferred scheduling requirements of pod but with different priorities "),
    pytest.param(None, [("node1", LABEL1), ("node2", LABEL2)], {"addedAffinity": AFFINITY1["nodeAffinity"]}, True,
                 None, [100, 0], id="added affinity"),
    pytest.param(AFFINITY1, [("node1", LABEL1), ("node2", LABEL2), ("node3", LABEL5)],
                 {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
                     {"weight": 3, "preference": {"matchExpressions": [expr("key", "In", "value")]}}]}},
                 True, None, [40, 60, 100], id="added affinity and pod has default affinity"),
    pytest.param(AFFINITY2, [("node1", LABEL1), ("node5", LABEL5), ("node2", LABEL2)], None, True, None, [18, 100, 36],
                 id="calculate the priorities correctly even if PreScore is not called"),
]


@pytest.mark.parametrize("affinity, nodes, args, run_pre_score, want_pre, want", PRIORITY_CASES)
def test_node_affinity_priority(affinity, nodes, args, run_pre_score, want_pre, want):
    c = cluster([bare_node(n, l) for n, l in nodes])
    p = Pod(pod("p", spec={"affinity": affinity} if affinity else None))
    pl = NodeAffinity(args)
    state = CycleState()
    candidates = np.arange(c.n)
    if run_pre_score:
        pre = pl.pre_score(state, p, c, candidates)
        if want_pre == SKIP:
            assert pre.code == Code.SKIP
            return
        if want_pre is not None:
            assert (pre.code, pre.message) == (Code.ERROR, want_pre)
            return
        assert pre is None
    raw = pl.score(state, p, c, candidates)
    assert raw.dtype == np.int64
    assert pl.normalize_score(state, p, raw).tolist() == want


def test_score_on_candidate_subset():
    c = cluster([bare_node("node1", LABEL1), bare_node("node5", LABEL5), bare_node("node2", LABEL2)])
    p = Pod(pod("p", spec={"affinity": AFFINITY2}))
    pl = NodeAffinity()
    state = CycleState()
    candidates = np.array([2, 1])
    assert pl.pre_score(state, p, c, candidates) is None
    assert pl.score(state, p, c, candidates).tolist() == [4, 11]


def test_extension_points():
    pl = NodeAffinity()
    for proto in (PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin):
        assert isinstance(pl, proto)
