"""helper.DefaultSelector: the selector of PodTopologySpread's default constraints, from the snapshot's
Services and the pod's controller (pkg/scheduler/framework/plugins/helper/spread.go).

Ported: TestGetPodServices (helper/spread_test.go); the replicaset cases of TestPreScoreStateEmptyNodes
and TestPreScoreSkip (podtopologyspread/scoring_test.go). The rest follow DefaultSelector's code: which
owner reference counts (the controller, of exactly v1 ReplicationController or apps/v1 ReplicaSet or
StatefulSet), lookup by namespace and name, how the selectors merge.
"""
from __future__ import annotations

import numpy as np
import pytest
from builders import cluster
from topology_builders import FOO, N, P, controller, on, owned, replica_set, service, snapshot_of, spread

from kplan.api.objects import Pod
from kplan.framework.interfaces import CycleState, Handle
from kplan.plugins.pod_topology_spread import DefaultSelectors, PodTopologySpread

DNS, SA = "DoNotSchedule", "ScheduleAnyway"
HOST, ZONE = "kubernetes.io/hostname", "topology.kubernetes.io/zone"
SYSTEM = {"defaultingType": "System"}


def selector_of(pod_raw, *objs) -> str:
    return str(DefaultSelectors(snapshot_of(*objs)).selector(Pod(pod_raw)))


# TestGetPodServices: services test/service-i select app=test-i; pods test/test-pod-i have app=test-i.
SERVICES = [service({"app": f"test-{i}"}, name=f"service-{i}", ns="test") for i in range(3)]


@pytest.mark.parametrize("i,want", [(0, "app=test-0"), (1, "app=test-1"), (2, "app=test-2"),
                                    (3, "<everything>"), (4, "<everything>")])
def test_services_of_the_pod(i, want):
    pod = P(f"test-pod-{i}", ns="test", app=f"test-{i}", label=f"label-{i}")
    assert selector_of(pod, *SERVICES) == want


ANY_FOO = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
RS_FOO = replica_set("rs1", {"matchLabels": {"foo": "bar"}})


