"""PodDisruptionBudgets (kplan.planning.disruption_budgets): the status the disruption controller would
write for a PDB that has none, the eviction API's answers, and cluster-autoscaler's remaining budgets.

Expectations follow kubernetes pkg/controller/disruption (getExpectedPodCount, countHealthyPods,
updatePdbStatus) and pkg/registry/core/pod/storage/eviction.go, computed by hand per case.
"""
import pytest

from builders import pdb, pod, ready
from kplan.api.objects import Pod, PodDisruptionBudget
from kplan.planning.disruption_budgets import MORE_THAN_ONE, TOO_MANY_REQUESTS, Budgets


def web(name, *, is_ready=True, owner="ReplicaSet", deleting=False, labels=None, **kw):
    raw = pod(name, "shop", node_name="n1", labels=labels or {"app": "web"}, owner_kind=owner, **kw)
    if deleting:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return Pod(ready(raw, "True" if is_ready else "False"))


def budgets(pdbs, pods):
    return Budgets([PodDisruptionBudget.from_raw(p) for p in pdbs], pods)


COMPUTED = [
    # (id, PDB spec, pods, disruptionsAllowed, currentHealthy, desiredHealthy)
    ("minAvailable-int", {"min_available": 2}, [web("a"), web("b"), web("c")], 1, 3, 2),
    # minAvailable 50% of the controllers' scale (3 managed pods): ceil(1.5) = 2 desired.
    ("minAvailable-percent-rounds-up", {"min_available": "50%"}, [web("a"), web("b"), web("c")], 1, 3, 2),
    # maxUnavailable 1 of 3: 2 desired; one pod is not Ready, so 2 healthy and nothing to spare.
    ("maxUnavailable-with-an-unready-pod", {"max_unavailable": 1},
     [web("a"), web("b"), web("c", is_ready=False)], 0, 2, 2),
    # maxUnavailable 34% of 3: ceil(1.02) = 2 unavailable, 1 desired, 3 healthy.
    ("maxUnavailable-percent-rounds-up", {"max_unavailable": "34%"}, [web("a"), web("b"), web("c")], 2, 3, 1),
    # A pod being deleted is not healthy.
    ("terminating-is-not-healthy", {"min_available": 1}, [web("a"), web("b", deleting=True)], 0, 1, 1),
    # DaemonSet pods have no scale: the controller's sync fails and failSafe writes 0.
    ("maxUnavailable-over-daemonset-pods", {"max_unavailable": 1}, [web("a", owner="DaemonSet"), web("b", owner="DaemonSet")],
     0, 0, 0),
    # Pods of other labels or namespaces are not selected.
    ("selects-by-labels-and-namespace", {"min_available": 1},
     [web("a"), web("b", labels={"app": "db"}), Pod(ready(pod("c", "other", labels={"app": "web"})))], 0, 1, 1),
    # Neither field: nothing is expected, so nothing may be disrupted.
    ("no-bounds", {}, [web("a"), web("b")], 0, 2, 0),
    # A value that is neither an integer nor a percentage fails the sync: failSafe.
    ("bad-percentage", {"max_unavailable": "half"}, [web("a"), web("b")], 0, 0, 0),
    # A minAvailable percentage needs the controllers' scale too: over DaemonSet pods, or not a
    # percentage, the sync fails and failSafe writes 0 (an integer minAvailable needs no scale).
    ("minAvailable-percent-over-daemonset-pods", {"min_available": "50%"},
     [web("a", owner="DaemonSet"), web("b", owner="DaemonSet")], 0, 0, 0),
    ("bad-minAvailable-percentage", {"min_available": "most"}, [web("a"), web("b")], 0, 0, 0),
]


@pytest.mark.parametrize("spec, pods, allowed, healthy, desired", [c[1:] for c in COMPUTED],
                         ids=[c[0] for c in COMPUTED])
def test_status_computed_when_missing(spec, pods, allowed, healthy, desired):
    (b,) = budgets([pdb("web", "shop", match_labels={"app": "web"}, **spec)], pods).all
    assert b.computed
    assert (b.allowed, b.current_healthy, b.desired_healthy) == (allowed, healthy, desired)


def test_empty_selector_selects_the_whole_namespace_and_none_selects_nothing():
    pods = [web("a"), web("b", labels={"app": "db"})]
    everything, nothing = budgets([pdb("all", "shop", selector={}, min_available=1),
                                   pdb("none", "shop", selector=None, min_available=0)], pods).all
    assert everything.allowed == 1 and everything.current_healthy == 2
    assert nothing.current_healthy == 0 and nothing.allowed == 0


def test_status_is_read_when_present():
    (b,) = budgets([pdb("web", "shop", match_labels={"app": "web"}, min_available=1,
                        status={"disruptionsAllowed": 4, "currentHealthy": 5, "desiredHealthy": 1})],
                   [web("a")]).all
    assert not b.computed and (b.allowed, b.current_healthy, b.desired_healthy) == (4, 5, 1)


