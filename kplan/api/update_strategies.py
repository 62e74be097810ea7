"""The update strategies of Deployments, StatefulSets and DaemonSets, defaulted and validated as apps/v1 does.

Defaults follow SetDefaults_Deployment, SetDefaults_StatefulSet and SetDefaults_DaemonSet: a
Deployment rolls (maxSurge and maxUnavailable 25%), a StatefulSet rolls from the highest ordinal
down to partition 0, a DaemonSet rolls with maxUnavailable 1 and maxSurge 0. The checks and their
texts follow pkg/apis/apps/validation (ValidateDeploymentStrategy, ValidateRollingUpdateDeployment,
ValidateStatefulSetSpec's updateStrategy, ValidateRollingUpdateDaemonSet). Percentages become counts
as intstr.GetScaledValueFromIntOrPercent makes them: rounded up or down as the caller asks.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from kplan.api.validation import Invalid, forbidden, integer, mapping, not_supported, required, string

IntOrPercent = int | str
_PERCENT = re.compile(r"[0-9]+%\Z")
_PERCENT_MSG = ("a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or "
                "'93%', regex used for validation is '[0-9]+%')")
DEPLOYMENT_TYPES = ("Recreate", "RollingUpdate")
SET_TYPES = ("OnDelete", "RollingUpdate")  # StatefulSet and DaemonSet
POD_MANAGEMENT = ("OrderedReady", "Parallel")


def _invalid(path: str, value: IntOrPercent, detail: str) -> Invalid:
    # field.Error prints an IntOrString through its String(): bare, "25%" as 25%.
    return Invalid(f"{path}: Invalid value: {value}: {detail}")


def _int_or_percent(value: Any, path: str) -> IntOrPercent:
    """ValidatePositiveIntOrPercent: a non-negative integer or a percent string."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise Invalid(f"{path}: Invalid value: {value!r}: must be an integer or percentage (e.g '5%')")
    if isinstance(value, str) and not _PERCENT.match(value):
        raise Invalid(f'{path}: Invalid value: "{value}": {_PERCENT_MSG}')
    if isinstance(value, int) and value < 0:
        raise _invalid(path, value, "must be greater than or equal to 0")
    return value


def _amount(value: IntOrPercent) -> int:
    """getIntOrPercentValue: the number, whether a count or a percentage."""
    return int(value[:-1]) if isinstance(value, str) else value


def _not_over_100(value: IntOrPercent, path: str) -> None:
    if isinstance(value, str) and _amount(value) > 100:
        raise _invalid(path, value, "must not be greater than 100%")


