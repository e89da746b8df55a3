"""Headless Chromium for the browser tests, and waiting on what a React page renders.

Debian's `chromium` and its `chromedriver` (`make chromium`, part of `make setup`) driven
by selenium: never a browser or driver a test tool downloads. Chromium starts with every
background service off (this machine's network is closed; without those flags it keeps
trying Google's hosts) and a fresh profile per browser.

A page is "there" when its rendered text is: every check waits, up to a generous timeout,
for the text it needs to appear in the page (`document.body.innerText`, which holds only
what is rendered), never for a fixed time. A check that times out saves a screenshot and
fails naming what it did not find and where the screenshot is (`UiCheckFailed`).

Test code, not the product: selenium is a dev dependency, so this lives in assets_tests.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from selenium import webdriver
from selenium.common.exceptions import TimeoutException, WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.ui import WebDriverWait

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
# What keeps a headless Chromium off the network and away from a desktop session.
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
WINDOW = (1600, 1000)  # wide enough that the asset graph and asset page need no scrolling
# The Dagster UI is a React app over GraphQL; on 2 cores shared with Spark a page can take
# a while to render its data, so waits are long and end as soon as the text is there.
PAGE_TIMEOUT_S = 90.0
POLL_S = 0.25

T = TypeVar("T")


class UiCheckFailed(AssertionError):
    """A page did not show what a check needed; says what, where, and the screenshot."""


def chromium_missing() -> str | None:
    """Why the browser tests cannot start, or None."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    if missing:
        return f"{', '.join(missing)} not installed: run `make chromium` (part of `make setup`)"
    return None


@contextmanager
def headless_chromium(profile_dir: Path, log_path: Path) -> Iterator[webdriver.Chrome]:
    """Debian's Chromium through its chromedriver, with a fresh profile in `profile_dir`
    (removed afterwards); chromedriver's log in `log_path`."""
    reason = chromium_missing()
    if reason:
        raise RuntimeError(reason)
    shutil.rmtree(profile_dir, ignore_errors=True)
    profile_dir.mkdir(parents=True)
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile_dir}")
    options.add_argument(f"--window-size={WINDOW[0]},{WINDOW[1]}")
    # An explicit driver path: selenium's manager (which would look for a driver online)
    # is never asked.
    service = Service(executable_path=str(CHROMEDRIVER), log_output=str(log_path))
    driver = webdriver.Chrome(service=service, options=options)
    try:
        yield driver
    finally:
        driver.quit()  # stops chromedriver and the browser it started
        shutil.rmtree(profile_dir, ignore_errors=True)


def normalized(text: str) -> str:
    """Whitespace runs as one space, so a check does not depend on line wrapping."""
    return re.sub(r"\s+", " ", text).strip()


class Page:
    """One browser on one web app: opens paths, waits for rendered text, takes
    screenshots into `shots_dir`, and fails with a screenshot when a wait runs out."""

    def __init__(self, driver: webdriver.Chrome, base_url: str, shots_dir: Path) -> None:
        self.driver = driver
        self.base_url = base_url.rstrip("/")
        self.shots_dir = shots_dir
        shots_dir.mkdir(parents=True, exist_ok=True)
        self.current = "(no page yet)"

    def open(self, path: str, what: str) -> None:
        """Loads `path`; `what` names the page in failures."""
        self.current = f"{what} ({self.base_url}{path})"
        self.driver.get(self.base_url + path)

    def screenshot(self, name: str) -> Path:
        path = self.shots_dir / f"{name}.png"
        self.driver.save_screenshot(str(path))
        return path

    def fail(self, message: str, name: str) -> UiCheckFailed:
        """The error for a check that did not pass, after a screenshot of the page."""
        try:
            shot = f"screenshot: {self.screenshot(f'FAILED-{name}')}"
        except WebDriverException as exc:
            shot = f"no screenshot ({exc.msg})"
        return UiCheckFailed(f"{self.current}: {message}; {shot}")

    def text(self) -> str:
        return normalized(self.driver.execute_script("return document.body.innerText") or "")

    def script(self, source: str, *args: Any) -> Any:
        return self.driver.execute_script(source, *args)

    def wait_until(
        self,
        probe: Callable[[], T | None],
        describe_missing: Callable[[], str],
        name: str,
        timeout_s: float = PAGE_TIMEOUT_S,
    ) -> T:
        """Polls `probe` until it returns something truthy and returns that; on timeout
        fails with `describe_missing()` (what is still absent) and a screenshot."""
        try:
            return WebDriverWait(self.driver, timeout_s, poll_frequency=POLL_S).until(
                lambda _driver: probe()
            )
        except TimeoutException:
            raise self.fail(f"after {timeout_s:.0f} s, {describe_missing()}", name) from None

    def wait_for_texts(
        self, texts: Iterable[str], name: str, timeout_s: float = PAGE_TIMEOUT_S
    ) -> str:
        """Waits until every one of `texts` is in the rendered page; returns the page text.
        A failure lists each text not found."""
        wanted = [normalized(t) for t in texts]

        def missing() -> list[str]:
            shown = self.text()
            return [t for t in wanted if t not in shown]

        self.wait_until(
            lambda: not missing() or None,
            lambda: "not shown: " + "; ".join(repr(t) for t in missing()),
            name,
            timeout_s,
        )
        return self.text()

    def _clickable(self, label: str) -> WebElement | None:
        """The first visible button, link or tab whose text is exactly `label`."""
        return self.script(
            """
            const label = arguments[0];
            const hits = [...document.querySelectorAll('button, a, [role="tab"]')]
              .filter(e => e.innerText && e.innerText.trim() === label && e.offsetParent);
            return hits.length ? hits[0] : null;
            """,
            label,
        )

    def _click(self, element: WebElement) -> None:
        self.script("arguments[0].scrollIntoView({block: 'center'});", element)
        element.click()

    def click_text(self, label: str, name: str, timeout_s: float = PAGE_TIMEOUT_S) -> None:
        """Clicks the first visible button or link whose text is exactly `label`, waiting
        for it to appear."""
        element = self.wait_until(
            lambda: self._clickable(label),
            lambda: f"no button or link {label!r} to click",
            name,
            timeout_s,
        )
        self._click(element)

    def click_text_if_shown(self, label: str, within_s: float = 5.0) -> bool:
        """Clicks `label` if the page shows it within `within_s` (an optional fold, which
        the UI adds once it has measured what it folds); False if it never shows."""
        try:
            element = WebDriverWait(self.driver, within_s, poll_frequency=POLL_S).until(
                lambda _driver: self._clickable(label)
            )
        except TimeoutException:
            return False
        self._click(element)
        return True
