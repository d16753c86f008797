#!/usr/bin/env python3
"""check_includes.py must fail on a planted breach of each new layer rule
(and pass the same tree without it): a library room reaching the
application layer, sim/scenario reaching sim/study or sim/cli, sim/study
reaching sim/cli. Exit 0 when it does, 1 otherwise."""
import os
import subprocess
import sys
import tempfile

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'check_includes.py')

# (file, include): each a breach on its own.
BREACHES = [
    ('sim/engine/planted.h', 'sim/scenario/scenario.h'),
    ('sim/fleet/planted.cpp', 'sim/study/sweep_grid.h'),
    ('sim/scenario/planted.cpp', 'sim/study/sweep_grid.h'),
    ('sim/scenario/planted.h', 'sim/cli/options.h'),
    ('sim/study/planted.cpp', 'sim/cli/commands.h'),
    ('reports/planted.cpp', 'sim/scenario/scenario.h'),
]
# Allowed includes of the same tree: they must not be reported.
ALLOWED = [
    ('sim/study/fine.cpp', 'sim/scenario/scenario.h'),
    ('sim/scenario/fine.cpp', 'reports/run_report.h'),
    ('sim/cli/fine.cpp', 'sim/study/sweep_grid.h'),
]


def run(root):
    return subprocess.run([sys.executable, CHECKER, root], capture_output=True, text=True)


def plant(root, rows):
    for path, target in rows:
        os.makedirs(os.path.join(root, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(root, path), 'w') as f:
            f.write(f'#include "{target}"\n')


def main():
    failures = []
    with tempfile.TemporaryDirectory() as root:
        plant(root, ALLOWED)
        clean = run(root)
        if clean.returncode != 0:
            failures.append(f'allowed includes reported: {clean.stdout.strip()}')
        for path, target in BREACHES:
            plant(root, [(path, target)])
            r = run(root)
            if r.returncode != 1 or f'{path}:1: includes {target}' not in r.stdout:
                failures.append(f'{path} including {target} not reported (exit {r.returncode}): {r.stdout.strip()}')
            os.remove(os.path.join(root, path))
    for f in failures:
        print(f)
    print(f'check_includes_planted: {len(BREACHES)} breaches planted, {len(failures)} failures')
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
