"""VolumeRestrictions, ported from volume_restrictions_test.go: TestGCEDiskConflicts, TestAWSDiskConflicts,
TestRBDDiskConflicts, TestISCSIDiskConflicts and TestAccessModeConflicts, plus AddPod/RemovePod."""
from __future__ import annotations

import pytest
from builders import cluster, node, pod
from storage_builders import RWOP, RWX, claim_volume, pvc, results, with_storage, with_volumes

from kplan.api.objects import Pod
from kplan.framework.interfaces import CycleState, FilterPlugin, PreFilterPlugin
from kplan.framework.status import Code
from kplan.plugins.volume_restrictions import VolumeRestrictions

DISK_CONFLICT = (Code.UNSCHEDULABLE, ["node(s) had no available disk"])
RWOP_CONFLICT = (Code.UNSCHEDULABLE, ["node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod "
                                      "access mode already in-use by another pod"])
SKIP = "skip"

# Each in-tree disk type's volState and volState2 of upstream's tables: the same disk twice conflicts,
# the two states do not.
DISKS = {
    "GCE": ({"gcePersistentDisk": {"pdName": "foo"}}, {"gcePersistentDisk": {"pdName": "bar"}}),
    "AWS": ({"awsElasticBlockStore": {"volumeID": "foo"}}, {"awsElasticBlockStore": {"volumeID": "bar"}}),
    "RBD": ({"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar", "fsType": "ext4"}},
            {"rbd": {"monitors": ["c", "d"], "pool": "foo", "image": "bar", "fsType": "ext4"}}),
    "ISCSI": ({"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2016-12.server:storage.target01",
                         "fsType": "ext4", "lun": 0}},
              {"iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": "iqn.2017-12.server:storage.target01",
                         "fsType": "ext4", "lun": 0}}),
}


def disk_pod(name, source=None, node_name=""):
    p = pod(name, node_name=node_name)
    return with_volumes(p, {"name": "vol", **source}) if source is not None else p


def run(incoming, existing=(), objects=()):
    """PreFilter, then Filter on node-1 (which runs the existing pods) and the empty node-2."""
    c = with_storage(cluster([node("node-1"), node("node-2")], existing), *objects)
    p = Pod(incoming)
    pl = VolumeRestrictions()
    state = CycleState()
    pre = pl.pre_filter(state, p, c)
    if pre is not None:
        return SKIP if pre.code == Code.SKIP else (pre.code, list(pre.reasons))
    return results(pl.filter(state, p, c))


@pytest.mark.parametrize("disk", sorted(DISKS))
@pytest.mark.parametrize("incoming, on_node, want", [
    pytest.param(None, None, SKIP, id="nothing"),
    pytest.param(None, 0, SKIP, id="one state"),
    pytest.param(0, 0, [DISK_CONFLICT, None], id="same state"),
    pytest.param(1, 0, [None, None], id="different state"),
])
def test_disk_conflicts(disk, incoming, on_node, want):
    """TestGCEDiskConflicts, TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts: the
    indexes pick volState (0) or volState2 (1) for the incoming pod and the pod on node-1."""
    states = DISKS[disk]
    existing = [disk_pod("existing", states[on_node], "node-1")] if on_node is not None else []
    assert run(disk_pod("incoming", states[incoming] if incoming is not None else None), existing) == want


def test_volume_without_restrictions_skips():
    """TestGCEDiskConflicts: "pod with a volume that doesn't have restrictions"."""
    assert run(disk_pod("incoming", {"emptyDir": {}})) == SKIP


