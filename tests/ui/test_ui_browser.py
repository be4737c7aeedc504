"""The viewer in a real browser (headless Chromium through Debian's chromedriver), served
by the installed console script: list, filter, open, keyboard, live follow while another
process appends, hostile payload, narrow window, copy buttons; screenshots for docs/ui.md."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any
from urllib.parse import quote

from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait

from tests.ui import demo_store
from tests.ui.conftest import WAIT_S, Served, file_digests

Driver = Any


def wait(driver: Driver) -> WebDriverWait:  # type: ignore[type-arg]
    """Return a wait bounded by WAIT_S (a bound, never a timing assertion)."""
    return WebDriverWait(driver, WAIT_S)


def rows(driver: Driver, table: str) -> list[Any]:
    """Return the body rows of a table by id."""
    return list(driver.find_elements(By.CSS_SELECTOR, f"#{table} tbody tr"))


def test_list_filter_and_open_a_session(server: Served, browser: Driver, shots: Path) -> None:
    """The list shows counts; ticking "failed" filters it; a click opens the session page."""
    browser.get(server.url + "/")
    assert browser.title == "Sessions · sqlstore"
    assert browser.find_element(By.ID, "matching").text == "64"
    browser.save_screenshot(str(shots / "ui-sessions.png"))
    browser.find_element(By.CSS_SELECTOR, 'input[name="state"][value="failed"]').click()
    browser.find_element(By.ID, "apply").click()
    wait(browser).until(lambda d: d.find_element(By.ID, "matching").text == "2")
    assert len(rows(browser, "sessions")) == 2
    browser.find_element(By.LINK_TEXT, demo_store.PARENT_ID).click()
    wait(browser).until(lambda d: d.find_elements(By.ID, "session-id"))
    assert browser.find_element(By.ID, "session-id").text == demo_store.PARENT_ID
    assert "run_tests failed" in browser.find_element(By.ID, "last-error").text
    image = browser.find_element(By.CSS_SELECTOR, "figure img")
    assert browser.execute_script("return arguments[0].naturalWidth", image) == 64
    browser.save_screenshot(str(shots / "ui-session.png"))
    browser.find_element(By.ID, "to-tools").click()
    wait(browser).until(lambda d: d.find_elements(By.ID, "calls"))
    browser.find_element(By.ID, "errors-first").click()
    wait(browser).until(lambda d: d.find_elements(By.ID, "record-order"))
    assert "is-error" in rows(browser, "calls")[0].get_attribute("class")
    browser.save_screenshot(str(shots / "ui-tools.png"))


def test_keyboard_navigation(server: Served, browser: Driver) -> None:
    """j/k move between rows, Enter opens the focused row, / jumps to the search field."""
    browser.get(server.url + "/")
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("j")
    first = browser.switch_to.active_element
    body.send_keys("j")
    second = browser.switch_to.active_element
    assert first.tag_name == second.tag_name == "a" and first != second
    browser.switch_to.active_element.send_keys("k")
    assert browser.switch_to.active_element == first
    target = first.text
    first.send_keys(Keys.ENTER)
    wait(browser).until(lambda d: d.find_elements(By.ID, "session-id"))
    assert browser.find_element(By.ID, "session-id").text == target
    browser.get(server.url + "/")
    browser.find_element(By.TAG_NAME, "body").send_keys("/")
    assert browser.switch_to.active_element.get_attribute("id") == "search"
    browser.switch_to.active_element.send_keys("Read the test", Keys.ENTER)
    wait(browser).until(lambda d: d.find_element(By.ID, "matching").text == "1")


APPENDER = textwrap.dedent(
    """
    import sys, time
    from sqlstore import Event, SQLiteStore
    with SQLiteStore(sys.argv[1]) as store:
        for n in range(int(sys.argv[3])):
            text = sys.argv[4] + str(n)
            store.events.append_event(sys.argv[2], Event(type="message", text=text))
            time.sleep(0.2)
    """
)


def test_live_follow_while_another_process_appends(
    server: Served, browser: Driver, shots: Path
) -> None:
    """With Follow live on, records appended by a second process appear without a reload."""
    browser.get(server.url + "/timeline?id=" + quote(demo_store.LIVE_ID))
    assert len(rows(browser, "timeline")) == 1
    marker = browser.execute_script("window.__sameDocument = true; return 1")
    browser.find_element(By.ID, "follow").click()
    wait(browser).until(lambda d: "following" in d.find_element(By.ID, "live-status").text)
    subprocess.run(
        [sys.executable, "-c", APPENDER, str(server.db), demo_store.LIVE_ID, "3", "live step "],
        check=True,
        timeout=WAIT_S,
    )
    wait(browser).until(lambda d: len(d.find_elements(By.CSS_SELECTOR, "tr.live-row")) == 3)
    live = browser.find_elements(By.CSS_SELECTOR, "tr.live-row")
    assert [r.find_elements(By.TAG_NAME, "td")[0].text for r in live] == ["2", "3", "4"]
    assert "live step 2" in live[-1].text
    assert browser.execute_script("return window.__sameDocument") is True and marker == 1
    assert browser.find_element(By.ID, "live-status").text == "following · 3 new"
    browser.save_screenshot(str(shots / "ui-timeline-live.png"))
    browser.find_element(By.ID, "follow").click()
    assert browser.find_element(By.ID, "live-status").text == "stopped"


def test_hostile_payload_renders_as_text_and_never_runs(
    server: Served, browser: Driver, shots: Path
) -> None:
    """Stored <script> and onerror= markup shows as text on every page and runs nowhere."""
    sid = quote(demo_store.HOSTILE_ID)
    for path in [
        "/?state=failed",
        f"/session?id={sid}",
        f"/timeline?id={sid}",
        f"/tools?id={sid}",
        "/tools",
    ]:
        browser.get(server.url + path)
        assert browser.execute_script("return window.__pwned === undefined") is True, path
        assert browser.find_elements(By.CSS_SELECTOR, "img[src=x]") == [], path
        shown = browser.find_element(By.TAG_NAME, "main").text
        assert "<script>window.__pwned = 1</script>" in shown, path
    browser.get(server.url + f"/timeline?id={sid}")
    browser.find_element(By.ID, "follow").click()
    wait(browser).until(lambda d: "following" in d.find_element(By.ID, "live-status").text)
    subprocess.run(
        [
            sys.executable,
            "-c",
            APPENDER,
            str(server.db),
            demo_store.HOSTILE_ID,
            "1",
            demo_store.HOSTILE,
        ],
        check=True,
        timeout=WAIT_S,
    )
    wait(browser).until(lambda d: d.find_elements(By.CSS_SELECTOR, "tr.live-row"))
    live_row = browser.find_element(By.CSS_SELECTOR, "tr.live-row")
    assert "<script>window.__pwned = 1</script>" in live_row.text
    assert browser.find_elements(By.CSS_SELECTOR, "img[src=x]") == []
    assert browser.execute_script("return window.__pwned === undefined") is True
    browser.get(server.url + f"/session?id={sid}")
    assert browser.find_element(By.ID, "session-id").text == demo_store.HOSTILE_ID
    assert browser.execute_script("return window.__pwned === undefined") is True
    browser.save_screenshot(str(shots / "ui-hostile.png"))


def test_narrow_window_and_local_time_and_copy(
    server: Served, browser: Driver, shots: Path
) -> None:
    """At 400 px nothing scrolls sideways; times carry local time on hover; copy buttons copy."""
    browser.set_window_size(400, 900)
    browser.get(server.url + f"/session?id={demo_store.PARENT_ID}")
    width = browser.execute_script("return document.documentElement.scrollWidth")
    assert width <= browser.execute_script("return window.innerWidth")
    browser.save_screenshot(str(shots / "ui-session-narrow.png"))
    stamp = browser.find_element(By.CSS_SELECTOR, "dl.summary time")
    assert stamp.text.endswith(" UTC")
    assert stamp.get_attribute("title").startswith("Local: ")
    browser.execute_cdp_cmd(
        "Browser.grantPermissions",
        {"origin": server.url, "permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]},
    )
    button = browser.find_element(By.CSS_SELECTOR, "h1 button.copy")
    button.click()
    wait(browser).until(lambda d: button.text == "copied")
    copied = browser.execute_async_script(
        "const done = arguments[0]; navigator.clipboard.readText().then(done, () => done(null));"
    )
    assert copied == demo_store.PARENT_ID


def test_store_and_retention_pages_and_unchanged_file(
    server: Served, browser: Driver, shots: Path
) -> None:
    """Store and retention pages render in the browser; after browsing, the file is unchanged."""
    before = file_digests(server.db)
    browser.get(server.url + "/store?check=full")
    assert browser.find_element(By.ID, "check-status").text == "ok"
    browser.save_screenshot(str(shots / "ui-store.png"))
    browser.get(server.url + "/retention")
    assert "What a sweep would delete now" in browser.find_element(By.TAG_NAME, "main").text
    browser.get(server.url + "/tools")
    browser.save_screenshot(str(shots / "ui-tools-by-tool.png"))
    assert file_digests(server.db) == before
