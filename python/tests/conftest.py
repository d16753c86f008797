"""What the module's tests share: the CLI binary meson built (PREFIXSIM_BIN)
and a way to run it and read the JSON file it wrote."""
import json
import os
import subprocess

import pytest


@pytest.fixture
def cli():
    """Runs `prefixsim ARGS...`; returns the CompletedProcess (text)."""
    binary = os.environ.get("PREFIXSIM_BIN")
    if not binary:
        pytest.fail("PREFIXSIM_BIN is not set (meson test sets it to build/sim/cli/prefixsim)")

    def run(*args):
        return subprocess.run([binary, *map(str, args)], capture_output=True, text=True)

    return run


@pytest.fixture
def cli_json(cli, tmp_path):
    """Runs `prefixsim COMMAND ARGS... --out DIR` and returns the parsed
    DIR/NAME (report.json, compare.json, ...) and DIR."""

    def run(name, *args):
        out = tmp_path / ("cli-" + name.split(".")[0])
        r = cli(*args, "--out", out)
        assert r.returncode == 0, r.stderr
        with open(out / name, encoding="utf-8") as f:
            return json.load(f), out

    return run


@pytest.fixture
def cli_error(cli):
    """The one-line message the CLI gives for bad input (exit 2), without
    its `prefixsim COMMAND: ` prefix."""

    def run(command, *args):
        r = cli(command, *args)
        assert r.returncode == 2, r.stderr
        prefix = f"prefixsim {command}: "
        line = r.stderr.strip()
        assert line.startswith(prefix) and "\n" not in line, line
        return line[len(prefix):]

    return run
