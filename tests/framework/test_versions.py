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


@pytest.mark.parametrize("text,want,shown", [
    ("1.35", (1, 35), "1.35"), ("v1.36", (1, 36), "1.36"), ("v1.33.7", (1, 33, 7), "1.33.7"),
    ("1.36.0", (1, 36, 0), "1.36.0"), ("v1.34.2-eks-1234", (1, 34, 2), "1.34.2")])
def test_parse_version_keeps_the_patch(text, want, shown):
    assert versions.parse_version(text) == want
    assert versions.format_version(want) == shown


@pytest.mark.parametrize("text", ["1.12", "banana", "1", "2.0", "1.99", "1.32.9", "1.37.0", "1.33.x"])
def test_unsupported_versions_are_input_errors(text):
    with pytest.raises(InputError):
        versions.parse_version(text)


@pytest.mark.parametrize("text,want", [("v1.33.7", (1, 33, 7)), ("v1.36.0", (1, 36, 0)),
                                       ("v1.35.1-gke.100", (1, 35, 1))])
def test_recorded_version_of_a_known_minor_keeps_its_patch(text, want):
    assert versions.recorded_version(text) == (want, "")


@pytest.mark.parametrize("text,nearest", [("v1.40.1", (1, 36)), ("v1.32.9", (1, 33))])
def test_recorded_version_of_an_unknown_minor_answers_as_the_nearest_minor(text, nearest):
    version, warning = versions.recorded_version(text)
    assert version == nearest and f"server runs {text}" in warning


def test_every_change_is_within_the_supported_window():
    assert all(versions.OLDEST <= c.since <= versions.NEWEST for c in versions.CHANGES)
    assert len({c.key for c in versions.CHANGES}) == len(versions.CHANGES)
    # A backport goes to patch releases of a supported minor older than the change's own.
    assert all(versions.OLDEST <= m < c.since and len(m) == 2 for c in versions.CHANGES for m in c.backported)


@pytest.mark.parametrize("version,want", [
    ((1, 33), False), ((1, 33, 0), False), ((1, 33, 5), False), ((1, 33, 6), True), ((1, 33, 9), True),
    ((1, 34), True), ((1, 34, 0), True), ((1, 36), True), (None, True)])
def test_sidecar_host_ports_from_1_34_and_from_1_33_6(version, want):
    # kubernetes#132040 is in v1.34.0; its cherry-pick kubernetes#133390 is listed under v1.33.6 in
    # CHANGELOG-1.33.md ("Extends the nodeports scheduling plugin to consider hostPorts used by
    # restartable init containers") and not under v1.33.5 or earlier.
    assert versions.has(version, versions.SIDECAR_HOST_PORTS) is want


@pytest.mark.parametrize("version,want", [
    ((1, 33), False), ((1, 33, 9), False), ((1, 34), False), ((1, 34, 1), False), ((1, 34, 2), True),
    ((1, 34, 7), True), ((1, 35), True), ((1, 35, 0), True), (None, True)])
def test_generic_taint_reason_from_1_35_and_from_1_34_2(version, want):
    # kubernetes#134740 is in v1.35.0 (v1.35.0-alpha.3); its cherry-pick kubernetes#135023 is listed
    # under v1.34.2 in CHANGELOG-1.34.md, not under v1.34.1. No 1.33 cherry-pick is known.
    assert versions.has(version, versions.GENERIC_TAINT_REASON) is want


def test_changes_without_backports_go_by_minor_only():
    assert not versions.has((1, 33, 9), versions.FIT_UNRESOLVABLE)
    assert versions.has((1, 34, 0), versions.FIT_UNRESOLVABLE)
    assert not versions.has((1, 35, 9), versions.BALANCE_CHANGE)


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


def test_taint_toleration_reason_by_1_34_patch_release():
    # The same case on release-1.34: v1.34.1 still names the taint; v1.34.2 ships kubernetes#135023,
    # the cherry-pick of kubernetes#134740, and with it the generic text.
    assert filter_taints((1, 34, 1)) == [["node(s) had untolerated taint {dedicated: user1}"], []]
    assert filter_taints((1, 34, 2)) == [["node(s) had untolerated taint(s)"], []]


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
