"""ClusterState: the node table as numpy columns, updated incrementally as pods are placed."""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from itertools import chain
from typing import Any, Iterable, Iterator, Mapping, Sequence

import numpy as np

from kplan.api.objects import HostPort, Node, Pod, Taint
from kplan.api.resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, ResourceList

NATIVE_RESOURCES = (CPU, MEMORY, EPHEMERAL_STORAGE)
NON_ZERO_RESOURCES = (CPU, MEMORY)
VECTOR_CACHE_SIZE = 4096


@dataclass
class LabelColumn:
    """One label key over all nodes: a code per node (-1 where the label is absent) and the values."""

    codes: np.ndarray  # int32 (N,)
    values: list[str]
    code_of: dict[str, int]

    def codes_for(self, values: Iterable[str]) -> np.ndarray:
        """Returns the codes of the given values that some node carries."""
        return np.array([self.code_of[v] for v in values if v in self.code_of], dtype=np.int32)

    def isin(self, values: Iterable[str]) -> np.ndarray:
        """Returns a (N,) mask of nodes whose value is one of values."""
        return np.isin(self.codes, self.codes_for(values))

    @property
    def present(self) -> np.ndarray:
        return self.codes >= 0


class _BoundPods:
    """The pods a table counts, read in one pass over the snapshot's pods (each appended to its node's
    bucket): each bound pod's node row, its resource profile (`profiles`: one pod per distinct
    profile; `of_pod`: each pod's position among them) and its host ports, if any. Pods of one
    template share their parsed resources (Pod.resource_profile): a profile's amounts are read
    once; a pod whose amounts come from more than its only container is a profile of its own."""

    def __init__(self, pods: Iterable[Pod], index: Mapping[str, int], buckets: list[list[Pod]]):
        self.pods: list[Pod] = []
        self.profiles: list[Pod] = []
        rows: list[int] = []
        of_pod: list[int] = []
        self.ports: list[tuple[int, list[HostPort]]] = []  # (row, host ports) of the pods that bind some
        position: dict[Any, int] = {}
        keep, add_row, add_profile = self.pods.append, rows.append, of_pod.append
        for pod in pods:
            i = index.get(pod.node_name) if pod.node_name else None
            if i is None or not pod.occupies_node:
                continue
            keep(pod)
            add_row(i)
            buckets[i].append(pod)
            if pod.host_ports:
                self.ports.append((i, pod.host_ports))
            profile = pod.resource_profile
            at = position.get(profile) if profile is not None else None
            if at is None:
                at = len(self.profiles)
                self.profiles.append(pod)
                if profile is not None:
                    position[profile] = at
            add_profile(at)
        self.rows = np.array(rows, dtype=np.intp)
        self.of_pod = np.array(of_pod, dtype=np.intp)


