"""Writes and reads of the store: campaigns, attempts, verdicts, points, samples, resume."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from servegate.store import AttemptStatus, CampaignStatus, Store

from .data import make_result, make_verdict


def _attempt(store: Store, cid: int, variant: str = "baseline", key: str = "k1") -> int:
    return store.start_attempt(
        cid,
        variant=variant,
        server_key=key,
        command=["python3", "-m", "sglang.launch_server", "--port", "30000"],
        env={"CUDA_VISIBLE_DEVICES": "0"},
        host="local",
        versions={"servegate": "0.1.0", "sglang": "0.5.2"},
        git_commit="abc123",
    )


def test_campaign_is_get_or_create_by_name(tmp_path: Path) -> None:
    """The same name gives the same id, with the newest config text; another name a new id."""
    with Store.open(tmp_path / "s.db") as store:
        first = store.campaign("fusion", "old", "baseline")
        again = store.campaign("fusion", "new", "baseline")
        other = store.campaign("spec", "x", "base")
        assert first == again
        assert first != other
        assert store.campaign_info(first).config_text == "new"
        assert [c.name for c in store.campaigns()] == ["spec", "fusion"]
        assert store.find_campaign("missing") is None
        assert store.variants(first) == ["baseline"]


def test_attempt_keeps_command_host_versions_and_redacts_secrets(tmp_path: Path) -> None:
    """The exact command and env are stored, secret values replaced, nowhere in the file."""
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        cid = store.campaign("c", "cfg", "baseline")
        store.start_attempt(
            cid,
            variant="baseline",
            server_key="k",
            command=["serve", "--api-key", "sk-live-123", "--hf-token=hf_secret_9"],
            env={"HF_TOKEN": "hf_secret_9", "OPENAI_API_KEY": "sk-live-123", "TP": "8"},
            host="ssh://root@gpu-1:22",
            versions={"sglang": "0.5.2"},
            git_commit="deadbeef",
        )
        (attempt,) = store.attempts(cid)
    assert attempt.command == ("serve", "--api-key", "***", "--hf-token=***")
    assert attempt.env == {"HF_TOKEN": "***", "OPENAI_API_KEY": "***", "TP": "8"}
    assert (attempt.host, attempt.git_commit) == ("ssh://root@gpu-1:22", "deadbeef")
    assert attempt.versions == {"sglang": "0.5.2"}
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"sk-live-123" not in raw
    assert b"hf_secret_9" not in raw


def test_first_start_of_a_server_key_is_cold_later_ones_warm(tmp_path: Path) -> None:
    """Cold means the first start of that server configuration in the campaign."""
    with Store.open(tmp_path / "s.db") as store:
        cid = store.campaign("c", "cfg", "baseline")
        first = _attempt(store, cid, "baseline", "k1")
        store.record_verdict(first, make_verdict("ready", 12.5))
        _attempt(store, cid, "bench-only", "k1")
        _attempt(store, cid, "fusion", "k2")
        colds = [(a.variant, a.cold) for a in store.attempts(cid)]
    assert colds == [("baseline", True), ("bench-only", False), ("fusion", True)]


def test_a_start_that_never_came_up_leaves_the_next_one_cold(tmp_path: Path) -> None:
    """An attempt that crashed or never launched warmed nothing: the next start is cold."""
    with Store.open(tmp_path / "s.db") as store:
        cid = store.campaign("c", "cfg", "baseline")
        crashed = _attempt(store, cid, "baseline", "k1")
        store.record_verdict(crashed, make_verdict("crash", 3.0, kind="oom"))
        _attempt(store, cid, "baseline", "k1")  # stopped by preflight: no verdict
        _attempt(store, cid, "baseline", "k1")
        colds = [a.cold for a in store.attempts(cid)]
    assert colds == [True, True, True]


def test_verdict_phases_and_stop_are_stored_with_the_attempt(tmp_path: Path) -> None:
    """A verdict sets the attempt's status; its phases and the stop report come back."""
    with Store.open(tmp_path / "s.db") as store:
        cid = store.campaign("c", "cfg", "baseline")
        ok = _attempt(store, cid)
        store.record_verdict(ok, make_verdict("ready", 12.5))
        store.record_stop(ok, SimpleNamespace(killed=[12, 11], duration_s=0.4, port_free=True))
        store.finish_attempt(ok, AttemptStatus.DONE)
        bad = _attempt(store, cid, "oom", "k2")
        store.record_verdict(
            bad, make_verdict("crash", 3.0, kind="oom", hint="lower --mem-fraction-static")
        )
        done, crashed = store.attempts(cid)
    assert (done.status, done.startup_s) == ("done", 12.5)
    assert [p.name for p in done.phases] == ["load_weights", "capture_cuda_graphs"]
    assert (done.stop_killed, done.stop_duration_s, done.stop_port_free) == ((11, 12), 0.4, True)
    assert (crashed.status, crashed.startup_s) == ("crash", None)
    assert crashed.verdict is not None
    assert (
        crashed.verdict["kind"],
        crashed.verdict["hint"],
    ) == ("oom", "lower --mem-fraction-static")


