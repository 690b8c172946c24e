"""Headless Chromium for the browser tests: Debian's chromium + chromium-driver, nothing downloaded.

Locally a missing browser skips (`needs_browser`); in CI (CI=true, where .ci/system-deps installs it) the test
fails instead."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
IN_CI = os.environ.get("CI") == "true"
WAIT = 60  # seconds: the machine is shared; a condition usually holds in well under one

needs_browser = pytest.mark.skipif(
    not IN_CI and not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="chromium and chromium-driver are not installed (/usr/bin/chromium, /usr/bin/chromedriver)",
)


@contextmanager
def chrome(profile: Path, monkeypatch: pytest.MonkeyPatch, *flags: str) -> Iterator[Any]:
    """A selenium Chrome driver on the system Chromium with its own profile directory (removed afterwards)."""
    if not IN_CI:
        pytest.importorskip("selenium", reason="selenium is not installed (pip install -e '.[test]')")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    # Selenium Manager must never fetch a browser or a driver: both are given, and it is told to stay offline.
    monkeypatch.setenv("SE_OFFLINE", "true")
    opts = webdriver.ChromeOptions()
    opts.binary_location = str(CHROMIUM)
    for flag in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync", "--disable-dev-shm-usage",
                 *flags, f"--user-data-dir={profile}"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(options=opts, service=Service(executable_path=str(CHROMEDRIVER)))
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
