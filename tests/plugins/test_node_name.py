"""NodeName, ported from TestNodeName in node_name_test.go."""
from __future__ import annotations

import pytest
from builders import cluster, node, pod

from kplan.api.objects import Pod
from kplan.framework.interfaces import CycleState, FilterPlugin, PreFilterPlugin
from kplan.framework.status import Code
from kplan.plugins.node_name import NodeName

REASON = "node(s) didn't match the requested node name"


# TestNodeName in node_name_test.go
@pytest.mark.parametrize("pod_node, node_name, want", [
    pytest.param("", "foo", (Code.SUCCESS, []), id="no host specified"),
    pytest.param("foo", "foo", (Code.SUCCESS, []), id="host matches"),
    pytest.param("bar", "foo", (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON]), id="host doesn't match"),
])
def test_filter(pod_node, node_name, want):
    c = cluster([node(node_name)])
    p = Pod(pod(spec={"nodeName": pod_node} if pod_node else None))
    status = NodeName().filter(CycleState(), p, c)
    assert (status.code[0], status.reasons_of(0)) == want


def test_filter_over_many_nodes():
    c = cluster([node("a"), node("b"), node("c")])
    p = Pod(pod(spec={"nodeName": "b"}))
    status = NodeName().filter(CycleState(), p, c)
    assert status.rejected.tolist() == [True, False, True]
    assert status.explain(0) == ["the pod requests node 'b'"]


def test_no_prefilter_in_released_versions():
    pl = NodeName()
    assert isinstance(pl, FilterPlugin)
    assert not isinstance(pl, PreFilterPlugin)
