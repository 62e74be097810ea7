"""Reserve and Unreserve as kube-scheduler runs them (pkg/scheduler/framework/runtime/framework.go,
schedule_one.go), and where kplan undoes a placement it reserved.

- RunReservePluginsReserve runs the Reserve plugins in order and stops at the first that does not
  succeed; the scheduling cycle then runs RunReservePluginsUnreserve, which calls every Reserve
  plugin's Unreserve in the reverse order, the ones after the failing plugin included.
- A rejection (Unschedulable) makes the pod unschedulable with a FitError over the one node it was
  reserved on: "0/1 nodes are available: 1 <reason>."; any other status is an error.
- A what-if that keeps nothing (a preview, `place_each(independent=True)`) runs no Reserve plugin,
  so there is nothing to unreserve; a placed pod stays reserved.
"""
from __future__ import annotations

import pytest

from builders import node, pod
from kplan.api.objects import Pod
from kplan.errors import PluginError
from kplan.framework.config import load_config
from kplan.framework.runtime import SCHEDULED, UNSCHEDULABLE, Framework
from kplan.framework.status import Code, Status
from kplan.planning.place import Planner
from kplan.plugins.registry import REGISTRY
from kplan.sources.snapshot import Snapshot


class Recording:
    """A Reserve plugin that logs its calls and answers Reserve with `answer` (None: success)."""

    def __init__(self, name: str, log: list, answer: Status | None = None):
        self.name, self.log, self.answer = name, log, answer

    def reserve(self, state, pod, cluster, node):
        self.log.append(("reserve", self.name, pod.name, cluster.names[node]))
        return self.answer

    def unreserve(self, state, pod, cluster, node):
        self.log.append(("unreserve", self.name, pod.name, cluster.names[node]))


def framework(log: list, *plugins: tuple[str, Status | None], handle=None) -> Framework:
    """The default profile plus the given Reserve plugins, in order."""
    registry = {**REGISTRY, **{name: (lambda args, h, name=name, answer=answer: Recording(name, log, answer))
                               for name, answer in plugins}}
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
           "profiles": [{"schedulerName": "default-scheduler",
                         "plugins": {"reserve": {"enabled": [{"name": name} for name, _ in plugins]}}}]}
    return Framework(load_config(doc, "scheduler-config.yaml")[0], registry, handle)


def planner(log: list, *plugins: tuple[str, Status | None]) -> Planner:
    snap = Snapshot()
    for obj in (node("node-a"),):
        snap.add(obj, "test", 1)
    p = Planner(snap.finish())
    p.frameworks["default-scheduler"] = framework(log, *plugins, handle=p.handle)
    return p


def test_a_rejecting_reserve_plugin_unreserves_every_reserve_plugin_in_reverse_order():
    log: list = []
    p = planner(log, ("ReserveA", None), ("Rejecting", Status(Code.UNSCHEDULABLE, ("no room reserved",))),
                ("ReserveB", None))
    result = p.place(Pod(pod("web", requests={"cpu": "1"})))
    assert [(call, name) for call, name, _, _ in log] == [
        ("reserve", "ReserveA"), ("reserve", "Rejecting"),
        ("unreserve", "ReserveB"), ("unreserve", "Rejecting"), ("unreserve", "ReserveA")]
    assert all(where == "node-a" for _, _, _, where in log)
    assert (result.outcome, result.node) == (UNSCHEDULABLE, None)
    assert result.message == "0/1 nodes are available: 1 no room reserved."
    assert p.cluster.pod_count.tolist() == [0]  # not assumed


def test_a_reserve_plugin_error_unreserves_and_stops_the_run():
    log: list = []
    p = planner(log, ("ReserveA", None), ("Failing", Status.error("lost the volume")))
    with pytest.raises(PluginError, match="running Reserve plugin 'Failing': lost the volume"):
        p.place(Pod(pod("web")))
    assert [(call, name) for call, name, _, _ in log] == [
        ("reserve", "ReserveA"), ("reserve", "Failing"), ("unreserve", "Failing"), ("unreserve", "ReserveA")]


def test_a_placed_pod_stays_reserved():
    log: list = []
    p = planner(log, ("ReserveA", None), ("ReserveB", None))
    result = p.place(Pod(pod("web")))
    assert result.outcome == SCHEDULED
    assert log == [("reserve", "ReserveA", "web", "node-a"), ("reserve", "ReserveB", "web", "node-a")]
    assert p.cluster.pod_count.tolist() == [1]


def test_a_preview_and_independent_placements_reserve_nothing():
    log: list = []
    p = planner(log, ("ReserveA", None), ("Rejecting", Status(Code.UNSCHEDULABLE, ("no room reserved",))))
    assert (p.preview(Pod(pod("web"))).outcome, p.preview(Pod(pod("web"))).node) == (SCHEDULED, 0)
    results = list(p.place_each([Pod(pod("one")), Pod(pod("two"))], independent=True))
    assert [r.outcome for r in results] == [SCHEDULED, SCHEDULED]
    assert log == [] and p.cluster.pod_count.tolist() == [0]


def test_the_replica_fast_path_reports_a_reserve_rejection_as_the_full_cycle_does():
    # The third replica is rejected at Reserve: the fast path hands it to the full cycle.
    log: list = []

    class ThirdTimeNo(Recording):
        def reserve(self, state, pod, cluster, node):
            super().reserve(state, pod, cluster, node)
            reserved = sum(1 for call, *_ in self.log if call == "reserve") - sum(
                1 for call, *_ in self.log if call == "unreserve")
            return Status(Code.UNSCHEDULABLE, ("two replicas at most",)) if reserved > 2 else None

    p = planner(log)
    fw = p.frameworks["default-scheduler"] = framework(log, ("Limit", None), handle=p.handle)
    fw.points["reserve"][0] = fw.plugins["Limit"] = ThirdTimeNo("Limit", log)
    template = pod("web", requests={"cpu": "100m"})
    outcomes = [p.schedule(Pod({**template, "metadata": {**template["metadata"], "name": f"web-{k}"}}))
                for k in range(3)]
    assert [r.outcome for r in outcomes] == [SCHEDULED, SCHEDULED, UNSCHEDULABLE]
    assert outcomes[2].message == "0/1 nodes are available: 1 two replicas at most."
    assert p.cluster.pod_count.tolist() == [2]
