"""FindMatchingVolume on the scheduler's path (a node given), ported from TestFindMatchVolumeWithNode in
component-helpers/storage/volume/pv_helpers_test.go, plus its other rules as pv_helpers.go states them."""
from __future__ import annotations

import pytest
from builders import cluster, node
from storage_builders import ROX, RWO, RWX, pv, pvc

from kplan.api.pv_matching import candidates, node_affinity_mask
from kplan.api.storage import persistent_volume, persistent_volume_claim


def find_matching_volume(claim, volumes, node_labels, excluded=frozenset(), attributes_classes=False):
    """The volume FindMatchingVolume returns for the claim on a node with these labels (None for none):
    the first of the candidates, smallest first, whose node affinity admits the node."""
    n = node("node")
    n["metadata"]["labels"] = dict(node_labels)
    c = cluster([n])
    found = candidates(persistent_volume_claim(claim), [persistent_volume(v) for v in volumes], attributes_classes,
                       frozenset(excluded))
    return next((v.name for v in found.volumes if node_affinity_mask(v.node_affinity, c)[0]), None)


def make_volume(name, capacity, available=True, **kw):
    """makeTestVolume: a local volume offering ReadWriteOnce and ReadOnlyMany."""
    return pv(name, capacity=capacity, modes=(RWO, ROX), phase="Available" if available else "",
              source={"local": {"path": "/mnt"}}, **kw)


def make_claim(name, modes):
    """makeTestPersistentVolumeClaim: 100G of class wait in namespace myns."""
    return pvc(name, "wait", namespace="myns", request="100G", modes=modes)


# Upstream tells its volumes apart by uid (two of them are named affinity003); here the uid is the name,
# and the excluded volumes affinity001 and affinity002 are affinity-pv and affinity-pv2.
PREBOUND_TO_CLAIM02 = {"metadata": {"namespace": "myns", "name": "claim02", "uid": ""}}
VOLUMES = [
    make_volume("local-small", "5G"),
    make_volume("local-pd-very-large", "200E", storage_class="large"),
    make_volume("affinity-pv", "100G", storage_class="wait", affinity={"key1": ["value1"]}),
    make_volume("affinity-pv2", "150G", storage_class="wait", affinity={"key1": ["value1"]}),
    make_volume("affinity-prebound", "100G", storage_class="wait", claim=PREBOUND_TO_CLAIM02,
                affinity={"key1": ["value1"]}),
    make_volume("affinity-pv3", "200G", storage_class="wait", affinity={"key1": ["value3"]}),
    make_volume("affinity-pv4", "200G", available=False, storage_class="wait", affinity={"key1": ["value4"]}),
]


@pytest.mark.parametrize("claim, modes, node_value, excluded, want", [
    pytest.param("claim01", [RWO], "value1", (), "affinity-pv", id="success-match"),
    pytest.param("claim02", [RWO], "value1", (), "affinity-prebound", id="success-prebound"),
    pytest.param("claim01", [RWO], "value1", ("affinity-pv",), "affinity-pv2", id="success-exclusion"),
    pytest.param("claim01", [RWO], "value1", ("affinity-pv", "affinity-pv2"), None, id="fail-exclusion"),
    pytest.param("claim01", [RWX], "value1", (), None, id="fail-accessmode"),
    pytest.param("claim01", [RWO], "value2", (), None, id="fail-nodeaffinity"),
    pytest.param("claim02", [RWO], "value3", (), None, id="fail-prebound-node-affinity"),
    pytest.param("claim04", [RWO], "value4", (), None, id="fail-nonavaliable"),
    pytest.param("claim03", [RWO], "value3", (), "affinity-pv3", id="success-bad-and-good-node-affinity"),
])
def test_find_match_volume_with_node(claim, modes, node_value, excluded, want):
    assert find_matching_volume(make_claim(claim, modes), VOLUMES, {"key1": node_value}, excluded) == want


CLAIM = pvc("claim", "fast", request="5Gi")


