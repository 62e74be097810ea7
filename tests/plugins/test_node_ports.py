"""NodePorts, ported from TestNodePorts in node_ports_test.go, plus the sidecar host ports of util.GetHostPorts."""
from __future__ import annotations

import pytest
from builders import cluster, container, node, pod

from kplan.api.objects import HostPort, Pod
from kplan.framework.interfaces import CycleState, FilterPlugin, Handle, PreFilterPlugin
from kplan.framework.status import Code
from kplan.plugins.node_ports import NodePorts, conflicts

REASON = "node(s) didn't have free ports for the requested pod ports"


def ports(*infos):
    """Parses "PROTO/IP/PORT" strings into container ports (the upstream test's newPod helper)."""
    out = []
    for info in infos:
        proto, ip, port = info.split("/")
        out.append({"containerPort": int(port), "hostIP": ip, "hostPort": int(port), "protocol": proto})
    return out


def new_pod(name, *infos, node_name=""):
    return pod(name, node_name=node_name, containers=[container(ports=ports(*infos))])


# TestNodePorts in node_ports_test.go; None = the pod's PreFilter returns Skip.
CASES = [
    pytest.param((), (), None, id="skip filter"),
    pytest.param(("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/9090",), False, id="other port"),
    pytest.param(("UDP/127.0.0.1/8080",), ("UDP/127.0.0.1/8080",), True, id="same udp port"),
    pytest.param(("TCP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), True, id="same tcp port"),
    pytest.param(("TCP/127.0.0.1/8080",), ("TCP/127.0.0.2/8080",), False, id="different host ip"),
    pytest.param(("UDP/127.0.0.1/8080",), ("TCP/127.0.0.1/8080",), False, id="different protocol"),
    pytest.param(("UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"), ("UDP/127.0.0.1/8080",), True,
                 id="second udp port conflict"),
    pytest.param(("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"), ("TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"), True,
                 id="first tcp port conflict"),
    pytest.param(("TCP/0.0.0.0/8001",), ("TCP/127.0.0.1/8001",), True,
                 id="first tcp port conflict due to 0.0.0.0 hostIP"),
    pytest.param(("TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"), ("TCP/127.0.0.1/8001",), True,
                 id="TCP hostPort conflict due to 0.0.0.0 hostIP"),
    pytest.param(("TCP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), True,
                 id="second tcp port conflict to 0.0.0.0 hostIP"),
    pytest.param(("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001",), False, id="second different protocol"),
    pytest.param(("UDP/127.0.0.1/8001",), ("TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"), True,
                 id="UDP hostPort conflict due to 0.0.0.0 hostIP"),
]


@pytest.mark.parametrize("wanted, existing, want_conflict", CASES)
def test_node_ports(wanted, existing, want_conflict):
    bound = [new_pod("existing", *existing, node_name="m1")] if existing else []
    c = cluster([node("m1")], bound)
    incoming = Pod(new_pod("incoming", *wanted, node_name="m1") if wanted else pod("empty"))
    pl = NodePorts()
    state = CycleState()
    pre = pl.pre_filter(state, incoming, c)
    if want_conflict is None:
        assert pre is not None and pre.code == Code.SKIP
        return
    assert pre is None
    status = pl.filter(state, incoming, c)
    if want_conflict:
        assert status.code[0] == Code.UNSCHEDULABLE
        assert status.reasons_of(0) == [REASON]
        assert status.explain(0)
    else:
        assert status.code[0] == Code.SUCCESS
        assert status.reasons_of(0) == []


@pytest.mark.parametrize("wanted, used, want", [
    pytest.param(HostPort("", "", 80), HostPort("0.0.0.0", "TCP", 80), True, id="empty ip and protocol default"),
    pytest.param(HostPort("10.0.0.1", "SCTP", 80), HostPort("10.0.0.1", "SCTP", 80), True, id="sctp"),
    pytest.param(HostPort("10.0.0.1", "TCP", 0), HostPort("10.0.0.1", "TCP", 0), False, id="port 0 never clashes"),
])
def test_conflicts(wanted, used, want):
    assert conflicts(wanted, used) is want


# Sidecar host ports, kubernetes#132040 (v1.34.0; cherry-picked into v1.33.6): from 1.34 on util.GetHostPorts
# counts restartable init containers, for the incoming pod (PreFilter) and the node's pods (NodeInfo.UsedPorts).
# v1.33.0's getContainerPorts and updateUsedPorts read spec.containers only.
def sidecar_pod(name, port, node_name="", restart_policy="Always"):
    return pod(name, node_name=node_name,
               init_containers=[container("sidecar", ports=ports(f"TCP/0.0.0.0/{port}"),
                                          restart_policy=restart_policy)])


def run(existing, incoming, version):
    """Returns the PreFilter status and, unless skipped, whether Filter rejects the one node."""
    c = cluster([node("m1")], [existing])
    p = Pod(incoming)
    pl = NodePorts(handle=Handle(kube_version=version))
    state = CycleState()
    pre = pl.pre_filter(state, p, c)
    if pre is not None:
        return pre.code, None
    return None, bool(pl.filter(state, p, c).rejected[0])


SKIPPED = (Code.SKIP, None)


@pytest.mark.parametrize("existing, incoming, want_134, want_133", [
    # TestNodePorts (v1.34+): "TCP hostPort conflict from sidecar initContainer" is Unschedulable;
    # v1.33.0 sees no port on the incoming pod and skips, as in "skip filter".
    pytest.param(new_pod("existing", "TCP/0.0.0.0/8001", node_name="m1"), sidecar_pod("incoming", 8001),
                 (None, True), SKIPPED, id="TCP hostPort conflict from sidecar initContainer"),
    # TestNodePorts (v1.34+): "non-sidecar initContainer using hostPort" skips PreFilter in every release.
    pytest.param(new_pod("existing", "TCP/0.0.0.0/8001", node_name="m1"),
                 sidecar_pod("incoming", 8001, restart_policy=""), SKIPPED, SKIPPED,
                 id="non-sidecar initContainer using hostPort"),
    # The node's side: a bound pod's sidecar holds its host port in NodeInfo.UsedPorts from 1.34 on.
    pytest.param(sidecar_pod("existing", 8081, "m1"), new_pod("incoming", "TCP/0.0.0.0/8081"),
                 (None, True), (None, False), id="sidecar of a bound pod holds its host port"),
    pytest.param(sidecar_pod("existing", 8081, "m1", restart_policy=""), new_pod("incoming", "TCP/0.0.0.0/8081"),
                 (None, False), (None, False), id="plain init container binds nothing once the pod runs"),
])
def test_sidecar_host_ports_by_release(existing, incoming, want_134, want_133):
    assert run(existing, incoming, (1, 33)) == want_133
    assert run(existing, incoming, (1, 34)) == want_134
    assert run(existing, incoming, None) == want_134


def test_old_release_explains_only_container_ports():
    c = cluster([node("m1")], [sidecar_pod("side", 8081, "m1"), new_pod("main", "TCP/0.0.0.0/8081", node_name="m1")])
    p = Pod(new_pod("incoming", "TCP/0.0.0.0/8081"))
    for version, culprits in (((1, 33), ["default/main"]), ((1, 34), ["default/side", "default/main"])):
        pl = NodePorts(handle=Handle(kube_version=version))
        state = CycleState()
        pl.pre_filter(state, p, c)
        lines = pl.filter(state, p, c).explain(0)
        assert [line.rsplit(" ", 1)[1] for line in lines] == culprits


def test_filter_over_nodes_and_assume():
    c = cluster([node("a"), node("b"), node("c")], [new_pod("x", "TCP/0.0.0.0/80", node_name="b")])
    p = Pod(new_pod("p", "TCP/10.1.1.1/80"))
    pl = NodePorts()
    state = CycleState()
    pl.pre_filter(state, p, c)
    assert pl.filter(state, p, c).rejected.tolist() == [False, True, False]
    c.assume(p, 2)
    other = Pod(new_pod("q", "TCP/10.1.1.2/80"))
    state = CycleState()
    pl.pre_filter(state, other, c)
    assert pl.filter(state, other, c).rejected.tolist() == [False, True, False]


def test_extension_points():
    pl = NodePorts()
    assert isinstance(pl, PreFilterPlugin) and isinstance(pl, FilterPlugin)
