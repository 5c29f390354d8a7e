"""Confluent's JSON Schema compatibility: a diff of the old (``original``) and new (``update``)
schema whose every difference must be of a compatible type (Confluent 7.0's ``json/diff``,
the ``STRICT`` policy of later versions). The reader of ``check`` is the update.

The rules that surprise people, kept on purpose: adding a property to an *open* object (no
``additionalProperties: false``) is incompatible, removing one is compatible; a *closed*
object is the other way round; a partially open one (``additionalProperties`` or
``patternProperties`` schemas) judges the property against the schema that covered it.
Combined schemas (``allOf``/``anyOf``/``oneOf``, and the synthetic ``allOf`` of a schema with
several facets such as ``{"type": "string", "enum": [..]}``) pair their subschemas by a maximum
matching of compatible pairs.

Compared: ``type`` (``integer`` -> ``number`` widens), ``$id``, ``title``, ``description``,
``default``, string ``minLength``/``maxLength``/``pattern``, number ``minimum``/``maximum``/
``exclusiveMinimum``/``exclusiveMaximum`` (numeric, draft 6+)/``multipleOf``, object
``properties``/``required``/``additionalProperties``/``patternProperties``/``dependencies``/
``minProperties``/``maxProperties``, array ``items`` (one schema or a tuple)/
``additionalItems``/``minItems``/``maxItems``/``uniqueItems``, ``enum``, combined schemas,
``not``, ``$ref`` (followed; a schema already being compared higher up is not compared again).

Not compared (Confluent 7.0 does not either): ``const`` values, ``format``,
``propertyNames``, ``contains``, ``if``/``then``/``else`` contents, draft-04 boolean
``exclusiveMaximum``/``exclusiveMinimum``, annotations other than title/description/default.
Deliberate differences from 7.0.16: unchanged property ``dependencies`` arrays are not reported
(7.0.16 flags every unchanged one as extended, an incompatible type: a bug later fixed); a
``multipleOf`` change is judged on the exact numbers (7.0.16 truncates them to integers);
combined subschemas are compared in their document, so their ``$ref``s resolve. The order of
the reported differences follows the schemas' key order, not Java's hash order.

Bounded for hostile input: each (original, update) pair of schemas is compared once per check
and its differences, relative to the pair, reused wherever the pair is met again (unless they
depended on a recursive schema being cut short higher up; a pair met again inside a recursive
schema reports what its first comparison found, where the walk without memo would stop short).
Every comparison and every reused difference spends a step of a ``budget.Budget``, and a check
(``incompatible``) collects no compatible difference: no decision depends on one.
``patternProperties`` are matched with RE2 (linear time; a pattern RE2 refuses matches
nothing). Numbers compare as decimals with no trap: a comparison that cannot be made (a
remainder too large to compute) is a change.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from decimal import Decimal

from kafkette.broker.groups.consumer.regex import InvalidRegex, compile_regex
from kafkette.broker.schema_registry.formats.budget import Budget
from kafkette.broker.schema_registry.formats.json_model import Node, referred
from kafkette.broker.schema_registry.formats.json_text import dumps

COMPATIBLE = frozenset(
    """
    ID_CHANGED DESCRIPTION_CHANGED TITLE_CHANGED DEFAULT_CHANGED SCHEMA_REMOVED TYPE_EXTENDED
    MAX_LENGTH_INCREASED MAX_LENGTH_REMOVED MIN_LENGTH_DECREASED MIN_LENGTH_REMOVED
    PATTERN_REMOVED MAXIMUM_INCREASED MAXIMUM_REMOVED MINIMUM_DECREASED MINIMUM_REMOVED
    EXCLUSIVE_MAXIMUM_INCREASED EXCLUSIVE_MAXIMUM_REMOVED EXCLUSIVE_MINIMUM_DECREASED
    EXCLUSIVE_MINIMUM_REMOVED MULTIPLE_OF_REDUCED MULTIPLE_OF_REMOVED
    REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED REQUIRED_ATTRIBUTE_REMOVED DEPENDENCY_ARRAY_NARROWED
    DEPENDENCY_ARRAY_REMOVED DEPENDENCY_SCHEMA_REMOVED MAX_PROPERTIES_INCREASED
    MAX_PROPERTIES_REMOVED MIN_PROPERTIES_DECREASED MIN_PROPERTIES_REMOVED
    ADDITIONAL_PROPERTIES_ADDED ADDITIONAL_PROPERTIES_EXTENDED
    PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL
    REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL
    OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL
    PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL
    PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    MAX_ITEMS_INCREASED MAX_ITEMS_REMOVED MIN_ITEMS_DECREASED MIN_ITEMS_REMOVED
    UNIQUE_ITEMS_REMOVED ADDITIONAL_ITEMS_ADDED ADDITIONAL_ITEMS_EXTENDED
    ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL ITEM_ADDED_TO_CLOSED_CONTENT_MODEL
    ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL
    ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL
    ENUM_ARRAY_EXTENDED COMBINED_TYPE_EXTENDED PRODUCT_TYPE_NARROWED SUM_TYPE_EXTENDED
    NOT_TYPE_NARROWED
    """.split()
)


@dataclass(frozen=True)
class Difference:
    type: str
    json_path: str

    def __str__(self) -> str:
        """Confluent 7.0's ``Difference.toString``."""
        return f"Difference{{jsonPath='{self.json_path}', type={self.type}}}"


