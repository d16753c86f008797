#!/usr/bin/env python3
"""Runs pytest on test files for meson, with meson's skip code.

Exit 77 (skipped) when pytest is not installed for this python, or when no
test ran (each skipped: the real-data tests without ../shared's traces), so
that meson counts a skip as a skip, never as a pass; .ci/require_no_skips.py
then says which suites CI requires to have run. Otherwise pytest's own exit
code. Bytecode is not written (no __pycache__ in the source tree).

usage: run_pytest.py TEST_FILE... [PYTEST_OPTION...]
"""
import sys

sys.dont_write_bytecode = True


class Outcomes:
    """Counts the tests that ran and passed, and those skipped."""

    def __init__(self):
        self.passed = 0
        self.skipped = 0

    def pytest_runtest_logreport(self, report):
        if report.when == "call" and report.passed:
            self.passed += 1
        elif report.skipped:
            self.skipped += 1


def main():
    try:
        import pytest
    except ImportError:
        print(f"SKIP: pytest is not installed for {sys.executable} (Debian: python3-pytest)")
        return 77
    outcomes = Outcomes()
    rc = pytest.main(["-v", "-rs", "-p", "no:cacheprovider", *sys.argv[1:]], plugins=[outcomes])
    if rc == 0 and outcomes.passed == 0:
        print(f"SKIP: no test ran ({outcomes.skipped} skipped)")
        return 77
    return int(rc)


if __name__ == "__main__":
    sys.exit(main())
