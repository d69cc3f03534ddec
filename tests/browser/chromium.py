"""A headless Chromium driven over the DevTools protocol, with the standard library only.

Chromium is started with ``--remote-debugging-pipe``: it reads JSON commands, each ended by a
NUL byte, from file descriptor 3 and writes replies and events to descriptor 4. That is all a
test needs (open a page at a given width, evaluate JavaScript, take a screenshot), so no
websocket client, Selenium or Playwright is involved. The network stays closed: only
``file://`` pages are opened.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

#: Flags for a quiet, offline, sandbox-free (containers, CI) headless browser.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--remote-debugging-pipe",
)


def find_chromium() -> str | None:
    """The Chromium (or Chrome) executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class BrowserError(RuntimeError):
    """The browser failed, or answered a command with an error."""


class Chromium:
    """One headless browser with one page (use as a context manager)."""

    def __init__(self, executable: str, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.mkdtemp(prefix="pandas-dp-chromium-")
        to_browser, self._write = os.pipe()
        self._read, from_browser = os.pipe()

        def descriptors() -> None:  # in the child: the pipe ends at 3 and 4, as Chromium expects
            # Copies first (each above 2, the second above the first), so neither end is
            # overwritten before it is moved; the copies at 3 and 4 are inherited by exec.
            commands, replies = os.dup(to_browser), os.dup(from_browser)
            os.dup2(commands, 3)
            os.dup2(replies, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self._process = subprocess.Popen(
            [executable, *FLAGS, f"--user-data-dir={self._profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            close_fds=False,  # the parent's other descriptors are not inheritable anyway
            preexec_fn=descriptors,  # no threads run yet
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        self._events: list[dict[str, Any]] = []
        try:
            target = self.send("Target.createTarget", url="about:blank")["targetId"]
            attached = self.send("Target.attachToTarget", targetId=target, flatten=True)
            self._session = attached["sessionId"]
            self.page("Page.enable")
            self.page("Runtime.enable")
        except BaseException:
            self.close()  # no browser, descriptor or profile left behind
            raise

    def __enter__(self) -> Chromium:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the browser and remove its temporary profile."""
        with contextlib.suppress(BrowserError, OSError):
            self.send("Browser.close")
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
        shutil.rmtree(self._profile, ignore_errors=True)

    # the protocol --------------------------------------------------------------------------
    def _message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._read], [], [], left)[0]:
                raise BrowserError(f"no answer from Chromium within {self.timeout:g} s")
            chunk = os.read(self._read, 1 << 20)
            if not chunk:
                raise BrowserError(f"Chromium exited (code {self._process.poll()})")
            self._buffer += chunk
        raw, self._buffer = self._buffer.split(b"\0", 1)
        message: dict[str, Any] = json.loads(raw)
        return message

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Send one command and wait for its result (events meanwhile are kept)."""
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            command["sessionId"] = session
        os.write(self._write, json.dumps(command).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self._events.append(message)

    def page(self, method: str, **params: Any) -> dict[str, Any]:
        """A command to the page."""
        return self.send(method, self._session, **params)

    def _wait_for(self, event: str) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            for i, message in enumerate(self._events):
                if message.get("method") == event:
                    del self._events[: i + 1]
                    return
            self._events.append(self._message(deadline))

    # what tests use ------------------------------------------------------------------------
    def open(self, path: Path, width: int = 1000, height: int = 800) -> None:
        """Show the local file ``path`` in a window ``width`` CSS pixels wide; wait for load."""
        self.page(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )
        self._events.clear()
        self.page("Page.navigate", url=path.resolve().as_uri())
        self._wait_for("Page.loadEventFired")

    def evaluate(self, expression: str) -> Any:
        """The JSON value of a JavaScript expression in the page (promises awaited)."""
        answer = self.page(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in answer:
            raise BrowserError(f"JavaScript failed: {answer['exceptionDetails']}")
        return answer["result"].get("value")

    def screenshot(self, path: Path) -> Path:
        """Save the whole page (not only the window) as a PNG."""
        width, height = self.evaluate(
            "[document.documentElement.clientWidth,"
            " Math.ceil(document.documentElement.scrollHeight)]"
        )
        shot = self.page(
            "Page.captureScreenshot",
            format="png",
            captureBeyondViewport=True,
            clip={"x": 0, "y": 0, "width": width, "height": height, "scale": 1},
        )
        path.write_bytes(base64.b64decode(shot["data"]))
        return path
