"""engine=auto's rule (engines/choice.py) both ways with its printed reason, and what the job
shows a person (console.py): plain periodic progress lines when not a terminal, a bar on one,
the stage table's legend, per-proof seconds and wall time apart from summed time."""

from __future__ import annotations

import io
import re

import pytest

from cuzk_ray.console import Console, Progress
from cuzk_ray.engines.choice import LOCAL_MAX_CONSTRAINTS, choose_engine
from cuzk_ray.engines.report import stage_table
from cuzk_ray.engines.settings import EngineSettings
from cuzk_ray.engines.types import PartitionResult


def settings(**kw) -> EngineSettings:
    return EngineSettings(engine=kw.pop("engine", "auto"), backend=kw.pop("backend", "cpu"), **kw)


def test_auto_picks_local_for_a_small_batch_without_a_cluster(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    c = choose_engine(settings(), partitions=10, domain_size=1 << 13)
    assert c.engine == "local"
    assert c.line() == ("engine: local (auto: no cluster given and 10 partition(s) x 2^13 fits one process; "
                        "engine=ray to use Ray)")
    assert choose_engine(settings(), 1, LOCAL_MAX_CONSTRAINTS).engine == "local"  # the limit itself is local


@pytest.mark.parametrize("kw, env, want", [
    ({}, {"RAY_ADDRESS": "10.0.0.1:6379"}, "auto: a cluster was given (10.0.0.1:6379)"),
    ({"ray": {"address": "ray://head:10001"}}, {}, "auto: a cluster was given (ray://head:10001)"),
    ({"provers": 2}, {}, "auto: provers set, which only the Ray engine honours"),
    ({"ray": {"dashboard": True}}, {}, "auto: ray.dashboard set, which only the Ray engine honours"),
    ({"ray": {"num_cpus": 4}}, {}, "auto: ray.num_cpus set, which only the Ray engine honours"),
])
def test_auto_picks_ray_when_a_cluster_or_ray_settings_are_given(monkeypatch, kw, env, want):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    c = choose_engine(settings(**kw), partitions=1, domain_size=16)
    assert (c.engine, c.reason) == ("ray", want)


def test_auto_picks_ray_for_a_large_batch_or_several_gpus(monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    c = choose_engine(settings(), partitions=10, domain_size=1 << 22)
    assert c.engine == "ray" and c.reason.startswith("auto: 10 partition(s) x 2^22 is above 2^24 constraints")
    s = EngineSettings(engine="auto", backend="cpu")
    object.__setattr__(s, "backend", "cuda")  # as resolved on a GPU machine (this one has none to resolve to)
    assert choose_engine(s, 1, 16, gpus=2).reason == "auto: 2 GPUs, one prover each (the local engine drives one)"
    assert choose_engine(s, 1, 16, gpus=1).engine == "local"


def test_an_explicit_engine_is_kept_and_auto_is_refused_by_the_engine(monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    c = choose_engine(settings(engine="local"), 100, 1 << 27)
    assert (c.engine, c.reason) == ("local", "engine=local was asked for")
    with pytest.raises(ValueError, match="engine='bogus' is not one of auto, ray, local"):
        settings(engine="bogus")


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_progress_not_a_tty_prints_plain_periodic_lines():
    buf, err = io.StringIO(), io.StringIO()
    console = Console(stream=buf, err=err)
    clock = FakeClock()
    p = Progress(console, tty=False, period=10.0, clock=clock)
    for done, t in [(1, 2.0), (2, 4.0), (3, 13.0), (4, 14.0), (5, 20.0)]:
        clock.t = 100.0 + t
        p.update(done, 5)
    console.close()
    lines = buf.getvalue().splitlines()
    assert "\r" not in buf.getvalue() and "\x1b" not in buf.getvalue()
    # the first, then no more often than every 10 s, and the last
    assert lines == ["  1/5 partitions verified (0.50/s, ETA 8 s)",
                     "  3/5 partitions verified (0.23/s, ETA 9 s)",
                     "  5/5 partitions verified (0.25/s, in 20 s)"]


def test_progress_on_a_tty_is_one_bar_rewritten_in_place():
    buf = io.StringIO()
    console = Console(stream=buf, err=io.StringIO())
    clock = FakeClock()
    p = Progress(console, tty=True, clock=clock)
    clock.t += 30.0
    p.update(1, 4)
    clock.t += 30.0
    p.update(4, 4)
    console.close()
    out = buf.getvalue()
    assert out.count("\n") == 1 and out.endswith("\n")  # one line, rewritten with \r, ended once
    frames = out.split("\r")[1:]
    assert frames[0] == "  [######..................] 1/4 partitions verified (0.03/s, ETA 1 min 30 s)\x1b[K"
    assert frames[1] == "  [########################] 4/4 partitions verified (0.07/s, in 1 min 00 s)\x1b[K\n"


def test_console_writes_the_log_file_with_timestamps(tmp_path):
    buf = io.StringIO()
    console = Console(stream=buf, err=io.StringIO())
    console.say("before the log is named")  # stdout only
    console.log_to(tmp_path / "prove.log")
    console.say("key: k (cached, 0.1 s)")
    console.close()
    log = (tmp_path / "prove.log").read_text().splitlines()
    assert len(log) == 1 and re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} INFO cuzk_ray\.job: key: k "
                                          r"\(cached, 0\.1 s\)", log[0]), log
    assert buf.getvalue().splitlines() == ["before the log is named", "key: k (cached, 0.1 s)"]


def result(proof: str, partition: int, **times) -> PartitionResult:
    return PartitionResult(proof_id=proof, partition=partition, proof=None, public=[], times=times,
                           synthesis_node="n", prover_node="n", verified=True)


def test_stage_table_has_a_legend_summed_time_and_seconds_per_proof():
    rs = [result("a", 0, abc=1.0, msm_b_g2=2.0), result("a", 1, abc=3.0, msm_b_g2=2.0),
          result("b", 0, abc=2.0, msm_b_g2=4.0)]
    table = stage_table(rs, wall_s=5.0).splitlines()
    assert table[0].split() == ["stage", "median", "s", "summed", "s", "what"]
    assert table[1].startswith("abc              2.000     6.000  a, b, c = A.w, B.w, C.w")
    assert table[2].startswith("msm_b_g2         2.000     8.000  MSM in G2 over the B query")
    assert table[-1].startswith("wall             5.000            3 partition(s) of 2 proof(s), 2.500 s/proof")
    assert "start-up not included" in table[-1]
    # twin: a stage no partition has is not listed
    assert not any(line.startswith("msm_h") for line in table)


def test_stage_table_lists_the_gpu_sections_under_gpu_in_stage_order():
    rs = [result("a", 0, gpu=1.2, **{"gpu.msm_h": 0.8, "gpu.h": 0.3, "gpu.expand": 0.1}),
          result("a", 1, gpu=1.0, **{"gpu.msm_h": 0.6, "gpu.h": 0.3})]
    table = stage_table(rs, wall_s=2.0).splitlines()
    rows = [line.split()[0] for line in table[1:-1]]
    assert rows == ["gpu", "gpu.h", "gpu.msm_h", "gpu.expand"]  # stages first, in order; then the rest
    assert table[2].startswith("gpu.h            0.300     0.600  of which the device held for h")
    assert table[3].startswith("gpu.msm_h        0.700     1.400")
    assert table[4].startswith("gpu.expand       0.100     0.100")  # in one partition only
