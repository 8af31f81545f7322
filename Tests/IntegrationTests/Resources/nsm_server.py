#!/usr/bin/env python3
"""An NSM server for the tests, written from the published API (1.1.2,
https://new-session-manager.jackaudio.org/api/) and following what nsmd does: it launches the
clients it is told to add, by executable name alone, with NSM_URL in their environment, answers
their announce, sends each /nsm/client/open with a path in the session folder and a client id of
its own, and waits for the answer.

    nsm_server.py SESSION_FOLDER [CLIENT_ENVIRONMENT]

CLIENT_ENVIRONMENT is a JSON object of changes to the environment the clients get beside this
server's own (a null takes a variable out), as nsmd's clients get nsmd's.

Commands on stdin, one a line (nsmd's own server-control messages in words):
    add EXECUTABLE  launch a new client, as /nsm/server/add (a name with '/' is refused with -4,
                    as nsmd refuses it: "Absolute paths are not permitted")
    save            /nsm/client/save to every client that answered its open
    open            a second /nsm/client/open to every client (a switch)
    stop            SIGTERM to every client it launched, and wait for each to exit
    start           launch every client again with its own client id (the session reopened)
    expect SUFFIX   the next client that announces without having been launched here (the test
                    started it) gets this unique part of its client id, e.g. nABCD

Prints {"port": N} first, then one JSON line per event: {"client": ID, "path": ..., "args": [...]}
for each message received; {"launched": ID, "pid": N}, {"exited": ID, "status": N} (of a client
it launched, whenever it exits),
{"refused": "add", "code": N, "message": ...}; and {"violation": ...} for each step of a client
that the API does not allow (the tests expect none): a message before its announce, an announce
that is malformed or of another major API version, a capability it did not announce, an open
answered twice or a save answered that was not asked, is_clean with nothing changed since it was
last clean, a message of a priority outside 0-3.
"""
import ctypes
import json
import os
import random
import shutil
import signal
import socket
import string
import subprocess
import sys
import threading

from pythonosc.osc_message import OscMessage
from pythonosc.osc_message_builder import OscMessageBuilder

API_MAJOR = 1
folder = sys.argv[1]
client_changes = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
os.makedirs(folder, exist_ok=True)
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.bind(("127.0.0.1", 0))
port = sock.getsockname()[1]
url = f"osc.udp://127.0.0.1:{port}/"
lock = threading.Lock()
print_lock = threading.Lock()


def emit(event):
    with print_lock:
        print(json.dumps(event), flush=True)


class Client:
    def __init__(self, executable, suffix):
        self.executable = executable
        self.suffix = suffix  # the unique part: "nABCD"
        self.process = None
        self.address = None
        self.name = None  # the application name it announced
        self.capabilities = ""
        self.open_pending = False
        self.saves_pending = 0
        self.dirty = False
        self.exited = False  # a client it launched that has exited

    @property
    def client_id(self):
        return f"{self.name or self.executable}.{self.suffix}"


clients = []  # in the order added
expected = []  # suffixes for clients the test starts itself


def unique_suffix():
    taken = {c.suffix for c in clients}
    while True:
        suffix = "n" + "".join(random.choice(string.ascii_uppercase) for _ in range(4))
        if suffix not in taken:
            return suffix


# Loaded here, not in the child: a dlopen between fork and exec in a threaded process may hang.
libc = ctypes.CDLL("libc.so.6", use_errno=True)


def die_with_parent():
    # PR_SET_PDEATHSIG: the client goes when this server goes (as the test's children do).
    libc.prctl(1, signal.SIGKILL)


def launch(client):
    path = shutil.which(client.executable, path=client_changes.get("PATH") or os.environ.get("PATH"))
    if path is None:
        emit({"refused": "add", "code": -4, "message": f"{client.executable} is not in PATH"})
        return
    environment = dict(os.environ, NSM_URL=url)
    for name, value in client_changes.items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    log = open(os.path.join(folder, f"{client.executable}.{client.suffix}.log"), "ab")
    process = subprocess.Popen([path], env=environment, stdin=subprocess.DEVNULL, stdout=log,
                               stderr=log, preexec_fn=die_with_parent)
    client.process = process
    emit({"launched": client.client_id, "pid": process.pid})
    threading.Thread(target=watch, args=(client, process), daemon=True).start()


def watch(client, process):
    status = process.wait()
    with lock:
        # Its address is kept until it announces again: what it sent just before it exited may
        # not have been read yet.
        if client.process is process:
            client.process, client.open_pending, client.exited = None, False, True
    emit({"exited": client.client_id, "status": status})


def send(address, path, *args):
    builder = OscMessageBuilder(address=path)
    for arg in args:
        builder.add_arg(arg)
    sock.sendto(builder.build().dgram, address)


