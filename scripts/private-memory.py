#!/usr/bin/env python3
"""What a process's private memory consists of (make bench, part "process"; issue 21).

    scripts/private-memory.py PID [TOP]

Sums Private_Clean + Private_Dirty from /proc/PID/smaps by what is mapped: each file by its name
(a library's relocated and written pages; a JACK shared-memory segment only this process has
touched counts here too), [heap], [stack], and anonymous mappings (malloc's arenas, the other
threads' stacks, buffers the program maps itself). Prints the TOP (12) largest, kB, then the total.
"""
import collections
import re
import sys

pid = sys.argv[1]
top = int(sys.argv[2]) if len(sys.argv) > 2 else 12
groups = collections.Counter()
name = None
mapping = re.compile(r"^[0-9a-f]+-[0-9a-f]+ ")
with open(f"/proc/{pid}/smaps") as smaps:
    for line in smaps:
        fields = line.split()
        if mapping.match(line):
            path = fields[5] if len(fields) > 5 else ""
            if path.startswith("/"):
                name = path.rsplit("/", 1)[1]
            else:
                name = path or "anonymous (malloc arenas, thread stacks, mapped buffers)"
        elif fields and fields[0] in ("Private_Clean:", "Private_Dirty:"):
            groups[name] += int(fields[1])
for what, kb in groups.most_common(top):
    print(f"{kb:8d} kB  {what}")
rest = sum(groups.values()) - sum(kb for _, kb in groups.most_common(top))
print(f"{rest:8d} kB  everything else")
print(f"{sum(groups.values()):8d} kB  private in all")
