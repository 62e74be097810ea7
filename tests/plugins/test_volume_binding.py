"""VolumeBinding, ported from volumebinding/volume_binding_test.go (TestVolumeBinding) and binder_test.go
(TestFindPodVolumesWithoutProvisioning, TestFindPodVolumesWithProvisioning, TestFindPodVolumesWithCSIMigration,
TestAssumePodVolumes, TestRevertAssumedPodVolumes, TestFindAssumeVolumes, TestCapacity), and TestDelayBindingMode
from component-helpers/storage/volume/pv_helpers_test.go.

The binder's results map onto the plugin as the framework runs it: an error of GetPodVolumeClaims, or
unbound immediate claims, is PreFilter's UnschedulableAndUnresolvable status; FindPodVolumes' conflict
reasons are Filter's (UnschedulableAndUnresolvable, in upstream's order); its static bindings and
dynamic provisions are what Reserve (AssumePodVolumes) leaves in the binder's view of the run.
Not ported: Score rows (StorageCapacityScoring is alpha and off in every release kplan follows; their
Filter expectations are), PreBind, BindPodVolumes and the API-update and assume-cache tests, queueing hints.
"""
from __future__ import annotations

import pytest
from builders import cluster, node, pod
from storage_builders import (
    IMMEDIATE, WFFC, capacity, claim_volume, csi_driver, csi_node, ephemeral_volume, pv, pvc, results,
    storage_class, with_storage, with_volumes,
)

from kplan.api.objects import Pod
from kplan.api.storage import ClaimRef
from kplan.framework.interfaces import (
    CycleState, FilterPlugin, Handle, PreFilterPlugin, PreScorePlugin, ReservePlugin, ScorePlugin,
)
from kplan.framework.status import Code
from kplan.plugins.volume_binding import STATE_KEY, VolumeBinding

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
UNBOUND_IMMEDIATE = (UNRESOLVABLE, ["pod has unbound immediate PersistentVolumeClaims"])
SKIP = "skip"
FITS = [None]


def unresolvable(*reasons):
    return UNRESOLVABLE, list(reasons)


def pre_filter(c, raw_pod, plugin=None):
    """PreFilter's outcome (SKIP, or (code, reasons) of a rejection; None when it passes), the state and pod."""
    p = Pod(raw_pod)
    pl = plugin or VolumeBinding()
    state = CycleState()
    pre = pl.pre_filter(state, p, c)
    if pre is None:
        return None, state, p
    return (SKIP if pre.code == Code.SKIP else (pre.code, list(pre.reasons))), state, p


def run(c, raw_pod, plugin=None):
    """PreFilter's outcome when it does not pass, else Filter's result per node."""
    pl = plugin or VolumeBinding()
    outcome, state, p = pre_filter(c, raw_pod, pl)
    return outcome if outcome is not None else results(pl.filter(state, p, c))


# -- TestVolumeBinding -------------------------------------------------------------------------------

NODE_KEY = "nodeKey"  # the topology label of binder_test.go's nodes and capacities
# Upstream's wait classes have no provisioner; the API requires one, and kubernetes.io/no-provisioner
# is the one that provisions nothing, as an empty one does.
PLUGIN_CLASSES = [
    storage_class("immediate-sc", mode=IMMEDIATE),
    storage_class("wait-sc", mode=WFFC),
    storage_class("wait-hdd-sc", mode=WFFC),
    storage_class("wait-sc-with-storage-capacity", "driver-with-storage-capacity", mode=WFFC),
    csi_driver("driver-with-storage-capacity", storage_capacity=True),
]


def make_node(name, **labels):
    """makeNode(name).withLabel(...): the hostname label and these."""
    n = node(name)
    n["metadata"]["labels"] = {"kubernetes.io/hostname": name, **labels}
    return n


def zonal(name, region, zone):
    return make_node(name, **{"topology.kubernetes.io/region": region, "topology.kubernetes.io/zone": zone})


def local_pvs(cls, size, node_name, *names):
    return [pv(name, cls, capacity=size, affinity={"kubernetes.io/hostname": [node_name]}) for name in names]


def zonal_pvs(size, region, zone, *names):
    return [pv(name, "wait-sc", capacity=size,
               affinity={"topology.kubernetes.io/region": [region], "topology.kubernetes.io/zone": [zone]})
            for name in names]


def keyed(*names):
    return [make_node(name, nodeKey=name) for name in names]


def node_capacities(cls, sizes):
    return [capacity(name, cls, {NODE_KEY: name}, size) for name, size in sizes.items()]


ZONAL_NODES = [zonal(f"zone-{z}-node-{n}", f"region-{z}", f"zone-{z}") for z in "abc" for n in "ab"]
ZONAL_PVS = zonal_pvs("200Gi", "region-a", "zone-a", "pv-a-0", "pv-a-1") + \
    zonal_pvs("100Gi", "region-b", "zone-b", "pv-b-0", "pv-b-1")