@pytest.mark.parametrize("pod_raw,objs,want", [
    pytest.param(P(foo="bar"), [], "<everything>", id="nothing selects the pod"),
    pytest.param(P(foo="bar", baz="kar"), [service({"foo": "bar"})], "foo=bar", id="a matching service"),
    pytest.param(P(foo="bar"), [service({"foo": "bar", "baz": "kar"})], "<everything>",
                 id="a service asking for a label the pod lacks"),
    pytest.param(P(foo=""), [service({"foo": ""})], "foo=", id="an empty label value must be there"),
    pytest.param(P(foo="bar"), [service({"foo": "bar"}, ns="other")], "<everything>",
                 id="a service of another namespace"),
    pytest.param(P(foo="bar"), [service(None)], "<everything>", id="a service without a selector selects nothing"),
    pytest.param(P(foo="bar"), [service({})], "<everything>", id="an empty service selector adds nothing"),
    pytest.param(P(foo="bar", baz="kar"), [service({"foo": "bar"}, "a"), service({"baz": "kar"}, "b")],
                 "baz=kar,foo=bar", id="every matching service ANDed"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs1"), [RS_FOO], "foo=bar", id="the pod's replicaset"),
    pytest.param(owned(P(foo="bar", baz="kar"), "ReplicaSet", "rs1"), [RS_FOO, service({"baz": "kar"})],
                 "baz=kar,foo=bar", id="a service and a replicaset merged"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs1"), [replica_set("rs1", ANY_FOO), service({"foo": "bar"})],
                 "foo,foo=bar", id="requirements on one key ANDed"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs2"), [RS_FOO], "<everything>",
                 id="a replicaset the snapshot lacks adds nothing"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs1"), [replica_set("rs1", {"matchLabels": {"foo": "bar"}},
                                                                        ns="other")],
                 "<everything>", id="a replicaset of another namespace"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs1", controller=False), [RS_FOO], "<everything>",
                 id="an owner that is not the controller"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs1", controller=None), [RS_FOO], "<everything>",
                 id="an owner without controller"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs1", api="extensions/v1beta1"), [RS_FOO], "<everything>",
                 id="only apps/v1 ReplicaSet is read"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs1", api="apps/v1/x"), [RS_FOO], "<everything>",
                 id="an invalid apiVersion"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs1"), [replica_set("rs1", None), service({"foo": "bar"})],
                 "foo=bar", id="a replicaset without a selector adds nothing"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs1"), [replica_set("rs1", {})], "<everything>",
                 id="an empty replicaset selector adds nothing"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs1"),
                 [replica_set("rs1", {"matchExpressions": [{"key": "foo", "operator": "Near"}]})], "<everything>",
                 id="an invalid replicaset selector adds nothing"),
    pytest.param(owned(P(foo="bar"), "ReplicaSet", "rs1"), [replica_set("rs1", {"matchLabels": {"other": "x"}})],
                 "other=x", id="a replicaset's selector is taken even if the pod does not match it"),
    pytest.param(owned(P(foo="bar"), "StatefulSet", "db"),
                 [controller("StatefulSet", "db", {"matchExpressions": [{"key": "foo", "operator": "In",
                                                                         "values": ["bar", "baz"]}]})],
                 "foo in (bar,baz)", id="the pod's statefulset"),
    pytest.param(owned(P(foo="bar"), "StatefulSet", "db"), [replica_set("db", {"matchLabels": {"foo": "bar"}})],
                 "<everything>", id="a controller of another kind with the name"),
    pytest.param(owned(P(foo="bar", baz="kar"), "ReplicationController", "rc"),
                 [controller("ReplicationController", "rc", {"baz": "kar"}), service({"foo": "bar"})],
                 "baz=kar,foo=bar", id="a replicationcontroller's map merged with the services'"),
    pytest.param(owned(P(foo="bar"), "ReplicationController", "rc"),
                 [controller("ReplicationController", "rc", {"foo": "qux"}), service({"foo": "bar"})],
                 "foo=qux", id="the replicationcontroller wins a shared key (labels.Merge)"),
    pytest.param(owned(P(foo="bar"), "ReplicationController", "rc", api="apps/v1"),
                 [controller("ReplicationController", "rc", {"foo": "bar"})], "<everything>",
                 id="a ReplicationController is core v1 only"),
    pytest.param(owned(P(foo="bar"), "Job", "j", api="batch/v1"), [service({"foo": "bar"})], "foo=bar",
                 id="other controllers add nothing"),
])
def test_default_selector(pod_raw, objs, want):
    assert selector_of(pod_raw, *objs) == want


def test_replication_controller_selector_defaults_to_its_template_labels():
    rc = controller("ReplicationController", "rc", None)
    rc["spec"]["template"] = {"metadata": {"labels": {"app": "web"}}}
    assert selector_of(owned(P(app="web"), "ReplicationController", "rc"), rc) == "app=web"


FOO_SELECTOR = {"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
RS1 = replica_set("rs1", FOO_SELECTOR)


def constraint_view(plugin, pod_raw, when):
    return [(c.topology_key, c.max_skew, str(c.selector)) for c in plugin.constraints(Pod(pod_raw), when)]


def test_pre_score_state_system_default_constraints_and_a_replicaset():
    # TestPreScoreStateEmptyNodes "system default constraints and a replicaset".
    plugin = PodTopologySpread(SYSTEM, Handle(snapshot=snapshot_of(RS1)))
    pod = owned(P("p", foo="tar", baz="sup"), "ReplicaSet", "rs1")
    assert constraint_view(plugin, pod, SA) == [(HOST, 3, "foo"), (ZONE, 5, "foo")]
    assert constraint_view(plugin, pod, DNS) == []


def test_pre_score_state_default_constraints_and_a_replicaset():
    # TestPreScoreStateEmptyNodes "default constraints and a replicaset" and "..., but pod has constraints".
    args = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": SA},
        {"maxSkew": 2, "topologyKey": "rack", "whenUnsatisfiable": DNS},
        {"maxSkew": 2, "topologyKey": "planet", "whenUnsatisfiable": SA}]}
    plugin = PodTopologySpread(args, Handle(snapshot=snapshot_of(RS1)))
    pod = owned(P("p", foo="tar", baz="sup"), "ReplicaSet", "rs1")
    assert constraint_view(plugin, pod, SA) == [(HOST, 1, "foo"), ("planet", 2, "foo")]
    own = owned(P("p", foo="bar", baz="sup", spread_constraints=[
        spread(1, "zone", DNS, {"matchExpressions": [{"key": "bar", "operator": "Exists"}]}),
        spread(2, "planet", SA, {"matchLabels": {"baz": "sup"}})]), "ReplicaSet", "rs1")
    assert constraint_view(plugin, own, SA) == [("planet", 2, "baz=sup")]


