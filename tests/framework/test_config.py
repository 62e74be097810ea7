"""KubeSchedulerConfiguration handling: mergePluginSet cases ported from TestMergePlugins
(pkg/scheduler/apis/config/v1/default_plugins_test.go), plus MultiPoint expansion and weights."""
import pytest

from kplan.errors import InputError
from kplan.framework.config import PluginRef, PluginSet, _merge_set, default_profile, load_config
from kplan.framework.interfaces import Handle
from kplan.plugins.registry import REGISTRY
from kplan.framework.runtime import Framework


def ps(*names, disabled=()):
    return PluginSet([n if isinstance(n, PluginRef) else PluginRef(n) for n in names], list(disabled))


W = PluginRef
MERGE_CASES = [
    ("AppendCustomPlugin", ps("DefaultPlugin1", "DefaultPlugin2"), ps("CustomPlugin"),
     ["DefaultPlugin1", "DefaultPlugin2", "CustomPlugin"]),
    ("InsertAfterDefaultPlugins2", ps("DefaultPlugin1", "DefaultPlugin2"),
     ps("CustomPlugin", "DefaultPlugin2", disabled=["DefaultPlugin2"]),
     ["DefaultPlugin1", "CustomPlugin", "DefaultPlugin2"]),
    ("InsertBeforeAllPlugins", ps("DefaultPlugin1", "DefaultPlugin2"),
     ps("CustomPlugin", "DefaultPlugin1", "DefaultPlugin2", disabled=["*"]),
     ["CustomPlugin", "DefaultPlugin1", "DefaultPlugin2"]),
    ("ReorderDefaultPlugins", ps("DefaultPlugin1", "DefaultPlugin2"),
     ps("DefaultPlugin2", "DefaultPlugin1", disabled=["*"]), ["DefaultPlugin2", "DefaultPlugin1"]),
    ("CustomPluginOverrideDefaultPlugin", ps("Plugin1", "Plugin2", "Plugin3"),
     ps(W("Plugin1", 2), W("Plugin3", 3)), [W("Plugin1", 2), "Plugin2", W("Plugin3", 3)]),
    ("OrderPreserveAfterOverride", ps("Plugin1", "Plugin2", "Plugin3"),
     ps(W("Plugin2", 2), W("Plugin1", 1)), [W("Plugin1", 1), W("Plugin2", 2), "Plugin3"]),
    ("RepeatedCustomPlugin", ps("Plugin1", "Plugin2", "Plugin3"),
     ps("Plugin1", W("Plugin2", 2), "Plugin3", W("Plugin2", 4)),
     ["Plugin1", W("Plugin2", 4), "Plugin3", W("Plugin2", 2)]),
    ("Append disabled Multipoint plugins", ps("DefaultPlugin1", "DefaultPlugin2"),
     ps("CustomPlugin", "CustomPlugin2", disabled=["DefaultPlugin2"]),
     ["DefaultPlugin1", "CustomPlugin", "CustomPlugin2"]),
    ("multipoint with only disabled gets merged", ps("DefaultPlugin"), ps(disabled=["DefaultPlugin"]), []),
]


@pytest.mark.parametrize("default,custom,want", [c[1:] for c in MERGE_CASES], ids=[c[0] for c in MERGE_CASES])
def test_merge_plugin_set(default, custom, want):
    got = _merge_set(default, custom)
    assert got.enabled == [w if isinstance(w, PluginRef) else PluginRef(w) for w in want]


def config(plugins=None, plugin_config=None, name="default-scheduler"):
    profile = {"schedulerName": name}
    if plugins is not None:
        profile["plugins"] = plugins
    if plugin_config is not None:
        profile["pluginConfig"] = plugin_config
    return {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "profiles": [profile]}


def names(plugins):
    return [p.name for p in plugins]


def test_default_profile_points_and_weights():
    fw = Framework(default_profile(), REGISTRY)
    # v1.36's applyFeatureGates appends NodeDeclaredFeatures (its gate is on by default) after DefaultBinder.
    assert names(fw.points["filter"]) == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                                          "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "NodeVolumeLimits",
                                          "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity",
                                          "DynamicResources", "NodeDeclaredFeatures"]
    assert names(fw.points["reserve"]) == ["VolumeBinding", "DynamicResources"]
    assert names(fw.points["preFilter"])[-1] == "NodeDeclaredFeatures"
    # applyFeatureGates puts DynamicResources (gate on from v1.34) just before DefaultPreemption.
    assert names(fw.points["postFilter"]) == ["DynamicResources", "DefaultPreemption"]
    assert names(fw.points["preFilter"]).index("DynamicResources") > names(fw.points["preFilter"]).index(
        "InterPodAffinity")
    assert names(fw.points["preEnqueue"]) == ["SchedulingGates", "DynamicResources"]
    # getScoreWeights over every Score plugin of getDefaultPlugins: VolumeBinding has no weight
    # there, and an unset weight becomes 1 (kube-scheduler v1.34.1 reports the same map).
    assert fw.weights == {"TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "VolumeBinding": 1,
                          "PodTopologySpread": 2, "InterPodAffinity": 2, "NodeResourcesBalancedAllocation": 1,
                          "ImageLocality": 1}
    assert fw.not_simulated == []
    assert "DynamicResources" not in fw.not_simulated


