"""NodeDeclaredFeatures, ported from TestPreFilter and TestFilter in nodedeclaredfeatures_test.go and
from the feature registry's TestInferForScheduling tables (k8s.io/component-helpers
nodedeclaredfeatures/features), with both releases through the default profile."""
from __future__ import annotations

import pytest
from builders import cluster, container, node, pod, placed

from kplan.api.objects import Pod
from kplan.errors import InputError, PluginError
from kplan.framework.interfaces import CycleState, FilterPlugin, Handle, PreFilterPlugin
from kplan.framework.status import Code
from kplan.planning.place import Planner
from kplan.plugins.node_declared_features import (
    PRE_FILTER_STATE_KEY, RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK, NodeDeclaredFeatures, new,
    required_features,
)
from kplan.sources.snapshot import Snapshot
from kplan.sources.writer import redact

REASON = "node(s) didn't match Pod's required features"
# A feature kubelets declare that no pod being scheduled needs (it matters for exec/attach only).
WEBSOCKETS = "ExtendWebSocketsToKubelet"


def declaring(name: str, *features: str, cpu: str = "4") -> dict:
    n = node(name, cpu=cpu)
    if features:
        n["status"]["declaredFeatures"] = list(features)
    return n


def restart_all(name: str = "container") -> dict:
    """containerWithRestartAllContainersAction in restart_all_containers_test.go."""
    c = container(name, restart_policy="Never")
    c["restartPolicyRules"] = [{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}]
    return c


def restart_all_pod(name: str = "p", **kw) -> dict:
    return pod(name, containers=[restart_all()], **kw)


# TestInferForScheduling in restart_all_containers_test.go, and userNamespacesHostNetworkFeature's
# InferForScheduling (host network and hostUsers set to false) in user_namespaces_host_network.go.
@pytest.mark.parametrize("spec, want", [
    pytest.param({"initContainers": [restart_all()], "containers": [container("name")]},
                 {RESTART_ALL_CONTAINERS}, id="init container with rules"),
    pytest.param({"initContainers": [container("name")], "containers": [restart_all()]},
                 {RESTART_ALL_CONTAINERS}, id="regular container with rules"),
    pytest.param({"initContainers": [container("name")], "containers": [container("name2")]}, set(), id="no rules"),
    pytest.param({"containers": [{**container(), "restartPolicyRules": [
        {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}]}]}, set(),
                 id="a rule restarting only its container"),
    pytest.param({"hostNetwork": True, "hostUsers": False}, {USER_NAMESPACES_HOST_NETWORK},
                 id="host network with user namespaces"),
    pytest.param({"hostNetwork": True}, set(), id="host network, hostUsers unset"),
    pytest.param({"hostNetwork": True, "hostUsers": True}, set(), id="host network, hostUsers true"),
    pytest.param({"hostUsers": False}, set(), id="user namespaces without host network"),
    pytest.param({"hostNetwork": True, "hostUsers": False, "containers": [restart_all()]},
                 {RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK}, id="both"),
])
def test_required_features(spec, want):
    assert required_features(Pod(pod(spec=spec))) == want


# TestPreFilter in nodedeclaredfeatures_test.go (its features are mocks; here the registry's own).
def test_prefilter_pod_with_feature_requirements():
    state = CycleState()
    assert NodeDeclaredFeatures().pre_filter(state, Pod(restart_all_pod()), cluster([])) is None
    assert state.read(PRE_FILTER_STATE_KEY) == {RESTART_ALL_CONTAINERS}


def test_prefilter_pod_with_no_requirements_is_skipped():
    state = CycleState()
    assert NodeDeclaredFeatures().pre_filter(state, Pod(pod()), cluster([])).is_skip
    assert PRE_FILTER_STATE_KEY not in state


# TestFilter in nodedeclaredfeatures_test.go: FeatureA, B, C are the registry's features here.
A, B, C = RESTART_ALL_CONTAINERS, USER_NAMESPACES_HOST_NETWORK, WEBSOCKETS


@pytest.mark.parametrize("declared, required, want", [
    pytest.param((A, B), {A}, (Code.SUCCESS, []), id="Node matches requirements"),
    pytest.param((B,), {A}, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON]), id="Node does not match requirements"),
    pytest.param((A, B, C), {A, C}, (Code.SUCCESS, []), id="Node with multiple features, pod requires subset"),
    pytest.param((), {A}, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON]), id="Node has no declared features"),
    pytest.param((A,), {A, B}, (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, [REASON]),
                 id="Node with some but not all required features"),
])
def test_filter(declared, required, want):
    state = CycleState()
    state.write(PRE_FILTER_STATE_KEY, frozenset(required))
    status = NodeDeclaredFeatures().filter(state, Pod(pod()), cluster([declaring("node-1", *declared)]))
    assert (status.code[0], status.reasons_of(0)) == want


