"""The console in a real browser: headless Chromium (Debian's chromium and chromium-driver,
driven by selenium) opens the pages of a real broker and checks that they show what the
clients see: the topics, the last records of a partition, a group's lag, the schemas a
client registered (the broker serves a schema registry too). Each test keeps a
screenshot under test-artifacts/console/ at the repository root.

Skips, with the reason, where chromium, chromedriver or selenium is missing.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.console import support

GROUP, PARTITIONS, TOPIC = support.GROUP, support.PARTITIONS, support.TOPIC

ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "console"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"


def _missing() -> str | None:
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "selenium is not installed (pip install -e '.[test]')"
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not Path(path).is_file():
            return f"{path} not found (apt-get install {package})"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=str(_missing()))


@pytest.fixture(scope="module")
def console(start_console) -> support.ConsoleBroker:
    """conftest's read-only console, its broker serving a schema registry as well (the
    Schemas page; what the other pages show does not change with it)."""
    return start_console("--schema-registry-listen", "127.0.0.1:0")


@pytest.fixture(scope="module")
def browser() -> Iterator[object]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--disable-gpu",
        "--window-size=1400,1000",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def screenshot(driver, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    driver.save_screenshot(str(path))
    assert path.stat().st_size > 1000
    print(f"screenshot kept: {path}")
    return path


def wait_for(condition, what: str, timeout: float = 15.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def test_topics_page_lists_the_topics_clients_see(browser, console, workload) -> None:
    from selenium.webdriver.common.by import By

    admin = AdminClient({"bootstrap.servers": workload.bootstrap})
    seen = set(admin.list_topics(timeout=15).topics)
    browser.get(console.url + "topics")
    rows = browser.find_elements(By.CSS_SELECTOR, "#topics tbody tr")
    shown = {row.get_attribute("data-topic") for row in rows}
    # Both list the internal topics (Kafka's all-topics Metadata has them, is_internal=true);
    # the console tags them.
    internal = {
        row.get_attribute("data-topic")
        for row in rows
        if row.find_elements(By.CSS_SELECTOR, ".tag")
    }
    assert internal <= {"__consumer_offsets", "__transaction_state"}
    assert shown - internal == seen - {"__consumer_offsets", "__transaction_state"}
    orders = browser.find_element(By.CSS_SELECTOR, f'#topics tr[data-topic="{TOPIC}"]')
    cells = [c.text for c in orders.find_elements(By.TAG_NAME, "td")]
    assert cells[1] == str(PARTITIONS)
    assert cells[2] == str(sum(map(len, workload.records.values())))
    screenshot(browser, "topics")

    orders.find_element(By.TAG_NAME, "a").click()
    wait_for(lambda: browser.find_elements(By.CSS_SELECTOR, "#partitions tbody tr"), "partitions")
    rows = browser.find_elements(By.CSS_SELECTOR, "#partitions tbody tr")
    ends = {
        int(r.get_attribute("data-partition")): int(r.find_elements(By.TAG_NAME, "td")[3].text)
        for r in rows
    }
    assert ends == {p: len(records) for p, records in workload.records.items()}
    screenshot(browser, "topic")


def test_message_browser_shows_the_last_records_a_consumer_reads(
    browser, console, workload
) -> None:
    from selenium.webdriver.common.by import By

    count = 5
    browser.get(console.url + f"topics/{TOPIC}/0?from=latest&count={count}&format=utf8")
    rows = browser.find_elements(By.CSS_SELECTOR, "#records tbody tr")
    expected = workload.records[0][-count:]
    assert [int(r.get_attribute("data-offset")) for r in rows] == [o for o, _, _ in expected]

    def as_text(data: bytes | None) -> str:
        if data is None:
            return "null"
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data.hex(" ")

    for row, (_, key, value) in zip(rows, expected, strict=True):
        assert row.find_element(By.CSS_SELECTOR, "td.key pre").text == as_text(key)
        assert row.find_element(By.CSS_SELECTOR, "td.value pre").text == as_text(value)
    # The hostile record is text on the page, and none of its markup ran.
    assert browser.execute_script("return window.__pwned === undefined")
    assert not browser.find_elements(By.CSS_SELECTOR, "#records img")
    screenshot(browser, "messages-utf8")

    # Switch to pretty JSON with the form, as a user would.
    browser.find_element(
        By.CSS_SELECTOR, '#browse select[name="format"] option[value="json"]'
    ).click()
    browser.find_element(By.CSS_SELECTOR, "#browse button").click()
    wait_for(lambda: "format=json" in browser.current_url, "the json view")
    json_cell = browser.find_element(By.CSS_SELECTOR, '#records tr[data-offset="12"] td.value')
    assert "fmt-json" in json_cell.get_attribute("class")
    assert json_cell.text.startswith("{\n  ")
    screenshot(browser, "messages-json")


def test_group_page_shows_the_lag_clients_see(browser, console, workload) -> None:
    from selenium.webdriver.common.by import By

    seen = workload.client_view_of_lag()
    browser.get(console.url + f"group?id={GROUP}")
    assert browser.find_element(By.ID, "group-state").text == "Stable"
    rows = browser.find_elements(By.CSS_SELECTOR, "#lag tbody tr")
    shown = {}
    for row in rows:
        if row.get_attribute("data-topic") != TOPIC:
            continue
        cells = row.find_elements(By.TAG_NAME, "td")
        shown[int(cells[1].text)] = (int(cells[2].text), int(cells[3].text), int(cells[4].text))
    assert shown == seen
    assert browser.find_element(By.ID, "total-lag").text == str(sum(v[2] for v in seen.values()))
    bars = wait_for(
        lambda: browser.find_elements(By.CSS_SELECTOR, "#lag-chart rect.bar"), "the lag chart"
    )
    drawn = {b.get_attribute("data-label"): int(b.get_attribute("data-value")) for b in bars}
    assert drawn == {f"{TOPIC}-{p}": lag for p, (_, _, lag) in seen.items()}
    members = browser.find_elements(By.CSS_SELECTOR, "#members tbody tr")
    assert len(members) == 1 and "billing-1" in members[0].text
    screenshot(browser, "group")

    browser.get(console.url + "groups")
    row = browser.find_element(By.CSS_SELECTOR, f'#groups tr[data-group="{GROUP}"]')
    assert row.find_element(By.CSS_SELECTOR, "td.lag").text == str(sum(v[2] for v in seen.values()))
    screenshot(browser, "groups")


def test_overview_draws_the_live_throughput_chart(browser, console, workload) -> None:
    from selenium.webdriver.common.by import By

    browser.get(console.url)
    admin = AdminClient({"bootstrap.servers": workload.bootstrap})
    topics = len(admin.list_topics(timeout=15).topics)
    # The overview counts every topic, the internal ones too, as a client's all-topics
    # Metadata lists them (Kafka's is_internal=true).
    assert browser.find_element(By.ID, "fact-topics").text == str(topics)
    # The chart polls /api/throughput every 2 s; the sampler adds a point a second.
    wait_for(
        lambda: (
            int(browser.find_element(By.ID, "throughput-chart").get_attribute("data-samples") or 0)
            >= 2
        ),
        "two throughput samples",
    )
    paths = browser.find_elements(By.CSS_SELECTOR, "#throughput-chart svg path")
    assert {p.get_attribute("data-series") for p in paths} == {"records in", "records out"}
    # Records a client produces now show as a rise of the "records in" line above its baseline.
    admin.create_topics([NewTopic("pulse", 1)])["pulse"].result(timeout=15)
    producer = Producer({"bootstrap.servers": workload.bootstrap, "linger.ms": 0})
    for i in range(200):
        producer.produce("pulse", value=b"beat %d" % i)
    assert producer.flush(15) == 0

    def records_in_rose() -> bool:
        line = browser.find_element(
            By.CSS_SELECTOR, '#throughput-chart svg path[data-series="records in"]'
        )
        axis = browser.find_element(By.CSS_SELECTOR, "#throughput-chart svg line.axis")
        zero = float(axis.get_attribute("y1"))
        heights = [float(point.split(",")[1]) for point in line.get_attribute("d")[1:].split("L")]
        return min(heights) < zero  # SVG y grows downwards: some point sits above the zero axis

    wait_for(records_in_rose, "the records-in line to rise", timeout=15)
    screenshot(browser, "overview")


def test_groups_pages_show_a_share_group_and_its_records_in_flight(
    browser, console, workload, share_workload
) -> None:
    from selenium.webdriver.common.by import By

    seen = share_workload.client_view()
    assert (seen["start_offset"], seen["lag"]) == (4, 4)
    browser.get(console.url + "groups")
    share = browser.find_element(By.CSS_SELECTOR, f'#groups tr[data-group="{support.SHARE_GROUP}"]')
    classic = browser.find_element(By.CSS_SELECTOR, f'#groups tr[data-group="{GROUP}"]')
    assert (share.get_attribute("data-type"), classic.get_attribute("data-type")) == (
        "share", "classic")
    assert [share.find_element(By.CSS_SELECTOR, f"td.{c}").text
            for c in ("type", "state", "members", "lag")] == ["share", "Stable", "1", "4"]
    screenshot(browser, "groups-with-share")

    share.find_element(By.TAG_NAME, "a").click()
    rows = wait_for(
        lambda: browser.find_elements(By.CSS_SELECTOR, "#share-partitions tbody tr"),
        "the share partitions",
    )
    assert [(r.get_attribute("data-topic"), r.get_attribute("data-partition")) for r in rows] == [
        (support.SHARE_TOPIC, "0")]
    cells = {c: rows[0].find_element(By.CSS_SELECTOR, f"td.{c}").text
             for c in ("start", "in-flight", "acquired", "available", "acknowledged",
                       "archived", "complete", "lag")}
    assert cells == {"start": "4", "in-flight": "6", "acquired": "4", "available": "0",
                     "acknowledged": "1", "archived": "1", "complete": "2", "lag": "4"}
    assert (int(cells["start"]), int(cells["lag"])) == (seen["start_offset"], seen["lag"])
    assert browser.find_element(By.ID, "group-state").text == "Stable"
    assert browser.find_element(By.ID, "in-flight").text == "6"
    members = browser.find_elements(By.CSS_SELECTOR, "#members tbody tr")
    assert [m.get_attribute("data-member") for m in members] == seen["members"]
    assert members[0].find_element(By.CSS_SELECTOR, "td.client").text == support.SHARE_CLIENT
    assert members[0].find_element(By.CSS_SELECTOR, "td.assignment").text == (
        f"{support.SHARE_TOPIC}-0")
    screenshot(browser, "share-group")


def test_schemas_page_lists_subjects_and_shows_their_versions(browser, console) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
    from selenium.webdriver.common.by import By

    registry = re.search(r"schema registry on (http://\S+)", console.log_text()).group(1)
    client = SchemaRegistryClient({"url": registry})
    sku = {"name": "sku", "type": "string"}
    qty = {"name": "qty", "type": "int", "default": 1}
    for fields in ([sku], [sku, qty]):
        client.register_schema(
            "item", Schema(json.dumps({"type": "record", "name": "Item", "fields": fields}), "AVRO")
        )
    cart = {"type": "record", "name": "Cart", "fields": [{"name": "item", "type": "Item"}]}
    cart_id = client.register_schema(
        "cart-value", Schema(json.dumps(cart), "AVRO", [SchemaReference("Item", "item", 1)])
    )

    browser.get(console.url)
    browser.find_element(By.LINK_TEXT, "Schemas").click()
    rows = wait_for(
        lambda: browser.find_elements(By.CSS_SELECTOR, "#subjects tbody tr"), "the subjects"
    )
    assert [r.get_attribute("data-subject") for r in rows] == ["cart-value", "item"]
    item = browser.find_element(By.CSS_SELECTOR, '#subjects tr[data-subject="item"]')
    assert [
        item.find_element(By.CSS_SELECTOR, f"td.{c}").text
        for c in ("type", "versions", "latest", "compatibility")
    ] == ["AVRO", "2", "2", "BACKWARD"]
    screenshot(browser, "schemas")

    rows[0].find_element(By.TAG_NAME, "a").click()
    text = wait_for(lambda: browser.find_elements(By.ID, "schema-text"), "the schema text")[0]
    assert browser.find_element(By.ID, "schema-id").text == str(cart_id)
    stored = client.get_schema(cart_id).schema_str
    assert text.text == json.dumps(json.loads(stored), indent=2)  # pretty-printed
    screenshot(browser, "schema-subject")
    # Its reference leads to the referenced version; the picker to the others.
    browser.find_element(By.CSS_SELECTOR, "#references a").click()
    wait_for(lambda: "subject=item" in browser.current_url, "the referenced subject")
    assert browser.find_element(By.ID, "version").text == "1"
    assert "qty" not in browser.find_element(By.ID, "schema-text").text
    browser.find_element(By.CSS_SELECTOR, '#versions a[data-version="2"]').click()
    wait_for(lambda: browser.find_element(By.ID, "version").text == "2", "version 2")
    assert '"qty"' in browser.find_element(By.ID, "schema-text").text
    assert [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#referenced-by a")] == []
