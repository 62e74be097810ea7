"""NodeUnschedulable, ported from TestNodeUnschedulable in node_unschedulable_test.go."""
from __future__ import annotations

import pytest
from builders import cluster, node, pod

from kplan.api.objects import Pod
from kplan.framework.interfaces import CycleState, FilterPlugin, PreFilterPlugin
from kplan.framework.status import Code
from kplan.plugins.node_unschedulable import NodeUnschedulable

REASON = "node(s) were unschedulable"


# TestNodeUnschedulable in node_unschedulable_test.go
@pytest.mark.parametrize("tolerations, unschedulable, want", [
    pytest.param([], True, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON]),
                 id="Does not schedule pod to unschedulable node (node.Spec.Unschedulable==true)"),
    pytest.param([], False, (Code.SUCCESS, []), id="Schedule pod to normal node"),
    pytest.param([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}], True, (Code.SUCCESS, []),
                 id="Schedule pod with toleration to unschedulable node (node.Spec.Unschedulable==true)"),
])
def test_filter(tolerations, unschedulable, want):
    c = cluster([node("n", unschedulable=unschedulable)])
    p = Pod(pod(spec={"tolerations": tolerations}))
    pl = NodeUnschedulable()
    status = pl.filter(CycleState(), p, c)
    assert (status.code[0], status.reasons_of(0)) == want


def test_other_tolerations_do_not_help_and_exists_without_key_does():
    c = cluster([node("cordoned", unschedulable=True), node("open")])
    pl = NodeUnschedulable()
    other = Pod(pod(spec={"tolerations": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoExecute"}]}))
    status = pl.filter(CycleState(), other, c)
    assert status.code.tolist() == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.SUCCESS]
    assert status.explain(0)
    everything = Pod(pod(spec={"tolerations": [{"operator": "Exists"}]}))
    assert not pl.filter(CycleState(), everything, c).rejected.any()


def test_extension_points():
    pl = NodeUnschedulable()
    assert isinstance(pl, FilterPlugin)
    assert not isinstance(pl, PreFilterPlugin)
