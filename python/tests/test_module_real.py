"""The README's one-liner on ../shared's Mooncake conversation trace (env
PREFIXSIM_SHARED overrides the folder, as for the C++ tests): the hit rate
the CLI reports, and the CLI's whole report.json. Skipped without the trace
(run_pytest.py then exits 77: the real suite may skip where ../shared is absent)."""
import os

import pytest

import prefixsim

SHARED = os.environ.get("PREFIXSIM_SHARED",
                        os.path.join(os.environ.get("PREFIXSIM_SOURCE_DIR", "."), "..", "shared"))
TRACE = os.path.join(SHARED, "traces", "mooncake", "conversation_trace.jsonl")


@pytest.fixture
def trace():
    if not os.path.isfile(TRACE):
        pytest.skip(f"{TRACE} is absent")
    return TRACE


def test_the_readme_one_liner_is_the_cli_report(trace, cli_json):
    got = prefixsim.replay(trace, mode="cache", kv_tokens=1_000_000)
    assert got["prefix_cache"]["hit_rate"] == 0.05416485204620918  # what the CLI printed when the README was written
    expected, _ = cli_json("report.json", "replay", trace, "--mode", "cache", "--kv-tokens", 1000000)
    assert got == expected


def test_compare_on_the_real_trace_is_the_cli_compare(trace, cli_json):
    got = prefixsim.compare(trace, policies="lru,s3fifo", kv_tokens=[100_000, 1_000_000], requests=5000)
    expected, _ = cli_json("compare.json", "compare", trace, "--policies", "lru,s3fifo",
                           "--kv-tokens", "100000,1000000", "--requests", 5000)
    assert got == expected
