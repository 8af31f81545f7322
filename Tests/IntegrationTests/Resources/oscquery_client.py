#!/usr/bin/env python3
"""An OSCQuery client written from the proposal (Vidvox OSCQueryProposal), not from the server's
code: HTTP with urllib, the WebSocket with websocket-client (Debian's python3-websocket), OSC
packets with python-osc. For the integration tests.

Usage: oscquery_client.py HOST HTTP_PORT. Reads one JSON array per line on stdin and prints one
JSON object per line for each:
  ["hostinfo"]                  -> {"hostinfo": {...}}            GET /?HOST_INFO
  ["get", "/path"]              -> {"status": N, "json": ...}     GET /path
  ["connect"]                   -> {"connected": true}            WebSocket to WS_IP:WS_PORT from
                                                                 HOST_INFO (the HTTP port if absent), no Origin
  ["connect_as_page"]           -> {"connected": true}            the same with the router's own
                                                                 page as Origin, as its page's would
  ["connect_with", KEY, ORIGIN] -> {"connected": true}            the same with ?key=KEY on the
                                                                 WebSocket's URL and ORIGIN as Origin
                                                                 (either null: none)
  ["chataigne"]                 -> {"listened": N, "paths": [...]}  Chataigne's flow: HOST_INFO, /,
                                   WebSocket, one LISTEN per readable parameter
  ["listen", "/path"] / ["ignore", "/path"]   -> {"sent": true}  text frames
  ["text", "anything"]          -> {"sent": true}                a raw text frame
  ["binary_hex", "00ff..."]     -> {"sent": true}                a raw binary frame
  ["osc", "/path", [type, value], ...] -> {"sent": true}         an OSC message in a binary frame
  ["until", SECONDS, MATCH]     -> the frames received, one line each ({"osc": {"path", "args"}} or
                                   {"text": {...}}), until one matches MATCH, then
                                   {"waited": true, "seconds": S} or {"waited": false} after SECONDS.
     MATCH: {"osc": "/path", "args": [first args...]}, {"command": "PATH_ADDED", "data": "/app/x"}
     (without "data": any such command), or {"close": true} (the connection ended)
  ["flood", N, "/path"]         -> {"sent": N}                   N OSC messages, nothing read
  ["drain", SECONDS]            -> every frame received within SECONDS, then {"drained": N}
  ["close"]                     -> {"closed": true}
"""
import json
import sys
import time
import urllib.request
import urllib.error

import websocket
from pythonosc.osc_bundle import OscBundle
from pythonosc.osc_message import OscMessage
from pythonosc.osc_message_builder import OscMessageBuilder

host, http_port = sys.argv[1], int(sys.argv[2])
ws = None


def emit(obj):
    print(json.dumps(obj), flush=True)


def http_get(path):
    try:
        with urllib.request.urlopen(f"http://{host}:{http_port}{path}", timeout=5) as response:
            body = response.read()
            return response.status, (json.loads(body) if body else None)
    except urllib.error.HTTPError as error:
        return error.code, None


def connect(origin=None, key=None):
    global ws
    _, info = http_get("/?HOST_INFO")
    ws_host = info.get("WS_IP") or host
    ws_port = info.get("WS_PORT") or http_port
    target = f"ws://{ws_host}:{ws_port}/" + (f"?key={key}" if key is not None else "")
    # websocket-client sends an Origin of its own unless told not to: a program sends none.
    if origin:
        ws = websocket.create_connection(target, timeout=5, origin=origin)
    else:
        ws = websocket.create_connection(target, timeout=5, suppress_origin=True)


def messages(data):
    if OscBundle.dgram_is_bundle(data):
        for element in OscBundle(data):
            if isinstance(element, OscBundle):
                yield from messages(element.dgram)
            else:
                yield element
    else:
        yield OscMessage(data)


def receive(deadline):
    """Frames until the deadline, as JSON-able objects."""
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        ws.settimeout(left)
        try:
            opcode, data = ws.recv_data()
        except websocket.WebSocketTimeoutException:
            return
        except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError):
            yield {"close": True}
            return
        if opcode == websocket.ABNF.OPCODE_TEXT:
            yield {"text": json.loads(data.decode())}
        elif opcode == websocket.ABNF.OPCODE_BINARY:
            for message in messages(bytes(data)):
                yield {"osc": {"path": message.address, "args": list(message.params)}}
        elif opcode == websocket.ABNF.OPCODE_CLOSE:
            yield {"close": True}
            return


def matches(frame, match):
    if "osc" in match and "osc" in frame:
        args = match.get("args", [])
        got = frame["osc"]["args"][:len(args)]
        return frame["osc"]["path"] == match["osc"] and len(got) == len(args) and all(
            abs(a - b) < 1e-4 if isinstance(a, float) or isinstance(b, float) else a == b for a, b in zip(got, args))
    if "command" in match and "text" in frame:
        return frame["text"].get("COMMAND") == match["command"] and ("data" not in match or frame["text"].get("DATA") == match["data"])
    if "close" in match:
        return "close" in frame
    return False


def walk(node):
    yield node
    for child in (node.get("CONTENTS") or {}).values():
        yield from walk(child)


for line in sys.stdin:
    request = json.loads(line)
    verb = request[0]
    if verb == "hostinfo":
        status, info = http_get("/?HOST_INFO")
        emit({"hostinfo": info, "status": status})
    elif verb == "get":
        status, body = http_get(request[1])
        emit({"status": status, "json": body})
    elif verb == "connect":
        connect()
        emit({"connected": True})
    elif verb == "connect_as_page":
        connect(f"http://{host}:{http_port}")
        emit({"connected": True})
    elif verb == "connect_with":
        connect(request[2], request[1])
        emit({"connected": True})
    elif verb == "chataigne":
        _, info = http_get("/?HOST_INFO")
        _, root = http_get("/")
        connect()
        paths = [node["FULL_PATH"] for node in walk(root)
                 if "VALUE" in node and node.get("ACCESS", 0) & 1 and "CONTENTS" not in node]
        for path in paths:
            ws.send(json.dumps({"COMMAND": "LISTEN", "DATA": path}))
        emit({"listened": len(paths), "paths": paths, "name": info.get("NAME")})
    elif verb in ("listen", "ignore"):
        ws.send(json.dumps({"COMMAND": verb.upper(), "DATA": request[1]}))
        emit({"sent": True})
    elif verb == "text":
        ws.send(request[1])
        emit({"sent": True})
    elif verb == "binary_hex":
        ws.send_binary(bytes.fromhex(request[1]))
        emit({"sent": True})
    elif verb == "osc":
        builder = OscMessageBuilder(address=request[1])
        for kind, value in request[2:]:
            builder.add_arg(value, kind)
        ws.send_binary(builder.build().dgram)
        emit({"sent": True})
    elif verb == "flood":
        # Sends N OSC messages and reads nothing: a peer that never reads its replies.
        dgram = OscMessageBuilder(address=request[2]).build().dgram
        for _ in range(request[1]):
            ws.send_binary(dgram)
        emit({"sent": request[1]})
    elif verb == "until":
        started = time.monotonic()
        found = False
        for frame in receive(started + request[1]):
            emit(frame)
            if matches(frame, request[2]):
                found = True
                break
        emit({"waited": found, "seconds": time.monotonic() - started})
    elif verb == "drain":
        count = 0
        for frame in receive(time.monotonic() + request[1]):
            emit(frame)
            count += 1
        emit({"drained": count})
    elif verb == "close":
        ws.close()
        emit({"closed": True})