def commands():
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        with lock:
            command = words[0]
            if command == "add":
                executable = " ".join(words[1:])
                if "/" in executable or len(words) != 2:
                    emit({"refused": "add", "code": -4, "message": "Absolute paths are not permitted. Clients must be in $PATH"})
                    continue
                client = Client(executable, unique_suffix())
                clients.append(client)
                launch(client)
            elif command == "expect" and len(words) == 2:
                expected.append(words[1])
            elif command == "save":
                for client in clients:
                    if client.address and not client.exited and not client.open_pending:
                        client.saves_pending += 1
                        send(client.address, "/nsm/client/save")
            elif command == "open":
                for client in clients:
                    if client.address and not client.exited:
                        client.open_pending = True
                        send(client.address, "/nsm/client/open", os.path.join(folder, client.client_id), client.name, client.client_id)
            elif command == "stop":
                running = [c.process for c in clients if c.process]
                for process in running:
                    process.send_signal(signal.SIGTERM)
        if command == "stop":
            # Each exit is told by its watcher.
            for process in running:
                process.wait()
        elif command == "start":
            with lock:
                for client in clients:
                    if client.process is None:
                        launch(client)
    # stdin closed: the test is done.
    for client in clients:
        if client.process:
            client.process.kill()
    os._exit(0)


def client_at(address):
    return next((c for c in clients if c.address == address), None)


def violation(client, text):
    emit({"violation": text, "client": client.client_id if client else None})


def receive(message, address):
    path, args = message.address, list(message.params)
    with lock:
        client = client_at(address)
        emit({"client": client.client_id if client else None, "path": path, "args": args})
        if path == "/nsm/server/announce":
            if len(args) != 6 or not all(isinstance(a, str) for a in args[:3]) or not all(isinstance(a, int) for a in args[3:]):
                violation(client, f"malformed announce {args}")
                return
            name, capabilities, _, major, _, pid = args
            if major != API_MAJOR:
                send(address, "/error", path, -2, "Incompatible API version")
                violation(client, f"announced API major version {major}")
                return
            if capabilities and not (capabilities.startswith(":") and capabilities.endswith(":")):
                violation(client, f"capabilities {capabilities!r} are not a colon-separated list")
            # A client it launched is known by its pid; one started by the test gets an id here.
            client = next((c for c in clients if c.process and c.process.pid == pid), None)
            if client is None and expected:
                # The test started it again under the same id: the same client.
                suffix = expected.pop(0)
                client = next((c for c in clients if c.suffix == suffix and c.process is None), None)
                if client is None:
                    client = Client(name, suffix)
                    clients.append(client)
            elif client is None:
                client = Client(name, unique_suffix())
                clients.append(client)
            client.address, client.name, client.capabilities = address, name, capabilities
            client.open_pending, client.saves_pending, client.dirty, client.exited = True, 0, False, False
            send(address, "/reply", path, "welcome (the duckrouter tests' NSM server)", "test NSM", ":server-control:broadcast:optional-gui:")
            send(address, "/nsm/client/open", os.path.join(folder, client.client_id), name, client.client_id)
            return
        if client is None:
            violation(None, f"{path} from {address}, which never announced")
            return
        if path in ("/reply", "/error") and args and args[0] == "/nsm/client/open":
            if not client.open_pending:
                violation(client, "answered an open that was not asked")
            client.open_pending = False
            if all(not c.open_pending for c in clients if c.address and not c.exited):
                for c in clients:
                    if c.address and not c.exited:
                        send(c.address, "/nsm/client/session_is_loaded")
        elif path in ("/reply", "/error") and args and args[0] == "/nsm/client/save":
            if client.saves_pending == 0:
                violation(client, "answered a save that was not asked")
            client.saves_pending = max(0, client.saves_pending - 1)
        elif path in ("/nsm/client/is_dirty", "/nsm/client/is_clean"):
            if ":dirty:" not in client.capabilities:
                violation(client, f"{path} without the :dirty: capability")
            if path == "/nsm/client/is_clean" and not client.dirty:
                violation(client, "is_clean with nothing changed since it was last clean")
            client.dirty = path == "/nsm/client/is_dirty"
        elif path == "/nsm/client/message":
            if ":message:" not in client.capabilities:
                violation(client, "/nsm/client/message without the :message: capability")
            if len(args) != 2 or not isinstance(args[0], int) or not 0 <= args[0] <= 3:
                violation(client, f"message {args}: the priority must be 0 to 3")


emit({"port": port})
threading.Thread(target=commands, daemon=True).start()
while True:
    data, source = sock.recvfrom(65536)
    try:
        received = OscMessage(data)
    except Exception as error:  # not OSC: a violation of its own
        violation(client_at(source), f"not an OSC message: {error}")
        continue
    receive(received, source)