_Diff = tuple[str, tuple[str, ...]]  # (type, path parts)
_NO_CUT = 1 << 62
_QUIET = decimal.Context(traps=[])  # an impossible operation gives NaN instead of raising


class _Walk:
    """What one comparison shares across its contexts: the memo of pairs, the budget, and
    for each pair being compared the shallowest scope entry a recursion cut inside it used
    (a pair cut short by a schema entered above it is not memoised: elsewhere it differs)."""

    def __init__(self, budget: Budget, keep_compatible: bool) -> None:
        self.budget = budget
        self.keep_compatible = keep_compatible
        # per pair: (the length of the path it was first compared at, its differences there)
        self.memo: dict[tuple[int, int], tuple[int, list[_Diff]]] = {}
        self.cuts: list[int] = []
        self.keys: dict[int, tuple[str, str, bool, str]] = {}


class _Context:
    """The walk's state: the path, the original schemas being compared (a recursive schema
    stops there; each with its depth in the scope), the differences found."""

    def __init__(
        self, walk: _Walk, path: list[str] | None = None, scope: dict[int, int] | None = None
    ) -> None:
        self.walk = walk
        self.path = list(path or [])
        self.scope = dict(scope or {})
        self.diffs: list[_Diff] = []

    def sub(self) -> _Context:
        return _Context(self.walk, self.path, self.scope)

    def add(self, kind: str, attribute: str | None = None) -> None:
        if kind in COMPATIBLE and not self.walk.keep_compatible:
            return  # no decision depends on one: only whether an incompatible one is found
        path = (*self.path, attribute) if attribute is not None else tuple(self.path)
        self.diffs.append((kind, path))

    def compatible(self) -> bool:
        return all(kind in COMPATIBLE for kind, _ in self.diffs)


def compare(original: Node, update: Node, budget: Budget | None = None) -> list[Difference]:
    """Every difference from ``original`` to ``update``; raises ``SchemaFormatError`` when
    the comparison would take more than the ``budget``."""
    return _run(original, update, budget, keep_compatible=True)


def incompatible(original: Node, update: Node, budget: Budget | None = None) -> list[Difference]:
    """The differences that make ``update`` unable to read data valid under ``original``
    (those of ``compare`` not in ``COMPATIBLE``, found without collecting the others)."""
    return _run(original, update, budget, keep_compatible=False)


def _run(
    original: Node, update: Node, budget: Budget | None, *, keep_compatible: bool
) -> list[Difference]:
    ctx = _Context(_Walk(budget or Budget(), keep_compatible))
    _compare(ctx, original, update)
    return [Difference(kind, "#/" + "/".join(path)) for kind, path in ctx.diffs]


