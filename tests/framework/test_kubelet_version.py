"""The release of a snapshot that records no server version, inferred from its nodes' kubelet versions."""
import json

import pytest

from builders import node
from kplan.framework import versions
from kplan.sources.snapshot import Snapshot, load_snapshot
from kplan.sources.writer import write_snapshot


@pytest.mark.parametrize("reported,want,kubelet", [
    (["v1.33.4", "v1.34.2-eks-xyz", "v1.33.4"], (1, 34, 2), "v1.34.2-eks-xyz"),
    (["v1.34.1+k3s1", "v1.30.2-gke.1000"], (1, 34, 1), "v1.34.1+k3s1"),
    (["v1.34.10", "v1.34.9"], (1, 34, 10), "v1.34.10"),  # by number, not by text
    (["v1.35.0", "v1.34.12"], (1, 35, 0), "v1.35.0"),
])
def test_newest_kubelet_with_its_suffix_dropped(reported, want, kubelet):
    inferred = versions.infer_from_kubelets(reported)
    assert (inferred.version, inferred.kubelet, inferred.ignored, inferred.warning) == (want, kubelet, 0, "")


@pytest.mark.parametrize("kubelet,nearest", [("v1.29.4", (1, 33)), ("v1.32.9-eks-1", (1, 33)),
                                             ("v1.37.0", (1, 36)), ("v1.40.2+k3s1", (1, 36))])
def test_unknown_minor_answers_as_the_nearest_known_minor_as_a_recorded_version_does(kubelet, nearest):
    inferred = versions.infer_from_kubelets(["v1.28.1", kubelet])
    recorded, _ = versions.recorded_version(kubelet)
    assert inferred.version == recorded == nearest
    assert f"newest kubelet runs {kubelet}" in inferred.warning
    assert f"kube-scheduler {versions.format_version(nearest)}, the nearest release it knows" in inferred.warning


def test_missing_and_unparsable_versions_are_counted_and_left_out():
    inferred = versions.infer_from_kubelets([None, "", "banana", "v1.x", 135, ["v1.36.0"], "v1.33.2"])
    assert (inferred.version, inferred.kubelet, inferred.ignored) == ((1, 33, 2), "v1.33.2", 6)
    none = versions.infer_from_kubelets([None, "banana"])
    assert (none.version, none.kubelet, none.ignored, none.warning) == (None, "", 2, "")


def with_kubelet(name, version):
    n = node(name)
    if version is not None:
        n["status"]["nodeInfo"] = {"kubeletVersion": version, "osImage": "Ubuntu"}
    return n


def loaded(*objects):
    snap = Snapshot()
    for k, obj in enumerate(objects, start=1):
        snap.add(obj, "dump.json", k)
    return snap.finish()


def test_snapshot_infers_only_without_a_recorded_version():
    snap = loaded(with_kubelet("a", "v1.33.4"), with_kubelet("b", "v1.34.2-eks-xyz"), with_kubelet("c", None))
    assert (snap.kube_version, snap.kube_version_source, snap.newest_kubelet) == ((1, 34, 2), "kubelet",
                                                                                  "v1.34.2-eks-xyz")
    assert sum(snap.warnings.values()) == 1 and not snap.problems  # node c
    header = {"apiVersion": "kplan/v1alpha1", "kind": "KplanSnapshot", "metadata": {"kubeVersion": "v1.35.1"}}
    snap = loaded(header, with_kubelet("a", "v1.34.2"), with_kubelet("c", None))
    assert (snap.kube_version, snap.kube_version_source, snap.newest_kubelet) == ((1, 35, 1), "snapshot", "")
    assert not snap.warnings
    snap = loaded(with_kubelet("a", None), with_kubelet("b", None))
    assert (snap.kube_version, snap.kube_version_source) == (None, "") and not snap.warnings


def test_written_snapshot_without_server_version_reads_back_the_kubelets_release(tmp_path):
    # `kplan snapshot` on a cluster whose /version is forbidden: no kubeVersion in the header.
    header = {"apiVersion": "kplan/v1alpha1", "kind": "KplanSnapshot", "metadata": {"context": "prod"}}
    out = tmp_path / "snap.json"
    write_snapshot(header, [with_kubelet("a", "v1.34.3-eks-1"), with_kubelet("b", "v1.33.9")], str(out), "json")
    assert "osImage" not in out.read_text()
    snap = load_snapshot([str(out)])
    assert (snap.kube_version, snap.kube_version_source) == ((1, 34, 3), "kubelet")
    assert json.loads(out.read_text())["items"][1]["status"]["nodeInfo"] == {"kubeletVersion": "v1.34.3-eks-1"}
