#!/usr/bin/env python3
"""Reads a running duckrouter's OSCQuery namespace with python-oscquery (PyPI), the client library
much OSC tooling is built on, as its users would: a zeroconf ServiceInfo for the HTTP port, then
OSCQueryClient's query_node and get_host_info.

    python_oscquery_walk.py HOST PORT

Prints one JSON line: the full path of every node the library parsed, the host info, and the
node /app/music/volume as read alone (its VALUE and ACCESS); or {"error": ...} naming what the
library refused.
"""
import json
import socket
import sys

from pythonoscquery.osc_query_client import OSCQueryClient
from zeroconf import ServiceInfo

host, port = sys.argv[1], int(sys.argv[2])
info = ServiceInfo("_oscjson._tcp.local.", "duckrouter-test._oscjson._tcp.local.",
                   addresses=[socket.inet_aton(host)], port=port)
client = OSCQueryClient(info)
result = {}
try:
    root = client.query_node("/")
    result["paths"] = sorted(node.full_path for node in root)
    host_info = client.get_host_info()
    result["host"] = {"name": host_info.name, "osc_port": host_info.osc_port,
                      "osc_transport": host_info.osc_transport, "extensions": host_info.extensions}
    volume = client.query_node("/app/music/volume")
    result["volume"] = {"value": volume.value, "access": int(volume.access)}
except Exception as error:  # what the library refused, for the test to show
    result["error"] = f"{type(error).__name__}: {error}"
print(json.dumps(result), flush=True)
