"""Status codes and results of extension points, single and vectorized over nodes."""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Callable, Mapping, Sequence

import numpy as np

NO_NODE_AVAILABLE = "0/{} nodes are available"


class Code(IntEnum):
    """fwk.Code, in upstream's order (the values must stay in this order)."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6


CODE_NAMES = ("Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip", "Pending")


@dataclass
class Status:
    """The result of one extension point for one pod (PreFilter, PreScore, PostFilter...).

    `node_mask` is PreFilterResult.NodeNames as a (N,) mask: the only nodes worth filtering;
    `node_names` the names themselves, which may name nodes the cluster does not have.
    """

    code: Code = Code.SUCCESS
    reasons: tuple[str, ...] = ()
    plugin: str = ""
    node_mask: np.ndarray | None = None
    node_names: frozenset[str] | None = None

    @classmethod
    def unschedulable(cls, *reasons: str, resolvable: bool = True) -> "Status":
        return cls(Code.UNSCHEDULABLE if resolvable else Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(reasons))

    @classmethod
    def skip(cls) -> "Status":
        return cls(Code.SKIP)

    @classmethod
    def error(cls, message: str) -> "Status":
        return cls(Code.ERROR, (message,))

    @property
    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    @property
    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    @property
    def is_rejected(self) -> bool:
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    @property
    def message(self) -> str:
        return ", ".join(self.reasons)


@dataclass
class NodeStatus:
    """A Filter result over all N nodes.

    `code` is the per-node Code (0 = fits). `reasons` is the plugin's reason table and
    `reason_mask[i, k]` says node i is rejected for `reasons[k]`; a node may have several
    reasons, in table order (as NodeResourcesFit lists every insufficient resource).
    `explain(i)`, when given, returns the numbers behind node i's result for `--explain`.
    """

    code: np.ndarray
    reasons: list[str] = field(default_factory=list)
    reason_mask: np.ndarray | None = None
    explain: Callable[[int], list[str]] | None = None
    # For nodes whose code is Error: what to raise when one of them reaches this plugin (a problem in
    # the input, such as a device selector that fails); None raises the runtime's PluginError.
    error: Exception | None = None

    @classmethod
    def passing(cls, n: int) -> "NodeStatus":
        """All nodes fit."""
        return cls(np.zeros(n, dtype=np.int8))

    @classmethod
    def reject_where(cls, rejected: np.ndarray, code: Code, reason: str,
                     explain: Callable[[int], list[str]] | None = None) -> "NodeStatus":
        """Rejects the nodes of a (N,) mask with one code and one reason."""
        return cls(np.where(rejected, np.int8(code), np.int8(0)), [reason], rejected[:, None], explain)

    @classmethod
    def from_reasons(cls, short: np.ndarray, reasons: Sequence[str], code: Code | np.ndarray,
                     explain: Callable[[int], list[str]] | None = None) -> "NodeStatus":
        """Rejects each node with every reason whose column of the (N, K) mask is set.

        `code` is one Code for all rejected nodes or a (N,) per-node code array.
        """
        rejected = np.zeros(short.shape[0], dtype=bool)
        for j in range(short.shape[1]):  # column by column: numpy's any(axis=1) over few columns is slow
            rejected |= short[:, j]
        codes = np.where(rejected, np.asarray(code, dtype=np.int8), np.int8(0)).astype(np.int8)
        return cls(codes, list(reasons), short, explain)

    @property
    def rejected(self) -> np.ndarray:
        return self.code != Code.SUCCESS

    def reasons_of(self, i: int) -> list[str]:
        """Returns node i's reasons, in the plugin's reason order."""
        if self.reason_mask is None or not self.code[i]:
            return []
        return [r for r, hit in zip(self.reasons, self.reason_mask[i]) if hit]


def fit_error(n_nodes: int, prefilter_msg: str = "", histogram: Mapping[str, int] | None = None,
              post_filter_msg: str = "") -> str:
    """FitError.Error(): "0/N nodes are available: <prefilter msg | sorted histogram>. <postfilter msg>"."""
    message = NO_NODE_AVAILABLE.format(n_nodes) + ":"
    if prefilter_msg:
        message += f" {prefilter_msg}."
    elif histogram:
        message += " " + ", ".join(sorted(f"{count} {reason}" for reason, count in histogram.items())) + "."
    if post_filter_msg:
        message += f" {post_filter_msg}"
    return message
