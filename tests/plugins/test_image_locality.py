"""ImageLocality, ported from TestImageLocalityPriority and TestNormalizedImageName in
image_locality_test.go (the version that counts init containers, maxContainerThreshold per
container: the newest stored in the index)."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from builders import cluster, pod
from kplan.api.objects import Pod
from kplan.errors import InputError
from kplan.framework.interfaces import CycleState, MAX_NODE_SCORE
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


@pytest.mark.parametrize("the_pod, nodes, expected", [pytest.param(*c[1:], id=c[0]) for c in IMAGE_LOCALITY])
def test_image_locality_priority(the_pod, nodes, expected):
    c = cluster(nodes)
    plugin = ImageLocality()
    scores = plugin.score(CycleState(), Pod(the_pod), c, np.arange(c.n))
    assert scores.dtype == np.int64
    assert scores.tolist() == expected


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