def test_eviction_api_spends_one_disruption_per_eviction_then_refuses():
    pods = [web("a"), web("b"), web("c")]
    b = budgets([pdb("web", "shop", match_labels={"app": "web"}, min_available=2)], pods)
    assert b.evict(pods[0]) == (None, "")
    budget, refusal = b.evict(pods[1])
    assert budget.key == "shop/web"
    assert refusal == f"{TOO_MANY_REQUESTS} The disruption budget web needs 2 healthy pods and has 3 currently"


def test_eviction_api_refuses_a_pod_with_two_budgets():
    pods = [web("a")]
    b = budgets([pdb("one", "shop", match_labels={"app": "web"}, min_available=0),
                 pdb("two", "shop", selector={}, min_available=0)], pods)
    assert b.evict(pods[0]) == (None, f"{MORE_THAN_ONE} (shop/one, shop/two)")


def test_eviction_api_lets_pending_and_unhealthy_pods_go_without_a_disruption():
    healthy = [web("a"), web("b")]
    unready = web("c", is_ready=False)
    pending = Pod(pod("d", "shop", labels={"app": "web"}, owner_kind="ReplicaSet", phase="Pending"))
    # minAvailable 1 with 2 healthy: one disruption; the unready pod goes without it (2 >= 1 > 0).
    b = budgets([pdb("web", "shop", match_labels={"app": "web"}, min_available=1)], [*healthy, unready, pending])
    assert b.evict(unready) == (None, "") and b.evict(pending) == (None, "")
    assert b.remaining["shop/web"] == 1
    # No healthy budget (desired 2 > 1 healthy): the unready pod needs a disruption, unless AlwaysAllow.
    strict = [web("a"), unready]
    strict_budget = budgets([pdb("web", "shop", match_labels={"app": "web"}, min_available=2)], strict)
    assert strict_budget.evict(unready)[1].startswith(TOO_MANY_REQUESTS)
    always = budgets([pdb("web", "shop", match_labels={"app": "web"}, min_available=2,
                          unhealthyPodEvictionPolicy="AlwaysAllow")], strict)
    assert always.evict(unready) == (None, "")


def test_autoscaler_tracker_counts_evictions_across_nodes():
    # One disruption allowed: the first node's pod spends it, the second node's pod finds none left.
    first, second = web("a"), web("b")
    b = budgets([pdb("web", "shop", match_labels={"app": "web"}, max_unavailable=1)], [first, second])
    assert b.short(first) is None
    b.spend([first])
    assert b.short(second).key == "shop/web"


# after_preemption: the disruption controller's status once preemption deleted the victims. "web" allows 2
# disruptions and selects app=web in shop; "other" allows 1 and selects app=web in another namespace.
AFTER_PREEMPTION = [
    # (id, victims, web's disruptionsAllowed after)
    ("one-healthy-victim", [web("a")], 1),
    ("two-healthy-victims", [web("a"), web("b")], 0),
    ("never-below-zero", [web("a"), web("b"), web("c")], 0),
    ("not-ready-counts-for-nothing", [web("a", is_ready=False)], 2),
    ("terminating-counts-for-nothing", [web("a", deleting=True)], 2),
    ("not-selected", [web("a", labels={"app": "api"})], 2),
]


@pytest.mark.parametrize("victims,left", [c[1:] for c in AFTER_PREEMPTION], ids=[c[0] for c in AFTER_PREEMPTION])
def test_after_preemption_spends_one_disruption_per_healthy_victim(victims, left):
    from kplan.planning.disruption_budgets import after_preemption
    pdbs = [PodDisruptionBudget.from_raw(pdb("web", "shop", match_labels={"app": "web"}, max_unavailable=2,
                                             status={"disruptionsAllowed": 2})),
            PodDisruptionBudget.from_raw(pdb("other", "elsewhere", match_labels={"app": "web"}, max_unavailable=1,
                                             status={"disruptionsAllowed": 1}))]
    after = after_preemption(pdbs, victims)
    assert [p.disruptions_allowed for p in after] == [left, 1]
    assert [p.disruptions_allowed for p in pdbs] == [2, 1]  # the loaded objects are left as they were
    assert (after is pdbs) == (left == 2)  # unchanged budgets: the same list, so what preemption keeps stays


def test_after_preemption_skips_a_pod_the_pdb_already_counts_disrupted():
    from kplan.planning.disruption_budgets import after_preemption
    status = {"disruptionsAllowed": 1, "disruptedPods": {"a": "2026-01-01T00:00:00Z"}}
    pdbs = [PodDisruptionBudget.from_raw(pdb("web", "shop", match_labels={"app": "web"}, max_unavailable=2,
                                             status=status))]
    assert after_preemption(pdbs, [web("a")]) is pdbs
    assert after_preemption(pdbs, [web("b")])[0].disruptions_allowed == 0
