"""HorizontalPodAutoscalers: which workload each scales, and between which replica counts.

autoscaling/v2 (and v1, which serves the same objects with the same three fields): spec.scaleTargetRef
names the workload (kind and name, in the HPA's namespace), spec.minReplicas defaults to 1 and
spec.maxReplicas is required; the checks and texts follow validateHorizontalPodAutoscalerSpec.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from kplan.api.validation import Invalid, integer, invalid, mapping, required, string
from kplan.errors import InputError

API_VERSIONS = ("autoscaling/v2", "autoscaling/v1")
KIND = "HorizontalPodAutoscaler"


@dataclass(frozen=True)
class HorizontalPodAutoscaler:
    namespace: str
    name: str
    target_kind: str
    target_name: str
    min_replicas: int
    max_replicas: int
    source: str

    @property
    def target(self) -> tuple[str, str, str]:
        """(kind, namespace, name) of the workload it scales, as a Workload's key reads."""
        return self.target_kind, self.namespace, self.target_name

    def replicas(self, wanted: int, at_max: bool) -> int:
        """The replicas the HPA leaves the workload with: maxReplicas at the peak; otherwise the
        workload's own count kept between minReplicas and maxReplicas, as the autoscaler clamps it."""
        if at_max:
            return self.max_replicas
        return min(max(wanted, self.min_replicas), self.max_replicas)

    def to_dict(self, replicas: int, at_max: bool) -> dict:
        return {"name": f"{self.namespace}/{self.name}", "source": self.source, "minReplicas": self.min_replicas,
                "maxReplicas": self.max_replicas, "replicas": replicas, "atMax": at_max}


def _check(raw: Mapping) -> tuple[str, str, str, int, int]:
    meta = mapping(raw.get("metadata"), "metadata")
    name = string(meta.get("name"), "metadata.name")
    if not name:
        raise required("metadata.name")
    spec = mapping(raw.get("spec"), "spec")
    ref = mapping(spec.get("scaleTargetRef"), "spec.scaleTargetRef")
    kind = string(ref.get("kind"), "spec.scaleTargetRef.kind")
    if not kind:
        raise required("spec.scaleTargetRef.kind")
    target = string(ref.get("name"), "spec.scaleTargetRef.name")
    if not target:
        raise required("spec.scaleTargetRef.name")
    low = integer(spec.get("minReplicas"), "spec.minReplicas")
    low = 1 if low is None else low
    if low < 1:
        raise invalid("spec.minReplicas", low, "must be greater than or equal to 1")
    high = integer(spec.get("maxReplicas"), "spec.maxReplicas")
    if high is None:
        raise required("spec.maxReplicas")
    if high < 1:
        raise invalid("spec.maxReplicas", high, "must be greater than 0")
    if high < low:
        raise invalid("spec.maxReplicas", high, "must be greater than or equal to `minReplicas`")
    return name, kind, target, low, high


def parse_hpa(raw: Mapping, where: str) -> HorizontalPodAutoscaler:
    """The HPA of a manifest or dump; one the API server would refuse is an InputError naming the field."""
    try:
        name, kind, target, low, high = _check(raw)
    except Invalid as err:
        shown = (raw.get("metadata") or {}).get("name") if isinstance(raw.get("metadata"), Mapping) else ""
        raise InputError(f'{KIND} "{shown or ""}": {err}', where) from None
    namespace = (raw.get("metadata") or {}).get("namespace") or "default"
    return HorizontalPodAutoscaler(namespace, name, kind, target, low, high, where)
