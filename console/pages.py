"""The console's HTML pages, rendered on the server from the view's snapshots.

Server-side rendering keeps each page one request and readable without scripts; the
scripts only add the live throughput chart, the lag chart and the produce form.
Everything from the broker goes through ``markup.html``/``esc`` (escaped).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from urllib.parse import quote, urlencode

from kafkette.broker.state_view import (
    BrokerSummary,
    GroupSummary,
    PartitionSummary,
    RecordView,
    SchemaRegistrySummary,
    SchemaSubjectSummary,
    SchemaVersionView,
    ShareGroupSummary,
    TopicSummary,
)

from .markup import Html, html, join, json_attr
from .values import FORMATS, show, size_text, timestamp_text

_ACTIVE = ' class="active"'
NAV = (("/", "Overview"), ("/topics", "Topics"), ("/groups", "Groups"))


def layout(
    title: str, body: Html, *, active: str, allow_writes: bool, schemas: bool = False
) -> Html:
    """The page around ``body``; ``schemas``: the broker serves a schema registry (the
    Schemas entry is shown), ``allow_writes``: the Produce entry is."""
    links = list(NAV)
    if schemas:
        links.append(("/schemas", "Schemas"))
    if allow_writes:
        links.append(("/produce", "Produce"))
    nav = join(
        html('<a href="{}"{}>{}</a>', href, Html(_ACTIVE if href == active else ""), label)
        for href, label in links
    )
    mode = "read-write" if allow_writes else "read-only"
    return html(
        "<!doctype html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>{title} - kafkette console</title>"
        '<link rel="stylesheet" href="/static/console.css"></head>'
        '<body><header><span class="brand">kafkette</span><nav>{nav}</nav>'
        '<span class="mode mode-{mode}">{mode}</span></header>'
        '<main><h1 id="title">{title}</h1>{body}</main>'
        '<script src="/static/console.js"></script></body></html>\n',
        title=title,
        nav=nav,
        mode=mode,
        body=body,
    )


def _table(headers: Sequence[str], rows: Sequence[Html], *, table_id: str, empty: str) -> Html:
    if not rows:
        return html('<p class="empty" id="{}">{}</p>', table_id, empty)
    head = join(html("<th>{}</th>", h) for h in headers)
    return html(
        '<table id="{}"><thead><tr>{}</tr></thead><tbody>{}</tbody></table>',
        table_id,
        head,
        join(rows),
    )


def topic_href(name: str) -> str:
    return "/topics/" + quote(name, safe="")


def group_href(group_id: str) -> str:
    return "/group?" + urlencode({"id": group_id})


def duration_text(seconds: float) -> str:
    s = int(seconds)
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d {hours}h {minutes}m"
    if hours:
        return f"{hours}h {minutes}m {s}s"
    return f"{minutes}m {s}s"


# Overview ------------------------------------------------------------------------


def overview(summary: BrokerSummary, groups: int) -> Html:
    facts = [
        ("Broker id", summary.node_id, "node-id"),
        ("Cluster id", summary.cluster_id, "cluster-id"),
        ("Version", f"kafkette {summary.version}", "version"),
        ("Listener", summary.advertised, "advertised"),
        ("Uptime", duration_text(summary.uptime_s), "uptime"),
        ("Topics", summary.topics, "topics"),
        ("Partitions", summary.partitions, "partitions"),
        ("Consumer groups", groups, "groups"),
        ("Connections", summary.connections, "connections"),
        ("Data directory", summary.data_dir, "data-dir"),
    ]
    cards = join(
        html(
            '<div class="card"><div class="label">{}</div><div class="value" id="{}">{}</div>'
            "</div>",
            label,
            "fact-" + key,
            value,
        )
        for label, value, key in facts
    )
    return html(
        '<section class="cards">{}</section>'
        "<h2>Throughput</h2>"
        '<p class="hint">Records per second in (produced) and out (fetched), sampled once a '
        "second; the last five minutes.</p>"
        '<div id="throughput-chart" class="chart" data-source="/api/throughput"></div>',
        cards,
    )


# Topics --------------------------------------------------------------------------


def topics(found: Sequence[TopicSummary]) -> Html:
    rows = [
        html(
            '<tr data-topic="{name}"><td><a href="{href}">{name}</a>{internal}</td>'
            '<td class="num">{parts}</td><td class="num">{records}</td>'
            '<td class="num">{size}</td></tr>',
            name=t.name,
            href=topic_href(t.name),
            internal=Html(' <span class="tag">internal</span>' if t.internal else ""),
            parts=t.partition_count,
            records=t.records,
            size=size_text(t.size_bytes),
        )
        for t in found
    ]
    return _table(
        ["Topic", "Partitions", "Offsets (end - start)", "Size"],
        rows,
        table_id="topics",
        empty="No topics yet.",
    )


def topic(t: TopicSummary) -> Html:
    rows = [_partition_row(t.name, p) for p in t.partitions]
    parts = _table(
        [
            "Partition",
            "Log start",
            "Log end",
            "High watermark",
            "Last stable",
            "Size",
            "Segments",
            "Leader",
            "Replicas",
            "ISR",
            "",
        ],
        rows,
        table_id="partitions",
        empty="No partition of this topic is on this broker.",
    )
    configs = _table(
        ["Config", "Value"],
        [html("<tr><td>{}</td><td>{}</td></tr>", k, v) for k, v in sorted(t.configs.items())],
        table_id="configs",
        empty="No topic-level overrides: every config has the broker's default.",
    )
    return html(
        '<p class="facts">Topic id <code>{}</code> · {} partitions · {} on disk</p>'
        "<h2>Partitions</h2>{}<h2>Configs</h2>{}",
        t.topic_id,
        t.partition_count,
        size_text(t.size_bytes),
        parts,
        configs,
    )


def _partition_row(topic_name: str, p: PartitionSummary) -> Html:
    return html(
        '<tr data-partition="{part}"><td class="num">{part}</td><td class="num">{start}</td>'
        '<td class="num">{end}</td><td class="num">{hw}</td><td class="num">{lso}</td>'
        '<td class="num">{size}</td><td class="num">{segments}</td><td class="num">{leader}</td>'
        "<td>{replicas}</td><td>{isr}</td>"
        '<td><a href="{href}">messages</a></td></tr>',
        part=p.partition,
        start=p.log_start_offset,
        end=p.log_end_offset,
        hw=p.high_watermark,
        lso=p.last_stable_offset,
        size=size_text(p.size_bytes),
        segments=p.segments,
        leader=p.leader,
        replicas=",".join(map(str, p.replicas)),
        isr=",".join(map(str, p.isr)),
        href=f"{topic_href(topic_name)}/{p.partition}",
    )


# Message browser -----------------------------------------------------------------


def browser(
    p: PartitionSummary,
    records: Sequence[RecordView],
    *,
    mode: str,
    offset: int,
    timestamp: str,
    count: int,
    fmt: str,
    note: str,
) -> Html:
    def option(value: str, label: str, current: str) -> Html:
        selected = Html(" selected" if value == current else "")
        return html('<option value="{}"{}>{}</option>', value, selected, label)

    modes = join(
        option(v, label, mode)
        for v, label in (
            ("latest", "latest"),
            ("offset", "from offset"),
            ("timestamp", "from timestamp"),
        )
    )
    formats = join(option(v, v, fmt) for v in FORMATS)
    form = html(
        '<form id="browse" method="get" class="controls">'
        '<label>Show <select name="from">{modes}</select></label>'
        '<label>offset <input name="offset" type="number" min="0" value="{offset}"></label>'
        '<label>timestamp <input name="timestamp" placeholder="ms or 2024-01-31T12:00:00Z" '
        'value="{ts}"></label>'
        '<label>count <input name="count" type="number" min="1" max="500" value="{count}"></label>'
        '<label>value as <select name="format">{formats}</select></label>'
        '<button type="submit">Show</button></form>',
        modes=modes,
        offset=offset,
        ts=timestamp,
        count=count,
        formats=formats,
    )
    rows = [_record_row(r, fmt) for r in records]
    table = _table(
        ["Offset", "Timestamp", "Key", "Headers", "Value"],
        rows,
        table_id="records",
        empty="No records in this range.",
    )
    return html(
        '<p class="facts">Log start {} · log end {} · high watermark {} · {}</p>{}'
        '<p class="hint" id="browse-note">{}</p>{}',
        p.log_start_offset,
        p.log_end_offset,
        p.high_watermark,
        size_text(p.size_bytes),
        form,
        note,
        table,
    )


def _cell(data: bytes | None, fmt: str, css: str) -> Html:
    text, used = show(data, fmt)
    return html('<td class="{} fmt-{}"><pre>{}</pre></td>', css, used, text)


def _record_row(r: RecordView, fmt: str) -> Html:
    headers = join(
        html("<div><b>{}</b>: {}</div>", name, show(value, "utf8" if fmt == "auto" else fmt)[0])
        for name, value in r.headers
    )
    return html(
        '<tr data-offset="{offset}"><td class="num offset">{offset}</td>'
        '<td class="ts" title="{ms} ({kind})">{ts}</td>{key}<td class="headers">{headers}</td>'
        "{value}</tr>",
        offset=r.offset,
        ms=r.timestamp,
        kind=r.timestamp_type,
        ts=timestamp_text(r.timestamp),
        key=_cell(r.key, "utf8" if fmt == "auto" else fmt, "key"),
        headers=headers,
        value=_cell(r.value, fmt, "value"),
    )


# Groups --------------------------------------------------------------------------


_GROUP_ROW = (
    '<tr data-group="{gid}" data-type="{kind}"><td><a href="{href}">{gid}</a></td>'
    '<td class="type">{kind}</td><td class="state">{state}</td><td>{ptype}</td>'
    '<td class="num members">{members}</td><td class="num lag">{lag}</td></tr>'
)


def groups(found: Sequence[GroupSummary], shared: Sequence[ShareGroupSummary] = ()) -> Html:
    """Consumer groups (classic protocol) and share groups (KIP-932), by group id."""
    rows = [
        (
            g.group_id,
            html(
                _GROUP_ROW,
                gid=g.group_id,
                kind="classic",
                href=group_href(g.group_id),
                state=g.state,
                ptype=g.protocol_type or "-",
                members=len(g.members),
                lag=g.total_lag,
            ),
        )
        for g in found
    ]
    rows += [
        (
            g.group_id,
            html(
                _GROUP_ROW,
                gid=g.group_id,
                kind="share",
                href=group_href(g.group_id),
                state=g.state,
                ptype="share",
                members=len(g.members),
                lag=g.total_lag,
            ),
        )
        for g in shared
    ]
    return _table(
        ["Group", "Type", "State", "Protocol type", "Members", "Total lag"],
        [row for _, row in sorted(rows, key=lambda r: r[0])],
        table_id="groups",
        empty="No consumer or share groups yet.",
    )


def group(g: GroupSummary) -> Html:
    members = _table(
        ["Member id", "Instance id", "Client id", "Host", "Assigned partitions"],
        [
            html(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                m.member_id,
                m.group_instance_id or "-",
                m.client_id,
                m.client_host,
                ", ".join(f"{t}-{p}" for t, p in m.assignment) or "-",
            )
            for m in g.members
        ],
        table_id="members",
        empty="No members (the group is not consuming now).",
    )

    def opt(v: int | None) -> str:
        return "-" if v is None else str(v)

    lag_rows = [
        html(
            '<tr data-topic="{t}" data-partition="{p}"><td>{t}</td><td class="num">{p}</td>'
            '<td class="num current">{cur}</td><td class="num end">{end}</td>'
            '<td class="num lag">{lag}</td><td>{member}</td><td>{client}</td></tr>',
            t=row.topic,
            p=row.partition,
            cur=opt(row.committed_offset),
            end=opt(row.log_end_offset),
            lag=opt(row.lag),
            member=row.member_id or "-",
            client=row.client_id or "-",
        )
        for row in g.lag
    ]
    lag = _table(
        ["Topic", "Partition", "Current offset", "Log end offset", "Lag", "Member id", "Client id"],
        lag_rows,
        table_id="lag",
        empty="Nothing committed or assigned.",
    )
    chart_data = [{"label": f"{row.topic}-{row.partition}", "value": row.lag or 0} for row in g.lag]
    return html(
        '<p class="facts">State <b id="group-state">{}</b> · protocol type {} · protocol {} '
        '· total lag <b id="total-lag">{}</b></p>'
        "<h2>Members</h2>{}<h2>Lag per partition</h2>"
        '<p class="hint">As kafka-consumer-groups.sh --describe: log end offset is the high '
        "watermark, lag is it minus the committed offset.</p>"
        '<div id="lag-chart" class="chart" data-bars="{}"></div>{}',
        g.state,
        g.protocol_type or "-",
        g.protocol or "-",
        g.total_lag,
        members,
        json_attr(chart_data),
        lag,
    )


def share_group(g: ShareGroupSummary) -> Html:
    members = _table(
        ["Member id", "Client id", "Host", "Assigned partitions"],
        [
            html(
                '<tr data-member="{}"><td>{}</td><td class="client">{}</td><td>{}</td>'
                '<td class="assignment">{}</td></tr>',
                m.member_id,
                m.member_id,
                m.client_id,
                m.client_host,
                ", ".join(f"{t}-{p}" for t, p in m.assignment) or "-",
            )
            for m in g.members
        ],
        table_id="members",
        empty="No members (nothing is fetching from this share group now).",
    )

    def opt(v: int | None) -> str:
        return "-" if v is None else str(v)

    rows = [
        html(
            '<tr data-topic="{t}" data-partition="{p}"><td>{t}</td><td class="num">{p}</td>'
            '<td class="num start">{start}</td><td class="num in-flight">{flight}</td>'
            '<td class="num acquired">{acquired}</td><td class="num available">{available}</td>'
            '<td class="num acknowledged">{acked}</td><td class="num archived">{archived}</td>'
            '<td class="num complete">{complete}</td><td class="num lag">{lag}</td>'
            "<td>{source}</td></tr>",
            t=row.topic,
            p=row.partition,
            start=row.start_offset,
            flight=row.in_flight,
            acquired=row.acquired,
            available=row.available,
            acked=row.acknowledged,
            archived=row.archived,
            complete=row.delivery_complete,
            lag=opt(row.lag),
            source="live" if row.loaded else "stored",
        )
        for row in g.partitions
    ]
    partitions = _table(
        [
            "Topic",
            "Partition",
            "Start offset",
            "In flight",
            "Acquired",
            "Available",
            "Acknowledged",
            "Archived",
            "Delivery complete",
            "Lag",
            "State from",
        ],
        rows,
        table_id="share-partitions",
        empty="No share partition yet: no member has fetched.",
    )
    return html(
        '<p class="facts">Share group · state <b id="group-state">{}</b> · assignor {} '
        '· group epoch {} · assignment epoch {} · in flight <b id="in-flight">{}</b> '
        '· total lag <b id="total-lag">{}</b></p>'
        "<h2>Members</h2>{}<h2>Share partitions</h2>"
        '<p class="hint">Records below the start offset are delivered and done with; from it '
        "to the last acquired offset they are in flight: acquired (locked by a member), "
        "available (to deliver again), acknowledged or archived (done). Delivery complete "
        "counts the done ones at or above the start offset; lag is the high watermark minus "
        "the start offset minus them (what DescribeShareGroupOffsets v1 answers). A stored "
        "partition has not been fetched since the broker started: its figures are as "
        "persisted in __share_group_state.</p>{}",
        g.state,
        g.assignor,
        g.group_epoch,
        g.assignment_epoch,
        g.in_flight,
        g.total_lag,
        members,
        partitions,
    )


# Schemas (the schema registry) ---------------------------------------------------


def schema_href(subject: str, version: int | None = None) -> str:
    query = {"subject": subject} if version is None else {"subject": subject, "version": version}
    return "/schema?" + urlencode(query)


def schema_text(schema_type: str, text: str) -> str:
    """The stored schema for reading: AVRO and JSON pretty-printed (stored compact),
    PROTOBUF as is (stored as .proto text)."""
    if schema_type not in ("AVRO", "JSON"):
        return text
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return text


def schemas(registry: SchemaRegistrySummary, found: Sequence[SchemaSubjectSummary]) -> Html:
    if registry.is_leader:
        role = html("this broker takes the writes")
    elif registry.leader_url:
        role = html("writes are forwarded to <code>{}</code>", registry.leader_url)
    else:
        role = html("no leader known: reads only")
    rows = [
        html(
            '<tr data-subject="{name}"><td><a href="{href}">{name}</a></td>'
            '<td class="type">{kind}</td><td class="num versions">{count}</td>'
            '<td class="num latest">{latest}</td><td class="num latest-id">{sid}</td>'
            '<td class="compatibility">{level}{own}</td></tr>',
            name=s.subject,
            href=schema_href(s.subject),
            kind=s.schema_type,
            count=len(s.versions),
            latest=s.versions[-1],
            sid=s.latest_id,
            level=s.compatibility,
            own=Html(' <span class="tag">own</span>' if s.compatibility_own else ""),
        )
        for s in found
    ]
    table = _table(
        ["Subject", "Type", "Versions", "Latest version", "Latest id", "Compatibility"],
        rows,
        table_id="subjects",
        empty="No subjects yet: register a schema with any Confluent client or "
        "kafkette schemas register.",
    )
    return html(
        '<p class="facts">Registry <code id="registry-url">{url}</code> · {role} · '
        '<b id="registry-subjects">{subjects}</b> subjects · {schemas} schemas · max id {max_id} '
        "· mode {mode} · global compatibility {level}</p>{table}",
        url=registry.url,
        role=role,
        subjects=registry.subjects,
        schemas=registry.schemas,
        max_id=registry.max_id,
        mode=registry.mode,
        level=registry.compatibility,
        table=table,
    )


def schema_subject(s: SchemaSubjectSummary, v: SchemaVersionView) -> Html:
    picker = join(
        html(
            '<a href="{}" data-version="{}"{}>{}</a>',
            schema_href(s.subject, n),
            n,
            Html(_ACTIVE if n == v.version else ""),
            f"version {n}",
        )
        for n in s.versions
    )
    references = _table(
        ["Name", "Subject", "Version"],
        [
            html(
                '<tr data-name="{name}"><td>{name}</td><td><a href="{href}">{subject}</a></td>'
                '<td class="num">{version}</td></tr>',
                name=r.name,
                href=schema_href(r.subject, r.version),
                subject=r.subject,
                version=r.version,
            )
            for r in v.references
        ],
        table_id="references",
        empty="No references.",
    )
    users = _table(
        ["Subject", "Version"],
        [
            html(
                '<tr><td><a href="{}">{}</a></td><td class="num">{}</td></tr>',
                schema_href(subject, version),
                subject,
                version,
            )
            for subject, version in v.referenced_by
        ],
        table_id="referenced-by",
        empty="No live version references this one.",
    )
    own = " (the subject's own)" if s.compatibility_own else " (global)"
    return html(
        '<p class="facts">{kind} · compatibility {level}{own} · live versions: {count}</p>'
        '<p class="versions" id="versions">{picker}</p>'
        '<h2>Version <span id="version">{version}</span> · id <span id="schema-id">{sid}</span>'
        "</h2>"
        '<pre class="schema" id="schema-text" data-type="{vkind}">{text}</pre>'
        "<h2>References</h2>{references}<h2>Referenced by</h2>{users}",
        kind=s.schema_type,
        level=s.compatibility,
        own=own,
        count=len(s.versions),
        picker=picker,
        version=v.version,
        sid=v.id,
        vkind=v.schema_type,
        text=schema_text(v.schema_type, v.text),
        references=references,
        users=users,
    )


# Produce -------------------------------------------------------------------------


def produce_form(topic_names: Sequence[str]) -> Html:
    options = join(html('<option value="{0}">{0}</option>', n) for n in topic_names)
    return html(
        '<p class="hint">Sent by a Kafka producer (acks=all) through the broker\'s own '
        "listener, like any client's record.</p>"
        '<form id="produce" class="stacked">'
        '<label>Topic <select name="topic" required>{}</select></label>'
        '<label>Partition <input name="partition" type="number" min="0" '
        'placeholder="empty: the partitioner picks"></label>'
        '<label>Key <input name="key" placeholder="empty: null key"></label>'
        '<label>Value <textarea name="value" rows="6"></textarea></label>'
        '<label>Headers <textarea name="headers" rows="3" placeholder="one name=value a line">'
        "</textarea></label>"
        '<button type="submit">Produce</button></form>'
        '<p id="produce-result" class="hint"></p>',
        options,
    )


def message(text: str) -> Html:
    return html('<p class="empty" id="message">{}</p>', text)
