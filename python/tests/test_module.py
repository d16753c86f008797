"""`import prefixsim` against the CLI it wraps: each function returns the
JSON its command writes for the same input (the CLI run from PREFIXSIM_BIN
on test/data's small traces), out= writes the command's files byte for
byte, bad input raises prefixsim.Error with the command's message, and the
GIL is released while a run simulates."""
import json
import os
import threading
import time

import pytest

import prefixsim

DATA = os.path.join(os.environ.get("PREFIXSIM_SOURCE_DIR", "."), "test", "data", "traces")
MOONCAKE = os.path.join(DATA, "mooncake_small.jsonl")
NATIVE = os.path.join(DATA, "native_small.jsonl")
RUN_FILES = ["metrics.prom", "report.html", "report.json", "series.csv", "summary.md"]


def same_files(a, b, names):
    """The files `names` in folders a and b, byte for byte, and nothing else there."""
    assert sorted(os.listdir(a)) == sorted(names) == sorted(os.listdir(b))
    for name in names:
        with open(os.path.join(a, name), "rb") as fa, open(os.path.join(b, name), "rb") as fb:
            assert fa.read() == fb.read(), name


def test_replay_cache_mode_is_the_cli_report(cli_json):
    expected, _ = cli_json("report.json", "replay", MOONCAKE, "--mode", "cache", "--kv-tokens", 2000)
    got = prefixsim.replay(MOONCAKE, mode="cache", kv_tokens=2000)
    assert got == expected
    assert got["scenario"]["kv_tokens"] == 2000 and got["prefix_cache"]["hit_rate"] > 0


def test_replay_engine_mode_with_scheduler_keys(cli_json):
    expected, _ = cli_json("report.json", "replay", NATIVE, "--max-num-seqs", 2, "--max-num-batched-tokens", 64,
                           "--block-size", 4)
    got = prefixsim.replay(NATIVE, block_size=4, scheduler={"max_num_seqs": 2, "max_num_batched_tokens": 64})
    assert got == expected


def test_replay_without_a_trace_runs_the_workload(cli_json):
    expected, _ = cli_json("report.json", "replay", "--requests", 200, "--mode", "cache", "--workload", "multi-turn")
    assert prefixsim.replay(requests=200, mode="cache", workload="multi-turn") == expected


def test_replay_out_writes_the_cli_files(cli_json, tmp_path):
    _, cli_out = cli_json("report.json", "replay", MOONCAKE, "--kv-tokens", 5000)
    got = prefixsim.replay(MOONCAKE, kv_tokens=5000, out=tmp_path / "py")
    same_files(cli_out, tmp_path / "py", RUN_FILES)
    with open(tmp_path / "py" / "report.json", encoding="utf-8") as f:
        assert json.load(f) == got


def test_replay_of_a_list_of_requests_is_the_replay_of_its_file():
    with open(MOONCAKE, encoding="utf-8") as f:
        requests = [json.loads(line) for line in f]
    from_list = prefixsim.replay(requests, mode="cache", kv_tokens=2000)
    from_file = prefixsim.replay(MOONCAKE, mode="cache", kv_tokens=2000)
    # The list is read from a temporary requests.jsonl, which the report
    # names, with the checksum of its bytes (JSON written compactly).
    assert os.path.basename(from_list["scenario"].pop("trace")) == "requests.jsonl"
    assert os.path.basename(from_list["trace"].pop("path")) == "requests.jsonl"
    from_file["scenario"].pop("trace")
    from_file["trace"].pop("path")
    assert from_list["trace"].pop("checksum") != from_file["trace"].pop("checksum")
    assert from_list == from_file


def test_a_bad_request_in_a_list_is_the_readers_error():
    good = {"timestamp": 0, "input_length": 1210, "output_length": 10, "hash_ids": [0, 1, 2]}
    with pytest.raises(prefixsim.Error, match=r"requests\.jsonl:2: missing field \"output_length\"$"):
        prefixsim.replay([good, {"timestamp": 1, "input_length": 20, "hash_ids": [0]}], mode="cache")


