"""TaintToleration, ported from TestTaintTolerationFilter and TestTaintTolerationScore in taint_toleration_test.go.

The newest table expects the generic reason "node(s) had untolerated taint(s)" (PR #134740,
v1.35; cherry-picked to v1.34 patches); the old per-taint strings the v1.33 table lists are kept
in the `legacy` column and checked against legacy_reason().
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import cluster, node, pod

from kplan.api.objects import Pod
from kplan.framework.interfaces import (
    CycleState, FilterPlugin, NormalizeScorePlugin, PreFilterPlugin, PreScorePlugin, ScorePlugin,
)
from kplan.framework.status import Code
from kplan.plugins.taint_toleration import ERR_REASON_UNTOLERATED, TaintToleration, first_untolerated, legacy_reason

REASON = "node(s) had untolerated taint(s)"


def taint(key, value, effect):
    return {"key": key, "value": value, "effect": effect}


def tol(key="", value="", effect="", operator=None):
    t = {"key": key, "value": value, "effect": effect}
    if operator:
        t["operator"] = operator
    return t


def with_tolerations(tolerations):
    return Pod(pod("pod1", spec={"tolerations": tolerations}))


# TestTaintTolerationFilter in taint_toleration_test.go
FILTER_CASES = [
    pytest.param([], [taint("dedicated", "user1", "NoSchedule")], "node(s) had untolerated taint {dedicated: user1}",
                 id="A pod having no tolerations can't be scheduled onto a node with nonempty taints"),
    pytest.param([tol("dedicated", "user1", "NoSchedule")], [taint("dedicated", "user1", "NoSchedule")], None,
                 id="A pod which can be scheduled on a dedicated node assigned to user1 with effect NoSchedule"),
    pytest.param([tol("dedicated", "user2", "NoSchedule", "Equal")], [taint("dedicated", "user1", "NoSchedule")],
                 "node(s) had untolerated taint {dedicated: user1}",
                 id="A pod which can't be scheduled on a dedicated node assigned to user2 with effect NoSchedule"),
    pytest.param([tol("foo", effect="NoSchedule", operator="Exists")], [taint("foo", "bar", "NoSchedule")], None,
                 id="A pod can be scheduled onto the node, with a toleration uses operator Exists that tolerates "
                    "the taints on the node"),
    pytest.param([tol("dedicated", "user2", "NoSchedule", "Equal"), tol("foo", effect="NoSchedule", operator="Exists")],
                 [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")], None,
                 id="A pod has multiple tolerations, node has multiple taints, all the taints are tolerated, pod can "
                    "be scheduled onto the node"),
    pytest.param([tol("foo", "bar", "PreferNoSchedule", "Equal")], [taint("foo", "bar", "NoSchedule")],
                 "node(s) had untolerated taint {foo: bar}",
                 id="A pod has a toleration that keys and values match the taint on the node, but (non-empty) effect "
                    "doesn't match, can't be scheduled onto the node"),
    pytest.param([tol("foo", "bar", operator="Equal")], [taint("foo", "bar", "NoSchedule")], None,
                 id="The pod has a toleration that keys and values match the taint on the node, the effect of "
                    "toleration is empty, and the effect of taint is NoSchedule. Pod can be scheduled onto the node"),
    pytest.param([tol("dedicated", "user2", "NoSchedule", "Equal")], [taint("dedicated", "user1", "PreferNoSchedule")],
                 None,
                 id="The pod has a toleration that key and value don't match the taint on the node, but the effect "
                    "of taint on node is PreferNoSchedule. Pod can be scheduled onto the node"),
    pytest.param([], [taint("dedicated", "user1", "PreferNoSchedule")], None,
                 id="The pod has no toleration, but the effect of taint on node is PreferNoSchedule. Pod can be "
                    "scheduled onto the node"),
]


@pytest.mark.parametrize("tolerations, taints, legacy", FILTER_CASES)
def test_filter(tolerations, taints, legacy):
    c = cluster([node("nodeA", taints=taints)])
    p = with_tolerations(tolerations)
    status = TaintToleration().filter(CycleState(), p, c)
    if legacy is None:
        assert status.code[0] == Code.SUCCESS
        assert status.reasons_of(0) == []
    else:
        assert status.code[0] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons_of(0) == [REASON]
        assert legacy_reason(first_untolerated(c.taint_sets[0], p.tolerations)) == legacy


def test_reason_constant():
    assert ERR_REASON_UNTOLERATED == REASON


def test_filter_broadcasts_per_taint_set():
    shared = [taint("dedicated", "gpu", "NoExecute")]
    c = cluster([node("a", taints=shared), node("b"), node("c", taints=shared),
                 node("d", taints=[taint("soft", "x", "PreferNoSchedule")])])
    assert len(c.taint_sets) == 3
    status = TaintToleration().filter(CycleState(), with_tolerations([]), c)
    assert status.rejected.tolist() == [True, False, True, False]
    assert status.explain(2) == ["untolerated taint dedicated=gpu:NoExecute"]
    assert status.explain(1) == []


def nw(name, taints):
    return node(name, taints=taints)


# TestTaintTolerationScore in taint_toleration_test.go
SCORE_CASES = [
    pytest.param([tol("foo", "bar", "PreferNoSchedule", "Equal")],
                 [nw("nodeA", [taint("foo", "bar", "PreferNoSchedule")]),
                  nw("nodeB", [taint("foo", "blah", "PreferNoSchedule")])],
                 [100, 0],
                 id="node with taints tolerated by the pod, gets a higher score than those node with intolerable taints"),
    pytest.param([tol("cpu-type", "arm64", "PreferNoSchedule", "Equal"), tol("disk-type", "ssd", "PreferNoSchedule", "Equal")],
                 [nw("nodeA", []), nw("nodeB", [taint("cpu-type", "arm64", "PreferNoSchedule")]),
                  nw("nodeC", [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")])],
                 [100, 100, 100],
                 id="the nodes that all of their taints are tolerated by the pod, get the same score, no matter how many "
                    "tolerable taints a node has"),
    pytest.param([tol("foo", "bar", "PreferNoSchedule", "Equal")],
                 [nw("nodeA", []), nw("nodeB", [taint("cpu-type", "arm64", "PreferNoSchedule")]),
                  nw("nodeC", [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")])],
                 [100, 50, 0],
                 id="the more intolerable taints a node has, the lower score it gets."),
    pytest.param([tol("cpu-type", "arm64", "NoSchedule", "Equal"), tol("disk-type", "ssd", "NoSchedule", "Equal")],
                 [nw("nodeA", []), nw("nodeB", [taint("cpu-type", "arm64", "NoSchedule")]),
                  nw("nodeC", [taint("cpu-type", "arm64", "PreferNoSchedule"), taint("disk-type", "ssd", "PreferNoSchedule")])],
                 [100, 100, 0],
                 id="only taints and tolerations that have effect PreferNoSchedule are checked by taints-tolerations "
                    "priority function"),
    pytest.param([], [nw("nodeA", []), nw("nodeB", [taint("cpu-type", "arm64", "PreferNoSchedule")])],
                 [100, 0],
                 id="Default behaviour No taints and tolerations, lands on node with no taints"),
]


@pytest.mark.parametrize("tolerations, nodes, want", SCORE_CASES)
def test_score(tolerations, nodes, want):
    c = cluster(nodes)
    p = with_tolerations(tolerations)
    pl = TaintToleration()
    state = CycleState()
    candidates = np.arange(c.n)
    assert pl.pre_score(state, p, c, candidates) is None
    raw = pl.score(state, p, c, candidates)
    assert raw.dtype == np.int64
    assert pl.normalize_score(state, p, raw).tolist() == want


def test_score_on_candidate_subset():
    c = cluster([nw("a", [taint("k", "1", "PreferNoSchedule")]), nw("b", []),
                 nw("c", [taint("k", "1", "PreferNoSchedule"), taint("k2", "2", "PreferNoSchedule")])])
    pl = TaintToleration()
    state = CycleState()
    p = with_tolerations([])
    candidates = np.array([2, 0])
    pl.pre_score(state, p, c, candidates)
    assert pl.score(state, p, c, candidates).tolist() == [2, 1]


def test_extension_points():
    pl = TaintToleration()
    for proto in (FilterPlugin, PreScorePlugin, ScorePlugin, NormalizeScorePlugin):
        assert isinstance(pl, proto)
    assert not isinstance(pl, PreFilterPlugin)