def _compare(ctx: _Context, original: Node | None, update: Node | None) -> None:
    if original is None and update is None:
        return
    if original is None:
        ctx.add("SCHEMA_ADDED")
        return
    if update is None:
        ctx.add("SCHEMA_REMOVED")
        return
    original, update = referred(original), referred(update)
    walk = ctx.walk
    key = (id(original), id(update))
    known = walk.memo.get(key)
    base = len(ctx.path)
    if known is not None:
        at, diffs = known
        walk.budget.spend(1 + len(diffs))
        prefix = tuple(ctx.path)
        ctx.diffs += [(kind, prefix + path[at:]) for kind, path in diffs]
        return
    walk.budget.spend()
    start, depth = len(ctx.diffs), len(ctx.scope)
    walk.cuts.append(_NO_CUT)
    try:
        _compare_pair(ctx, original, update)
    finally:
        cut = walk.cuts.pop()
        if walk.cuts:
            walk.cuts[-1] = min(walk.cuts[-1], cut)
    if cut >= depth:  # nothing above this pair shaped the result: the same everywhere
        walk.memo[key] = (base, ctx.diffs[start:])


def _compare_pair(ctx: _Context, original: Node, update: Node) -> None:
    if original.kind != "combined" and update.kind == "combined":
        if _into_combined(ctx, original, update):
            return
    elif original.kind == "combined" and update.kind != "combined":
        if _out_of_combined(ctx, original, update):
            return
    if original.kind != update.kind:
        if original.kind == "false" or update.kind in ("empty", "true"):
            return
        ctx.add("TYPE_CHANGED")
        return
    entered = ctx.scope.get(id(original))
    if entered is not None:
        ctx.walk.cuts[-1] = min(ctx.walk.cuts[-1], entered)
        return
    ctx.scope[id(original)] = len(ctx.scope)
    try:
        if original.id != update.id:
            ctx.add("ID_CHANGED")
        if original.title != update.title:
            ctx.add("TITLE_CHANGED")
        if original.description != update.description:
            ctx.add("DESCRIPTION_CHANGED")
        if dumps(original.default) != dumps(update.default):
            ctx.add("DEFAULT_CHANGED")
        compare_kind = _BY_KIND.get(original.kind)
        if compare_kind is not None:
            compare_kind(ctx, original, update)
    finally:
        del ctx.scope[id(original)]


def _into_combined(ctx: _Context, original: Node, update: Node) -> bool:
    """A single schema that became a combined one: fine if a branch reads it."""
    subs = update.subschemas
    if len(subs) == 1:
        sub = ctx.sub()
        _compare(sub, original, subs[0])
        if sub.compatible():
            ctx.diffs += sub.diffs
            return True
    elif update.criterion in ("anyOf", "oneOf"):
        for branch in subs:
            sub = ctx.sub()
            _compare(sub, original, branch)
            if sub.compatible():
                ctx.diffs += sub.diffs
                ctx.add("SUM_TYPE_EXTENDED")
                return True
    return False


def _out_of_combined(ctx: _Context, original: Node, update: Node) -> bool:
    """A combined schema that became a single one: fine if it was an allOf (or a
    singleton) with a part the update reads like."""
    subs = original.subschemas
    if len(subs) == 1:
        sub = ctx.sub()
        _compare(sub, subs[0], update)
        if sub.compatible():
            ctx.diffs += sub.diffs
            return True
    elif original.criterion == "allOf":
        for branch in subs:
            sub = ctx.sub()
            _compare(sub, branch, update)
            if sub.compatible():
                ctx.diffs += sub.diffs
                ctx.add("PRODUCT_TYPE_NARROWED")
                return True
    return False


