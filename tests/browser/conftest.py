"""Browser-test fixtures: the real app served by `python -m panel serve app`, and Debian's Chromium.

See /work/shared/BROWSER_TESTS.md (Playwright's own browser download is not used).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STARTUP_SECONDS = 240  # a cold start compiles the numba kernels


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    return {
        **browser_type_launch_args,
        "executable_path": os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"),
        "args": [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
        ],
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def serve_app(log_path: Path) -> tuple[subprocess.Popen, str]:
    """Start `python -m panel serve app` on a free port; return the process and the app URL once it answers."""
    port = free_port()
    log = open(log_path, "w")
    process = subprocess.Popen(
        [sys.executable, "-m", "panel", "serve", "app", "--port", str(port), "--address", "127.0.0.1",
         f"--allow-websocket-origin=127.0.0.1:{port}"],
        cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/app"
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"panel serve exited with {process.returncode}:\n{log_path.read_text()}")
        try:
            with urllib.request.urlopen(url, timeout=120) as response:
                if response.status == 200:
                    return process, url
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            time.sleep(0.3)
    stop(process)
    raise RuntimeError(f"panel serve did not answer within {STARTUP_SECONDS} s:\n{log_path.read_text()}")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """URL of the real app, served for the whole session by a `panel serve` subprocess."""
    log_path = tmp_path_factory.mktemp("panel") / "serve.log"
    process, url = serve_app(log_path)
    yield url
    stop(process)
