"""ImageLocality, ported from TestImageLocalityPriority and TestNormalizedImageName in
image_locality_test.go (the version that counts init containers, maxContainerThreshold per
container), plus image volumes, which 1.36 scores (kubernetes#130231) and 1.33 to 1.35 ignore."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from builders import cluster, pod
from kplan.api.objects import Pod
from kplan.errors import InputError
from kplan.framework.interfaces import CycleState, Handle, MAX_NODE_SCORE
from kplan.plugins.image_locality import NAME, ImageLocality, normalized_image_name

MB = 1024 * 1024


def image_node(name: str, images: list[tuple[list[str], int]]) -> dict:
    """makeImageNode: a node whose status lists the given images (names, sizeBytes)."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"images": [{"names": names, "sizeBytes": size} for names, size in images]}}


def image_pod(images: list[str], init_images: list[str] = ()) -> dict:
    return pod("p", containers=[{"name": f"c{i}", "image": im} for i, im in enumerate(images)],
               init_containers=[{"name": f"i{i}", "image": im} for i, im in enumerate(init_images)] or None)


NODE_40_300_2000 = [(["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40 * MB),
                    (["gcr.io/300:latest", "gcr.io/300:v1"], 300 * MB),
                    (["gcr.io/2000:latest"], 2000 * MB)]
NODE_250_10 = [(["gcr.io/250:latest"], 250 * MB), (["gcr.io/10:latest", "gcr.io/10:v1"], 10 * MB)]
NODE_600_40_900 = [(["gcr.io/600:latest"], 600 * MB), (["gcr.io/40:latest"], 40 * MB),
                   (["gcr.io/900:latest"], 900 * MB)]
NODE_300_600_900 = [(["gcr.io/300:latest"], 300 * MB), (["gcr.io/600:latest"], 600 * MB),
                    (["gcr.io/900:latest"], 900 * MB)]
NODE_4000_30 = [(["gcr.io/4000:latest"], 4000 * MB), (["gcr.io/30:latest"], 30 * MB)]
NODE_20_30_40 = [(["gcr.io/20:latest"], 20 * MB), (["gcr.io/30:latest"], 30 * MB), (["gcr.io/40:latest"], 40 * MB)]
NO_IMAGES: list = []

# TestImageLocalityPriority: (pod, nodes, expected scores)
IMAGE_LOCALITY = [
    ("two images spread on two nodes, prefer the larger image one",
     image_pod(["gcr.io/40", "gcr.io/250"]),
     [image_node("node1", NODE_40_300_2000), image_node("node2", NODE_250_10)], [0, 5]),
    ("two images on one node, prefer this node",
     image_pod(["gcr.io/40", "gcr.io/300"]),
     [image_node("node1", NODE_40_300_2000), image_node("node2", NODE_250_10)], [7, 0]),
    ("if exceed limit, use limit",
     image_pod(["gcr.io/10", "gcr.io/4000"]),
     [image_node("node1", NODE_4000_30), image_node("node2", NODE_250_10)], [MAX_NODE_SCORE, 0]),
    ("if exceed limit, use limit (with node which has no images present)",
     image_pod(["gcr.io/10", "gcr.io/4000"]),
     [image_node("node1", NODE_4000_30), image_node("node2", NODE_250_10), image_node("node3", NO_IMAGES)],
     [66, 0, 0]),
    ("pod with multiple large images, node2 is preferred",
     image_pod(["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
     [image_node("node1", NODE_600_40_900), image_node("node2", NODE_300_600_900), image_node("node3", NO_IMAGES)],
     [32, 36, 0]),
    ("pod with multiple small images",
     image_pod(["gcr.io/30", "gcr.io/40"]),
     [image_node("node1", NODE_20_30_40), image_node("node2", NODE_4000_30)], [1, 0]),
    ("include InitContainers: two images spread on two nodes, prefer the larger image one",
     image_pod(["gcr.io/30"], init_images=["gcr.io/300"]),
     [image_node("node1", NODE_40_300_2000), image_node("node2", NODE_20_30_40)], [6, 0]),
]


def scores(the_pod: dict, nodes: list[dict], release=None) -> list[int]:
    c = cluster(nodes)
    plugin = ImageLocality(handle=Handle(kube_version=release))
    got = plugin.score(CycleState(), Pod(the_pod), c, np.arange(c.n))
    assert got.dtype == np.int64
    return got.tolist()


@pytest.mark.parametrize("release", [(1, 35), (1, 36)])
@pytest.mark.parametrize("the_pod, nodes, expected", [pytest.param(*c[1:], id=c[0]) for c in IMAGE_LOCALITY])
def test_image_locality_priority(the_pod, nodes, expected, release):
    """Pods without image volumes score alike in every release."""
    assert scores(the_pod, nodes, release) == expected


def image_volume_pod(images: list[str], references: list[str]) -> dict:
    """A pod whose image volumes (spec.volumes[].image) mount the given references."""
    p = image_pod(images)
    p["spec"]["volumes"] = [{"name": f"v{i}", "image": {"reference": ref, "pullPolicy": "IfNotPresent"}}
                            for i, ref in enumerate(references)]
    return p


# Image volumes: (pod, nodes, 1.35's scores, 1.36's scores). Upstream's own image-volume cases (added
# with kubernetes#130231) could not be consulted; these expectations are worked out from the 1.36
# code as kubernetes#138952 quotes it (each image volume found on the node adds
# int64(size * spread), the cap stays maxContainerThreshold x (init containers + containers)) on
# the nodes of the table above. 1.35 scores only the containers.
IMAGE_VOLUMES = [
    # Like "include InitContainers: ...", with gcr.io/300 an image volume instead of an init container.
    # 1.36, node1: 100 * (300M * 1/2 - 23M) / (1000M * 1 - 23M) = 12 (the init container scores 6:
    # it raises the cap to 2000M); node2: 30M * 1/2 < 23M = 0. 1.35: gcr.io/30 alone, 0 and 0.
    ("an image volume spread on two nodes, prefer the larger image one",
     image_volume_pod(["gcr.io/30"], ["gcr.io/300"]),
     [image_node("node1", NODE_40_300_2000), image_node("node2", NODE_20_30_40)], [0, 0], [12, 0]),
    # A tagged reference matches that tag among the node's names ("gcr.io/300:v1"), as a container's does.
    ("a tagged image volume reference",
     image_volume_pod(["gcr.io/30"], ["gcr.io/300:v1"]),
     [image_node("node1", NODE_40_300_2000), image_node("node2", NODE_20_30_40)], [0, 0], [12, 0]),
    ("an image volume whose tag no node has",
     image_volume_pod(["gcr.io/30"], ["gcr.io/300:v2"]),
     [image_node("node1", NODE_40_300_2000), image_node("node2", NODE_20_30_40)], [0, 0], [0, 0]),
    # Like "pod with multiple large images", with gcr.io/600 and gcr.io/900 image volumes: the cap is
    # 1000M (one container), so both nodes reach it. 1.36, node1: 600M * 2/3 + 900M * 2/3 = 1000M -> 100;
    # node2: 300M * 1/3 + 1000M -> 100 (three containers would score 32 and 36).
    # 1.35: gcr.io/300 alone, node2: 100 * (300M * 1/3 - 23M) / (1000M - 23M) = 7.
    ("image volumes past the containers' cap",
     image_volume_pod(["gcr.io/300"], ["gcr.io/600", "gcr.io/900"]),
     [image_node("node1", NODE_600_40_900), image_node("node2", NODE_300_600_900), image_node("node3", NO_IMAGES)],
     [0, 7, 0], [MAX_NODE_SCORE, MAX_NODE_SCORE, 0]),
]


@pytest.mark.parametrize("the_pod, nodes, before, after", [pytest.param(*c[1:], id=c[0]) for c in IMAGE_VOLUMES])
def test_image_volumes_count_from_1_36(the_pod, nodes, before, after):
    assert scores(the_pod, nodes, (1, 35)) == before
    assert scores(the_pod, nodes, (1, 36)) == after


@pytest.mark.parametrize("release, counted", [((1, 33), False), ((1, 35, 9), False), ((1, 36), True),
                                              ((1, 36, 0), True), (None, True)])
def test_image_volumes_by_release(release, counted):
    """No 1.35 patch release counts them: kubernetes#130231 is a 1.36 feature, not a cherry-pick."""
    nodes = [image_node("node1", NODE_40_300_2000), image_node("node2", NODE_20_30_40)]
    assert scores(image_volume_pod(["gcr.io/30"], ["gcr.io/300"]), nodes, release) == ([12, 0] if counted else [0, 0])


def test_only_image_volumes_hold_images():
    """A claim, or a volume whose image is null, adds nothing (upstream skips volumes without Image)."""
    p = image_pod(["gcr.io/30"])
    p["spec"]["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": "gcr.io/300"}},
                            {"name": "none", "image": None}]
    nodes = [image_node("node1", NODE_40_300_2000), image_node("node2", NODE_20_30_40)]
    assert scores(p, nodes, (1, 36)) == [0, 0]


def test_scores_only_the_candidates():
    """Spread counts every node of the cluster, even those not among the scored candidates."""
    c = cluster([image_node("node1", NODE_600_40_900), image_node("node2", NODE_300_600_900),
                 image_node("node3", NO_IMAGES)])
    p = Pod(image_pod(["gcr.io/300", "gcr.io/600", "gcr.io/900"]))
    assert ImageLocality().score(CycleState(), p, c, np.array([1])).tolist() == [36]


def fake_digest(content: str) -> str:
    return "sha256:" + hashlib.sha256(content.encode()).hexdigest()


# TestNormalizedImageName
@pytest.mark.parametrize("name, expected", [
    pytest.param("root", "root:latest", id="add :latest postfix 1"),
    pytest.param("gcr.io:5000/root", "gcr.io:5000/root:latest", id="add :latest postfix 2"),
    pytest.param("root:tag", "root:tag", id="keep it as is 1"),
    pytest.param("root@" + fake_digest("root"), "root@" + fake_digest("root"), id="keep it as is 2"),
])
def test_normalized_image_name(name, expected):
    assert normalized_image_name(name) == expected


def test_plugin_takes_no_args():
    assert ImageLocality().name == NAME
    with pytest.raises(InputError):
        ImageLocality({"anything": 1})


def test_an_image_reference_that_is_not_a_string_is_an_input_error():
    nodes = [image_node("n1", [(["gcr.io/30:latest"], 30 * MB)])]
    bad_volume = image_volume_pod(["gcr.io/30"], [5])
    with pytest.raises(InputError, match=r"pod default/p: image 5: must be an image reference"):
        scores(bad_volume, nodes, (1, 36))
    assert scores(bad_volume, nodes, (1, 35)) == scores(image_pod(["gcr.io/30"]), nodes, (1, 35))  # not read there
    with pytest.raises(InputError, match=r"image \['x'\]"):
        scores(image_pod([["x"]]), nodes)
