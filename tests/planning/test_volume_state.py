"""The run's volume state: what placing a pod binds, and what leaves it as it was (independent
placements, previews, copies of the table, preemption's dry runs)."""
from __future__ import annotations

import sys
from pathlib import Path

from builders import container, pod

from kplan.api.objects import Pod
from kplan.planning.place import Planner
from kplan.sources.snapshot import Snapshot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cli"))
from test_storage_cli import BASE, claim, volume, with_claims  # noqa: E402


def planner(*extra) -> Planner:
    snapshot = Snapshot()
    for n, obj in enumerate([*BASE, *extra]):
        snapshot.add(obj, "test", n + 1)
    return Planner(snapshot.finish(), kube_version="1.34")


SHARED = (claim("shared", "static"), volume("pv-a", "zone-a", "static"), volume("pv-b", "zone-b", "static"))


def test_placing_a_pod_pre_binds_the_volume_chosen_on_its_node():
    p = planner(*SHARED)
    result = p.place(Pod(with_claims("a", "shared")))
    assert p.cluster.names[result.node] == "n-a"
    assert p.cluster.volumes.assumed_claim_refs == {"pv-a": p.cluster.volumes.assumed_claim_refs["pv-a"]}
    assert p.cluster.volumes.binder_volume("pv-a").claim_ref.name == "shared"


def test_independent_placements_and_previews_bind_nothing():
    p = planner(*SHARED)
    results = list(p.place_each([Pod(with_claims("a", "shared")), Pod(with_claims("b", "shared"))], independent=True))
    assert [p.cluster.names[r.node] for r in results] == ["n-a", "n-a"]
    assert p.cluster.volumes.assumed_claim_refs == {} and p.cluster.volumes.assumed_selected == {}
    p.preview(Pod(with_claims("c", "shared")))
    assert p.cluster.volumes.assumed_claim_refs == {}


def test_a_copy_of_the_table_keeps_its_own_bindings():
    p = planner(*SHARED)
    copy = p.cluster.clone()
    p.place(Pod(with_claims("a", "shared")))
    assert "pv-a" in p.cluster.volumes.assumed_claim_refs and copy.volumes.assumed_claim_refs == {}
    assert copy.volumes.cluster is copy


def test_preemption_dry_run_leaves_the_attach_counts_as_they_were():
    # n-a allows 2 volumes and holds two low-priority pods with a volume each and 3500m of CPU: a
    # higher-priority pod of 1 CPU with its own claim must evict; the dry runs add and remove pods.
    low = [with_claims(f"low{k}", f"d{k}", cpu="1750m", node_name="n-a") for k in range(2)]
    claims = [claim(f"d{k}", "wffc", volume=f"pv-{k}") for k in range(2)]
    volumes = [volume(f"pv-{k}", "zone-a", "wffc", claim_name=f"d{k}", phase="Bound") for k in range(2)]
    p = planner(*low, *claims, *volumes, claim("new", "wffc"))
    attached = p.cluster.volumes.attached()
    before = attached.count("csi.example.com").copy()
    assert before.tolist() == [2, 0, 0]
    hi = with_claims("hi", "new", cpu="1", nodeSelector={"topology.kubernetes.io/zone": "zone-a"}, priority=100)
    result = p.framework_for(Pod(hi)).schedule(Pod(hi), p.cluster, assume=False, apply_preemption=False)
    assert result.outcome == "NeedsPreemption" and p.cluster.names[result.node] == "n-a"
    # Reprieve adds low0 back first (equal priority, list order): 2250m free and 2 of 2 volumes, it
    # fits; low1 back would leave 500m: low1 is the victim.
    assert [v.name for v in result.post_filter.victims] == ["low1"]
    assert attached.count("csi.example.com").tolist() == before.tolist()
    assert p.cluster.volumes.claim_users()[("default", "d0")] == 1


def test_a_pod_without_claims_needs_no_storage_object():
    p = Planner(Snapshot().finish())
    assert p.cluster.volumes is not None
    plain = pod("plain", containers=[container(requests={"cpu": "1"})])
    assert p.cluster.volumes.claims == {}
    assert Pod(plain).spec.get("volumes") is None
