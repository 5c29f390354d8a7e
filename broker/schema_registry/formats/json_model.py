"""A JSON Schema document seen as Confluent's diff sees it: the schema classes the Everit
loader (Confluent 7.0's JSON Schema library) builds from it.

Everit turns each schema object into one class: a ``$ref`` is a reference (its other keywords
ignored, draft 7); otherwise each of ``enum``, ``allOf``/``anyOf``/``oneOf``, ``not``,
``const``, ``type`` (a list of types: an ``anyOf`` of one schema per type) and the keywords of
another type than the declared one (``minimum`` next to ``"type": "string"``), or
``if``/``then``/``else``, adds one schema; none is an empty schema, one is that schema, several
are an ``allOf`` of them. So ``{"type": "string", "enum": [..]}`` is an ``allOf`` of an enum and
a string, and that is what the diff compares. ``integer`` and ``number`` are one class.

References resolve through ``referencing``: ``#/...`` pointers in their document, other
documents by the reference name Confluent registers them under (relative to the root's
``$id``). Nodes are built once per JSON object, so a recursive schema is a cycle of nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING

from referencing import Specification
from referencing.exceptions import Unresolvable

if TYPE_CHECKING:
    from referencing._core import Resolver

OBJECT_KEYWORDS = (
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "dependencies",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
)
ARRAY_KEYWORDS = ("items", "additionalItems", "minItems", "maxItems", "uniqueItems", "contains")
NUMBER_KEYWORDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
STRING_KEYWORDS = ("minLength", "maxLength", "pattern", "format")
CONDITIONAL_KEYWORDS = ("if", "then", "else")
_KEYWORDS_OF = {
    "object": OBJECT_KEYWORDS,
    "array": ARRAY_KEYWORDS,
    "number": NUMBER_KEYWORDS,
    "integer": NUMBER_KEYWORDS,
    "string": STRING_KEYWORDS,
    "boolean": (),
    "null": (),
}


class Node:
    """One Everit schema: ``kind`` is its class (``object``, ``array``, ``string``,
    ``number``, ``boolean``, ``null``, ``enum``, ``const``, ``combined``, ``not``,
    ``conditional``, ``ref``, ``empty``, ``true``, ``false``); the keyword fields that kind
    uses are set, the rest keep their defaults."""

    def __init__(self, kind: str, raw: object) -> None:
        self.kind = kind
        self.raw = raw
        self.id: object = None
        self.title: object = None
        self.description: object = None
        self.has_default = False
        self.default: object = None
        # object
        self.properties: dict[str, Node] = {}
        self.required: list[str] = []
        self.additional = True
        self.additional_schema: Node | None = None
        self.pattern_properties: list[tuple[str, Node]] = []
        self.property_dependencies: dict[str, list[object]] = {}
        self.schema_dependencies: dict[str, Node] = {}
        self.min_properties: object = None
        self.max_properties: object = None
        # array
        self.all_items: Node | None = None
        self.item_list: list[Node] | None = None
        self.additional_items = True
        self.additional_items_schema: Node | None = None
        self.min_items: object = None
        self.max_items: object = None
        self.unique_items = False
        # number
        self.integer = False
        self.minimum: object = None
        self.maximum: object = None
        self.exclusive_minimum: object = None
        self.exclusive_maximum: object = None
        self.multiple_of: object = None
        # string
        self.min_length: object = None
        self.max_length: object = None
        self.pattern: object = None
        # enum, combined, not, others
        self.values: list[object] = []
        self.criterion = ""
        self.subschemas: list[Node] = []
        self.children: list[Node] = []  # loaded, not compared (if/then/else, contains, ...)
        self._target: Callable[[], Node] | None = None
        self._resolved: Node | None = None

    def target(self) -> Node:
        """A reference's schema (loaded on first use)."""
        if self._resolved is None:
            assert self._target is not None
            self._resolved = self._target()
        return self._resolved