def test_filter_error_getting_prefilter_state():
    with pytest.raises(PluginError, match="error reading 'PreFilterNodeDeclaredFeatures' from cycleState"):
        NodeDeclaredFeatures().filter(CycleState(), Pod(pod()), cluster([declaring("node-1")]))


def test_filter_over_many_nodes_explains_what_is_missing():
    c = cluster([declaring("old"), declaring("new", A, C), declaring("other", C), declaring("new2", A)])
    state = CycleState()
    pl = NodeDeclaredFeatures()
    pl.pre_filter(state, Pod(restart_all_pod()), c)
    status = pl.filter(state, Pod(restart_all_pod()), c)
    assert status.rejected.tolist() == [True, False, True, False]
    assert status.explain(0) == [f"the pod needs {A}, which the node does not declare"]
    assert status.explain(1) == []


def test_built_per_release():
    # Before v1.36 the NodeDeclaredFeatures gate is off: the plugin takes part in no extension point.
    assert not isinstance(new(None, Handle(kube_version=(1, 35, 9))), (PreFilterPlugin, FilterPlugin))
    built = new(None, Handle(kube_version=(1, 36)))
    assert isinstance(built, PreFilterPlugin) and isinstance(built, FilterPlugin)


def planner(objects, version=None):
    s = Snapshot()
    for obj in objects:
        s.add(obj, "test", 1)
    return Planner(s.finish(), kube_version=version)


# Alike nodes: "a-old" wins the tie by name unless it is filtered out.
TWO_NODES = [declaring("b-new", A), declaring("a-old")]


def placed_on(version, pod_raw, nodes=TWO_NODES):
    p = planner(nodes, version)
    result, entry = placed(p, Pod(pod_raw))
    return result, entry


def test_1_35_ignores_declared_features():
    # v1.35: the gate is alpha and off, the default profile has no NodeDeclaredFeatures.
    result, entry = placed_on("1.35", restart_all_pod())
    assert entry["node"] == "a-old"
    assert all("plugin" not in n for n in entry["nodes"])


def test_1_36_rejects_nodes_lacking_the_feature():
    result, entry = placed_on("1.36", restart_all_pod())
    assert entry["node"] == "b-new"
    old = next(n for n in entry["nodes"] if n["name"] == "a-old")
    assert (old["plugin"], old["reasons"]) == ("NodeDeclaredFeatures", [REASON])


def test_1_36_pod_needing_nothing_lands_as_before():
    assert placed_on("1.36", pod())[1]["node"] == "a-old"


def test_1_36_no_declaring_node_is_unresolvable():
    result, entry = placed_on("1.36", restart_all_pod(), [declaring("old"), declaring("other", C)])
    assert entry["outcome"] == "Unschedulable"
    # UnschedulableAndUnresolvable: preemption does not try these nodes.
    assert entry["message"] == (f"0/2 nodes are available: 2 {REASON}. no new claims to deallocate, "
                                "preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.")
    assert set(result.filter_statuses["NodeDeclaredFeatures"].code.tolist()) == {Code.UNSCHEDULABLE_AND_UNRESOLVABLE}
    assert entry["candidates"] == []


def test_replicas_fast_path_keeps_rejecting():
    # Replicas share their spec object, as kplan.api.workloads makes them (the fast path's key).
    p = planner(TWO_NODES, "1.36")
    replica = restart_all_pod("r")
    placed = [p.cluster.names[p.schedule(Pod({**replica, "metadata": {"name": f"r-{k}"}})).node]
              for k in range(3)]
    assert placed == ["b-new"] * 3


def test_snapshot_keeps_what_the_plugin_reads():
    n = redact(declaring("new", A))
    assert n["status"]["declaredFeatures"] == [A]
    kept = redact(restart_all_pod(spec={"hostNetwork": True, "hostUsers": False}))
    assert kept["spec"]["hostNetwork"] is True and kept["spec"]["hostUsers"] is False
    assert required_features(Pod(kept)) == {A, B}


def test_malformed_restart_rules_and_declared_features_are_input_errors():
    plugin = NodeDeclaredFeatures({}, Handle())
    for rules in ("RestartAllContainers", [5]):
        c = container("main")
        c["restartPolicyRules"] = rules
        with pytest.raises(InputError, match=r"pod default/p: container 'main': restartPolicyRules must be a list"):
            plugin.pre_filter(CycleState(), Pod(pod("p", containers=[c])), cluster([node("n")]))
    state = CycleState()
    plugin.pre_filter(state, Pod(restart_all_pod()), cluster([declaring("n")]))
    with pytest.raises(InputError, match=r"node n: status.declaredFeatures must be a list of feature names"):
        plugin.filter(state, Pod(restart_all_pod()), cluster([{**declaring("n"), "status": {
            **declaring("n")["status"], "declaredFeatures": RESTART_ALL_CONTAINERS}}]))