def test_pre_score_counts_with_a_replicaset():
    # TestPreScoreStateEmptyNodes "system default constraints and a replicaset": nodes without a zone are
    # not excluded (they are one zone, ""), and nodes are weighted log(4 + 2) and log(2 + 2).
    nodes = [N("node-a", **{HOST: "node-a", ZONE: "mars"}), N("node-b", **{HOST: "node-b", ZONE: "mars"}),
             N("node-c", **{HOST: "node-c"}), N("node-d", **{HOST: "node-d"})]
    c = cluster(nodes)
    plugin = PodTopologySpread(SYSTEM, Handle(snapshot=snapshot_of(RS1)))
    state = CycleState()
    pod = Pod(owned(P("p", foo="tar", baz="sup"), "ReplicaSet", "rs1"))
    assert plugin.pre_score(state, pod, c, np.arange(4)) is None
    entries, ignored, *_ = state.read("PreScorePodTopologySpread")
    assert not ignored.any()
    assert [(e[0].topology_key, round(e[1], 6)) for e in entries] == [(HOST, round(np.log(6), 6)),
                                                                      (ZONE, round(np.log(4), 6))]


# -- caches: replicas share their spec, labels and owner references ----------------------------------------

def twins(first, second):
    """Two pods sharing the first's spec and labels objects (as replicas do), with the second's metadata."""
    a = Pod(first)
    b_raw = {**second, "spec": first["spec"]}
    b_raw["metadata"] = {**second["metadata"], "labels": first["metadata"]["labels"]}
    return a, Pod(b_raw)


def test_constraints_follow_the_controller_of_pods_sharing_spec_and_labels():
    snap = snapshot_of(replica_set("rs1", FOO), replica_set("rs2", {"matchLabels": {"foo": ""}}))
    plugin = PodTopologySpread(SYSTEM, Handle(snapshot=snap))
    a, b = twins(owned(P("a", foo=""), "ReplicaSet", "rs1"), owned(P("b", foo=""), "ReplicaSet", "rs2"))
    assert a.spec is b.spec and a.labels is b.labels
    assert {str(c.selector) for c in plugin.constraints(a, SA)} == {"foo"}
    assert {str(c.selector) for c in plugin.constraints(b, SA)} == {"foo="}
    c_ = Pod({**b.raw, "metadata": {**b.raw["metadata"], "ownerReferences": []}})
    assert plugin.constraints(c_, SA) == []


def test_constraints_follow_the_namespace_and_the_snapshot():
    plugin = PodTopologySpread(SYSTEM, Handle(snapshot=snapshot_of(service({"foo": ""}, ns="a"))))
    a, b = twins(P("p", ns="a", foo=""), P("p", ns="b", foo=""))
    assert len(plugin.constraints(a, SA)) == 2
    assert plugin.constraints(b, SA) == []
    plugin.handle.snapshot = snapshot_of(service({"foo": ""}, ns="b"))
    assert plugin.constraints(a, SA) == [] and len(plugin.constraints(b, SA)) == 2


def test_pre_score_template_follows_the_controller():
    nodes = [N("n1", **{HOST: "n1"}), N("n2", **{HOST: "n2"})]
    c = cluster(nodes, on("n1", "e1", foo=""))
    plugin = PodTopologySpread(SYSTEM, Handle(snapshot=snapshot_of(RS1)))
    a, b = twins(owned(P("a", foo=""), "ReplicaSet", "rs1"), owned(P("b", foo=""), "ReplicaSet", "gone"))
    candidates = np.arange(2)
    assert plugin.pre_score(CycleState(), a, c, candidates) is None
    assert plugin.pre_score(CycleState(), b, c, candidates).is_skip
    assert plugin.pre_score(CycleState(), a, c, candidates) is None
