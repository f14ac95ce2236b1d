"""Adding a page is one file and one ``register`` line (docs/development.md, "Adding a page"): a
page module written here, registered, becomes a tab of the dashboard with its ``?page=`` link and
its URL keys, and opens; nothing else is edited. Runs in a child process so the registry of this
test session stays the shipped one."""
from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

APP = Path(__file__).resolve().parents[2] / "app"

PAGE = '''
import panel as pn
import pages

TITLE = pages.title(__name__)
URL_KEYS = {"greeting": "hello_text"}


def page():
    return TITLE, pn.pane.Markdown("Hello from a new page", name="hello")
'''

CHECK = '''
import sys
sys.path[:0] = [{tmp!r}, {app!r}]
import pages
pages.register("hello_page", "Hello page")
import dashboard

app = dashboard.build()
lazy = app.lazy_pages
index = lazy.titles.index("Hello page")
assert index == len(lazy.titles) - 1, lazy.titles          # its tab goes to the right of the others
assert "hello_page" not in sys.modules                       # not imported until its tab opens
shown = lazy.page(index)
assert shown.object == "Hello from a new page", shown
assert dashboard.url_keys()["hello-page"][-1] == "hello_text"
assert pages.by_slug("hello-page").module == "hello_page"
print("ok", len(lazy.titles))
'''


def test_a_new_page_is_one_module_and_one_register_line(tmp_path):
    (tmp_path / "hello_page.py").write_text(textwrap.dedent(PAGE))
    script = CHECK.format(tmp=str(tmp_path), app=str(APP))
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    # its line among any others (a stale numba cache has the dashboard compile the first page's kernels
    # in a child process, whose progress lines share this stdout)
    assert "ok 9" in done.stdout.splitlines(), done.stdout[-3000:]