def test_compare_is_the_cli_compare(cli_json, tmp_path):
    expected, cli_out = cli_json("compare.json", "compare", MOONCAKE, "--policies", "lru,s3fifo",
                                 "--kv-blocks", "100,200", "--threads", 2)
    got = prefixsim.compare(MOONCAKE, policies=["lru", "s3fifo"], kv_blocks=[100, 200], threads=2,
                            out=tmp_path / "py")
    assert got == expected
    assert [(r["policy"], r["kv_blocks"]) for r in got["results"]] == [
        ("lru", 100), ("s3fifo", 100), ("lru", 200), ("s3fifo", 200)]
    same_files(cli_out, tmp_path / "py", ["compare.csv", "compare.html", "compare.json", "compare.md"])


def test_compare_engine_mode_takes_scenario_keys(cli_json):
    expected, _ = cli_json("compare.json", "compare", NATIVE, "--mode", "engine", "--policies", "lru",
                           "--kv-tokens", "64,128", "--block-size", 4, "--max-num-seqs", 2)
    got = prefixsim.compare(NATIVE, mode="engine", policies="lru", kv_tokens="64,128", block_size=4,
                            scheduler={"max_num_seqs": 2})
    assert got == expected


def test_compare_as_a_data_frame():
    pd = pytest.importorskip("pandas")
    frame = prefixsim.compare(MOONCAKE, policies="lru,lfu", kv_blocks=[100, 200], as_frame=True)
    assert isinstance(frame, pd.DataFrame)
    report = prefixsim.compare(MOONCAKE, policies="lru,lfu", kv_blocks=[100, 200])
    assert list(frame.columns) == list(report["results"][0])
    assert frame["hit_rate"].tolist() == [r["hit_rate"] for r in report["results"]]
    assert frame.equals(prefixsim.to_frame(report))


def test_analyze_is_the_cli_analysis(cli_json, tmp_path):
    expected, cli_out = cli_json("analysis.json", "analyze", MOONCAKE, "--lru-kv-tokens", 2048, "--top", 3,
                                 "--block-size", 32)
    got = prefixsim.analyze(MOONCAKE, lru_kv_tokens=2048, top=3, block_size=32, out=tmp_path / "py")
    assert got == expected
    same_files(cli_out, tmp_path / "py", ["analysis.json", "analysis.md"])


def write_grid(tmp_path):
    grid = tmp_path / "grid.yaml"
    grid.write_text(f"base:\n  trace: {json.dumps(MOONCAKE)}\n  mode: cache\n"
                    "axes:\n  policy: [lru, lfu]\n  kv_blocks: {from: 100, to: 200, step: 100}\n")
    return grid


def test_sweep_is_the_cli_sweep(cli_json, tmp_path):
    grid = write_grid(tmp_path)
    expected, cli_out = cli_json("sweep.json", "sweep", grid)
    got = prefixsim.sweep(grid, threads=2)
    assert got == expected and got["points_done"] == 4
    assert got["results"][0]["params"] == {"policy": "lru", "kv_blocks": 100}
    assert prefixsim.sweep(grid, out=tmp_path / "py") == expected
    same_files(cli_out, tmp_path / "py", ["sweep.csv", "sweep.html", "sweep.json", "sweep.md"])


def test_sweep_as_a_data_frame_has_sweep_csvs_columns(cli_json, tmp_path):
    pd = pytest.importorskip("pandas")
    grid = write_grid(tmp_path)
    _, cli_out = cli_json("sweep.json", "sweep", grid)
    frame = prefixsim.sweep(grid, as_frame=True)
    csv = pd.read_csv(cli_out / "sweep.csv")
    assert list(frame.columns) == list(csv.columns)
    assert frame["hit_rate"].tolist() == csv["hit_rate"].tolist()
    assert frame["policy"].tolist() == ["lru", "lru", "lfu", "lfu"]


# Bad input: prefixsim.Error (a ValueError) with the command's one-line
# message, as the CLI prints it after `prefixsim COMMAND: `.
def test_errors_are_value_errors():
    assert issubclass(prefixsim.Error, ValueError)