def test_points_and_samples_round_trip(tmp_path: Path) -> None:
    """A point's summary, failures and per-request times come back, errors counted apart."""
    rng = np.random.default_rng(1)
    result = make_result(rng, throughput=100.0, requests=30, tokens=8, errors=2)
    with Store.open(tmp_path / "s.db") as store:
        cid = store.campaign("c", "cfg", "baseline")
        aid = _attempt(store, cid)
        pid = store.record_point(aid, variant="baseline", load="c=4", repeat=0, result=result)
        (point,) = store.points(cid)
        samples = store.samples([pid])
    assert (
        point.variant,
        point.load,
        point.repeat,
        point.completed,
        point.failed,
    ) == ("baseline", "c=4", 0, 30, 2)
    assert result.summary == point.summary
    assert samples.errors == {"http-500": 2}
    expected_ttft = [s.chunks_s[0] * 1000 for s in result.samples[:30]]
    np.testing.assert_allclose(expected_ttft, samples.ttft_ms, rtol=1e-9)
    assert samples.itl_ms.size == 30 * 7  # 8 chunks per request, 7 gaps
    expected_gap = (result.samples[0].chunks_s[1] - result.samples[0].chunks_s[0]) * 1000
    assert expected_gap == pytest.approx(samples.itl_ms[0], rel=1e-4)  # float32 storage


def test_nan_in_a_summary_is_stored_as_null(tmp_path: Path) -> None:
    """A NaN metric (no completed request) is stored as null, so the JSON stays valid."""
    result = {"summary": {"output_throughput": float("nan")}, "completed": 0, "failed": 3}
    with Store.open(tmp_path / "s.db") as store:
        cid = store.campaign("c", "cfg", "baseline")
        store.record_point(
            _attempt(store, cid), variant="baseline", load="c=1", repeat=0, result=result
        )
        (point,) = store.points(cid)
    assert point.summary == {"output_throughput": None}


def test_done_points_survive_reopening_and_rerecording_replaces(tmp_path: Path) -> None:
    """Resume bookkeeping: finished (variant, load, repeat) are listed; a redo replaces."""
    rng = np.random.default_rng(2)
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        cid = store.campaign("c", "cfg", "baseline")
        aid = _attempt(store, cid)
        for rep in range(2):
            store.record_point(
                aid,
                variant="baseline",
                load="c=1",
                repeat=rep,
                result=make_result(rng, throughput=50.0),
            )
    with Store.open(path) as store:
        cid = store.campaign("c", "cfg", "baseline")
        assert {("baseline", "c=1", 0), ("baseline", "c=1", 1)} == store.done_points(cid)
        aid = _attempt(store, cid)
        store.record_point(
            aid,
            variant="baseline",
            load="c=1",
            repeat=1,
            result=make_result(rng, throughput=60.0, requests=5),
        )
        points = store.points(cid)
        assert len(points) == 2
        assert store.samples([points[1].id]).count == 5


def test_mark_interrupted_closes_attempts_of_a_dead_runner(tmp_path: Path) -> None:
    """Open attempts become interrupted on resume; finished ones are left alone."""
    with Store.open(tmp_path / "s.db") as store:
        cid = store.campaign("c", "cfg", "baseline")
        finished = _attempt(store, cid)
        store.finish_attempt(finished, AttemptStatus.DONE)
        _attempt(store, cid, "fusion", "k2")
        assert store.mark_interrupted(cid) == 1
        statuses = [(a.status, a.ended_at is not None) for a in store.attempts(cid)]
    assert statuses == [("done", True), ("interrupted", True)]


