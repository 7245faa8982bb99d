"""``$ref`` as the specification resolves it, within one document: against the base URI of
the schema it sits in (``$id`` of an enclosing resource, draft 4's ``id``), to a resource's
``$id``, a JSON pointer into it (``~0``, ``~1``, percent-escapes), a ``$anchor`` (draft 6/7:
an ``$id`` of only a fragment) or a ``$dynamicAnchor``. Every reference found is rewritten as
a pointer from the document's root (``#/...``), which the compiler reads wherever a schema is
moved to (merged ``allOf`` parts, branches); a reference to anything outside the document
(remote, or the meta-schema) is left as written (or, a fragment inside an embedded resource,
made absolute), and refused where it is used.

``$dynamicRef`` becomes a ``$ref`` where its dynamic scope cannot matter: the target has no
``$dynamicAnchor`` of that name, or the document defines that dynamic anchor once.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote, unquote, urldefrag, urljoin

__all__ = ["canonical_refs"]

# a document without $id: its base URI (refs that leave it resolve to nothing here)
_ROOT_BASE = "https://gramask.invalid/schema.json"
# keywords whose values are data, never schemas
_DATA = frozenset({"const", "enum", "default", "examples", "example"})
# keywords holding a schema, a list of schemas, or a map of names to schemas
_ONE = frozenset({"additionalProperties", "additionalItems", "contains", "not", "if", "then",
                  "else", "propertyNames", "unevaluatedProperties", "unevaluatedItems",
                  "contentSchema", "items"})
_LIST = frozenset({"allOf", "anyOf", "oneOf", "prefixItems", "items"})
_MAP = frozenset({"properties", "patternProperties", "$defs", "definitions",
                  "dependentSchemas", "dependencies"})


def _join(base: str, ref: str) -> str:
    if ref.startswith("#"):
        return urldefrag(base)[0] + ref
    if ":" in ref.split("/", 1)[0]:  # a scheme: absolute
        return ref
    return urljoin(base, ref)


def _token(part: str) -> str:
    return quote(part.replace("~", "~0").replace("/", "~1"), safe="~!$&'()*+,;=:@")


class _Index:
    def __init__(self, modern: bool, id_key: str) -> None:
        self.modern = modern  # 2019-09 and later: $anchor, $dynamicAnchor, $ref beside $id
        self.id_key = id_key
        self.resources: dict[str, str] = {}  # URI -> pointer
        self.anchors: dict[str, str] = {}  # URI#name -> pointer
        self.dynamic: dict[str, list[str]] = {}  # $dynamicAnchor name -> pointers

    def base_of(self, node: dict[str, Any], base: str, ptr: str, register: bool) -> str:
        """The base URI inside ``node`` (its own ``$id`` applied), registering it."""
        sid = node.get(self.id_key)
        if isinstance(sid, str) and (self.modern or "$ref" not in node):
            full = _join(base, sid)
            uri, frag = urldefrag(full)
            if sid.startswith("#") and not self.modern:  # draft 6/7: a plain-name anchor
                if register and frag:
                    self.anchors.setdefault(full, ptr)
            else:
                base = uri
                if register:
                    self.resources.setdefault(uri, ptr)
        if register and self.modern:
            for kw in ("$anchor", "$dynamicAnchor"):
                name = node.get(kw)
                if isinstance(name, str):
                    self.anchors.setdefault(urldefrag(base)[0] + "#" + name, ptr)
            name = node.get("$dynamicAnchor")
            if isinstance(name, str):
                self.dynamic.setdefault(name, []).append(ptr)
        return base


def _children(node: Any, ptr: str) -> list[tuple[Any, str, bool]]:
    """(child, its pointer, whether it sits where a schema does) of a schema ``node``."""
    out: list[tuple[Any, str, bool]] = []
    if isinstance(node, list):
        return [(x, f"{ptr}/{i}", False) for i, x in enumerate(node)]
    if not isinstance(node, dict):
        return out
    for k, v in node.items():
        p = f"{ptr}/{_token(k)}"
        if k in _DATA:
            continue
        if k in _ONE and isinstance(v, dict | bool):
            out.append((v, p, True))
        elif k in _LIST and isinstance(v, list):
            out += [(x, f"{p}/{i}", True) for i, x in enumerate(v)]
        elif k in _MAP and isinstance(v, dict):
            out += [(x, f"{p}/{_token(n)}", isinstance(x, dict | bool))
                    for n, x in v.items()]
        elif isinstance(v, dict | list):  # unknown keywords: refs only, no identifiers
            out.append((v, p, False))
    return out


def _walk(node: Any, base: str, ptr: str, schema: bool, index: _Index, register: bool,
          visit: Any = None) -> None:
    stack = [(node, base, ptr, schema)]
    while stack:
        n, b, p, s = stack.pop()
        if isinstance(n, dict) and s:
            b = index.base_of(n, b, p, register)
        if visit is not None and isinstance(n, dict):
            visit(n, b, p)
        stack += [(c, b, cp, cs) for c, cp, cs in _children(n, p)]


def lookup_pointer(root: Any, pointer: str) -> Any:
    """The node a JSON pointer (``/a/0/b~1c``, percent-escapes read) names in ``root``;
    ``KeyError`` where it names nothing."""
    target = root
    for raw in pointer.split("/")[1:]:
        part = unquote(raw).replace("~1", "/").replace("~0", "~")
        if isinstance(target, list) and part.isdigit() and int(part) < len(target):
            target = target[int(part)]
        elif isinstance(target, dict) and part in target:
            target = target[part]
        else:
            raise KeyError(pointer)
    return target


def canonical_refs(root: Any, *, modern: bool, id_key: str = "$id") -> Any:
    """``root`` with every ``$ref`` it holds written as a pointer from the root where it
    resolves within the document (see the module docstring); ``root`` is not changed."""
    if not isinstance(root, dict):
        return root
    index = _Index(modern, id_key)
    start = root.get(id_key) if isinstance(root.get(id_key), str) else None
    root_base = _join(_ROOT_BASE, start) if start and not start.startswith("#") else _ROOT_BASE
    index.resources[urldefrag(root_base)[0]] = ""
    index.resources[_ROOT_BASE] = ""  # (draft 7: a root $id beside $ref is ignored)
    _walk(root, _ROOT_BASE, "", True, index, register=True)
    rewrites: dict[str, dict[str, str]] = {}

    def resolve(ref: str, base: str) -> str | None:
        """The root pointer ``ref`` names from ``base``; None where it is not here."""
        uri, frag = urldefrag(_join(base, ref))
        if frag.startswith("/") or not frag:
            at = index.resources.get(uri)
            if at is None:
                return None
            pointer = at + frag if frag else at
            try:
                lookup_pointer(root, pointer)
            except KeyError:
                return None
            return pointer
        return index.anchors.get(uri + "#" + frag)

    def visit(node: dict[str, Any], base: str, ptr: str) -> None:
        new: dict[str, str] = {}
        ref = node.get("$ref")
        if isinstance(ref, str):
            got = resolve(ref, base)
            if got is not None:
                new["$ref"] = "#" + got
            elif ref.startswith("#") and urldefrag(base)[0] not in (urldefrag(root_base)[0],
                                                                      _ROOT_BASE):
                new["$ref"] = _join(base, ref)  # (not the root's: refused where it is used)
        dyn = node.get("$dynamicRef") if modern else None
        if isinstance(dyn, str) and "$ref" not in node:
            got = resolve(dyn, base)
            frag = urldefrag(_join(base, dyn))[1]
            if got is not None:
                target = lookup_pointer(root, got)
                name = target.get("$dynamicAnchor") if isinstance(target, dict) else None
                if name != frag or len(index.dynamic.get(frag, [])) == 1:
                    new["$dynamicRef"] = "#" + got
        if new:
            rewrites[ptr] = new

    _walk(root, _ROOT_BASE, "", True, index, register=False, visit=visit)
    if not rewrites:
        return root
    # the pointers at or above a rewrite: only those nodes are copied
    under = {p[:i] for p in rewrites for i, c in enumerate(p) if c == "/"} | set(rewrites)
    return _rewritten(root, "", rewrites, under)


def _rewritten(node: Any, ptr: str, rewrites: dict[str, dict[str, str]],
               under: set[str]) -> Any:
    """A copy of ``node`` with the rewrites under it applied (``$dynamicRef`` rewritten
    becomes a ``$ref``)."""
    if ptr not in under:
        return node
    if isinstance(node, list):
        return [_rewritten(x, f"{ptr}/{i}", rewrites, under) for i, x in enumerate(node)]
    if not isinstance(node, dict):
        return node
    out = {k: (v if k in _DATA else _rewritten(v, f"{ptr}/{_token(k)}", rewrites, under))
           for k, v in node.items()}
    for k, v in rewrites.get(ptr, {}).items():
        if k == "$dynamicRef":
            out.pop("$dynamicRef")
            out["$ref"] = v
        else:
            out[k] = v
    return out
