"""A message Panel postponed is not overtaken by a later Bokeh message (app/message_order.py).

The served page (message_order_app.py) rebuilds the case that broke two test runs: a figure put
on the page while the websocket was busy, then its title changed. Served without the fix, the
browser gets the title's change first, logs "reference ... isn't known" and keeps the old title;
that run shows that the test can fail, and tells when a Panel release no longer needs the fix.
"""
from __future__ import annotations

import pytest
from pagetools import TITLES_JS, serve_app, stop
from playwright.sync_api import Page

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module", params=["on", "off"])
def order_app(request, tmp_path_factory):
    log_path = tmp_path_factory.mktemp("order") / "serve.log"
    process, url = serve_app(log_path, app="tests/browser/message_order_app.py",
                             env={"QPVIZ_MESSAGE_ORDER": request.param})
    yield request.param, url
    stop(process)


def test_a_figure_put_on_the_page_while_the_socket_is_busy_gets_its_later_title(order_app, page: Page):
    fix, url = order_app
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
    page.goto(url)
    page.locator(".qpviz-show button").click()
    page.wait_for_function(f"() => ({TITLES_JS})().length > 0", timeout=30_000)
    page.wait_for_timeout(500)  # both messages are in by now (the lock is held 0.3 s)
    titles = page.evaluate(TITLES_JS)
    if fix == "on":
        assert (titles, errors) == (["second title"], [])
    else:  # Panel 1.9's own writers: the title's change arrives first and is lost
        assert titles == ["first title"] and any("isn't known" in e for e in errors), (
            f"Panel now writes this case in order ({titles}, {errors}): app/message_order.py may go")