def test_statuses_stored_as_plain_strings_read_back_as_the_enums(tmp_path: Path) -> None:
    """A database written with plain status strings (as before the enums) reads back as
    CampaignStatus and AttemptStatus members, and the stored text is the plain string."""
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        cid = store.campaign("c", "cfg", "baseline")
        aid = _attempt(store, cid)
        # plain strings, as older callers wrote them (typed callers pass the members)
        store.finish_attempt(aid, "done")  # type: ignore[arg-type]
        store.set_campaign_status(cid, "interrupted")  # type: ignore[arg-type]
    with sqlite3.connect(path) as conn:  # the text on disk, the same as before the enums
        assert conn.execute("SELECT status FROM campaign").fetchall() == [("interrupted",)]
        assert conn.execute("SELECT status FROM attempt").fetchall() == [("done",)]
    conn.close()
    with Store.open(path, read_only=True) as store:
        (attempt,) = store.attempts(cid)
        info = store.campaign_info(cid)
    assert attempt.status is AttemptStatus.DONE
    assert info.status is CampaignStatus.INTERRUPTED
    assert (attempt.status, info.status) == ("done", "interrupted")


def test_unknown_status_is_a_programming_error(tmp_path: Path) -> None:
    """Statuses outside the documented set are rejected, not stored."""
    with Store.open(tmp_path / "s.db") as store:
        cid = store.campaign("c", "cfg", "baseline")
        with pytest.raises(ValueError, match="attempt status"):
            store.finish_attempt(_attempt(store, cid), "great")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="campaign status"):
            store.set_campaign_status(cid, "great")  # type: ignore[arg-type]


def test_a_reader_sees_results_while_the_writer_is_open(tmp_path: Path) -> None:
    """WAL: a report can read a campaign while the runner still holds the database."""
    path = tmp_path / "s.db"
    rng = np.random.default_rng(3)
    with Store.open(path) as writer:
        cid = writer.campaign("c", "cfg", "baseline")
        aid = _attempt(writer, cid)
        writer.record_point(
            aid, variant="baseline", load="c=1", repeat=0, result=make_result(rng, throughput=10.0)
        )
        with Store.open(path) as reader:
            assert {("baseline", "c=1", 0)} == reader.done_points(cid)


_WRITER = textwrap.dedent(
    """
    import sys
    import numpy as np
    from servegate.store import AttemptStatus, CampaignStatus, Store
    from tests.store.data import make_result
    rng = np.random.default_rng(0)
    with Store.open(sys.argv[1]) as store:
        cid = store.campaign("killed", "cfg", "baseline")
        aid = store.start_attempt(cid, variant="baseline", server_key="k", command=["x"],
                                  env={}, host="local", versions={}, git_commit=None)
        for rep in range(10_000):
            store.record_point(aid, variant="baseline", load="c=8", repeat=rep,
                               result=make_result(rng, throughput=100.0, requests=200))
            print(rep, flush=True)
    """
)


def test_sigkill_mid_campaign_loses_nothing_recorded_and_leaves_no_half_point(
    tmp_path: Path,
) -> None:
    """Every point reported as written survives SIGKILL, each with all of its samples."""
    path = tmp_path / "s.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", _WRITER, str(path)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).parents[2],
    )
    assert proc.stdout is not None
    written = -1
    for line in proc.stdout:
        written = int(line)
        if written >= 3:
            break
    proc.kill()
    proc.wait()
    proc.stdout.close()
    with Store.open(path) as store:
        cid = store.campaign("killed", "cfg", "baseline")
        done = store.done_points(cid)
        counts = {p.repeat: store.samples([p.id]).count for p in store.points(cid)}
    assert {("baseline", "c=8", r) for r in range(written + 1)} <= done
    assert set(counts.values()) == {200}


def test_samples_given_as_dicts_or_with_ms_fields_are_read(tmp_path: Path) -> None:
    """Results may come as to_json() objects, samples with millisecond fields."""
    result = {
        "summary": {"output_throughput": 1.0},
        "completed": 1,
        "failed": 0,
        "failures": {},
        "samples": [
            {
                "send_s": 5.0,
                "ttft_ms": 42.0,
                "e2el_ms": 80.0,
                "output_tokens": 3,
                "chunk_ms": [42.0, 61.0, 80.0],
                "error_kind": None,
            }
        ],
        "server_metrics": {"spec_accept_length": 2.5},
        "warnings": [],
    }
    with Store.open(tmp_path / "s.db") as store:
        cid = store.campaign("c", "cfg", "baseline")
        pid = store.record_point(
            _attempt(store, cid), variant="v", load="rate=4", repeat=0, result=result
        )
        samples = store.samples([pid])
        (point,) = store.points(cid)
    assert samples.ttft_ms.tolist() == [42.0]
    assert samples.itl_ms.tolist() == [19.0, 19.0]
    assert point.server_metrics == {"spec_accept_length": 2.5}
    assert point.variant == "v"


