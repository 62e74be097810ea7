"""ImageLocality: favors nodes that already hold the pod's container images.

Each image of the pod's init containers and containers found on a node adds its size, scaled by
the share of all nodes that hold it (so widely spread images count less). The sum is clamped to
[23MB, 1000MB x number of init containers and containers] and mapped linearly onto 0..100
(upstream imagelocality/image_locality.go).

From 1.36 on the images of the pod's image volumes (spec.volumes[].image.reference) add to the sum
the same way (kubernetes#130231), while the cap still counts containers only (kubernetes#138952).
"""
from __future__ import annotations

from typing import Mapping

import numpy as np

from kplan.api.objects import Pod
from kplan.cluster.state import ClusterState
from kplan.errors import InputError
from kplan.framework import versions
from kplan.framework.arith import go_div
from kplan.framework.interfaces import MAX_NODE_SCORE, CycleState, Handle, plugin_args

NAME = "ImageLocality"

MB = 1024 * 1024
# Bounds of the image score: a reasonable range of compressed image sizes (90%ile on Docker Hub).
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB
DEFAULT_IMAGE_TAG = "latest"


def normalized_image_name(name: str) -> str:
    """Appends ":latest" to an image reference without a tag (the last ':' not after the last '/')."""
    if name.rfind(":") <= name.rfind("/"):
        return f"{name}:{DEFAULT_IMAGE_TAG}"
    return name


def _containers(spec: Mapping) -> list[Mapping]:
    return [*(spec.get("initContainers") or ()), *(spec.get("containers") or ())]


def _image_volume_references(spec: Mapping) -> list[str]:
    """The reference of each image volume; other volumes (claims, secrets, ...) hold no image."""
    return [v["image"].get("reference") or "" for v in spec.get("volumes") or ()
            if isinstance(v.get("image"), Mapping)]


def calculate_priority(sum_scores: np.ndarray, num_containers: int) -> np.ndarray:
    """Clamps the summed image scores to the thresholds and maps them onto 0..MaxNodeScore."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    clamped = np.where(sum_scores < MIN_THRESHOLD, MIN_THRESHOLD,
                       np.where(sum_scores > max_threshold, max_threshold, sum_scores))
    return go_div(MAX_NODE_SCORE * (clamped - MIN_THRESHOLD), max_threshold - MIN_THRESHOLD).astype(np.int64)


class ImageLocality:
    """Scores nodes by the size of the pod's images they already have, discounted by how common they are."""

    name = NAME

    def __init__(self, args: Mapping | None = None, handle: Handle | None = None):
        plugin_args(args, {}, NAME)
        self.handle = handle

    def _scored_images(self, pod: Pod) -> list[str]:
        """The image references whose sizes add up: containers', and from 1.36 image volumes'."""
        images = [c.get("image") or "" for c in _containers(pod.spec)]
        release = self.handle.kube_version if self.handle else None
        if versions.has(release, versions.IMAGE_LOCALITY_IMAGE_VOLUMES):
            images += _image_volume_references(pod.spec)
        wrong = next((image for image in images if not isinstance(image, str)), None)
        if wrong is not None:
            raise InputError(f"pod {pod.key}: image {wrong!r}: must be an image reference (a string)", pod.source)
        return images

    def score(self, state: CycleState, pod: Pod, cluster: ClusterState, candidates: np.ndarray) -> np.ndarray:
        """Sums each image's size times its spread over all nodes, then maps the sum onto 0..100."""
        index = cluster.image_index()
        found_images = [found for image in self._scored_images(pod)
                        if (found := index.get(normalized_image_name(image))) is not None]
        if not found_images:  # no node has any of them: every sum is 0, and so is every score
            return np.zeros(len(candidates), dtype=np.int64)
        sums = np.zeros(cluster.n, dtype=np.int64)
        for positions, sizes in found_images:
            spread = float(len(positions)) / float(cluster.n)
            # int64(float64(size) * spread), truncated toward zero as Go converts.
            np.add.at(sums, positions, np.trunc(sizes.astype(np.float64) * spread).astype(np.int64))
        # The cap counts init containers and containers only, image volumes not (as in 1.36).
        return calculate_priority(sums[np.asarray(candidates, dtype=np.intp)], len(_containers(pod.spec)))