def _limit(ctx: _Context, keyword: str, stem: str, old: object, new: object) -> None:
    """``<STEM>_ADDED/_REMOVED/_INCREASED/_DECREASED`` for a numeric keyword (``_CHANGED``
    when the two cannot be ordered)."""
    if old is None and new is None:
        return
    if old is None:
        ctx.add(f"{stem}_ADDED", keyword)
    elif new is None:
        ctx.add(f"{stem}_REMOVED", keyword)
    else:
        order = _order(old, new)
        if order:
            ctx.add(f"{stem}_{order}", keyword)


def _exact(value: object) -> Decimal:
    return value if isinstance(value, Decimal) else Decimal(value)  # type: ignore[arg-type]


def _order(old: object, new: object) -> str:
    """``INCREASED``/``DECREASED`` from ``old`` to ``new``, "" if equal, ``CHANGED`` if the
    two cannot be compared."""
    with decimal.localcontext(_QUIET):
        a, b = _exact(old), _exact(new)
        if a == b:
            return ""
        if a < b:
            return "INCREASED"
        if a > b:
            return "DECREASED"
    return "CHANGED"


def _divides(divisor: object, value: object) -> bool:
    """Whether ``value`` is a multiple of ``divisor`` (False when it cannot be computed)."""
    with decimal.localcontext(_QUIET):
        remainder = _exact(value) % _exact(divisor)
        return not remainder.is_nan() and remainder == 0


def _string(ctx: _Context, original: Node, update: Node) -> None:
    _limit(ctx, "maxLength", "MAX_LENGTH", original.max_length, update.max_length)
    _limit(ctx, "minLength", "MIN_LENGTH", original.min_length, update.min_length)
    if original.pattern is None and update.pattern is not None:
        ctx.add("PATTERN_ADDED", "pattern")
    elif original.pattern is not None and update.pattern is None:
        ctx.add("PATTERN_REMOVED", "pattern")
    elif original.pattern != update.pattern:
        ctx.add("PATTERN_CHANGED", "pattern")


def _number(ctx: _Context, original: Node, update: Node) -> None:
    _limit(ctx, "maximum", "MAXIMUM", original.maximum, update.maximum)
    _limit(ctx, "minimum", "MINIMUM", original.minimum, update.minimum)
    _limit(
        ctx,
        "exclusiveMaximum",
        "EXCLUSIVE_MAXIMUM",
        original.exclusive_maximum,
        update.exclusive_maximum,
    )
    _limit(
        ctx,
        "exclusiveMinimum",
        "EXCLUSIVE_MINIMUM",
        original.exclusive_minimum,
        update.exclusive_minimum,
    )
    old, new = original.multiple_of, update.multiple_of
    if old is None and new is None:
        pass
    elif old is None:
        ctx.add("MULTIPLE_OF_ADDED", "multipleOf")
    elif new is None:
        ctx.add("MULTIPLE_OF_REMOVED", "multipleOf")
    elif _order(old, new) == "":
        pass
    elif _divides(old, new):
        ctx.add("MULTIPLE_OF_EXPANDED", "multipleOf")
    elif _divides(new, old):
        ctx.add("MULTIPLE_OF_REDUCED", "multipleOf")
    else:
        ctx.add("MULTIPLE_OF_CHANGED", "multipleOf")
    if original.integer != update.integer:
        ctx.add("TYPE_EXTENDED" if original.integer else "TYPE_NARROWED")


def _enum(ctx: _Context, original: Node, update: Node) -> None:
    old = {dumps(value) for value in original.values}
    new = {dumps(value) for value in update.values}
    if old == new:
        return
    if new >= old:
        ctx.add("ENUM_ARRAY_EXTENDED", "enum")
    elif old >= new:
        ctx.add("ENUM_ARRAY_NARROWED", "enum")
    else:
        ctx.add("ENUM_ARRAY_CHANGED", "enum")


def _not(ctx: _Context, original: Node, update: Node) -> None:
    ctx.path.append("not")
    try:
        sub = ctx.sub()
        _compare(sub, update.subschemas[0], original.subschemas[0])  # reversed on purpose
        ctx.add("NOT_TYPE_NARROWED" if sub.compatible() else "NOT_TYPE_EXTENDED")
    finally:
        ctx.path.pop()