@pytest.mark.parametrize("source, other, want", [
    pytest.param({"gcePersistentDisk": {"pdName": "foo", "readOnly": True}},
                 {"gcePersistentDisk": {"pdName": "foo", "readOnly": True}}, [None, None], id="gce both read-only"),
    pytest.param({"gcePersistentDisk": {"pdName": "foo", "readOnly": True}},
                 {"gcePersistentDisk": {"pdName": "foo"}}, [DISK_CONFLICT, None], id="gce one read-write"),
    pytest.param({"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}},
                 {"awsElasticBlockStore": {"volumeID": "foo", "readOnly": True}}, [DISK_CONFLICT, None],
                 id="aws conflicts even read-only"),
    pytest.param({"rbd": {"monitors": ["a", "b"], "pool": "foo", "image": "bar"}},
                 {"rbd": {"monitors": ["b", "c"], "pool": "foo", "image": "bar"}}, [DISK_CONFLICT, None],
                 id="rbd one shared monitor"),
    pytest.param({"rbd": {"monitors": ["a"], "image": "bar"}},
                 {"rbd": {"monitors": ["a"], "pool": "rbd", "image": "bar"}}, [DISK_CONFLICT, None],
                 id="rbd default pool"),
    pytest.param({"iscsi": {"targetPortal": "t", "iqn": "q", "readOnly": True}},
                 {"iscsi": {"targetPortal": "t", "iqn": "q", "readOnly": True}}, [None, None],
                 id="iscsi both read-only"),
])
def test_is_volume_conflict(source, other, want):
    """isVolumeConflict's read-only and RBD rules (volume_restrictions.go): a GCE PD, an RBD image or an
    iSCSI IQN mounted read-only by both pods is shared; an EBS volume never is; RBD images clash when
    the pools (default "rbd") match and the monitors overlap."""
    assert run(disk_pod("incoming", source), [disk_pod("existing", other, "node-1")]) == want


# TestAccessModeConflicts
POD_WITH_ONE_PVC = ("pod-with-one-pvc", ["claim-with-rwop-1"])
POD_WITH_TWO_PVCS = ("pod-with-two-pvcs", ["claim-with-rwop-1", "claim-with-rwop-2"])
POD_WITH_RWX = ("pod-with-rwx", ["claim-with-rwx"])
RWOP_1 = pvc("claim-with-rwop-1", modes=(RWOP,))
RWOP_2 = pvc("claim-with-rwop-2", modes=(RWOP,))
RWX_CLAIM = pvc("claim-with-rwx", modes=(RWX,))


def claims_pod(name, claims, node_name=""):
    return with_volumes(pod(name, node_name=node_name), *(claim_volume(c) for c in claims))


@pytest.mark.parametrize("incoming, existing, claims, want", [
    pytest.param(("nothing", []), [], [], SKIP, id="nothing"),
    pytest.param(("pod-with-one-pvc", POD_WITH_ONE_PVC[1]), [], [],
                 (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ['persistentvolumeclaim "claim-with-rwop-1" not found']),
                 id="failed to get PVC"),
    pytest.param(("pod-with-one-pvc", POD_WITH_ONE_PVC[1]), [POD_WITH_RWX], [RWOP_1, RWX_CLAIM], SKIP,
                 id="no access mode conflict"),
    pytest.param(("pod-with-one-conflict", ["claim-with-rwop-1"]), [POD_WITH_ONE_PVC, POD_WITH_RWX],
                 [RWOP_1, RWX_CLAIM], [RWOP_CONFLICT, RWOP_CONFLICT], id="access mode conflict, unschedulable"),
    pytest.param(("pod-with-two-conflicts", ["claim-with-rwop-1", "claim-with-rwop-2"]),
                 [POD_WITH_TWO_PVCS, POD_WITH_RWX], [RWOP_1, RWOP_2, RWX_CLAIM], [RWOP_CONFLICT, RWOP_CONFLICT],
                 id="two conflicts, unschedulable"),
])
def test_access_mode_conflicts(incoming, existing, claims, want):
    """A ReadWriteOncePod claim in use rejects every node, not only the one running its user."""
    bound = [claims_pod(name, used, "node-1") for name, used in existing]
    assert run(claims_pod(*incoming), bound, claims) == want


def test_remove_and_add_pod_free_and_take_the_claim():
    """PreFilterExtensions (updateWithPod): evicting the pod using the claim frees it for the pod; a
    nominated pod using it takes it again. Claims are matched by name, as upstream does."""
    holder = Pod(claims_pod(*POD_WITH_TWO_PVCS, node_name="node-1"))
    c = with_storage(cluster([node("node-1"), node("node-2")], []), RWOP_1, RWOP_2)
    c.assume(holder, 0)
    p = Pod(claims_pod("pod-with-two-conflicts", ["claim-with-rwop-1", "claim-with-rwop-2"]))
    pl = VolumeRestrictions()
    state = CycleState()
    assert pl.pre_filter(state, p, c) is None
    pl.remove_pod(state, p, holder, c, 0)
    assert results(pl.filter(state, p, c)) == [None, None]
    pl.add_pod(state, p, Pod(claims_pod("other", ["claim-with-rwop-2"], "node-2")), c, 1)
    assert results(pl.filter(state, p, c)) == [RWOP_CONFLICT, RWOP_CONFLICT]


def test_claim_in_use_by_a_pod_placed_during_the_run():
    """The scheduler cache's PVC reference counts follow the pods it assumes and forgets."""
    c = with_storage(cluster([node("node-1"), node("node-2")], []), RWOP_1)
    first = Pod(claims_pod("first", ["claim-with-rwop-1"]))
    second = Pod(claims_pod("second", ["claim-with-rwop-1"]))
    pl = VolumeRestrictions()
    assert pl.pre_filter(CycleState(), second, c).code == Code.SKIP
    c.assume(first, 1)
    state = CycleState()
    assert pl.pre_filter(state, second, c) is None
    status = pl.filter(state, second, c)
    assert results(status) == [RWOP_CONFLICT, RWOP_CONFLICT]
    assert status.explain(0) == ["claim claim-with-rwop-1 (ReadWriteOncePod) is in use by pod default/first on node-2"]
    c.forget(first, 1)
    assert pl.pre_filter(CycleState(), second, c).code == Code.SKIP


def test_extension_points():
    pl = VolumeRestrictions()
    assert isinstance(pl, PreFilterPlugin) and isinstance(pl, FilterPlugin)
