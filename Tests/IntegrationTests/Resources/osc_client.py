#!/usr/bin/env python3
"""A second OSC implementation (python-osc, not liblo) for the integration tests.

Reads one request per line on stdin: a JSON array [path, [type, value], ...], sends it over UDP
or TCP (OSC 1.1 SLIP framing, python-osc's default), and prints one JSON line per answer:
{"path": "/reply", "args": [...]} for the /reply or /error whose first argument is the path, with
every notification that arrived meanwhile as {"path": "/duckrouter/...", "args": [...]} lines
before it. A line "until SECONDS [path, arg...]" prints what arrives until a message with that
path and first arguments (or for SECONDS at most), then {"path": "/waited"}.
"""
import json
import sys
import time

from pythonosc import tcp_client, udp_client
from pythonosc.osc_message import OscMessage
from pythonosc.osc_bundle import OscBundle
from pythonosc.osc_message_builder import OscMessageBuilder

transport, host, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
if transport == "udp":
    client = udp_client.UDPClient(host, port)
else:
    client = tcp_client.TCPClient(host, port, mode="1.1")


def messages(data):
    if OscBundle.dgram_is_bundle(data):
        for element in OscBundle(data):
            yield from (messages(element.dgram) if isinstance(element, OscBundle) else [element])
    else:
        yield OscMessage(data)


pending = []  # messages received but not yet shown (a TCP read can carry several)


def receive(seconds):
    while pending:
        yield pending.pop(0)
    deadline = time.time() + seconds
    while True:
        left = deadline - time.time()
        if left <= 0:
            return
        try:
            chunks = client.receive(timeout=left)
        except Exception:
            return
        if chunks is None:
            return
        if transport == "udp":
            chunks = [chunks]
        for data in chunks:
            if data:
                pending.extend(messages(data))
        while pending:
            yield pending.pop(0)


def show(message):
    args = [a if not isinstance(a, float) else round(a, 6) for a in message.params]
    print(json.dumps({"path": message.address, "args": args}), flush=True)


for line in sys.stdin:
    line = line.strip()
    if not line:
        continue
    if line.startswith("until "):
        # until SECONDS JSON: what arrives, up to the first message with that path and those
        # first arguments (compared as text), or for SECONDS at most.
        _, seconds, wanted = line.split(" ", 2)
        wanted = json.loads(wanted)
        for message in receive(float(seconds)):
            show(message)
            args = [str(a) for a in message.params[:len(wanted) - 1]]
            if message.address == wanted[0] and args == [str(a) for a in wanted[1:]]:
                break
        print(json.dumps({"path": "/waited", "args": []}), flush=True)
        continue
    request = json.loads(line)
    builder = OscMessageBuilder(address=request[0])
    for kind, value in request[1:]:
        if kind in ("f", "d") and isinstance(value, str):
            value = float(value)  # "nan", "inf", "-inf": JSON cannot carry them as numbers
        builder.add_arg(value, kind)
    client.send(builder.build())
    answered = False
    for message in receive(3.0):
        show(message)
        if message.address in ("/reply", "/error") and message.params and message.params[0] == request[0]:
            answered = True
            break
    if not answered:
        print(json.dumps({"path": "/timeout", "args": []}), flush=True)
