"""Reading dumps: what `kubectl get -o yaml|json` prints, multi-document YAML, `kind: List`,
folders of those (recursively), `.gz` files, and `-` for standard input.

A file named explicitly is strict: anything in it that is not Kubernetes objects is an InputError.
A folder is read the way support bundles and must-gather archives are laid out: a file in it that
is not Kubernetes objects (an `*-errors.json`, malformed YAML) is handed to `on_skip` with the
reason and left out whole, and files without a dump suffix (logs, READMEs) are counted there too.

Manifests (`manifests=True`) are read keeping track of keys a mapping names twice, which JSON and
YAML decoders resolve silently (the last value wins) and the API server's strict field validation
refuses: such a mapping is a RepeatedKeys. Snapshots are read without it, as fast as plain dicts."""
from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator

import msgspec
import yaml

from kplan.errors import InputError

SUFFIXES = (".yaml", ".yml", ".json")
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class RepeatedKeys(dict):
    """A mapping whose document names some key more than once. It holds the last value, as decoders do;
    `keys_read` lists the keys as written, in order, repeats included."""

    keys_read: tuple[str, ...] = ()


def _json_object(pairs: list[tuple[str, Any]]) -> dict:
    mapping = dict(pairs)
    if len(mapping) == len(pairs):
        return mapping
    repeated = RepeatedKeys(mapping)
    repeated.keys_read = tuple(k for k, _ in pairs)
    return repeated


MERGE_TAG = "tag:yaml.org,2002:merge"


class _ManifestLoader(_Loader):
    """The YAML loader, building a RepeatedKeys for a mapping that repeats a key. Keys brought in by a
    merge key (`<<: *defaults`) may be written again: that is how YAML overrides them."""

    def construct_manifest_map(self, node: yaml.MappingNode) -> Iterator[dict]:
        written = [k.value for k, _ in node.value if isinstance(k, yaml.ScalarNode) and k.tag != MERGE_TAG]
        if len(set(written)) == len(written):
            yield from self.construct_yaml_map(node)
            return
        data = RepeatedKeys()
        data.keys_read = tuple(written)
        yield data
        data.update(self.construct_mapping(node))


_ManifestLoader.add_constructor("tag:yaml.org,2002:map", _ManifestLoader.construct_manifest_map)


# on_skip(file, reason): a file of a folder left out; reason is None for a file without a dump suffix.
SkipHandler = Callable[[str, "str | None"], None]


def iter_documents(path: str, on_skip: SkipHandler | None = None, *,
                   manifests: bool = False) -> Iterator[tuple[str, int, Any]]:
    """Yields (source, document number, object) for every object in a path, expanding Lists.

    With `on_skip`, a folder's files that are not Kubernetes objects are reported to it and left
    out; without it (and always for a file named explicitly or `-`) they are an InputError. With
    `manifests`, a mapping that repeats a key is a RepeatedKeys."""
    for source, number, objects in iter_document_groups(path, on_skip, manifests=manifests):
        for obj in objects:
            yield source, number, obj


def iter_document_groups(path: str, on_skip: SkipHandler | None = None, *,
                         manifests: bool = False) -> Iterator[tuple[str, int, Iterable[Any]]]:
    """iter_documents by document: (source, document number, its objects). A snapshot's 150,000 pods
    in one List are then read in one loop, without a generator step and a tuple per object."""
    if path == "-":
        stdin = getattr(sys.stdin, "buffer", None)
        data = stdin.read() if stdin is not None else sys.stdin.read().encode()
        yield from _documents("<stdin>", data, manifests)
        return
    p = Path(path)
    if p.is_dir():
        for f in sorted(f for f in p.rglob("*") if f.is_file()):
            if not _is_dump(f.name):
                if on_skip is not None:
                    on_skip(str(f), None)
                continue
            if on_skip is None:
                yield from _documents(str(f), _read_file(f), manifests)
                continue
            try:  # the whole file or nothing of it: a List broken halfway adds no objects
                found = [(source, number, list(objects))
                         for source, number, objects in _documents(str(f), _read_file(f), manifests)]
            except InputError as err:
                on_skip(str(f), err.message if err.document is None else f"document {err.document}: {err.message}")
                continue
            yield from found
    elif p.exists():
        yield from _documents(path, _read_file(p), manifests)
    else:
        raise InputError("no such file or directory", path)


def _documents(source: str, data: bytes, manifests: bool = False) -> Iterator[tuple[str, int, Iterator[dict]]]:
    for number, doc in enumerate(_parse(data, source, manifests), start=1):
        yield source, number, _expand(doc, source, number)


def _is_dump(name: str) -> bool:
    return name.removesuffix(".gz").endswith(SUFFIXES)


def _read_file(p: Path) -> bytes:
    try:
        data = p.read_bytes()
        if data[:2] == b"\x1f\x8b":
            data = gzip.decompress(data)
        return data
    except (OSError, EOFError) as err:
        raise InputError(f"cannot read: {getattr(err, 'strerror', None) or err}", str(p)) from None


def decode_json(data: bytes) -> Any:
    """JSON bytes as `json.loads` reads them, decoded by msgspec (in C, about twice as fast); what
    msgspec refuses (NaN, integers beyond 64 bits, malformed text) is left to `json.loads`, whose
    ValueError says where. Dumps and the live snapshot's pages are read through it."""
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError:
        return json.loads(data)


def _parse(data: bytes, source: str, manifests: bool = False) -> list[Any]:
    if data.lstrip()[:1] in (b"{", b"["):
        try:
            if manifests:  # msgspec keeps the last of repeated keys without saying so
                return [json.loads(data, object_pairs_hook=_json_object)]
            return [decode_json(data)]
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", source) from None
        except json.JSONDecodeError as err:
            raise InputError(f"malformed JSON at line {err.lineno}, column {err.colno}: {err.msg}", source) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", source) from None
    try:
        return [d for d in yaml.load_all(text, Loader=_ManifestLoader if manifests else _Loader) if d is not None]
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise InputError(f"malformed YAML{where}: {problem}", source) from None


def _expand(doc: Any, source: str, number: int) -> Iterator[dict]:
    if isinstance(doc, list):
        for item in doc:
            yield from _expand(item, source, number)
        return
    if not isinstance(doc, dict) or not isinstance(doc.get("kind"), str):
        raise InputError("not a Kubernetes object (no kind)", source, number)
    kind = doc["kind"]
    if kind.endswith("List"):
        from kplan.api.validation import validate_list
        validate_list(doc, source if number == 1 else f"{source} (document {number})")
    if kind.endswith("List") and isinstance(doc.get("items"), list):
        item_kind = kind[: -len("List")]
        for item in doc["items"]:
            if item.__class__ is dict:
                found = item.get("kind")
                if found.__class__ is str and not found.endswith("List"):
                    yield item  # the common case, without a nested generator per item
                    continue
            if isinstance(item, dict) and "kind" not in item and item_kind:
                # Typed lists (the API's PodList) omit their items' kind and apiVersion: the list's own.
                item = {"kind": item_kind, "apiVersion": doc.get("apiVersion"), **item}
            yield from _expand(item, source, number)
        return
    yield doc
