"""Headless Chromium (Debian's, driven by Playwright) as the browser tests start it, and what they do
on a page of the label app: log in as a person does, watch for script errors, take screenshots."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]


def screenshot(page: Any, tmp_path: Path, name: str) -> None:
    """Screenshot the whole page into ``tmp_path``, and into ``RLKIT_SCREENSHOTS`` when it is set.

    Args:
        page: a Playwright page.
        tmp_path: the folder the screenshot goes to.
        name: its file name.
    """
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    if target := os.environ.get("RLKIT_SCREENSHOTS"):
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(target) / name)


def watch_errors(page: Any) -> list[str]:
    """Every uncaught script error and console error the page logs from now on.

    Args:
        page: a Playwright page.

    Returns:
        A list the errors are appended to as they happen.
    """
    errors: list[str] = []

    def console(message: Any) -> None:
        if message.type == "error":
            errors.append(f"{page.url}: console error {message.text}")

    page.on("pageerror", lambda error: errors.append(f"{page.url}: uncaught {error}"))
    page.on("console", console)
    return errors


def log_in(page: Any, url: str, annotator: str) -> None:
    """Open a page and type an annotator id into its login form, as a person does.

    Args:
        page: a Playwright page.
        url: the page's address.
        annotator: the id typed.
    """
    page.goto(url)
    page.fill("#annotator", annotator)
    page.press("#annotator", "Enter")
    page.wait_for_selector("#annotator-name")