def _combined(ctx: _Context, original: Node, update: Node) -> None:
    if original.criterion != update.criterion:
        if update.criterion == "anyOf":
            ctx.add("COMBINED_TYPE_EXTENDED")
        else:
            ctx.add("COMBINED_TYPE_CHANGED")
            return
    olds, news = _distinct(ctx, original.subschemas), _distinct(ctx, update.subschemas)
    if len(olds) < len(news):
        ctx.add("PRODUCT_TYPE_EXTENDED" if update.criterion == "allOf" else "SUM_TYPE_EXTENDED")
    elif len(olds) > len(news):
        ctx.add("PRODUCT_TYPE_NARROWED" if update.criterion == "allOf" else "SUM_TYPE_NARROWED")
    edges: dict[tuple[int, int], list[_Diff]] = {}
    for i, old in enumerate(olds):
        ctx.path.append(f"{original.criterion}/{i}")
        try:
            for j, new in enumerate(news):
                sub = ctx.sub()
                _compare(sub, old, new)
                if sub.compatible():
                    edges[(i, j)] = sub.diffs
        finally:
            ctx.path.pop()
    matching = _maximum_matching(len(olds), len(news), edges)
    for pair in sorted(matching):
        ctx.diffs += edges[pair]
    if len(matching) < min(len(olds), len(news)):
        ctx.add("COMBINED_TYPE_SUBSCHEMAS_CHANGED")


def _distinct(ctx: _Context, nodes: list[Node]) -> list[Node]:
    """Equal subschemas collapsed (Confluent puts them in a set). Facets of one JSON object
    (``"type": [..]``, ``enum`` next to ``type``) share it, so their kind counts too."""
    keys = ctx.walk.keys
    seen: set[tuple[str, str, bool, str]] = set()
    out: list[Node] = []
    for node in nodes:
        key = keys.get(id(node))
        if key is None:
            key = keys[id(node)] = (node.kind, node.criterion, node.integer, dumps(node.raw))
        if key not in seen:
            seen.add(key)
            out.append(node)
    return out


def _maximum_matching(
    left: int, right: int, edges: dict[tuple[int, int], list[_Diff]]
) -> set[tuple[int, int]]:
    """A maximum bipartite matching over ``edges`` (augmenting paths, searched with an
    explicit stack: a path can be as long as there are subschemas)."""
    adjacent: dict[int, list[int]] = {i: [] for i in range(left)}
    for i, j in edges:
        adjacent[i].append(j)
    owner: dict[int, int] = {}
    for root in range(left):
        visited: set[int] = set()
        # each frame: (left vertex, index of its next edge, right vertex it came through)
        stack: list[list[int]] = [[root, 0, -1]]
        while stack:
            frame = stack[-1]
            i, k = frame[0], frame[1]
            if k == len(adjacent[i]):
                stack.pop()  # no augmenting path through i
                continue
            frame[1] += 1
            j = adjacent[i][k]
            if j in visited:
                continue
            visited.add(j)
            frame[2] = j
            if j in owner:
                stack.append([owner[j], 0, -1])
                continue
            for left_vertex, _, right_vertex in stack:  # flip the path found
                owner[right_vertex] = left_vertex
            break
    return {(i, j) for j, i in owner.items()}


def _open(node: Node) -> bool:
    return not node.pattern_properties and node.additional_schema is None and node.additional


def _covered_by_partial(ctx: _Context, original: Node, update: Node, change: str) -> None:
    """A property added or removed where the other side's content model is partially open:
    covered (compatible) when its schema compares compatibly with what the model allows."""
    sub = ctx.sub()
    _compare(sub, original, update)
    ctx.diffs += sub.diffs
    covered = "IS_COVERED" if sub.compatible() else "NOT_COVERED"
    ctx.add(f"PROPERTY_{change}_{covered}_BY_PARTIALLY_OPEN_CONTENT_MODEL")


