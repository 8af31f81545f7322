#!/usr/bin/env python3
"""A small NSM server for the tests, written from the published protocol
(https://new-session-manager.jackaudio.org/api/): it answers one client's announce, sends it
/nsm/client/open with the path and client id given on the command line, and sends
/nsm/client/save (line "save") or a second open (line "open") when told on stdin.

Prints {"port": N} first, then one JSON line per message received: {"path": ..., "args": [...]}.
"""
import json
import socket
import sys
import threading

from pythonosc.osc_message import OscMessage
from pythonosc.osc_message_builder import OscMessageBuilder

session_path, client_id = sys.argv[1], sys.argv[2]
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("127.0.0.1", 0))
print(json.dumps({"port": sock.getsockname()[1]}), flush=True)
client = None


def send(address, path, *args):
    builder = OscMessageBuilder(address=path)
    for arg in args:
        builder.add_arg(arg)
    sock.sendto(builder.build().dgram, address)


def commands():
    for line in sys.stdin:
        command = line.strip()
        if client is None:
            continue
        if command == "save":
            send(client, "/nsm/client/save")
        elif command == "open":
            send(client, "/nsm/client/open", session_path, "duckrouter", client_id)


threading.Thread(target=commands, daemon=True).start()
while True:
    data, address = sock.recvfrom(65536)
    message = OscMessage(data)
    print(json.dumps({"path": message.address, "args": list(message.params)}), flush=True)
    if message.address == "/nsm/server/announce":
        client = address
        send(address, "/reply", "/nsm/server/announce", "welcome (the duckrouter tests' NSM server)", "test NSM", ":server_control:")
        send(address, "/nsm/client/open", session_path, "duckrouter", client_id)