LOCAL_PVS = local_pvs("wait-sc", "200Gi", "node-a", "pv-a-0", "pv-a-1") + \
    local_pvs("wait-sc", "100Gi", "node-b", "pv-b-0", "pv-b-1")
LOCAL_HDD_PVS = local_pvs("wait-hdd-sc", "200Gi", "node-a", "pv-a-2", "pv-a-3") + \
    local_pvs("wait-hdd-sc", "100Gi", "node-b", "pv-b-2", "pv-b-3")
STATIC_PVS = [pv(f"pv-static-{n}", "wait-sc", capacity="100Gi", affinity={"kubernetes.io/hostname": [f"node-{n}"]})
              for n in "abc"]
DYNAMIC = "wait-sc-with-storage-capacity"

# (pod's claims, nodes, claims, volumes, capacities, PreFilter outcome, state after PreFilter
#  (bound, delayed, the delayed classes' volumes), Filter per node)
TEST_VOLUME_BINDING = [
    pytest.param([], [make_node("node-a")], [], [], [], SKIP, None, None, id="pod has not pvcs"),
    pytest.param(["pvc-a"], [make_node("node-a")], [pvc("pvc-a", "wait-sc", volume="pv-a", bind_completed=True)],
                 [pv("pv-a", "wait-sc")], [], None, (["pvc-a"], [], {}), [None], id="all bound"),
    pytest.param(["pvc-a"], [make_node("node-a")], [], [], [],
                 unresolvable('persistentvolumeclaim "pvc-a" not found'), None, None, id="PVC does not exist"),
    pytest.param(["pvc-a", "pvc-b"], [make_node("node-a")],
                 [pvc("pvc-a", "wait-sc", volume="pv-a", bind_completed=True)], [], [],
                 unresolvable('persistentvolumeclaim "pvc-b" not found'), None, None, id="Part of PVCs do not exist"),
    pytest.param(["pvc-a"], [make_node("node-a")], [pvc("pvc-a", "immediate-sc")], [], [], UNBOUND_IMMEDIATE, None,
                 None, id="immediate claims not bound"),
    pytest.param(["pvc-a"], [make_node("node-a")], [pvc("pvc-a", "wait-sc")], [], [], None,
                 ([], ["pvc-a"], {"wait-sc": []}), [unresolvable(BIND_CONFLICT)], id="unbound claims no matches"),
    pytest.param(["pvc-a", "pvc-b"], [make_node("node-a", foo="barbar")],
                 [pvc("pvc-a", "wait-sc", volume="pv-a", bind_completed=True), pvc("pvc-b", "wait-sc")],
                 [pv("pv-a", "wait-sc", affinity={"foo": ["bar"]})], [], None,
                 (["pvc-a"], ["pvc-b"], {"wait-sc": ["pv-a"]}), [unresolvable(NODE_CONFLICT, BIND_CONFLICT)],
                 id="bound and unbound unsatisfied"),
    pytest.param(["pvc-a"], [make_node("node-a")], [pvc("pvc-a", "wait-sc", volume="pv-a", bind_completed=True)], [],
                 [], None, (["pvc-a"], [], {}), [unresolvable(PV_NOT_EXIST)], id="pv not found"),
    pytest.param(["pvc-a"], [make_node("node-a")],
                 [pvc("pvc-a", "wait-sc", volume="pv-a", bind_completed=True, phase="Lost")], [], [],
                 unresolvable('persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a"'), None,
                 None, id="pv not found claim lost"),
    pytest.param(["pvc-a"], [make_node(f"node-{n}") for n in "abc"], [pvc("pvc-a", "wait-sc", request="50Gi")],
                 LOCAL_PVS, [], None, ([], ["pvc-a"], {"wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
                 [None, None, unresolvable(BIND_CONFLICT)],
                 id="local volumes with close capacity are preferred (StorageCapacityScoring disabled)"),
    pytest.param(["pvc-0", "pvc-1"], [make_node(f"node-{n}") for n in "abc"],
                 [pvc("pvc-0", "wait-sc", request="50Gi"), pvc("pvc-1", "wait-hdd-sc", request="100Gi")],
                 LOCAL_PVS + LOCAL_HDD_PVS, [], None,
                 ([], ["pvc-0", "pvc-1"], {"wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"],
                                           "wait-hdd-sc": ["pv-a-2", "pv-a-3", "pv-b-2", "pv-b-3"]}),
                 [None, None, unresolvable(BIND_CONFLICT)],
                 id="local volumes with close capacity are preferred (multiple pvcs)"),
    pytest.param(["pvc-a"], ZONAL_NODES, [pvc("pvc-a", "wait-sc", request="50Gi")], ZONAL_PVS, [], None,
                 ([], ["pvc-a"], {"wait-sc": ["pv-a-0", "pv-a-1", "pv-b-0", "pv-b-1"]}),
                 [None, None, None, None, unresolvable(BIND_CONFLICT), unresolvable(BIND_CONFLICT)],
                 id="zonal volumes with close capacity are preferred (StorageCapacityScoring disabled)"),
    pytest.param(["pvc-dynamic"], keyed("node-a", "node-b", "node-c"), [pvc("pvc-dynamic", DYNAMIC, request="10Gi")],
                 [], node_capacities(DYNAMIC, {"node-a": "100Gi", "node-b": "50Gi", "node-c": "10Gi"}), None,
                 ([], ["pvc-dynamic"], {DYNAMIC: []}), [None, None, None], id="storage capacity score"),
    pytest.param(["pvc-dynamic", "pvc-static"], keyed("node-a", "node-b", "node-c"),
                 [pvc("pvc-dynamic", DYNAMIC, request="10Gi"), pvc("pvc-static", "wait-sc", request="50Gi")],
                 STATIC_PVS, node_capacities(DYNAMIC, {"node-a": "100Gi", "node-b": "50Gi", "node-c": "10Gi"}), None,
                 ([], ["pvc-dynamic", "pvc-static"], {DYNAMIC: [], "wait-sc": ["pv-static-a", "pv-static-b",
                                                                              "pv-static-c"]}),
                 [None, None, None], id="storage capacity score with static binds"),
    pytest.param(["pvc-dynamic-0", "pvc-dynamic-1"], keyed("node-a"),
                 [pvc("pvc-dynamic-0", DYNAMIC, request="50Gi"), pvc("pvc-dynamic-1", DYNAMIC, request="50Gi")], [],
                 node_capacities(DYNAMIC, {"node-a": "100Gi"}), None,
                 ([], ["pvc-dynamic-0", "pvc-dynamic-1"], {DYNAMIC: []}), [None],
                 id="dynamic provisioning with multiple PVCs of the same StorageClass"),
    pytest.param(["pvc-dynamic"], keyed("node-a", "node-b", "node-c"), [pvc("pvc-dynamic", DYNAMIC, request="10Gi")],
                 [], node_capacities(DYNAMIC, {"node-a": "100Gi", "node-b": "20Gi", "node-c": "10Gi"}), None,
                 ([], ["pvc-dynamic"], {DYNAMIC: []}), [None, None, None], id="prefer node with least allocatable"),
]


@pytest.mark.parametrize("claims, nodes, pvcs, pvs, capacities, want_pre_filter, want_state, want_filter",
                         TEST_VOLUME_BINDING)
def test_volume_binding(claims, nodes, pvcs, pvs, capacities, want_pre_filter, want_state, want_filter):
    c = with_storage(cluster(nodes), *PLUGIN_CLASSES, *pvcs, *pvs, *capacities)
    pl = VolumeBinding()
    outcome, state, p = pre_filter(c, with_volumes(pod("pod-a"), *(claim_volume(name) for name in claims)), pl)
    assert outcome == want_pre_filter
    if outcome is not None:
        return
    got = state.read(STATE_KEY)
    assert ([x.name for x in got.bound], [x.name for x in got.delayed],
            {cls: sorted(v.name for v in of_class) for cls, of_class in got.volumes_by_class.items()}) == want_state
    assert results(pl.filter(state, p, c)) == want_filter
    assert pl.pre_score(state, p, c, c.name_array[:0]).code == Code.SKIP


RELEASES = [(1, 33), (1, 34), (1, 35), (1, 36)]


@pytest.mark.parametrize("version", RELEASES, ids=lambda v: f"{v[0]}.{v[1]}")
def test_reasons_in_every_release(version):
    """ErrReasonNodeConflict reads "node(s) didn't match PersistentVolume's node affinity" from 1.33 on
    (earlier: "node(s) had volume node affinity conflict"); the other reasons did not change."""
    c = with_storage(cluster([make_node("node-a", foo="barbar")]), *PLUGIN_CLASSES,
                     pvc("pvc-a", "wait-sc", volume="pv-a", bind_completed=True), pvc("pvc-b", "wait-sc"),
                     pv("pv-a", "wait-sc", affinity={"foo": ["bar"]}))
    raw = with_volumes(pod("pod-a"), claim_volume("pvc-a"), claim_volume("pvc-b"))
    assert run(c, raw, VolumeBinding(handle=Handle(kube_version=version))) == [
        unresolvable(NODE_CONFLICT, BIND_CONFLICT)]


@pytest.mark.parametrize("version", RELEASES[1:] + [None], ids=lambda v: f"{v[0]}.{v[1]}" if v else "newest")
def test_volume_attributes_class_binds_from_1_34(version):
    """VolumeAttributesClass is GA from 1.34 (FindMatchingVolume's vacEnabled): a claim naming a class
    binds a volume of that class."""
    c = with_storage(cluster([make_node("node-a")]), *PLUGIN_CLASSES,
                     pvc("pvc-a", "wait-sc", attributes_class="gold"),
                     pv("pv-gold", "wait-sc", attributes_class="gold"))
    pl = VolumeBinding(handle=Handle(kube_version=version))
    outcome, state, p = pre_filter(c, with_volumes(pod("pod-a"), claim_volume("pvc-a")), pl)
    assert outcome is None and results(pl.filter(state, p, c)) == FITS
    pl.reserve(state, p, c, 0)
    assert c.volumes.binder_volume("pv-gold").claim_ref.name == "pvc-a"


# -- binder_test.go ----------------------------------------------------------------------------------

NS = "testns"
PROVISIONER = "test-provisioner"
WAIT, IMMEDIATE_CLASS, WAIT_PROVISIONED, TOPO_MISMATCH = (
    "waitClass", "immediateClass", "waitClassWithProvisioner", "topoMismatchClass")
# Upstream's immediateClass has no provisioner: no immediate claim reaches provisioning.
BINDER_CLASSES = [
    storage_class(WAIT_PROVISIONED, PROVISIONER, WFFC, [{NODE_KEY: ["node1", "reference-value"]}]),
    storage_class(IMMEDIATE_CLASS, mode=IMMEDIATE),
    storage_class(WAIT, mode=WFFC),
    storage_class(TOPO_MISMATCH, PROVISIONER, WFFC, [{NODE_KEY: ["reference-value"]}]),
]


def binder_pvc(name, size, cls, volume="", bound=False, selected_node=None, owner_uid=""):
    """makeTestPVC: every claim of binder_test.go has the uid pvc-uid."""
    return pvc(name, cls, namespace=NS, request=size, volume=volume, bind_completed=bound, uid="pvc-uid",
               selected_node=selected_node, owner_uid=owner_uid)


def binder_pv(name, node_name, size, claim, cls, **kw):
    """makeTestPV: Available, with node affinity nodeKey in [node] when a node is given."""
    return pv(name, cls, capacity=size, affinity={NODE_KEY: [node_name]} if node_name else None, claim=claim, **kw)


UNBOUND = binder_pvc("unbound-pvc", "1G", WAIT)
UNBOUND_2 = binder_pvc("unbound-pvc2", "5G", WAIT)
PREBOUND = binder_pvc("prebound-pvc", "1G", WAIT, volume="pv-node1a")
BOUND = binder_pvc("bound-pvc", "1G", WAIT, volume="pv-bound", bound=True)
IMMEDIATE_UNBOUND = binder_pvc("immediate-unbound-pvc", "1G", IMMEDIATE_CLASS)
IMMEDIATE_BOUND = binder_pvc("immediate-bound-pvc", "1G", IMMEDIATE_CLASS, volume="pv-bound-immediate", bound=True)
PROVISIONED = binder_pvc("provisioned-pvc", "1Gi", WAIT_PROVISIONED)
NO_PROVISIONER = binder_pvc("no-provisioner-pvc", "1Gi", WAIT)
TOPO_MISMATCH_PVC = binder_pvc("topo-mismatch-pvc", "1Gi", TOPO_MISMATCH)
SELECTED_NODE = binder_pvc("provisioned-pvc", "1Gi", WAIT_PROVISIONED, selected_node="node1")
BOUND_MIGRATION = binder_pvc("pvc-migration-bound", "1G", WAIT, volume="pv-migration-bound", bound=True)
TEST_POD_UID = "uid-testns-test-pod"  # builders.pod's uid of test-pod
CORRECT_GENERIC = binder_pvc("test-pod-test-volume", "1G", IMMEDIATE_CLASS, volume="pv-bound", bound=True,
                             owner_uid=TEST_POD_UID)
CONFLICTING_GENERIC = binder_pvc("test-pod-test-volume", "1G", IMMEDIATE_CLASS, volume="pv-bound", bound=True)

PV_NODE1A = binder_pv("pv-node1a", "node1", "5G", None, WAIT)
PV_NODE1B = binder_pv("pv-node1b", "node1", "10G", None, WAIT)
PV_NODE1C = binder_pv("pv-node1b", "node1", "5G", None, WAIT)  # upstream's pvNode1c: pv-node1b, but 5G
PV_NODE2 = binder_pv("pv-node2", "node2", "1G", None, WAIT)
PV_BOUND = binder_pv("pv-bound", "node1", "1G", BOUND, WAIT)
PV_NODE1A_BOUND = binder_pv("pv-node1a", "node1", "5G", UNBOUND, WAIT)
PV_BOUND_IMMEDIATE = binder_pv("pv-bound-immediate", "node1", "1G", IMMEDIATE_BOUND, IMMEDIATE_CLASS)
PV_BOUND_IMMEDIATE_NODE2 = binder_pv("pv-bound-immediate", "node2", "1G", IMMEDIATE_BOUND, IMMEDIATE_CLASS)
PV_BOUND_GENERIC = binder_pv("pv-bound", "node1", "1G", CORRECT_GENERIC, WAIT)
# makeTestPVForCSIMigration: a GCE PD with zone labels and no node affinity, bound to pvc-migration-bound.
MIGRATION_PV_BOUND = binder_pv("pv-migration-bound", "", "1G", BOUND_MIGRATION, WAIT,
                               labels={"failure-domain.beta.kubernetes.io/zone": "us-east-1",
                                       "failure-domain.beta.kubernetes.io/region": "us-east-1a"},
                               source={"gcePersistentDisk": {"pdName": "test-disk", "fsType": "ext4"}})

TEST_NODE = make_node("node1", nodeKey="node1")


def binder_pod(*claims):
    """makePod("test-pod").withNamespace("testns").withPVCSVolume(claims)."""
    return with_volumes(pod("test-pod", NS), *(claim_volume(c["metadata"]["name"], f"vol{i}")
                                                for i, c in enumerate(claims)))


def ephemeral_binder_pod(volume):
    return with_volumes(pod("test-pod", NS), ephemeral_volume(volume))


def find(objects, raw_pod):
    """FindPodVolumes on node1, then, where it found no conflict, AssumePodVolumes there: PreFilter's
    rejection or Filter's result, and what Reserve left in the binder's view (see assumptions)."""
    c = with_storage(cluster([TEST_NODE]), *objects)
    pl = VolumeBinding()
    outcome, state, p = pre_filter(c, raw_pod, pl)
    if outcome is not None:
        return outcome, {}, set()
    verdicts = results(pl.filter(state, p, c))
    if verdicts != FITS:
        return verdicts, {}, set()
    assert pl.reserve(state, p, c, 0) is None
    return (verdicts, *assumptions(c))


def assumptions(c):
    """What AssumePodVolumes left in the binder's view: {volume: claim} for the volumes it pre-bound, and
    the claims to provision it annotated with node1."""
    volumes = c.volumes
    bindings = {name: volumes.binder_volume(name).claim_ref.name for name in volumes.assumed_claim_refs}
    provisions = {name for (_, name), node_name in volumes.assumed_selected.items() if node_name == "node1"}
    return bindings, provisions


DRIVERS = [
    pytest.param([], id="no CSIDriver"),
    pytest.param([csi_driver(PROVISIONER, storage_capacity=True)], id="CSIDriver with capacity tracking"),
    pytest.param([csi_driver(PROVISIONER, storage_capacity=False)], id="CSIDriver without capacity tracking"),
]


# (pod, claims the listers hold, volumes, Filter (or PreFilter's rejection), {volume: claim} bound on node1)
WITHOUT_PROVISIONING = [
    pytest.param(pod("test-pod", NS), [], [], SKIP, {}, id="no-volumes"),
    pytest.param(with_volumes(pod("test-pod", NS), {"name": "empty", "emptyDir": {}}), [], [], SKIP, {}, id="no-pvcs"),
    pytest.param(binder_pod(BOUND), [], [], unresolvable('persistentvolumeclaim "bound-pvc" not found'), {},
                 id="pvc-not-found"),
    pytest.param(binder_pod(BOUND), [BOUND], [PV_BOUND], FITS, {}, id="bound-pvc"),
    pytest.param(binder_pod(BOUND), [BOUND], [], [unresolvable(PV_NOT_EXIST)], {}, id="bound-pvc,pv-not-exists"),
    pytest.param(binder_pod(PREBOUND), [PREBOUND], [PV_NODE1A_BOUND], UNBOUND_IMMEDIATE, {}, id="prebound-pvc"),
    pytest.param(binder_pod(UNBOUND), [UNBOUND], [PV_NODE2, PV_NODE1A, PV_NODE1B], FITS, {"pv-node1a": "unbound-pvc"},
                 id="unbound-pvc,pv-same-node"),
    pytest.param(binder_pod(UNBOUND), [UNBOUND], [PV_NODE2], [unresolvable(BIND_CONFLICT)], {},
                 id="unbound-pvc,pv-different-node"),
    pytest.param(binder_pod(UNBOUND, UNBOUND_2), [UNBOUND, UNBOUND_2], [PV_NODE1A, PV_NODE1B], FITS,
                 {"pv-node1a": "unbound-pvc", "pv-node1b": "unbound-pvc2"}, id="two-unbound-pvcs"),
    pytest.param(binder_pod(UNBOUND_2, UNBOUND), [UNBOUND_2, UNBOUND], [PV_NODE1A, PV_NODE1B], FITS,
                 {"pv-node1a": "unbound-pvc", "pv-node1b": "unbound-pvc2"}, id="two-unbound-pvcs,order-by-size"),
    pytest.param(binder_pod(UNBOUND, UNBOUND_2), [UNBOUND, UNBOUND_2], [PV_NODE1A], [unresolvable(BIND_CONFLICT)], {},
                 id="two-unbound-pvcs,partial-match"),
    pytest.param(binder_pod(UNBOUND, BOUND), [UNBOUND, BOUND], [PV_BOUND, PV_NODE1A], FITS,
                 {"pv-node1a": "unbound-pvc"},
                 id="one-bound,one-unbound"),
    pytest.param(binder_pod(UNBOUND, BOUND), [UNBOUND, BOUND], [PV_BOUND, PV_NODE2], [unresolvable(BIND_CONFLICT)], {},
                 id="one-bound,one-unbound,no-match"),
    pytest.param(binder_pod(UNBOUND, PREBOUND), [UNBOUND, PREBOUND], [PV_NODE1A, PV_NODE1B], UNBOUND_IMMEDIATE, {},
                 id="one-prebound,one-unbound"),
    pytest.param(binder_pod(IMMEDIATE_BOUND), [IMMEDIATE_BOUND], [PV_BOUND_IMMEDIATE], FITS, {},
                 id="immediate-bound-pvc"),
    pytest.param(binder_pod(IMMEDIATE_BOUND), [IMMEDIATE_BOUND], [PV_BOUND_IMMEDIATE_NODE2],
                 [unresolvable(NODE_CONFLICT)], {}, id="immediate-bound-pvc-wrong-node"),
    pytest.param(binder_pod(IMMEDIATE_UNBOUND), [IMMEDIATE_UNBOUND], [], UNBOUND_IMMEDIATE, {},
                 id="immediate-unbound-pvc"),
    pytest.param(binder_pod(IMMEDIATE_UNBOUND, BOUND), [IMMEDIATE_UNBOUND, BOUND], [PV_BOUND], UNBOUND_IMMEDIATE, {},
                 id="immediate-unbound-pvc,delayed-mode-bound"),
    pytest.param(binder_pod(IMMEDIATE_UNBOUND, UNBOUND), [IMMEDIATE_UNBOUND, UNBOUND], [], UNBOUND_IMMEDIATE, {},
                 id="immediate-unbound-pvc,delayed-mode-unbound"),
    pytest.param(ephemeral_binder_pod("no-such-pvc"), [], [], unresolvable(
        'waiting for ephemeral volume controller to create the persistentvolumeclaim "test-pod-no-such-pvc"'), {},
        id="generic-ephemeral,no-pvc"),
    pytest.param(ephemeral_binder_pod("test-volume"), [CORRECT_GENERIC], [PV_BOUND_GENERIC], FITS, {},
                 id="generic-ephemeral,with-pvc"),
    pytest.param(ephemeral_binder_pod("test-volume"), [CONFLICTING_GENERIC], [PV_BOUND_GENERIC], unresolvable(
        "PVC testns/test-pod-test-volume was not created for pod testns/test-pod (pod is not owner)"), {},
        id="generic-ephemeral,wrong-pvc"),
]


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("raw_pod, claims, volumes, want, want_bindings", WITHOUT_PROVISIONING)
def test_find_pod_volumes_without_provisioning(driver, raw_pod, claims, volumes, want, want_bindings):
    got, bindings, provisions = find([*BINDER_CLASSES, *driver, *claims, *volumes], raw_pod)
    assert got == want
    assert bindings == want_bindings
    assert provisions == set()


# (claims of the pod, volumes, Filter (or PreFilter's rejection), {volume: claim} bound, claims provisioned,
#  whether provisioning checks capacity)
WITH_PROVISIONING = [
    pytest.param([PROVISIONED], [], [], FITS, {}, {"provisioned-pvc"}, True, id="one-provisioned"),
    pytest.param([UNBOUND, PROVISIONED], [PV_NODE1A], [], FITS, {"pv-node1a": "unbound-pvc"}, {"provisioned-pvc"}, True,
                 id="two-unbound-pvcs,one-matched,one-provisioned"),
    pytest.param([BOUND, PROVISIONED], [PV_BOUND], [], FITS, {}, {"provisioned-pvc"}, True,
                 id="one-bound,one-provisioned"),
    pytest.param([BOUND, SELECTED_NODE], [PV_BOUND], [], FITS, {}, {"provisioned-pvc"}, True,
                 id="one-binding,one-selected-node"),
    pytest.param([IMMEDIATE_UNBOUND], [], UNBOUND_IMMEDIATE, None, {}, set(), False, id="immediate-unbound-pvc"),
    pytest.param([IMMEDIATE_BOUND, PROVISIONED], [PV_BOUND_IMMEDIATE], [], FITS, {}, {"provisioned-pvc"}, True,
                 id="one-immediate-bound,one-provisioned"),
    pytest.param([NO_PROVISIONER], [], [BIND_CONFLICT], None, {}, set(), False, id="invalid-provisioner"),
    pytest.param([TOPO_MISMATCH_PVC], [], [BIND_CONFLICT], None, {}, set(), False, id="volume-topology-unsatisfied"),
]


@pytest.mark.parametrize("driver", DRIVERS)
@pytest.mark.parametrize("claims, volumes, reasons, fits, want_bindings, want_provisions, needs_capacity",
                         WITH_PROVISIONING)
def test_find_pod_volumes_with_provisioning(driver, claims, volumes, reasons, fits, want_bindings, want_provisions,
                                            needs_capacity):
    """`reasons` are Filter's on node1 (or PreFilter's rejection, with `fits` None); with a CSIDriver that
    tracks capacity and no CSIStorageCapacity, a claim to provision does not fit for lack of storage."""
    got, bindings, provisions = find([*BINDER_CLASSES, *driver, *claims, *volumes], binder_pod(*claims))
    if fits is None and reasons == UNBOUND_IMMEDIATE:
        assert got == reasons
        return
    tracks_capacity = driver and driver[0]["spec"]["storageCapacity"]
    if needs_capacity and tracks_capacity:
        reasons = [*reasons, NOT_ENOUGH_SPACE]
        want_bindings, want_provisions = {}, set()
    assert got == ([unresolvable(*reasons)] if reasons else FITS)
    assert (bindings, provisions) == (want_bindings, want_provisions)


MIGRATED = "kubernetes.io/gce-pd"


@pytest.mark.parametrize("node_zone, csi_nodes, want", [
    pytest.param("us-east-1", [csi_node("node1", migrated=MIGRATED)], FITS, id="pvc-bound"),
    pytest.param("us-east-1", [csi_node("node1", migrated="")], FITS, id="pvc-bound,csinode-not-migrated"),
    pytest.param("us-east-1", [], FITS, id="pvc-bound,missing-csinode"),
    pytest.param("us-east-2", [csi_node("node1", migrated=MIGRATED)], [unresolvable(NODE_CONFLICT)],
                 id="pvc-bound,node-different-zone"),
])
def test_find_pod_volumes_with_csi_migration(node_zone, csi_nodes, want):
    """The in-tree GCE PD volume gets the node affinity of its CSI driver (topology.gke.io/zone from its
    zone label) on a node whose CSINode lists the plugin as migrated; elsewhere it has none."""
    objects = [*BINDER_CLASSES, *csi_nodes, BOUND_MIGRATION, MIGRATION_PV_BOUND]
    c = with_storage(cluster([make_node("node1", **{"topology.gke.io/zone": node_zone})]), *objects)
    assert run(c, binder_pod(BOUND_MIGRATION)) == want


# (claims of the pod, volumes, {volume: claim} in the binder's view after Reserve, claims to provision)
@pytest.mark.parametrize("claims, volumes, want_bindings, want_provisions", [
    pytest.param([BOUND], [PV_BOUND], {}, set(), id="all-bound"),
    pytest.param([UNBOUND], [PV_NODE1A], {"pv-node1a": "unbound-pvc"}, set(), id="one-binding"),
    pytest.param([UNBOUND, UNBOUND_2], [PV_NODE1A, PV_NODE1B],
                 {"pv-node1a": "unbound-pvc", "pv-node1b": "unbound-pvc2"}, set(), id="two-bindings"),
    pytest.param([UNBOUND], [PV_NODE1A_BOUND], {"pv-node1a": "unbound-pvc"}, set(), id="pv-already-bound"),
    pytest.param([UNBOUND, PROVISIONED], [PV_NODE1A], {"pv-node1a": "unbound-pvc"}, {"provisioned-pvc"},
                 id="one-binding, one-pvc-provisioned"),
])
def test_assume_pod_volumes(claims, volumes, want_bindings, want_provisions):
    """TestAssumePodVolumes' validateAssume: each bound volume's claimRef names its claim; each claim to
    provision carries node1 as its selected node."""
    c = with_storage(cluster([TEST_NODE]), *BINDER_CLASSES, *claims, *volumes)
    pl = VolumeBinding()
    outcome, state, p = pre_filter(c, binder_pod(*claims), pl)
    assert outcome is None and results(pl.filter(state, p, c)) == FITS
    assert pl.reserve(state, p, c, 0) is None
    for volume, claim in want_bindings.items():
        assert c.volumes.binder_volume(volume).claim_ref == ClaimRef(NS, claim, "pvc-uid")
    for claim in want_provisions:
        assert c.volumes.binder_claim(NS, claim).selected_node == "node1"
    assert {k[1] for k in c.volumes.assumed_selected} == want_provisions


def test_revert_assumed_pod_volumes():
    """Unreserve (RevertAssumedPodVolumes) restores the volume and the claim as the cluster holds them."""
    c = with_storage(cluster([TEST_NODE]), *BINDER_CLASSES, UNBOUND, PROVISIONED, PV_NODE1A)
    pl = VolumeBinding()
    outcome, state, p = pre_filter(c, binder_pod(UNBOUND, PROVISIONED), pl)
    assert outcome is None and results(pl.filter(state, p, c)) == FITS
    pl.reserve(state, p, c, 0)
    assert assumptions(c) == ({"pv-node1a": "unbound-pvc"}, {"provisioned-pvc"})
    pl.unreserve(state, p, c, 0)
    assert c.volumes.binder_volume("pv-node1a").claim_ref is None
    assert c.volumes.binder_claim(NS, "provisioned-pvc").selected_node is None
    assert assumptions(c) == ({}, set())


def test_find_assume_volumes():
    """TestFindAssumeVolumes: after Reserve, finding volumes for the pod again returns the volume it was
    given (now pre-bound to its claim), never the other 5G volume."""
    c = with_storage(cluster([TEST_NODE]), *BINDER_CLASSES, UNBOUND, PV_NODE2, PV_NODE1A, PV_NODE1C)
    pl = VolumeBinding()
    for _ in range(2):
        outcome, state, p = pre_filter(c, binder_pod(UNBOUND), pl)
        assert outcome is None and results(pl.filter(state, p, c)) == FITS
        pl.reserve(state, p, c, 0)
        assert assumptions(c) == ({"pv-node1a": "unbound-pvc"}, set())


def test_assumed_volume_is_not_offered_to_another_claim():
    """A volume Reserve pre-bound to one pod's claim is bound to another claim for the next pod
    (FindMatchingVolume skips a claimRef to another claim): that pod's node finds no volume to bind."""
    other = binder_pvc("other-pvc", "1G", WAIT)
    c = with_storage(cluster([TEST_NODE]), *BINDER_CLASSES, UNBOUND, other, PV_NODE1A)
    pl = VolumeBinding()
    outcome, state, p = pre_filter(c, binder_pod(UNBOUND), pl)
    assert outcome is None and results(pl.filter(state, p, c)) == FITS
    pl.reserve(state, p, c, 0)
    assert run(c, with_volumes(pod("next-pod", NS), claim_volume("other-pvc")), pl) == [unresolvable(BIND_CONFLICT)]


NETWORK_ATTACHED = capacity("net", WAIT_PROVISIONED, {}, "1Gi")  # an empty nodeTopology: every node


def node_capacity(node_name, cls=WAIT_PROVISIONED, size="1Gi", maximum=""):
    return capacity(f"net-{node_name}", cls, {NODE_KEY: node_name}, size, maximum)


@pytest.mark.parametrize("opt_in", [True, False],
                         ids=["CSIDriver.StorageCapacity=true", "CSIDriver.StorageCapacity=false"])
@pytest.mark.parametrize("capacities, fits", [
    pytest.param([NETWORK_ATTACHED], True, id="network-attached"),
    pytest.param([node_capacity("node1")], True, id="local-storage"),
    pytest.param([NETWORK_ATTACHED, node_capacity("node2"), node_capacity("node1")], True, id="multiple"),
    pytest.param([], False, id="no-storage"),
    pytest.param([node_capacity("node2")], False, id="wrong-node"),
    pytest.param([node_capacity("node1", cls=WAIT)], False, id="wrong-storage-class"),
    pytest.param([node_capacity("node1", size="1Mi")], False, id="insufficient-storage"),
    pytest.param([node_capacity("node1", maximum="1Mi")], False, id="insufficient-volume-size"),
    pytest.param([node_capacity("node1", size="0Mi")], False, id="zero-storage"),
    pytest.param([node_capacity("node1", size="", maximum="0Mi")], False, id="zero-volume-size"),
    pytest.param([node_capacity("node1", size="")], False, id="nil-storage"),
])
def test_capacity(opt_in, capacities, fits):
    """TestCapacity: with the driver's storageCapacity on, the claim to provision needs a CSIStorageCapacity
    of its class, reachable from the node, whose maximumVolumeSize (else capacity) holds the 1Gi it asks for;
    with it off, capacity is not checked."""
    objects = [*BINDER_CLASSES, csi_driver(PROVISIONER, storage_capacity=opt_in), PROVISIONED, *capacities]
    got, bindings, provisions = find(objects, binder_pod(PROVISIONED))
    if fits or not opt_in:
        assert (got, provisions) == (FITS, {"provisioned-pvc"})
    else:
        assert (got, provisions) == ([unresolvable(NOT_ENOUGH_SPACE)], set())


# -- TestDelayBindingMode (pv_helpers_test.go) ---------------------------------------------------------

@pytest.mark.parametrize("claim_class, delayed", [
    pytest.param(None, False, id="nil-class"),
    pytest.param("not-here", False, id="class-not-found"),
    pytest.param("immediate-mode", False, id="immediate-mode-class"),
    pytest.param("wait-mode", True, id="wait-mode-class"),
])
def test_delay_binding_mode(claim_class, delayed):
    """IsDelayBindingMode decides whether an unbound claim waits for its pod's node (delayed) or must be
    bound already (PreFilter: unbound immediate). Upstream's "no-mode-class" row (a class without a mode,
    an error) cannot occur: the API server defaults volumeBindingMode."""
    classes = [storage_class("immediate-mode", mode=IMMEDIATE), storage_class("wait-mode", mode=WFFC)]
    c = with_storage(cluster([TEST_NODE]), *classes, pvc("claim", claim_class))
    outcome, state, _ = pre_filter(c, with_volumes(pod("p"), claim_volume("claim")))
    if delayed:
        assert outcome is None and [x.name for x in state.read(STATE_KEY).delayed] == ["claim"]
    else:
        assert outcome == UNBOUND_IMMEDIATE


def test_extension_points():
    pl = VolumeBinding()
    for point in (PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, ReservePlugin):
        assert isinstance(pl, point)
