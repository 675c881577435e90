"""Lesson 12's section 7: the page a kernel links to.

The link a kernel prints, and the page opened through jupyter-server-proxy in Chromium.
"""

import json
import os

import pytest
from browser_lab import Lab, launch_chromium, missing_browser_tools

from iolab import registry, servers
from iolab.claims import Claims, ClaimsFailed
from iolab.lessons.long_lived import browser

PAGE_TIMEOUT_MS = 20_000
needs_push = pytest.mark.skipif(browser.SERVER not in registry.SERVERS, reason=f"no {browser.SERVER} in this lab yet")


def test_under_jupyterhub_the_link_uses_the_hub_prefix(monkeypatch, tmp_path):
    monkeypatch.setenv(browser.HUB_PREFIX, "/user/student")
    found = browser.proxy_link(8123, runtime_dir=str(tmp_path))
    assert found["page"] == "/user/student/proxy/8123/page" and found["missing"] is None


def test_without_a_jupyter_server_the_section_says_so(monkeypatch, tmp_path):
    monkeypatch.delenv(browser.HUB_PREFIX, raising=False)
    found = browser.proxy_link(8123, runtime_dir=str(tmp_path))  # an empty runtime folder: no server runs
    assert found["page"] is None and "no Jupyter server" in found["missing"]
    assert "no Jupyter server" in repr(browser.Link(found))


def test_the_link_is_html_a_notebook_shows():
    link = browser.Link({"page": "/user/a&b/proxy/8123/page", "missing": None})
    assert link._repr_html_().count('href="/user/a&amp;b/proxy/8123/page"') == 1


def test_the_server_this_kernel_runs_under_is_found_by_its_pid(tmp_path):
    for pid, base in ((1, "/other/"), (os.getppid(), "/ours/")):
        (tmp_path / f"jpserver-{pid}.json").write_text(json.dumps({"pid": pid, "base_url": base, "url": "x"}))
    info, why = browser.jupyter_server(str(tmp_path))
    assert why is None and info["base_url"] == "/ours/"


@needs_push
def test_with_no_page_open_the_section_skips_its_claims_with_the_reason():
    with servers.serve(browser.SERVER) as push:
        found = browser.run(push, {"missing": None}, messages=2, wait_s=0)
    assert "no browser subscribed" in found["skipped"]
    claims = Claims("12-long-lived-connections")
    browser.add_claims(claims, found)
    assert claims.report() == 0


def test_a_message_the_page_never_echoed_is_named():
    found = {"messages": 2, "published": [1, 2], "echoed": [1],
             "echoes": [{"seq": 1, "via": "ws", "round_trip_ms": 3.0}]}
    claims = Claims("12-long-lived-connections")
    browser.add_claims(claims, found)
    with pytest.raises(ClaimsFailed, match=r"no echo came back for the messages \[2\]"):
        claims.report()


@pytest.mark.browser
@needs_push
@pytest.mark.skipif(missing_browser_tools() is not None, reason=str(missing_browser_tools()))
def test_the_page_opened_through_jupyter_server_proxy_receives_and_echoes():
    from playwright.sync_api import sync_playwright

    with servers.serve(browser.SERVER) as push:
        lab = Lab(account=None).spawn()  # as this test runs: the page, not the lab's user, is what is tested here
        try:
            with sync_playwright() as playwright:
                chromium = launch_chromium(playwright)  # while the lab starts (about 2 s of its 8 here)
                try:
                    lab.wait_ready()
                    found = browser.proxy_link(push.port, runtime_dir=lab.env["JUPYTER_RUNTIME_DIR"])
                    assert found["missing"] is None, found
                    assert found["page"] == f"/proxy/{push.port}/page" and found["checked"] == "200 hello world"
                    page = chromium.new_page()
                    page.goto(f"{lab.url}{found['page']}?token={lab.token}")
                    # jupyter-server-proxy passes an event stream's headers on with its first event, so the
                    # EventSource reads "connecting" until then: the server's own count tells when both are in.
                    page.wait_for_function("document.getElementById('ws-state').textContent === 'open'",
                                           timeout=PAGE_TIMEOUT_MS)
                    result = browser.run(push, found, messages=3, every_s=0.1, wait_s=PAGE_TIMEOUT_MS / 1000)
                    page.wait_for_selector('tr[data-seq="3"][data-via="sse"]', timeout=PAGE_TIMEOUT_MS)
                    shown = page.locator("#count").text_content()
                finally:
                    chromium.close()
        finally:
            lab.stop()
    assert result.get("echoed") == result.get("published") == [1, 2, 3], result
    assert len(result["echoes"]) == 6 and shown == "6", "each message should come once by WebSocket, once by SSE"
    claims = Claims("12-long-lived-connections")
    browser.add_claims(claims, result)
    assert claims.report() == 2


def test_without_the_push_server_the_section_says_so_and_goes_on(monkeypatch):
    monkeypatch.delitem(registry.SERVERS, browser.SERVER, raising=False)
    server, found = browser.begin()
    assert server is None and "goes on without your browser" in browser.Link(found)._repr_html_()
    assert "cannot run here" in browser.run(server, found)["skipped"]


@needs_push
def test_where_no_browser_can_reach_the_page_the_section_does_not_wait():
    with servers.serve(browser.SERVER) as push:
        found = browser.run(push, {"missing": "no Jupyter server is running here"}, wait_s=60)
    assert "no Jupyter server" in found["skipped"]


def test_the_table_gives_each_message_its_echoes():
    found = {"published": [4, 5], "echoes": [{"seq": 4, "via": None, "round_trip_ms": 3.25},
                                             {"seq": 4, "via": None, "round_trip_ms": 2.0}]}
    assert browser.table(found) == "message 4: echoed after 2.0 and 3.2 ms\nmessage 5: no echo came back"
