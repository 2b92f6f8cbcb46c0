#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""A QMP monitor for `trace-collector setup --qmp` that says an event before every answer,
as QEMU does when a port opens or closes meanwhile: {"timestamp": ..., "event": ...} (the
timestamp first). Answers: qom-list and query-chardev an empty list, anything else {}.
    fake-qmp.py SOCKET   (serves one client, then exits)"""
import json
import os
import socket
import sys

path = sys.argv[1]
if os.path.exists(path):
    os.unlink(path)
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(1)
print("listening", flush=True)
c, _ = srv.accept()
f = c.makefile("rw")
f.write(json.dumps({"QMP": {"version": {"qemu": {"major": 7, "minor": 2, "micro": 0}}, "capabilities": []}}) + "\n")
f.flush()
event = {"timestamp": {"seconds": 1795771910, "microseconds": 163578}, "event": "VSERPORT_CHANGE",
         "data": {"open": False, "id": "vt-port-trace-path-cpu1"}}
for line in f:
    cmd = json.loads(line).get("execute", "")
    f.write(json.dumps(event) + "\n")
    f.write(json.dumps({"return": [] if cmd in ("qom-list", "query-chardev") else {}}) + "\n")
    f.flush()