def _number(value: object) -> object:
    """A JSON number keyword's value, or None when absent or not a number."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal):
        return None
    return value


class Loader:
    """Builds ``Node``s from one parse's documents; ``id_keyword`` is ``$id`` (``id`` for
    draft-04 documents)."""

    def __init__(self, draft4: bool, specification: Specification) -> None:
        self.draft4 = draft4
        self.specification = specification
        self.id_keyword = "id" if draft4 else "$id"
        self.nodes: dict[int, Node] = {}

    def load(self, raw: object, resolver: Resolver) -> Node:
        known = self.nodes.get(id(raw))
        if known is not None and known.raw is raw:
            return known
        if raw is True or raw is False:
            node = Node("true" if raw else "false", raw)
        elif isinstance(raw, dict):
            scoped = raw.get(self.id_keyword)
            if isinstance(scoped, str) and scoped:
                resolver = resolver.in_subresource(self.specification.create_resource(raw))
            node = self._build(raw, resolver)
            self._common(node, raw)
        else:
            raise ValueError(f"a schema must be an object or a boolean, not {raw!r}")
        # References load their targets lazily, so no child can meet this node before here.
        self.nodes[id(raw)] = node
        return node

    def _build(self, raw: dict, resolver: Resolver) -> Node:
        if "$ref" in raw:
            ref = raw["$ref"]
            if not isinstance(ref, str):
                raise ValueError(f"$ref must be a string: {ref!r}")
            node = Node("ref", raw)
            node._target = self._deferred(ref, resolver)
            return node
        facets: list[Node] = []
        if "enum" in raw and isinstance(raw["enum"], list):
            facet = Node("enum", raw)
            facet.values = list(raw["enum"])
            facets.append(facet)
        for criterion in ("allOf", "anyOf", "oneOf"):
            if isinstance(raw.get(criterion), list):
                facet = Node("combined", raw)
                facet.criterion = criterion
                facet.subschemas = [self.load(sub, resolver) for sub in raw[criterion]]
                facets.append(facet)
        if "not" in raw:
            facet = Node("not", raw)
            facet.subschemas = [self.load(raw["not"], resolver)]
            facets.append(facet)
        if "const" in raw and not self.draft4:
            facets.append(Node("const", raw))
        consumed: set[str] = set()
        declared = raw.get("type")
        if isinstance(declared, str):
            facets.append(self._typed(declared, raw, resolver))
            consumed.update(_KEYWORDS_OF.get(declared, ()))
        elif isinstance(declared, list):
            facet = Node("combined", raw)
            facet.criterion = "anyOf"
            for name in declared:
                facet.subschemas.append(self._typed(str(name), raw, resolver))
                consumed.update(_KEYWORDS_OF.get(str(name), ()))
            facets.append(facet)
        for kind in ("array", "object", "number", "string"):
            if any(key in raw and key not in consumed for key in _KEYWORDS_OF[kind]):
                facets.append(self._typed(kind, raw, resolver, implicit=True))
        if any(key in raw for key in CONDITIONAL_KEYWORDS) and not self.draft4:
            facet = Node("conditional", raw)
            facet.children = [
                self.load(raw[key], resolver) for key in CONDITIONAL_KEYWORDS if key in raw
            ]
            facets.append(facet)
        if len(facets) == 1:
            return facets[0]
        node = Node("empty", raw)
        if facets:  # Everit's synthetic allOf of the schema's several facets
            node.kind = "combined"
            node.criterion = "allOf"
            node.subschemas = facets
        return node

    def _common(self, node: Node, raw: dict) -> None:
        node.id = raw.get(self.id_keyword)
        node.title = raw.get("title")
        node.description = raw.get("description")
        node.has_default = "default" in raw
        node.default = raw.get("default")

    def _typed(self, kind: str, raw: dict, resolver: Resolver, implicit: bool = False) -> Node:
        if kind == "integer":
            node = Node("number", raw)
            node.integer = not implicit
        elif kind in ("string", "number", "boolean", "null", "object", "array"):
            node = Node(kind, raw)
        else:
            raise ValueError(f"unknown type: [{kind}]")
        if node.kind == "number":
            node.minimum = _number(raw.get("minimum"))
            node.maximum = _number(raw.get("maximum"))
            node.exclusive_minimum = _number(raw.get("exclusiveMinimum"))
            node.exclusive_maximum = _number(raw.get("exclusiveMaximum"))
            node.multiple_of = _number(raw.get("multipleOf"))
        elif node.kind == "string":
            node.min_length = _number(raw.get("minLength"))
            node.max_length = _number(raw.get("maxLength"))
            pattern = raw.get("pattern")
            node.pattern = pattern if isinstance(pattern, str) else None
        elif node.kind == "object":
            self._object(node, raw, resolver)
        elif node.kind == "array":
            self._array(node, raw, resolver)
        return node

    def _object(self, node: Node, raw: dict, resolver: Resolver) -> None:
        properties = raw.get("properties")
        if isinstance(properties, dict):
            node.properties = {name: self.load(sub, resolver) for name, sub in properties.items()}
        required = raw.get("required")
        if isinstance(required, list):
            node.required = [name for name in required if isinstance(name, str)]
        additional = raw.get("additionalProperties")
        if isinstance(additional, bool):
            node.additional = additional
        elif isinstance(additional, dict):
            node.additional_schema = self.load(additional, resolver)
        patterns = raw.get("patternProperties")
        if isinstance(patterns, dict):
            node.pattern_properties = [
                (pattern, self.load(sub, resolver)) for pattern, sub in patterns.items()
            ]
        dependencies = raw.get("dependencies")
        if isinstance(dependencies, dict):
            for name, value in dependencies.items():
                if isinstance(value, list):
                    node.property_dependencies[name] = list(value)
                else:
                    node.schema_dependencies[name] = self.load(value, resolver)
        node.min_properties = _number(raw.get("minProperties"))
        node.max_properties = _number(raw.get("maxProperties"))
        if "propertyNames" in raw:
            node.children.append(self.load(raw["propertyNames"], resolver))

    def _array(self, node: Node, raw: dict, resolver: Resolver) -> None:
        items = raw.get("items")
        if isinstance(items, list):
            node.item_list = [self.load(sub, resolver) for sub in items]
        elif items is not None:
            node.all_items = self.load(items, resolver)
        additional = raw.get("additionalItems")
        if isinstance(additional, bool):
            node.additional_items = additional
        elif additional is not None:
            node.additional_items_schema = self.load(additional, resolver)
        node.min_items = _number(raw.get("minItems"))
        node.max_items = _number(raw.get("maxItems"))
        node.unique_items = raw.get("uniqueItems") is True
        if "contains" in raw:
            node.children.append(self.load(raw["contains"], resolver))

    def _deferred(self, ref: str, resolver: Resolver) -> Callable[[], Node]:
        def target() -> Node:
            try:
                resolved = resolver.lookup(ref)
            except Unresolvable as exc:
                raise ValueError(f"$ref {ref} cannot be resolved: {type(exc).__name__}") from None
            return self.load(resolved.contents, resolved.resolver)

        return target


MAX_REF_CHAIN = 64  # $ref to $ref to ...: longer (or circular) chains are refused


def resolve_all(root: Node) -> None:
    """Follow every reference reachable from ``root`` (raises ValueError if one does not
    resolve, or starts a chain of references longer than ``MAX_REF_CHAIN`` or circular):
    Everit resolves them while loading, so a dangling one is an invalid schema."""
    seen: set[int] = set()
    stack = [root]
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if node.kind == "ref":
            stack.append(_chain_end(node))
            continue
        stack.extend(node.properties.values())
        stack.extend(sub for _, sub in node.pattern_properties)
        stack.extend(node.schema_dependencies.values())
        stack.extend(node.subschemas)
        stack.extend(node.children)
        stack.extend(node.item_list or ())
        for extra in (node.additional_schema, node.all_items, node.additional_items_schema):
            if extra is not None:
                stack.append(extra)


def _chain_end(node: Node) -> Node:
    start = node
    for _ in range(MAX_REF_CHAIN):
        node = node.target()
        if node.kind != "ref":
            return node
    raise ValueError(
        f"$ref {start.raw.get('$ref') if isinstance(start.raw, dict) else ''} starts a chain of"
        f" more than {MAX_REF_CHAIN} references (or a circular one)"
    )


def referred(node: Node) -> Node:
    """``node`` with references followed (to the first non-reference schema; ``resolve_all``
    has checked that every chain ends)."""
    while node.kind == "ref":
        node = node.target()
    return node