@pytest.mark.parametrize("call, command, args", [
    # out of range: the scenario table's check, naming the flag
    (lambda: prefixsim.replay(MOONCAKE, gpu_mem_util=1.5), "replay", [MOONCAKE, "--gpu-mem-util", 1.5]),
    (lambda: prefixsim.replay(MOONCAKE, mode="cache", block_size=0), "replay",
     [MOONCAKE, "--mode", "cache", "--block-size", 0]),
    (lambda: prefixsim.analyze(MOONCAKE, window=0), "analyze", [MOONCAKE, "--window", 0]),
    (lambda: prefixsim.compare(MOONCAKE, kv_blocks=[100, -2]), "compare", [MOONCAKE, "--kv-blocks", "100,-2"]),
    (lambda: prefixsim.compare(MOONCAKE, kv_blocks=100, kv_tokens=100), "compare",
     [MOONCAKE, "--kv-blocks", 100, "--kv-tokens", 100]),
    # a missing trace file: the reader's message
    (lambda: prefixsim.replay("missing.jsonl"), "replay", ["missing.jsonl"]),
    (lambda: prefixsim.compare("missing.jsonl", kv_blocks=100), "compare", ["missing.jsonl", "--kv-blocks", 100]),
    (lambda: prefixsim.analyze("missing.jsonl"), "analyze", ["missing.jsonl"]),
    (lambda: prefixsim.sweep("missing.yaml"), "sweep", ["missing.yaml"]),
], ids=["range", "range-block-size", "analyze-window", "compare-list", "compare-two-sizes",
        "missing-trace", "compare-missing-trace", "analyze-missing-trace", "sweep-missing-grid"])
def test_bad_input_is_the_cli_message(cli_error, call, command, args):
    with pytest.raises(prefixsim.Error) as e:
        call()
    assert str(e.value) == cli_error(command, *args)


@pytest.mark.parametrize("keywords, yaml, line, message", [
    ({"polcy": "lru"}, "polcy: lru", 2, "polcy: unknown key"),
    ({"kv_tokens": "many"}, "kv_tokens: many", 2, "kv_tokens: expected an integer"),
    ({"scheduler": {"max_num_seqs": 1.5}}, "scheduler:\n  max_num_seqs: 1.5", 3,
     "scheduler.max_num_seqs: expected an integer"),
], ids=["unknown-key", "wrong-type", "nested-key"])
def test_keywords_are_read_as_a_scenario_file(cli_error, tmp_path, keywords, yaml, line, message):
    """Keyword arguments are the keys of a scenario YAML: a key the table does
    not know, or a value of the wrong type, fails as in `replay --config`,
    at its line in the YAML the arguments make (the trace's is line 1)."""
    config = tmp_path / "scenario.yaml"
    config.write_text(yaml + "\n")
    assert cli_error("replay", MOONCAKE, "--config", config) == f"{config}:{line - 1}: {message}"
    with pytest.raises(prefixsim.Error) as e:
        prefixsim.replay(MOONCAKE, **keywords)
    assert str(e.value) == f"<keywords>:{line}: {message}"


def test_a_key_of_another_command_is_refused():
    with pytest.raises(prefixsim.Error, match=r"^<keywords>:2: policy: compare does not take this key$"):
        prefixsim.compare(MOONCAKE, policy="lru", kv_blocks=100)
    with pytest.raises(prefixsim.Error, match=r"^<keywords>:4: scheduler.max_num_seqs: analyze does not take"):
        prefixsim.analyze(MOONCAKE, block_size=32, scheduler={"max_num_seqs": 4})


def test_a_trace_and_a_workload_are_refused_as_by_replay():
    with pytest.raises(prefixsim.Error, match=r"^--workload: give a trace or a workload, not both$"):
        prefixsim.replay(MOONCAKE, workload="chatbot")


def test_out_is_checked_before_the_run(cli_error, tmp_path):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    with pytest.raises(prefixsim.Error) as e:
        prefixsim.replay(MOONCAKE, mode="cache", out=not_a_folder)
    assert str(e.value) == cli_error("replay", MOONCAKE, "--mode", "cache", "--out", not_a_folder)


def test_the_gil_is_released_while_simulating():
    """Another Python thread keeps running while a replay simulates: the
    longest pause it sees is far below the replay's own duration (holding
    the GIL, it would be all of it)."""
    took = []

    def run():
        start = time.perf_counter()
        prefixsim.replay(requests=20000)  # about 0.4 s of engine-mode simulation
        took.append(time.perf_counter() - start)

    worker = threading.Thread(target=run)
    last, longest = time.perf_counter(), 0.0
    worker.start()
    while worker.is_alive():
        time.sleep(0.001)
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    assert took and took[0] > 0.1, took
    assert longest < took[0] / 2, (longest, took[0])
