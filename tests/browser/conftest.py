"""Browser-test fixtures: the real app served by `python -m panel serve app`, and Debian's Chromium.

See /work/shared/BROWSER_TESTS.md (Playwright's own browser download is not used).
"""
from __future__ import annotations

import pytest

from pagetools import CHROMIUM_ARGS, chromium_path, serve_app, stop


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": chromium_path(),
        "args": CHROMIUM_ARGS,
    }


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """URL of the real app, served for the whole session by a `panel serve` subprocess."""
    log_path = tmp_path_factory.mktemp("panel") / "serve.log"
    process, url = serve_app(log_path)
    yield url
    stop(process)
