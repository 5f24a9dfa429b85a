"""What the browser tests share to start a console: a free port, and a wait until it
answers."""

import socket
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_console(base, process, what):
    """Returns once `base`/login answers; fails, saying that `what` did not start, when
    `process` ends first or 20 s pass."""
    deadline = time.monotonic() + 20
    while True:
        try:
            urllib.request.urlopen(f"{base}/login", timeout=1)
            return
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                said = process.stderr.read() if process.stderr else ""
                raise RuntimeError(f"{what} did not start: {said}")
            time.sleep(0.1)