@pytest.mark.parametrize("claim, volumes, want", [
    pytest.param(CLAIM, [pv("small", "fast", capacity="4Gi")], None, id="smaller than the request"),
    pytest.param(CLAIM, [pv("big", "fast", capacity="50Gi"), pv("fit", "fast", capacity="5Gi")], "fit",
                 id="the smallest that holds the request"),
    pytest.param(CLAIM, [pv("b", "fast", capacity="5Gi"), pv("a", "fast", capacity="5Gi")], "b",
                 id="equal sizes: the first in list order"),
    pytest.param(CLAIM, [pv("block", "fast", capacity="5Gi", volume_mode="Block")], None,
                 id="volume mode mismatch"),
    pytest.param(pvc("claim", "fast", request="5Gi", volume_mode="Block"),
                 [pv("block", "fast", capacity="5Gi", volume_mode="Block")], "block", id="block claim, block volume"),
    pytest.param(CLAIM, [pv("going", "fast", capacity="5Gi", terminating=True)], None, id="volume being deleted"),
    pytest.param(CLAIM, [pv("released", "fast", capacity="5Gi", phase="Released")], None, id="not Available"),
    pytest.param(CLAIM, [pv("other-class", "slow", capacity="5Gi")], None, id="another class"),
    pytest.param(CLAIM, [pv("taken", "fast", capacity="5Gi", claim=pvc("other", "fast"))], None,
                 id="bound to another claim"),
    pytest.param(CLAIM, [pv("other-uid", "fast", capacity="5Gi", claim=pvc("claim", "fast", uid="old-uid"))], None,
                 id="claimRef to an older claim of the same name"),
    pytest.param(CLAIM, [pv("smaller", "fast", capacity="6Gi"),
                         pv("mine", "fast", capacity="10Gi", phase="Released", modes=(RWX,), claim=CLAIM)], "mine",
                 id="pre-bound wins whatever its phase and access modes"),
    pytest.param(pvc("claim", "fast", request="5Gi", selector={"matchLabels": {"app": "db"}}),
                 [pv("plain", "fast", capacity="5Gi"), pv("db", "fast", capacity="9Gi", labels={"app": "db"})], "db",
                 id="selector"),
])
def test_find_matching_volume_rules(claim, volumes, want):
    """FindMatchingVolume skips excluded volumes, those bound to another claim, smaller than the request,
    of another volume mode or being deleted; returns at once a volume pre-bound to the claim; and among
    Available volumes of the claim's class that match its selector and access modes keeps the smallest."""
    assert find_matching_volume(claim, volumes, {}) == want


@pytest.mark.parametrize("claim_class, volume_class, gate, want", [
    pytest.param("", "", False, "volume", id="gate off: neither names a class"),
    pytest.param("", "gold", False, None, id="gate off: a volume naming a class never binds"),
    pytest.param("", "", True, "volume", id="gate on: neither names a class"),
    pytest.param("gold", "gold", True, "volume", id="gate on: same class"),
    pytest.param("gold", "silver", True, None, id="gate on: another class"),
    pytest.param("", "gold", True, None, id="gate on: a class against none"),
])
def test_volume_attributes_class(claim_class, volume_class, gate, want):
    """The VolumeAttributesClass checks of FindMatchingVolume (vacEnabled: off in 1.33, on from 1.34). With
    the gate off upstream returns an error for a claim naming a class; that row is not tested here."""
    claim = pvc("claim", "fast", attributes_class=claim_class or None)
    volume = pv("volume", "fast", attributes_class=volume_class or None)
    assert find_matching_volume(claim, [volume], {}, attributes_classes=gate) == want


def test_node_affinity_mask():
    """CheckNodeAffinity over a node table: no affinity admits every node; terms are ORed, their
    requirements ANDed."""
    nodes = []
    for name, labels in (("a", {"zone": "z1", "disk": "ssd"}), ("b", {"zone": "z1"}), ("c", {"zone": "z2"})):
        n = node(name)
        n["metadata"]["labels"] = labels
        nodes.append(n)
    c = cluster(nodes)
    terms = [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]},
                                   {"key": "disk", "operator": "Exists"}]},
             {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["z2"]}]}]
    assert node_affinity_mask(terms, c).tolist() == [True, False, True]
    assert node_affinity_mask(None, c).tolist() == [True, True, True]