def test_attempts_record_their_node_and_gpu_model_and_may_be_lost(tmp_path: Path) -> None:
    """A start on a cluster node keeps the node and its GPU model; a local one has none;
    an attempt whose node was lost reads back as lost and is not reopened on resume."""
    path = tmp_path / "s.db"
    with Store.open(path) as store:
        cid = store.campaign("c", "cfg", "baseline")
        local = _attempt(store, cid)
        placed = store.start_attempt(
            cid,
            variant="fusion",
            server_key="k2",
            command=["serve"],
            env={},
            host="local",
            versions={},
            git_commit=None,
            start=1,
            node="10.0.0.7/3fa2c1d0",
            gpu_model="H200",
        )
        store.finish_attempt(placed, AttemptStatus.LOST, "node 10.0.0.7/3fa2c1d0 was lost")
        assert store.mark_interrupted(cid) == 1  # the local one, still running
        by_id = {a.id: a for a in store.attempts(cid)}
    assert (by_id[local].node, by_id[local].gpu_model) == (None, None)
    lost = by_id[placed]
    assert (lost.node, lost.gpu_model, lost.status) == ("10.0.0.7/3fa2c1d0", "H200", "lost")
    assert lost.status is AttemptStatus.LOST
    assert lost.reason == "node 10.0.0.7/3fa2c1d0 was lost"


def test_a_database_from_before_placement_reads_and_upgrades(tmp_path: Path) -> None:
    """Attempts written before the node and GPU model columns read back with None, read
    only as they are, and after the upgrade."""
    from servegate.store import MIGRATIONS

    path = tmp_path / "old.db"
    with Store.open(path, migrations=MIGRATIONS[:4]) as store:
        cid = store.campaign("c", "cfg", "baseline")
    conn = sqlite3.connect(path)
    with conn:  # an attempt as the step-4 runner wrote it
        conn.execute(
            "INSERT INTO attempt (campaign_id, variant_id, server_key, cold, command, env, "
            "host, versions, status, started_at, start) SELECT ?, id, 'k', 1, '[]', '{}', "
            "'local', '{}', 'done', '2026-01-01T00:00:00', 1 FROM variant",
            (cid,),
        )
    conn.close()
    with Store.open(path, read_only=True) as store:
        [before] = store.attempts(cid)
    with Store.open(path) as store:
        [after] = store.attempts(cid)
        assert "node and GPU model of each attempt" in [s[1] for s in store.schema_steps()]
    assert (before.node, before.gpu_model) == (None, None) == (after.node, after.gpu_model)


def test_a_database_from_before_capacity_reads_none_and_upgrades(tmp_path: Path) -> None:
    """A database from before the capacity step reads, read-only, with no capacities and
    its points done; after the upgrade a capacity is stored, replaced for the same start,
    and counts its search (variant, find-max, start - 1) as done."""
    from servegate.store import MIGRATIONS

    path = tmp_path / "old.db"
    with Store.open(path, migrations=MIGRATIONS[:5]) as store:
        cid = store.campaign("c", "cfg", "baseline")
        store.add_variant(cid, "baseline")
    with Store.open(path, read_only=True) as store:
        assert store.capacities(cid) == []
        assert store.done_points(cid) == set()
    with Store.open(path) as store:
        aid = store.start_attempt(
            cid, variant="baseline", server_key="k", command=[], env={}, host="local",
            versions={}, git_commit=None, start=2,
        )  # fmt: skip
        store.record_capacity(aid, variant="baseline", start=2, data={"value": 8.0})
        store.record_capacity(aid, variant="baseline", start=2, data={"value": 9.0})
        [info] = store.capacities(cid)
        assert (info.variant, info.start, info.attempt_id, info.data) == (
            "baseline", 2, aid, {"value": 9.0},
        )  # fmt: skip
        assert store.done_points(cid) == {("baseline", "find-max", 1)}
