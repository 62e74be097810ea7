"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1): profiles, plugin sets, args.

Defaulting follows upstream: each profile's plugins are merged into the default MultiPoint
set (mergePlugins), and MultiPoint is expanded to every extension point a plugin implements,
with explicit per-point settings overriding it (expandMultiPointPlugins).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from kplan.errors import InputError

API_VERSIONS = ("kubescheduler.config.k8s.io/v1",)
DEFAULT_SCHEDULER_NAME = "default-scheduler"

# Extension points of the v1 Plugins struct, in upstream order.
POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore", "score",
          "reserve", "permit", "preBind", "bind", "postBind")

# getDefaultPlugins() of the newest release: MultiPoint plugins with their score weights
# (DynamicResources is on by default since DRA went GA in v1.34; applyFeatureGates appends
# NodeDeclaredFeatures while its gate is on, from v1.36 by default: older releases build that
# plugin as one that joins no extension point, see kplan.plugins.node_declared_features).
DEFAULT_MULTI_POINT: tuple[tuple[str, int], ...] = (
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DynamicResources", 0),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
    ("NodeDeclaredFeatures", 0),
)


@dataclass(frozen=True)
class PluginRef:
    name: str
    weight: int = 0


@dataclass
class PluginSet:
    enabled: list[PluginRef] = field(default_factory=list)
    disabled: list[str] = field(default_factory=list)


@dataclass
class Profile:
    """One scheduler profile: merged plugin sets per extension point plus plugin args."""

    scheduler_name: str
    plugins: dict[str, PluginSet]  # "multiPoint" and the POINTS
    plugin_config: dict[str, Mapping[str, Any]] = field(default_factory=dict)


def default_profile(name: str = DEFAULT_SCHEDULER_NAME) -> Profile:
    return Profile(name, _merge_all({}))


def load_config(doc: Any, source: str) -> list[Profile]:
    """Builds the profiles of a KubeSchedulerConfiguration document."""
    if not isinstance(doc, Mapping) or doc.get("kind") != "KubeSchedulerConfiguration":
        raise InputError("not a KubeSchedulerConfiguration (kind: KubeSchedulerConfiguration)", source)
    if doc.get("apiVersion") not in API_VERSIONS:
        raise InputError(f"unsupported apiVersion {doc.get('apiVersion')!r}; use {API_VERSIONS[0]}", source)
    raw_profiles = doc.get("profiles") or [{}]
    if not isinstance(raw_profiles, list):
        raise InputError("profiles must be a list", source)
    profiles = [_profile(p, k, source) for k, p in enumerate(raw_profiles)]
    names = [p.scheduler_name for p in profiles]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate:
        raise InputError(f"duplicate profile schedulerName {duplicate!r}", source)
    return profiles


def _profile(raw: Any, k: int, source: str) -> Profile:
    if not isinstance(raw, Mapping):
        raise InputError(f"profiles[{k}] must be a mapping", source)
    name = raw.get("schedulerName") or (DEFAULT_SCHEDULER_NAME if k == 0 else "")
    if not name:
        raise InputError(f"profiles[{k}].schedulerName is required", source)
    custom = {point: _plugin_set(plugins, f"profiles[{k}].plugins.{point}", source)
              for point, plugins in (raw.get("plugins") or {}).items()}
    unknown = sorted(set(custom) - set(POINTS) - {"multiPoint"})
    if unknown:
        raise InputError(f"profiles[{k}].plugins: unknown extension point(s) {', '.join(unknown)}", source)
    config: dict[str, Mapping[str, Any]] = {}
    for entry in raw.get("pluginConfig") or ():
        if not isinstance(entry, Mapping) or not entry.get("name"):
            raise InputError(f"profiles[{k}].pluginConfig entries need a name", source)
        if entry["name"] in config:
            raise InputError(f"profiles[{k}].pluginConfig: {entry['name']} configured twice", source)
        args = entry.get("args") or {}
        if not isinstance(args, Mapping):
            raise InputError(f"profiles[{k}].pluginConfig {entry['name']}: args must be a mapping", source)
        config[entry["name"]] = args
    return Profile(name, _merge_all(custom), config)


def _plugin_set(raw: Any, where: str, source: str) -> PluginSet:
    if raw is None:
        return PluginSet()
    if not isinstance(raw, Mapping):
        raise InputError(f"{where} must be a mapping with enabled/disabled", source)
    enabled = []
    for p in raw.get("enabled") or ():
        if not isinstance(p, Mapping) or not p.get("name"):
            raise InputError(f"{where}.enabled entries need a name", source)
        weight = p.get("weight") or 0
        if not isinstance(weight, int) or weight < 0:
            raise InputError(f"{where}: weight of {p['name']} must be a non-negative integer", source)
        enabled.append(PluginRef(p["name"], weight))
    disabled = [p.get("name", "") if isinstance(p, Mapping) else str(p) for p in raw.get("disabled") or ()]
    return PluginSet(enabled, disabled)


def _merge_all(custom: Mapping[str, PluginSet]) -> dict[str, PluginSet]:
    defaults = {point: PluginSet() for point in ("multiPoint", *POINTS)}
    defaults["multiPoint"] = PluginSet([PluginRef(n, w) for n, w in DEFAULT_MULTI_POINT])
    return {point: _merge_set(defaults[point], custom.get(point, PluginSet())) for point in defaults}


def _merge_set(default: PluginSet, custom: PluginSet) -> PluginSet:
    """mergePluginSet: custom re-configurations replace defaults in place; the rest are appended."""
    disabled = set(custom.disabled) | set(default.disabled)
    custom_index = {p.name: k for k, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if "*" not in disabled:
        for plugin in default.enabled:
            if plugin.name in disabled:
                continue
            if plugin.name in custom_index:
                replaced.add(custom_index[plugin.name])
                plugin = custom.enabled[custom_index[plugin.name]]
            enabled.append(plugin)
    enabled += [p for k, p in enumerate(custom.enabled) if k not in replaced]
    return PluginSet(enabled, [*custom.disabled, *default.disabled])
