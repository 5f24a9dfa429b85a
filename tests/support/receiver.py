"""A notice receiver of our own for the webhook tests: HTTPS on loopback with a
certificate of a test authority (or plain HTTP without one), Python's standard library
only.

Usage: receiver.py LOG [--port PORT] [--tls CERT KEY] [--answer STATUS...]

It listens on PORT of 127.0.0.1 (a free one by default) and writes the port to LOG +
".port" once it listens. Each POST it receives is appended to LOG as one JSON line (its path, headers
and body) and answered with the next status of --answer (past them, 200); a status of
3xx is sent with a Location header pointing at /elsewhere on the same receiver.
"""

import json
import os
import ssl
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

args = sys.argv[1:]
log = args.pop(0)
cert = key = None
port = 0
answers = []
while args:
    flag = args.pop(0)
    if flag == "--port":
        port = int(args.pop(0))
    elif flag == "--tls":
        cert, key = args.pop(0), args.pop(0)
    elif flag == "--answer":
        while args and not args[0].startswith("--"):
            answers.append(int(args.pop(0)))
    else:
        sys.exit(f"receiver.py: unknown flag {flag}")


class Receiver(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length).decode("utf-8")
        with open(log, "a", encoding="utf-8") as out:
            out.write(json.dumps({"path": self.path, "headers": dict(self.headers), "body": body}) + "\n")
        status = answers.pop(0) if answers else 200
        self.send_response(status)
        if 300 <= status < 400:
            self.send_header("Location", "/elsewhere")
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()

    def log_message(self, *_):
        pass


server = ThreadingHTTPServer(("127.0.0.1", port), Receiver)
if cert:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
with open(log + ".port.part", "w", encoding="utf-8") as out:
    out.write(str(server.server_address[1]))
os.replace(log + ".port.part", log + ".port")
server.serve_forever()
