"""A pod being resized in place holds what its status reports as well as what its spec asks.

kube-scheduler counts a bound pod's requests from resourcehelper.PodRequests with
UseStatusResources (InPlacePodVerticalScaling, on in every release kplan follows), and, from 1.36,
its pod-level requests from status.resources too (InPlacePodLevelResourcesVerticalScaling).
"""
import json

import pytest

from builders import container, node, pod, placed
from kplan.api.objects import Pod
from kplan.planning.place import Planner
from kplan.sources.snapshot import Snapshot, load_snapshot
from kplan.sources.writer import write_snapshot

RELEASES = ["1.33", "1.34", "1.35", "1.36"]


def running(requests, status_requests=None, pod_level=None, pod_status=None):
    """A pod on node n1 asking `requests` while its status reports `status_requests` (a resize the
    kubelet has not caught up with, such as a downsize not yet actuated)."""
    raw = pod("resizing", node_name="n1", containers=[container("app", requests)],
              spec={"resources": {"requests": pod_level}} if pod_level else None)
    if status_requests is not None:
        raw["status"]["containerStatuses"] = [{"name": "app", "resources": {"requests": status_requests}}]
    if pod_status is not None:
        raw["status"]["resources"] = {"requests": pod_status}
    return raw


def place(bound, release):
    """Places a 2-CPU pod on a 4-CPU node holding `bound`; returns the outcome and message."""
    snap = Snapshot()
    for obj in (node("n1", cpu="4"), bound):
        snap.add(obj, "test", 1)
    snap.finish()
    result, entry = placed(Planner(snap, kube_version=release), Pod(pod("new", requests={"cpu": "2"})))
    return result.outcome, entry.get("message", "")


@pytest.mark.parametrize("release", RELEASES)
def test_a_larger_status_request_makes_the_node_not_fit(release):
    # The spec asks 1 CPU, the container still holds 3: 3 + 2 > 4 on every release.
    outcome, message = place(running({"cpu": "1"}, {"cpu": "3"}), release)
    assert outcome == "Unschedulable" and message.startswith("0/1 nodes are available: 1 Insufficient cpu.")
    assert place(running({"cpu": "1"}), release)[0] == "Scheduled"


@pytest.mark.parametrize("release,outcome", [("1.33", "Scheduled"), ("1.34", "Scheduled"), ("1.35", "Scheduled"),
                                             ("1.36", "Unschedulable")])
def test_pod_level_status_counts_from_1_36(release, outcome):
    # spec.resources asks 1 CPU, status.resources reports 3: only 1.36 reads the latter
    # (1.33 ignores pod-level resources altogether and counts the container's 500m).
    bound = running({"cpu": "500m"}, pod_level={"cpu": "1"}, pod_status={"cpu": "3"})
    assert place(bound, release)[0] == outcome


def test_snapshot_keeps_what_resized_pods_are_counted_from(tmp_path):
    bound = running({"cpu": "1"}, {"cpu": "3"}, pod_level={"cpu": "1"}, pod_status={"cpu": "3"})
    bound["status"]["allocatedResources"] = {"cpu": "3"}
    bound["status"]["conditions"] = [{"type": "PodResizePending", "status": "True", "reason": "Infeasible"}]
    out = tmp_path / "snap.json"
    header = {"apiVersion": "kplan/v1alpha1", "kind": "KplanSnapshot", "metadata": {"kubeVersion": "v1.36.0"}}
    write_snapshot(header, [node("n1", cpu="4"), bound], str(out), "json")
    written = next(o for o in json.loads(out.read_text())["items"] if o.get("kind") == "Pod")
    assert written["status"]["resources"] == {"requests": {"cpu": "3"}}
    assert written["status"]["allocatedResources"] == {"cpu": "3"}
    assert written["status"]["containerStatuses"] == [{"name": "app", "resources": {"requests": {"cpu": "3"}}}]
    assert written["status"]["conditions"][0]["reason"] == "Infeasible"
    loaded = load_snapshot([str(out)])
    assert Pod(written).requests == {"cpu": 3000} and loaded.pods[0].requests == {"cpu": 3000}