def scaled(value: IntOrPercent, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: a count as it is, a percentage of `total` rounded up or down."""
    if isinstance(value, int):
        return value
    share = _amount(value) * total
    return -(-share // 100) if round_up else share // 100


def _rolling(spec: Mapping, field: str, path: str) -> tuple[str, Mapping | None]:
    strategy = mapping(spec.get(field), f"spec.{field}")
    kind = string(strategy.get("type"), f"spec.{field}.type") or "RollingUpdate"
    rolling = strategy.get("rollingUpdate")
    return kind, None if rolling is None else mapping(rolling, f"{path}.rollingUpdate")


@dataclass(frozen=True)
class DeploymentStrategy:
    type: str
    max_surge: IntOrPercent = 0
    max_unavailable: IntOrPercent = 0

    def fenceposts(self, replicas: int) -> tuple[int, int]:
        """ResolveFenceposts and MaxUnavailable: (maxSurge rounded up, maxUnavailable rounded down, at most
        the replicas); both 0 makes maxUnavailable 1, in case surge is refused by a quota."""
        surge = scaled(self.max_surge, replicas, True)
        unavailable = scaled(self.max_unavailable, replicas, False)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return surge, min(unavailable, replicas)


def deployment_strategy(spec: Mapping) -> DeploymentStrategy:
    """spec.strategy of a Deployment, defaulted; Invalid when the API server would refuse it."""
    path = "spec.strategy"
    kind, rolling = _rolling(spec, "strategy", path)
    if kind not in DEPLOYMENT_TYPES:
        raise not_supported(f"{path}.type", kind, DEPLOYMENT_TYPES)
    if kind == "Recreate":
        if rolling is not None:
            raise forbidden(f"{path}.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")
        return DeploymentStrategy(kind)
    rolling = rolling or {}
    surge = _int_or_percent(rolling.get("maxSurge", "25%"), f"{path}.rollingUpdate.maxSurge")
    unavailable = _int_or_percent(rolling.get("maxUnavailable", "25%"), f"{path}.rollingUpdate.maxUnavailable")
    if _amount(surge) == 0 and _amount(unavailable) == 0:
        raise _invalid(f"{path}.rollingUpdate.maxUnavailable", unavailable, "may not be 0 when `maxSurge` is 0")
    _not_over_100(unavailable, f"{path}.rollingUpdate.maxUnavailable")
    return DeploymentStrategy(kind, surge, unavailable)


@dataclass(frozen=True)
class StatefulSetStrategy:
    type: str
    partition: int = 0
    max_unavailable: IntOrPercent = 1
    pod_management: str = "OrderedReady"

    def unavailable(self, replicas: int) -> int:
        """getStatefulSetMaxUnavailable: rounded down, at least 1."""
        return max(1, scaled(self.max_unavailable, replicas, False))


def stateful_set_strategy(spec: Mapping) -> StatefulSetStrategy:
    """spec.updateStrategy and spec.podManagementPolicy of a StatefulSet, defaulted; Invalid when refused."""
    path = "spec.updateStrategy"
    policy = string(spec.get("podManagementPolicy"), "spec.podManagementPolicy") or "OrderedReady"
    if policy not in POD_MANAGEMENT:
        raise not_supported("spec.podManagementPolicy", policy, POD_MANAGEMENT)
    kind, rolling = _rolling(spec, "updateStrategy", path)
    if kind not in SET_TYPES:
        raise not_supported(f"{path}.type", kind, SET_TYPES)
    if kind == "OnDelete":
        if rolling is not None:
            raise Invalid(f"{path}.rollingUpdate: Invalid value: {dict(rolling)!r}: only allowed for "
                          "updateStrategy 'RollingUpdate'")
        return StatefulSetStrategy(kind, pod_management=policy)
    rolling = rolling or {}
    partition = integer(rolling.get("partition"), f"{path}.rollingUpdate.partition") or 0
    if partition < 0:
        raise _invalid(f"{path}.rollingUpdate.partition", partition, "must be greater than or equal to 0")
    unavailable = rolling.get("maxUnavailable")
    if unavailable is None:
        return StatefulSetStrategy(kind, partition, pod_management=policy)
    unavailable = _int_or_percent(unavailable, f"{path}.rollingUpdate.maxUnavailable")
    if _amount(unavailable) == 0:
        raise _invalid(f"{path}.rollingUpdate.maxUnavailable", unavailable, "cannot be 0")
    _not_over_100(unavailable, f"{path}.rollingUpdate.maxUnavailable")
    return StatefulSetStrategy(kind, partition, unavailable, policy)


@dataclass(frozen=True)
class DaemonSetStrategy:
    type: str
    max_surge: IntOrPercent = 0
    max_unavailable: IntOrPercent = 1

    def counts(self, desired: int) -> tuple[int, int]:
        """updatedDesiredNodeCounts: (maxSurge, maxUnavailable) of the nodes that should run the daemon,
        both rounded up (SurgeCount, UnavailableCount); both 0 makes maxUnavailable 1."""
        surge = scaled(self.max_surge, desired, True)
        unavailable = scaled(self.max_unavailable, desired, True)
        if surge == 0 and unavailable == 0:
            unavailable = 1
        return surge, unavailable


def daemon_set_strategy(spec: Mapping) -> DaemonSetStrategy:
    """spec.updateStrategy of a DaemonSet, defaulted; Invalid when the API server would refuse it."""
    path = "spec.updateStrategy"
    kind, rolling = _rolling(spec, "updateStrategy", path)
    if kind not in SET_TYPES:
        raise not_supported(f"{path}.type", kind, SET_TYPES)
    if kind == "OnDelete":
        return DaemonSetStrategy(kind)
    rolling = rolling or {}
    surge = _int_or_percent(rolling.get("maxSurge", 0), f"{path}.rollingUpdate.maxSurge")
    unavailable = _int_or_percent(rolling.get("maxUnavailable", 1), f"{path}.rollingUpdate.maxUnavailable")
    _not_over_100(unavailable, f"{path}.rollingUpdate.maxUnavailable")
    _not_over_100(surge, f"{path}.rollingUpdate.maxSurge")
    if _amount(surge) and _amount(unavailable):
        raise _invalid(f"{path}.rollingUpdate.maxSurge", surge, "may not be set when maxUnavailable is non-zero")
    if not _amount(surge) and not _amount(unavailable):
        raise required(f"{path}.rollingUpdate.maxUnavailable", "cannot be 0 when maxSurge is 0")
    return DaemonSetStrategy(kind, surge, unavailable)


STRATEGIES = {"Deployment": deployment_strategy, "StatefulSet": stateful_set_strategy,
              "DaemonSet": daemon_set_strategy}