def _partial_schema(node: Node, name: str) -> Node | None:
    for pattern, schema in node.pattern_properties:
        try:
            compiled = compile_regex(pattern)  # RE2, cached
        except InvalidRegex:
            continue  # a pattern RE2 refuses matches nothing
        if compiled.search(name):
            return schema
    return node.additional_schema


def _object(ctx: _Context, original: Node, update: Node) -> None:
    _required(ctx, original, update)
    _properties(ctx, original, update)
    _dependencies(ctx, original, update)
    _additional(ctx, original, update)
    _limit(ctx, "maxProperties", "MAX_PROPERTIES", original.max_properties, update.max_properties)
    _limit(ctx, "minProperties", "MIN_PROPERTIES", original.min_properties, update.min_properties)


def _required(ctx: _Context, original: Node, update: Node) -> None:
    ctx.path.append("required")
    try:
        for name in original.properties:
            if name not in update.properties:
                continue
            was, now = name in original.required, name in update.required
            if was and not now:
                ctx.add("REQUIRED_ATTRIBUTE_REMOVED", name)
            elif now and not was:
                with_default = update.properties[name].has_default
                kind = "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED" if with_default else None
                ctx.add(kind or "REQUIRED_ATTRIBUTE_ADDED", name)
    finally:
        ctx.path.pop()


def _properties(ctx: _Context, original: Node, update: Node) -> None:
    ctx.path.append("properties")
    try:
        names = list(original.properties)
        names += [name for name in update.properties if name not in original.properties]
        for name in names:
            ctx.path.append(name)
            try:
                _property(ctx, original, update, name)
            finally:
                ctx.path.pop()
    finally:
        ctx.path.pop()


