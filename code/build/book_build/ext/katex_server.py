"""sphinxcontrib-katex 0.9.11 (the latest) connects to its Node.js render server's Unix socket
as soon as the socket file exists, before the server listens: on a loaded machine the HTML build
failed with ConnectionRefusedError; and it gives the server 5 s to start, a formula 5 s to
render. Here the connection is retried until the start-up timeout, both timeouts are 60 s.
Upstream: katex.py (KaTeXServer.start_server_process, STARTUP_TIMEOUT, RENDER_TIMEOUT); no issue
of hagenw/sphinxcontrib-katex names the race. Drop this file when a release retries the
connection.
"""

import socket
import time
from subprocess import PIPE, Popen

from sphinxcontrib import katex


def _start_server_process(cls, rundir, timeout):
    socket_path = rundir / "katex.sock"
    process = Popen(cls.build_command(socket=socket_path), stdin=PIPE, stdout=PIPE, cwd=rundir)
    deadline = time.monotonic() + timeout
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(str(socket_path))
            return process, sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() > deadline:
                process.kill()
                raise cls.timeout_error(timeout) from None
            time.sleep(0.01)


def setup(app):
    katex.STARTUP_TIMEOUT = katex.RENDER_TIMEOUT = 60.0
    katex.KaTeXServer.start_server_process = classmethod(_start_server_process)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
