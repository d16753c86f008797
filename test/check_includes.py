#!/usr/bin/env python3
"""The layers of DESIGN.md's "Parts and their rooms", checked over every
project #include, so that they stay: a file may include only the rooms its
room is allowed to know. Exit 0 when every include keeps the rules, 1 with
one line per breach (file:line: what it includes and what its room allows).

    check_includes.py [SOURCE_ROOT]
"""
import os
import re
import sys

# Room -> the rooms it may include (its own is always allowed). A room is a
# path prefix; the longest prefix that matches a file names its room.
ALLOWED = {
    'sim/base': [],
    'sim/kv': ['sim/base'],
    'sim/engine': ['sim/kv', 'sim/base'],
    'sim/cost': ['sim/engine', 'sim/kv', 'sim/base'],
    'sim/fleet': ['sim/cost', 'sim/engine', 'sim/kv', 'sim/base'],
    # The application layer: one run (scenario), many runs (study).
    'sim/scenario': ['sim/fleet', 'sim/cost', 'sim/engine', 'sim/kv', 'sim/base',
                     'policies', 'traces', 'workloads', 'reports'],
    'sim/study': ['sim/scenario', 'sim/fleet', 'sim/cost', 'sim/engine', 'sim/kv', 'sim/base',
                  'policies', 'traces', 'workloads', 'reports'],
    # The only room that wires everything together.
    'sim/cli': ['sim', 'policies', 'traces', 'workloads', 'reports', 'gpu'],
    # Policies know the policy interface and block ids/hashes (sim/kv).
    'policies': ['sim/kv', 'sim/base'],
    'traces': ['sim/engine', 'sim/kv', 'sim/base'],
    'workloads': ['traces', 'sim/engine', 'sim/kv', 'sim/base'],
    'reports': ['sim/base'],
    'gpu': ['sim/cost', 'sim/engine', 'sim/kv', 'sim/base'],
}
# Files allowed one more room than theirs, each with its reason.
EXCEPTIONS = {
    # The policy benchmark replays a block stream through cache mode.
    ('policies/policy_bench.cpp', 'sim/engine'),
}
SOURCE_EXT = ('.h', '.cpp', '.cu', '.cuh')
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def room_of(path):
    best = None
    for room in ALLOWED:
        if path == room or path.startswith(room + '/'):
            if best is None or len(room) > len(best):
                best = room
    return best


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..'))
    breaches = []
    checked = 0
    for top in ('sim', 'policies', 'traces', 'workloads', 'reports', 'gpu'):
        for dirpath, _, names in os.walk(os.path.join(root, top)):
            for name in sorted(names):
                if not name.endswith(SOURCE_EXT):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, name), root)
                room = room_of(rel)
                if room is None:
                    breaches.append(f'{rel}: lies in no room (sim/ files belong in base/, kv/, engine/, cost/, fleet/, scenario/, study/ or cli/)')
                    continue
                with open(os.path.join(root, rel), encoding='utf-8', errors='replace') as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if not m:
                            continue
                        target = m.group(1)
                        if '/' not in target:
                            continue  # generated headers (prefixsim_config.h) and same-folder CUDA headers
                        checked += 1
                        target_room = room_of(target) or target.split('/')[0]
                        if target_room == room or (rel, target_room) in EXCEPTIONS:
                            continue
                        if any(target_room == a or target_room.startswith(a + '/') for a in ALLOWED[room]):
                            continue
                        allowed = ', '.join(ALLOWED[room]) or 'nothing of the project'
                        breaches.append(f'{rel}:{lineno}: includes {target} ({target_room}); {room} may include {allowed}')
    for b in breaches:
        print(b)
    print(f'check_includes: {checked} includes checked, {len(breaches)} breaches')
    return 1 if breaches or checked == 0 else 0


if __name__ == '__main__':
    sys.exit(main())