def _property(ctx: _Context, original: Node, update: Node, name: str) -> None:
    old, new = original.properties.get(name), update.properties.get(name)
    if new is None:
        assert old is not None
        # Removing a property: only the update's content model counts.
        if _open(update):
            ctx.add("PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL")
            return
        partial = _partial_schema(update, name)
        if partial is not None:
            _covered_by_partial(ctx, old, partial, "REMOVED")
        elif old.kind == "false":
            ctx.add("PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
        else:
            ctx.add("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    elif old is None:
        # Adding a property: only the original's content model counts.
        if _open(original):
            ctx.add(
                "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
                if new.kind in ("empty", "true")
                else "PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"
            )
            return
        partial = _partial_schema(original, name)
        if partial is not None:
            _covered_by_partial(ctx, partial, new, "ADDED")
        if name in update.required:
            ctx.add(
                "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"
                if new.has_default
                else "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
            )
        else:
            ctx.add("OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL")
    else:
        _compare(ctx, old, new)


def _dependencies(ctx: _Context, original: Node, update: Node) -> None:
    ctx.path.append("dependencies")
    try:
        olds, news = original.property_dependencies, update.property_dependencies
        for name in list(olds) + [name for name in news if name not in olds]:
            was, now = olds.get(name), news.get(name)
            if now is None:
                ctx.add("DEPENDENCY_ARRAY_REMOVED", name)
            elif was is None:
                ctx.add("DEPENDENCY_ARRAY_ADDED", name)
            else:
                old_set, new_set = {dumps(v) for v in was}, {dumps(v) for v in now}
                if old_set == new_set:
                    continue
                if new_set >= old_set:
                    ctx.add("DEPENDENCY_ARRAY_EXTENDED", name)
                elif old_set >= new_set:
                    ctx.add("DEPENDENCY_ARRAY_NARROWED", name)
                else:
                    ctx.add("DEPENDENCY_ARRAY_CHANGED", name)
        old_schemas, new_schemas = original.schema_dependencies, update.schema_dependencies
        for name in list(old_schemas) + [n for n in new_schemas if n not in old_schemas]:
            old, new = old_schemas.get(name), new_schemas.get(name)
            ctx.path.append(name)
            try:
                if new is None:
                    ctx.add("DEPENDENCY_SCHEMA_REMOVED")
                elif old is None:
                    ctx.add("DEPENDENCY_SCHEMA_ADDED")
                else:
                    _compare(ctx, old, new)
            finally:
                ctx.path.pop()
    finally:
        ctx.path.pop()


def _additional(ctx: _Context, original: Node, update: Node) -> None:
    ctx.path.append("additionalProperties")
    try:
        if original.additional != update.additional:
            ctx.add(
                "ADDITIONAL_PROPERTIES_ADDED"
                if update.additional
                else "ADDITIONAL_PROPERTIES_REMOVED"
            )
        elif original.additional_schema is None and update.additional_schema is not None:
            ctx.add("ADDITIONAL_PROPERTIES_NARROWED")
        elif update.additional_schema is None and original.additional_schema is not None:
            ctx.add("ADDITIONAL_PROPERTIES_EXTENDED")
        else:
            _compare(ctx, original.additional_schema, update.additional_schema)
    finally:
        ctx.path.pop()


def _array(ctx: _Context, original: Node, update: Node) -> None:
    ctx.path.append("items")
    try:
        _compare(ctx, original.all_items, update.all_items)
    finally:
        ctx.path.pop()
    _tuple(ctx, original, update)
    ctx.path.append("additionalItems")
    old_schema, new_schema = original.additional_items_schema, update.additional_items_schema
    try:
        if original.additional_items != update.additional_items:
            removed = original.additional_items
            ctx.add("ADDITIONAL_ITEMS_REMOVED" if removed else "ADDITIONAL_ITEMS_ADDED")
        elif old_schema is None and new_schema is not None:
            ctx.add("ADDITIONAL_ITEMS_NARROWED")
        elif new_schema is None and old_schema is not None:
            ctx.add("ADDITIONAL_ITEMS_EXTENDED")
        else:
            _compare(ctx, old_schema, new_schema)
    finally:
        ctx.path.pop()
    _limit(ctx, "maxItems", "MAX_ITEMS", original.max_items, update.max_items)
    _limit(ctx, "minItems", "MIN_ITEMS", original.min_items, update.min_items)
    if original.unique_items != update.unique_items:
        ctx.add(
            "UNIQUE_ITEMS_REMOVED" if original.unique_items else "UNIQUE_ITEMS_ADDED", "uniqueItems"
        )


def _items_open(node: Node) -> bool:
    return node.additional_items_schema is None and node.additional_items


def _tuple(ctx: _Context, original: Node, update: Node) -> None:
    olds, news = original.item_list or [], update.item_list or []
    for index in range(max(len(olds), len(news))):
        ctx.path.append(f"items/{index}")
        try:
            if index < len(olds) and index < len(news):
                _compare(ctx, olds[index], news[index])
            elif index < len(olds):
                _item_removed(ctx, olds[index], update)
            else:
                _item_added(ctx, original, news[index])
        finally:
            ctx.path.pop()


def _item_removed(ctx: _Context, old: Node, update: Node) -> None:
    if _items_open(update):
        ctx.add("ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL")
    elif update.additional_items_schema is not None:
        sub = ctx.sub()
        _compare(sub, old, update.additional_items_schema)
        ctx.diffs += sub.diffs
        ctx.add(
            "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
            if sub.compatible()
            else "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
        )
    elif old.kind == "false":
        ctx.add("ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL")
    else:
        ctx.add("ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL")


def _item_added(ctx: _Context, original: Node, new: Node) -> None:
    if _items_open(original):
        ctx.add(
            "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"
            if new.kind in ("empty", "true")
            else "ITEM_ADDED_TO_OPEN_CONTENT_MODEL"
        )
    elif original.additional_items_schema is not None:
        sub = ctx.sub()
        _compare(sub, original.additional_items_schema, new)
        ctx.diffs += sub.diffs
        ctx.add(
            "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
            if sub.compatible()
            else "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"
        )
    else:
        ctx.add("ITEM_ADDED_TO_CLOSED_CONTENT_MODEL")


_BY_KIND = {
    "string": _string,
    "number": _number,
    "enum": _enum,
    "combined": _combined,
    "not": _not,
    "object": _object,
    "array": _array,
}
