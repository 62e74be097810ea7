"""Every plugin argument that upstream defaults, left out of a KubeSchedulerConfiguration.

Each plugin is built as a profile of the configuration builds it: once without any pluginConfig,
once with args that set another field and omit the one under test. The expected values are those
of kube-scheduler's SetDefaults_* (pkg/scheduler/apis/config/v1/defaults.go) and, for the seed
plugins, koordinator's v1beta3 SetDefaults_LoadAwareSchedulingArgs and SetDefaults_LimitAwareArgs.
InterPodAffinity's hardPodAffinityWeight is in tests/plugins/test_inter_pod_affinity.py, where it
is also scored.
"""
from __future__ import annotations

import pytest

from kplan.framework.config import load_config
from kplan.framework.resource_scoring import ResourceSpec
from kplan.framework.runtime import Framework
from kplan.plugins.pod_topology_spread import SYSTEM_DEFAULT_CONSTRAINTS
from kplan.plugins.registry import REGISTRY

CPU_AND_MEMORY = (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


def configured(name: str, args: dict | None, *, enable: bool = False):
    """The plugin `name` of a configuration's only profile; `enable` adds it to multiPoint (seed plugins)."""
    profile: dict = {"schedulerName": "default-scheduler"}
    if enable:
        profile["plugins"] = {"multiPoint": {"enabled": [{"name": name}]}}
    if args is not None:
        profile["pluginConfig"] = [{"name": name, "args": args}]
    doc = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [profile]}
    return Framework(load_config(doc, "scheduler-config.yaml")[0], REGISTRY).plugins[name]


# -- DefaultPreemption: minCandidateNodesPercentage 10, minCandidateNodesAbsolute 100 ------------------
# calculateNumCandidates: max(n * percentage / 100, absolute), at most n.

@pytest.mark.parametrize("args, n, want", [
    (None, 5000, 500), (None, 500, 100),
    ({"minCandidateNodesAbsolute": 0}, 5000, 500),  # percentage left to its default: 10 % of 5000
    ({"minCandidateNodesPercentage": 0}, 5000, 100),  # absolute left to its default
], ids=["defaults, percentage wins", "defaults, absolute wins", "percentage omitted", "absolute omitted"])
def test_default_preemption_candidate_counts(args, n, want):
    assert configured("DefaultPreemption", args).calculate_num_candidates(n) == want


# -- NodeResourcesFit: scoringStrategy LeastAllocated over cpu and memory, weight 1 ---------------------

@pytest.mark.parametrize("args, strategy, resources", [
    (None, "LeastAllocated", CPU_AND_MEMORY),
    ({"ignoredResources": ["example.com/foo"]}, "LeastAllocated", CPU_AND_MEMORY),
    ({"scoringStrategy": {"type": "MostAllocated"}}, "MostAllocated", CPU_AND_MEMORY),  # resources omitted
    ({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu"}, {"name": "memory", "weight": 0}]}},
     "MostAllocated", CPU_AND_MEMORY),  # weight omitted, or 0: 1
], ids=["no pluginConfig", "scoringStrategy omitted", "resources omitted", "weights omitted"])
def test_node_resources_fit_scoring_strategy(args, strategy, resources):
    fit = configured("NodeResourcesFit", args)
    assert (fit.strategy, fit.resources) == (strategy, resources)


# -- NodeResourcesBalancedAllocation: resources cpu and memory, weight 1 ---------------------------------

@pytest.mark.parametrize("args, resources", [
    (None, CPU_AND_MEMORY), ({}, CPU_AND_MEMORY),
    ({"resources": [{"name": "cpu"}, {"name": "example.com/gpu", "weight": 0}]},
     (ResourceSpec("cpu", 1), ResourceSpec("example.com/gpu", 1))),
], ids=["no pluginConfig", "resources omitted", "weights omitted"])
def test_balanced_allocation_resources(args, resources):
    assert configured("NodeResourcesBalancedAllocation", args).resources == resources


# -- VolumeBinding: bindTimeoutSeconds 600; shape stays unset (it is defaulted only behind the
# VolumeCapacityPriority gate, off in every release kplan follows) -----------------------------------

@pytest.mark.parametrize("args", [None, {}], ids=["no pluginConfig", "bindTimeoutSeconds omitted"])
def test_volume_binding_defaults(args):
    a = configured("VolumeBinding", args).args
    assert (a["bindTimeoutSeconds"], a["shape"]) == (600, None)


# -- PodTopologySpread: defaultingType System, hence the system default constraints ------------------

@pytest.mark.parametrize("args", [None, {}], ids=["no pluginConfig", "defaultingType omitted"])
def test_pod_topology_spread_defaulting_type(args):
    spread = configured("PodTopologySpread", args)
    assert spread.system_defaulted is True
    # hostname maxSkew 3 and zone maxSkew 5, ScheduleAnyway (pod_topology_spread.systemDefaultConstraints)
    assert [(c["topologyKey"], c["maxSkew"], c["whenUnsatisfiable"]) for c in spread.default_constraints] == [
        ("kubernetes.io/hostname", 3, "ScheduleAnyway"), ("topology.kubernetes.io/zone", 5, "ScheduleAnyway")]
    assert spread.default_constraints == list(SYSTEM_DEFAULT_CONSTRAINTS)


# -- LoadAwareScheduling (koordinator v1beta3) ---------------------------------------------------------

@pytest.mark.parametrize("args", [None, {"dominantResourceWeight": 0}], ids=["no pluginConfig", "fields omitted"])
def test_load_aware_scheduling_defaults(args):
    a = configured("LoadAwareScheduling", args, enable=True).args
    assert a.filter_expired is True and a.schedule_when_expired is False and a.expiration_seconds == 180
    assert a.resource_weights == {"cpu": 1, "memory": 1}
    assert a.usage_thresholds == {"cpu": 65, "memory": 95}
    assert a.scaling_factors == {"cpu": 85, "memory": 70}


def test_load_aware_scheduling_scaling_factors_fill_in_what_is_omitted():
    # Given factors keep theirs; cpu and memory that are missing get their defaults.
    a = configured("LoadAwareScheduling", {"estimatedScalingFactors": {"memory": 50}}, enable=True).args
    assert a.scaling_factors == {"cpu": 85, "memory": 50}


# -- LimitAware (koordinator) and NodeResourcesLimitAware: scoringResourceWeights cpu 1, memory 1 ----------

@pytest.mark.parametrize("name", ["LimitAware", "NodeResourcesLimitAware"])
@pytest.mark.parametrize("args, weights", [
    (None, {"cpu": 1, "memory": 1}), ({"scoringResourceWeights": {}}, {"cpu": 1, "memory": 1}),
    ({"scoringResourceWeights": {"cpu": 0, "memory": 3}}, {"cpu": 1, "memory": 3}),
], ids=["no pluginConfig", "weights empty", "a weight of 0"])
def test_limit_aware_scoring_weights(name, args, weights):
    assert configured(name, args, enable=True).weights == weights
