"""Release differences: each change answered both ways, from that release's upstream expectation."""
import pytest

from builders import cluster, node, pod
from kplan.api.objects import Pod
from kplan.errors import InputError
from kplan.framework import versions
from kplan.framework.interfaces import CycleState, Handle
from kplan.framework.status import Code
from kplan.plugins.node_resources_fit import NodeResourcesFit
from kplan.plugins.taint_toleration import TaintToleration


@pytest.mark.parametrize("text,want", [("1.35", (1, 35)), ("v1.36", (1, 36)), ("v1.33.7", (1, 33)),
                                       ("v1.34.2-eks-1234", (1, 34))])
def test_parse_version(text, want):
    assert versions.parse_version(text) == want


@pytest.mark.parametrize("text", ["1.12", "banana", "1", "2.0", "1.99"])
def test_unsupported_versions_are_input_errors(text):
    with pytest.raises(InputError):
        versions.parse_version(text)


def test_every_change_is_within_the_supported_window():
    assert all(versions.OLDEST <= c.since <= versions.NEWEST for c in versions.CHANGES)
    assert len({c.key for c in versions.CHANGES}) == len(versions.CHANGES)


def filter_taints(version):
    c = cluster([node("node1", taints=[{"key": "dedicated", "value": "user1", "effect": "NoSchedule"}]),
                 node("node2")])
    plugin = TaintToleration(handle=Handle(kube_version=version))
    status = plugin.filter(CycleState(), Pod(pod("p")), c)
    return [status.reasons_of(i) for i in range(c.n)]


def test_taint_toleration_reason_by_release():
    # TestTaintTolerationFilter, "A pod having no tolerations can't be scheduled onto a node with nonempty
    # taints": v1.34 expects "node(s) had untolerated taint {dedicated: user1}", v1.35 the generic text.
    assert filter_taints((1, 34)) == [["node(s) had untolerated taint {dedicated: user1}"], []]
    assert filter_taints((1, 35)) == [["node(s) had untolerated taint(s)"], []]
    assert filter_taints(None) == [["node(s) had untolerated taint(s)"], []]


def fit_codes(version):
    # TestEnoughRequests "too many resources fails due to requests exceeding allocatable": the pod asks
    # for more CPU than the node has in all.
    c = cluster([node("node1", cpu="10", memory="20")])
    plugin = NodeResourcesFit(handle=Handle(kube_version=version))
    state = CycleState()
    p = Pod(pod("p", requests={"cpu": "11"}))
    plugin.pre_filter(state, p, c)
    return plugin.filter(state, p, c).code.tolist()


def test_fit_unresolvable_by_release():
    assert fit_codes((1, 33)) == [Code.UNSCHEDULABLE]
    assert fit_codes((1, 34)) == [Code.UNSCHEDULABLE_AND_UNRESOLVABLE]


def test_readme_documents_every_change():
    from pathlib import Path
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    for change in versions.CHANGES:
        assert change.upstream in readme and change.plugin in readme
