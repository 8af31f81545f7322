#!/usr/bin/env python3
"""make bench (part websocket): one browser's worth of a WebSocket client, as the control page
behaves: reads the namespace, LISTENs to every readable value but the meters (which it asks for
at 20 Hz over OSC, /meters, one subscription for all),
then reads everything the router sends until killed. Once it has the value of every path it
LISTENed to and a meter bundle (its setup done: the page is showing), it creates
OUTPUT_FILE.ready. On SIGTERM prints "frames seconds largest"
(what it received, for how long, its largest frame in bytes) to the file named as its third
argument.

Usage: ws-listener.py HOST HTTP_PORT OUTPUT_FILE
"""
import json
import signal
import struct
import sys
import time
import urllib.request

import websocket

host, port, output = sys.argv[1], int(sys.argv[2]), sys.argv[3]
root = json.load(urllib.request.urlopen(f"http://{host}:{port}/", timeout=5))


def walk(node):
    yield node
    for child in (node.get("CONTENTS") or {}).values():
        yield from walk(child)


ws = websocket.create_connection(f"ws://{host}:{port}/", timeout=5)
waiting = set()
for node in walk(root):
    if "VALUE" in node and node.get("ACCESS", 0) & 1 and not node["FULL_PATH"].endswith("/meter"):
        ws.send(json.dumps({"COMMAND": "LISTEN", "DATA": node["FULL_PATH"]}))
        waiting.add(node["FULL_PATH"])


def osc_string(text):
    data = text.encode() + b"\0"
    return data + b"\0" * (-len(data) % 4)


ws.send_binary(osc_string("/meters") + osc_string(",f") + struct.pack(">f", 20.0))
frames = 0
largest = 0
metered = False
started = time.monotonic()


def stop(*_):
    with open(output, "w") as f:
        f.write(f"{frames} {time.monotonic() - started:.3f} {largest}\n")
    sys.exit(0)


signal.signal(signal.SIGTERM, stop)
ws.settimeout(None)
while True:
    _, data = ws.recv_data()
    frames += 1
    largest = max(largest, len(data))
    if waiting is not None and isinstance(data, bytes):
        address = data[:data.find(b"\0")].decode(errors="replace")
        if address == "#bundle":
            metered = True
        waiting.discard(address)
        if metered and not waiting:
            open(output + ".ready", "w").close()
            waiting = None