@pytest.mark.parametrize("version, present", [((1, 33), False), ((1, 33, 9), False), ((1, 34), True),
                                              ((1, 36), True), (None, True)])
def test_dynamic_resources_in_the_default_profile_from_1_34(version, present):
    # DynamicResourceAllocation: beta and off by default in v1.32-v1.33, GA and on from v1.34.
    fw = Framework(default_profile(), REGISTRY, Handle(kube_version=version))
    assert ("DynamicResources" in names(fw.points["postFilter"])) is present
    assert ("DynamicResources" in names(fw.points["preFilter"])) is present
    assert "DefaultPreemption" in names(fw.points["postFilter"])


@pytest.mark.parametrize("version, present", [((1, 35), False), ((1, 35, 4), False), ((1, 36), True), (None, True)])
def test_node_declared_features_in_the_default_profile_from_1_36(version, present):
    # Before v1.36 the NodeDeclaredFeatures gate is off and getDefaultPlugins leaves the plugin out.
    fw = Framework(default_profile(), REGISTRY, Handle(kube_version=version))
    for point in ("preFilter", "filter"):
        assert ("NodeDeclaredFeatures" in names(fw.points[point])) is present
    assert "NodeDeclaredFeatures" not in fw.not_simulated and "NodeDeclaredFeatures" not in fw.weights


def test_score_point_weight_overrides_multipoint_and_zero_becomes_one():
    fw = Framework(load_config(config({"score": {"enabled": [{"name": "ImageLocality", "weight": 5},
                                                             {"name": "NodeResourcesFit"}]}}), "c.yaml")[0], REGISTRY)
    assert fw.weights["ImageLocality"] == 5
    assert fw.weights["NodeResourcesFit"] == 1
    # expandMultiPointPlugins: overrides first, in the order the Score point lists them, then MultiPoint.
    assert names(fw.points["score"]) == ["ImageLocality", "NodeResourcesFit", "TaintToleration", "NodeAffinity",
                                         "VolumeBinding", "PodTopologySpread", "InterPodAffinity",
                                         "NodeResourcesBalancedAllocation"]


def test_disable_all_scores():
    fw = Framework(load_config(config({"score": {"disabled": [{"name": "*"}]}}), "c.yaml")[0], REGISTRY)
    assert fw.points["score"] == [] and fw.weights == {}
    assert "NodeResourcesFit" in names(fw.points["filter"])


def test_multipoint_plugin_disabled_at_one_point():
    profile = load_config(config({"filter": {"disabled": [{"name": "TaintToleration"}]}}), "c.yaml")[0]
    fw = Framework(profile, REGISTRY)
    assert "TaintToleration" not in names(fw.points["filter"])
    assert "TaintToleration" in names(fw.points["score"])


@pytest.mark.parametrize("doc,message", [
    (config({"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}), "plugin 'NoSuchPlugin' does not exist"),
    (config(plugin_config=[{"name": "Bogus", "args": {}}]), "plugin 'Bogus' does not exist"),
    ({"apiVersion": "kubescheduler.config.k8s.io/v1beta1", "kind": "KubeSchedulerConfiguration"},
     "unsupported apiVersion"),
    ({"kind": "Pod"}, "not a KubeSchedulerConfiguration"),
    (config({"filter": {"enabled": [{"name": "ImageLocality"}]}}), "does not extend filter"),
    # A plugin without arguments decodes none (strict decoding): the message says it knows none.
    (config(plugin_config=[{"name": "NodeName", "args": {"weight": 2}}]),
     "NodeName args: unknown field.s. weight; known: none$"),
])
def test_bad_config_is_input_error(doc, message):
    with pytest.raises(InputError, match=message):
        Framework(load_config(doc, "c.yaml")[0], REGISTRY)


def test_two_profiles_with_one_scheduler_name_are_refused():
    # ValidateKubeSchedulerConfiguration: profiles[1].schedulerName: Duplicate value.
    doc = config()
    doc["profiles"].append({"schedulerName": "default-scheduler"})
    with pytest.raises(InputError, match="duplicate profile schedulerName 'default-scheduler'"):
        load_config(doc, "c.yaml")


def test_profiles_by_scheduler_name():
    doc = config()
    doc["profiles"].append({"schedulerName": "no-scoring", "plugins": {"score": {"disabled": [{"name": "*"}]}}})
    profiles = load_config(doc, "c.yaml")
    assert [p.scheduler_name for p in profiles] == ["default-scheduler", "no-scoring"]