class ClusterState:
    """Per-node columns (allocatable, requested, non-zero requested, pod counts, labels, taints).

    Rows are node positions; `assume` and `forget` update one row, nothing is rebuilt. CPU is
    in milli-units, every other resource in whole units (bytes for memory and storage).
    """

    def __init__(self, nodes: Sequence[Node], pods: Iterable[Pod]):
        self.nodes = list(nodes)
        self.names = [node.name for node in self.nodes]
        self.index = {name: i for i, name in enumerate(self.names)}
        self.name_array = np.array(self.names, dtype=str)
        self.n = len(self.nodes)
        self.pods_by_node: list[list[Pod]] = [[] for _ in range(self.n)]
        bound = _BoundPods(pods, self.index, self.pods_by_node)
        offered = {r for node in self.nodes for r in node.allocatable} | {r for p in bound.profiles for r in p.requests}
        self.resources = list(NATIVE_RESOURCES) + sorted(offered - set(NATIVE_RESOURCES) - {PODS})
        self.res_index = {r: k for k, r in enumerate(self.resources)}
        self._vectors: dict[int, tuple[ResourceList, np.ndarray]] = {}
        self._pairs: dict[int, tuple[ResourceList, np.ndarray]] = {}  # cpu/memory vectors, as _vectors
        self._spec_vectors: dict[int, tuple] = {}  # id(pod spec) -> (spec, resource count, vectors)
        self.allocatable = self._matrix([node.allocatable for node in self.nodes])
        self.allowed_pods = np.array([node.allocatable.get(PODS, 0) for node in self.nodes], dtype=np.int64)
        self.unschedulable = np.array([node.unschedulable for node in self.nodes], dtype=bool)
        self._intern_taints()
        self._label_columns: dict[str, LabelColumn] = {}
        self._image_index: dict[str, tuple[np.ndarray, np.ndarray]] | None = None
        self.used_ports: dict[int, list[HostPort]] = {}
        self.pod_index = None  # kplan.cluster.pod_index.PodIndex, built on first use
        # The bound pods in snapshot order and their node rows, while no pod has come or gone (see
        # bound_pods).
        self.pods_as_loaded: tuple[list[Pod], np.ndarray] | None = (bound.pods, bound.rows)
        self.volumes = None  # kplan.cluster.volumes.VolumeState, when the run reads storage objects
        self.devices = None  # kplan.cluster.devices.DeviceState, when the run reads DRA objects
        # Moves on every change a scheduling cycle could read (pods, taints, claims, devices): equal
        # generations mean an unchanged table, so an answer computed at one holds at the other.
        self.generation = 0
        self._load_pods(bound)

    # -- construction -------------------------------------------------------------------------

    def _matrix(self, lists: Sequence[ResourceList]) -> np.ndarray:
        out = np.zeros((len(lists), len(self.resources)), dtype=np.int64)
        for k, r in enumerate(self.resources):
            out[:, k] = [rl.get(r, 0) for rl in lists]
        return out

    def _intern_taints(self) -> None:
        ids: dict[tuple[Taint, ...], int] = {}
        self.taint_set_ids = np.array([ids.setdefault(node.taints, len(ids)) for node in self.nodes],
                                      dtype=np.int32)
        self.taint_sets: list[tuple[Taint, ...]] = list(ids)

    def _load_pods(self, bound: _BoundPods) -> None:
        rows, of_pod, profiles = bound.rows, bound.of_pod, bound.profiles
        self.requested = np.zeros_like(self.allocatable)
        self.non_zero_requested = np.zeros((self.n, len(NON_ZERO_RESOURCES)), dtype=np.int64)
        self.pod_count = np.zeros(self.n, dtype=np.int64)
        self.pods_total = len(bound.pods)  # pod_count.sum(), kept without a pass over the nodes
        # Pod.max_limits summed per node (LimitAware's allocated limits), and its cpu/memory with
        # the non-zero defaults for scoring: each profile's amounts, added once per pod.
        self.allocated_limits = np.zeros_like(self.allocatable)
        self.non_zero_limits = np.zeros((self.n, len(NON_ZERO_RESOURCES)), dtype=np.int64)
        if bound.pods:
            np.add.at(self.requested, rows, self._matrix([p.requests for p in profiles])[of_pod])
            np.add.at(self.non_zero_requested, rows, self._pairs_of([p.non_zero_requests for p in profiles])[of_pod])
            np.add.at(self.pod_count, rows, 1)
            np.add.at(self.allocated_limits, rows, self._matrix([p.max_limits for p in profiles])[of_pod])
            np.add.at(self.non_zero_limits, rows, self._pairs_of([p.non_zero_max_limits for p in profiles])[of_pod])
        for i, ports in bound.ports:
            self.used_ports.setdefault(i, []).extend(ports)

    @staticmethod
    def _pairs_of(lists: Sequence[ResourceList]) -> np.ndarray:
        """The cpu/memory amounts of each list, as an (L, 2) matrix."""
        return np.array([[rl.get(r, 0) for r in NON_ZERO_RESOURCES] for rl in lists],
                        dtype=np.int64).reshape(-1, len(NON_ZERO_RESOURCES))

    # -- lookups --------------------------------------------------------------------------------

    def clone(self) -> "ClusterState":
        """An independent copy of the table, for a run that must not see another's placements (kplan
        compare): the columns, the pods per node and the pod index are copied; the nodes, the pods
        themselves and the caches derived from the nodes alone are shared."""
        new = object.__new__(ClusterState)
        new.__dict__.update(self.__dict__)
        for key, value in self.__dict__.items():
            if isinstance(value, np.ndarray):
                new.__dict__[key] = value.copy()
        new.resources, new.res_index = list(self.resources), dict(self.res_index)
        new._vectors, new._pairs, new._spec_vectors = {}, {}, {}
        new._label_columns = dict(self._label_columns)
        new.pods_by_node = [list(b) for b in self.pods_by_node]
        new.used_ports = {i: list(ports) for i, ports in self.used_ports.items()}
        new.pod_index = self.pod_index.clone() if self.pod_index is not None else None
        new.volumes = self.volumes.clone(new) if self.volumes is not None else None
        new.devices = self.devices.clone(new) if self.devices is not None else None
        return new

    def without(self, rows: Iterable[int]) -> "ClusterState":
        """A copy of the table without these nodes, as if they left the cluster with their pods: the
        other rows keep their order (and shift down past a removed one), every per-node column (each
        array whose first axis is the nodes), the pod index and the volumes follow; this table is
        unchanged."""
        gone = sorted(set(rows))
        keep = np.ones(self.n, dtype=bool)
        keep[gone] = False
        kept = np.flatnonzero(keep)
        position = np.full(self.n, -1, dtype=np.intp)
        position[kept] = np.arange(len(kept))
        new = object.__new__(ClusterState)
        new.__dict__.update(self.__dict__)
        for key, value in self.__dict__.items():
            if isinstance(value, np.ndarray) and value.shape[:1] == (self.n,):
                new.__dict__[key] = value[kept]
        new.nodes = [self.nodes[i] for i in kept]
        new.pods_as_loaded = None
        new.names = [self.names[i] for i in kept]
        new.index = {name: k for k, name in enumerate(new.names)}
        new.n = len(kept)
        new.resources, new.res_index = list(self.resources), dict(self.res_index)
        new._vectors, new._pairs, new._spec_vectors = {}, {}, {}
        new.taint_sets = list(self.taint_sets)
        new._label_columns = {key: LabelColumn(col.codes[kept], col.values, col.code_of)
                              for key, col in self._label_columns.items()}
        new._image_index = None
        new.pods_by_node = [list(self.pods_by_node[i]) for i in kept]
        new.used_ports = {int(position[i]): list(ports) for i, ports in self.used_ports.items() if keep[i]}
        new.pods_total = self.pods_total - int(self.pod_count[gone].sum())
        if self.pod_index is not None:
            index = self.pod_index.clone()
            for i in gone:
                for pod in self.pods_by_node[i]:
                    index.remove(pod, i)
            index.relocate(position, new.n)
            new.pod_index = index
        new.volumes = self.volumes.over(new) if self.volumes is not None else None
        new.devices = self.devices.over(new) if self.devices is not None else None
        return new

    def set_taints(self, i: int, taints: tuple[Taint, ...]) -> None:
        """Gives node i these taints (a drain's taint on a node about to go, or taken off again)."""
        self.generation += 1
        if taints not in self.taint_sets:
            self.taint_sets = [*self.taint_sets, taints]  # a new list: clones share the old one
        self.taint_set_ids[i] = self.taint_sets.index(taints)

    def ensure_resources(self, names: Iterable[str]) -> None:
        """Adds zero columns for resources no node offers, so a request for them can be compared."""
        missing = [r for r in names if r not in self.res_index and r != PODS]
        if not missing:
            return
        self.resources.extend(missing)
        self.res_index = {r: k for k, r in enumerate(self.resources)}
        self._vectors.clear()
        pad = ((0, 0), (0, len(missing)))
        self.allocatable = np.pad(self.allocatable, pad)
        self.requested = np.pad(self.requested, pad)
        self.allocated_limits = np.pad(self.allocated_limits, pad)

    def vector(self, amounts: ResourceList) -> np.ndarray:
        """Returns a (R,) int64 vector of the amounts over the table's resource columns (read-only).

        Replicas of one template share their resource dicts, so vectors are cached by the dict's
        identity; new columns clear the cache.
        """
        cached = self._vectors.get(id(amounts))
        if cached is not None and cached[0] is amounts:
            return cached[1]
        self.ensure_resources(amounts)
        vec = np.zeros(len(self.resources), dtype=np.int64)
        for name, v in amounts.items():
            if name != PODS:
                vec[self.res_index[name]] = v
        vec.flags.writeable = False
        if len(self._vectors) >= VECTOR_CACHE_SIZE:
            self._vectors.clear()
        self._vectors[id(amounts)] = (amounts, vec)
        return vec

    def label_column(self, key: str) -> LabelColumn:
        """Returns the label key's column, built on first use."""
        col = self._label_columns.get(key)
        if col is None:
            code_of: dict[str, int] = {}
            codes = np.array([code_of.setdefault(v, len(code_of)) if (v := node.labels.get(key)) is not None
                              else -1 for node in self.nodes], dtype=np.int32)
            col = self._label_columns[key] = LabelColumn(codes, list(code_of), code_of)
        return col

    def image_index(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Returns image name -> (node positions, size in bytes) for every image a node reports."""
        if self._image_index is None:
            rows: dict[str, tuple[list[int], list[int]]] = {}
            for i, node in enumerate(self.nodes):
                for image, size in node.images.items():
                    r = rows.setdefault(image, ([], []))
                    r[0].append(i)
                    r[1].append(size)
            self._image_index = {image: (np.array(ix, dtype=np.intp), np.array(sz, dtype=np.int64))
                                 for image, (ix, sz) in rows.items()}
        return self._image_index

    def bound_pods(self) -> tuple[list[Pod], np.ndarray]:
        """Every pod of the table (a new list) and its node row: in snapshot order while no pod has
        come or gone (the order they lie in memory: a pass over them is twice as fast as node by
        node), else node by node."""
        if self.pods_as_loaded is not None:
            pods, rows = self.pods_as_loaded
            return list(pods), rows
        return (list(chain.from_iterable(self.pods_by_node)),
                np.repeat(np.arange(self.n, dtype=np.intp), [len(b) for b in self.pods_by_node]))

    # -- incremental updates ----------------------------------------------------------------------

    def assume(self, pod: Pod, i: int) -> None:
        """Accounts a pod placed on node i (the scheduler cache's AssumePod)."""
        self.generation += 1
        self.pods_as_loaded = None
        self._account(pod, i, +1)
        self.pods_by_node[i].append(pod)
        if self.pod_index is not None:
            self.pod_index.add(pod, i)
        if self.volumes is not None:
            self.volumes.pod_added(pod, i)
        if self.devices is not None:
            self.devices.pod_added(pod, i)
        if ports := pod.host_ports:
            self.used_ports.setdefault(i, []).extend(ports)

    def forget(self, pod: Pod, i: int) -> None:
        """Removes a pod from node i (eviction, preemption victim, or a what-if undo)."""
        self.generation += 1
        self.pods_as_loaded = None
        self._account(pod, i, -1)
        self.pods_by_node[i] = [p for p in self.pods_by_node[i] if p is not pod]
        if self.pod_index is not None:
            self.pod_index.remove(pod, i)
        if self.volumes is not None:
            self.volumes.pod_removed(pod, i)
        if self.devices is not None:
            self.devices.pod_removed(pod, i)
        for port in pod.host_ports:
            self.used_ports[i].remove(port)

    @contextmanager
    def scratch_row(self, i: int) -> Iterator[None]:
        """Lets assume/forget change node i for a what-if, and puts the row back as it was at exit
        (its generation too).

        Inside, the pod index, the volume counts and the devices are not told about the changes: this is for
        what-ifs whose plugins read only the pod and the node (preemption's dry run over such a
        profile), where undoing a row costs a few copies instead of an assume or forget per pod."""
        columns = (self.requested, self.non_zero_requested, self.allocated_limits, self.non_zero_limits)
        saved = [col[i].copy() for col in columns]
        count, total, index, volumes = int(self.pod_count[i]), self.pods_total, self.pod_index, self.volumes
        devices, generation = self.devices, self.generation
        pods = list(self.pods_by_node[i])
        ports = list(self.used_ports[i]) if i in self.used_ports else None
        self.pod_index = self.volumes = self.devices = None
        try:
            yield
        finally:
            for col, row in zip(columns, saved):
                col[i] = row
            self.pod_count[i], self.pods_total, self.pod_index, self.volumes = count, total, index, volumes
            self.devices, self.generation = devices, generation
            self.pods_by_node[i] = pods
            if ports is None:
                self.used_ports.pop(i, None)
            else:
                self.used_ports[i] = ports

    def _account(self, pod: Pod, i: int, sign: int) -> None:
        requests, non_zero, limits, non_zero_limits = self._pod_vectors(pod)
        if sign > 0:
            self.requested[i] += requests
            self.non_zero_requested[i] += non_zero
            self.allocated_limits[i] += limits
            self.non_zero_limits[i] += non_zero_limits
        else:
            self.requested[i] -= requests
            self.non_zero_requested[i] -= non_zero
            self.allocated_limits[i] -= limits
            self.non_zero_limits[i] -= non_zero_limits
        self.pod_count[i] += sign
        self.pods_total += sign

    def _pod_vectors(self, pod: Pod) -> tuple[np.ndarray, ...]:
        """Returns the pod's requests, non-zero requests, max limits and their non-zero cpu/memory
        as vectors, cached per spec object: they depend on the spec (and a bound pod's on its
        status too, but no two snapshot pods share a spec object), and replicas share theirs (so
        a new replica's parsed amounts are not needed)."""
        spec = pod.spec
        hit = self._spec_vectors.get(id(spec))
        if hit is not None and hit[0] is spec and hit[1] == len(self.resources):
            return hit[2]
        self.ensure_resources([*pod.requests, *pod.max_limits])  # first: the vectors' length then holds
        vectors = (self.vector(pod.requests), self._non_zero_pair(pod.non_zero_requests),
                   self.vector(pod.max_limits), self._non_zero_pair(pod.non_zero_max_limits))
        if len(self._spec_vectors) >= VECTOR_CACHE_SIZE:
            self._spec_vectors.clear()
        self._spec_vectors[id(spec)] = (spec, len(self.resources), vectors)
        return vectors

    def _non_zero_pair(self, amounts: ResourceList) -> np.ndarray:
        """Returns the (cpu, memory) amounts as a read-only vector, cached like `vector`."""
        cached = self._pairs.get(id(amounts))
        if cached is not None and cached[0] is amounts:
            return cached[1]
        vec = np.array([amounts.get(r, 0) for r in NON_ZERO_RESOURCES], dtype=np.int64)
        vec.flags.writeable = False
        if len(self._pairs) >= VECTOR_CACHE_SIZE:
            self._pairs.clear()
        self._pairs[id(amounts)] = (amounts, vec)
        return vec
