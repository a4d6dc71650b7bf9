"""Episodes (issue 30): a STARS+O run on store_groceries recorded as one MCAP file, read back with
the `mcap` library and with `rosbags`, replayed with no model and no operator; the live view
serving the STARS tree as it grows over Foxglove's WebSocket protocol.
"""
from __future__ import annotations

import asyncio
import json
import os
import re
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from task_learning.episode import messages as msgs
from task_learning.episode import recording_sink
from task_learning.episode.bus import EpisodeBus
from task_learning.episode.reader import open_episode
from task_learning.episode.recorder import McapSink
from task_learning.planning.replay import replay_episode
from task_learning.planning.session import RunSpec, run_in_process

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

SPEC = dict(scene="store_groceries", condition="STARS+O", llm="offline", operator="simulated")
EVERY_TOPIC = {msgs.WORLD_STATE, msgs.STARS_TREE, msgs.BCR_TREE, msgs.QUESTION, msgs.ANSWER, msgs.ACTION,
               msgs.ACTION_OUTCOME, msgs.LEARNED_GOAL, msgs.LLM_CALLS, msgs.KB_CHANGES}


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "task_learning.apps.cli", *args], capture_output=True, text=True,
                          check=False, cwd=cwd, timeout=280)


@pytest.fixture(scope="module")
def episode(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`task-learning run --record` of STARS+O on store_groceries (offline model, simulated operator)."""
    folder = tmp_path_factory.mktemp("episode")
    path = folder / "episode.mcap"
    proc = cli("run", "--scene", "store_groceries", "--condition", "STARS+O", "--db", str(folder / "kb.sqlite"),
               "--record", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["episode"] == str(path)
    return path


def test_the_mcap_library_finds_every_topic_and_the_llm_traffic(episode: Path) -> None:
    from mcap.reader import make_reader
    from mcap_ros2.decoder import DecoderFactory

    with open(episode, "rb") as handle:
        reader = make_reader(handle, decoder_factories=[DecoderFactory()])
        summary = reader.get_summary()
        assert summary is not None
        topics = {c.topic: summary.schemas[c.schema_id] for c in summary.channels.values()}
        assert EVERY_TOPIC <= set(topics)
        assert all(s.encoding == "ros2msg" for s in topics.values())
        assert {c.message_encoding for c in summary.channels.values()} == {"cdr"}
        assert topics[msgs.STARS_TREE].name == "task_learning_interfaces/msg/CandidateTree"
        meta = next(m for m in reader.iter_metadata() if m.name == "episode").metadata
        assert (meta["scene"], meta["condition"], meta["llm"]) == ("store_groceries", "STARS+O", "offline")
        calls = [json.loads(decoded.data) for _s, _c, _m, decoded in
                 reader.iter_decoded_messages(topics=[msgs.LLM_CALLS])]
    assert len(calls) > 100  # the offline model's goal requests, selections, repairs
    first = calls[0]
    assert first["request"]["prompt_type"] and first["response"]["text"] and first["key"]
    assert {c["request"]["prompt_type"] for c in calls} >= {"initial", "selection"}


def test_rosbags_reads_the_same_file(episode: Path) -> None:
    from rosbags.rosbag2 import Reader

    from task_learning.episode.schema import typestore

    with Reader(episode) as reader:
        counts = {topic: info.msgcount for topic, info in reader.topics.items()}
        assert EVERY_TOPIC <= set(counts)
        store = typestore()
        trees = [store.deserialize_cdr(raw, conn.msgtype) for conn, _t, raw in reader.messages()
                 if conn.topic == msgs.STARS_TREE]
    assert trees and all(t.kind == "stars" for t in trees)
    # The tree grows level by level: some object's tree has more candidates at a later message.
    sizes = [(t.goal.split(" | ")[1], len(t.nodes)) for t in trees]
    assert any(a[0] == b[0] and b[1] > a[1] for a, b in zip(sizes, sizes[1:]))
    assert any("viable" in n.detail and "p=" in n.detail for t in trees for n in t.nodes)


def test_info_summarises_what_was_learned(episode: Path) -> None:
    proc = cli("episode", "info", str(episode), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    goals = data["learned_goals"]
    assert len(goals) == 15 and all(g["confirmed_by"] == "simulated" for g in goals)
    assert data["kb_changes"]["goal"] == 15 and data["kb_changes"]["answer"] == data["topics"][msgs.ANSWER]["count"]


def test_replay_reproduces_goals_and_actions_with_no_model_and_no_operator(episode: Path) -> None:
    proc = cli("replay", str(episode), "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(proc.stdout)
    assert report["same"] and report["same_goals"] and report["same_actions"]
    assert report["model_calls"] == 0 and report["operator_questions"] == 0
    assert report["llm_failures"] == 0 and report["unmatched_questions"] == []
    assert report["llm_answers_served"] > 100 and report["answers_from_file"] >= 15
    assert len(report["goals"]) == 15 and report["actions"] > 15


def _rewrite(source: Path, target: Path, change) -> None:
    """A copy of an episode with `change(topic, message)` applied to every message."""
    original = open_episode(source)
    sink = McapSink(target, original.metadata, kb_start=original.kb_start)
    for topic, log_time, message in original.messages():
        sink.write(topic, change(topic, message), log_time)
    sink.close()


def test_replay_sees_a_different_operator_answer(episode: Path, tmp_path: Path) -> None:
    """The comparison can fail: the first "yes" turned into "no" changes what is learned."""
    flipped: list[str] = []

    def no_once(topic: str, message: dict) -> dict:
        if topic == msgs.ANSWER and message["answer"] == "yes" and not flipped:
            flipped.append(message["request_id"])
            return {**message, "answer": "no"}
        return message

    _rewrite(episode, tmp_path / "flipped.mcap", no_once)
    report = replay_episode(tmp_path / "flipped.mcap")
    assert flipped and not report.same
    assert report.differences


def test_replay_never_asks_a_model_for_a_call_the_file_lacks(episode: Path, tmp_path: Path) -> None:
    dropped = []

    def without_selections(topic: str, message: dict) -> dict:
        if topic == msgs.LLM_CALLS and json.loads(message["data"])["request"]["prompt_type"] == "selection":
            dropped.append(1)
            return {"data": json.dumps({"match": {"prompt_type": "nothing-matches"},
                                        "response": json.loads(message["data"])["response"]})}
        return message

    _rewrite(episode, tmp_path / "no-selection.mcap", without_selections)
    report = replay_episode(tmp_path / "no-selection.mcap")
    assert dropped and report.llm_failures > 0 and not report.same and report.model_calls == 0


def test_export_extracts_topics_cassette_and_kb(episode: Path, tmp_path: Path) -> None:
    out = tmp_path / "export"
    proc = cli("episode", "export", str(episode), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    names = {p.name for p in out.iterdir()}
    assert {"metadata.json", "llm_cassette.jsonl", "learned_goal.jsonl", "stars_tree.jsonl", "oversight_answer.jsonl",
            "kb_changes.jsonl"} <= names
    # The cassette replays with the LLM client as it is (--llm replay:FILE).
    from task_learning.llm.replay import ReplayProvider

    assert len(ReplayProvider(out / "llm_cassette.jsonl")) > 100
    proc = cli("episode", "export", str(episode), "--out", str(out))  # exists: refused, nothing changed
    assert proc.returncode != 0 and "already exists" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_bad_episode_files_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "not.mcap").write_text("hello")
    for args in (("replay", str(tmp_path / "not.mcap")), ("episode", "info", str(tmp_path / "missing.mcap")),
                 ("replay", str(tmp_path))):
        proc = cli(*args)
        assert proc.returncode == 2, proc.stdout
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_an_unwritable_episode_is_one_line_and_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "no-such-folder" / "e.mcap"
    proc = cli("run", "--scene", "store_groceries", "--condition", "STARS", "--db", str(tmp_path / "kb.sqlite"),
               "--record", str(target))
    assert proc.returncode == 2 and "does not exist" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    if os.path.exists("/dev/full"):
        proc = cli("run", "--scene", "store_groceries", "--condition", "STARS", "--db", str(tmp_path / "kb2.sqlite"),
                   "--record", "/dev/full")
        assert proc.returncode == 2 and "/dev/full" in proc.stderr and "Traceback" not in proc.stderr


def test_a_write_that_fails_mid_run_names_the_file_and_leaves_no_partial_file(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    from task_learning.errors import TaskLearningError

    spec = RunSpec(db=tmp_path / "kb.sqlite", **SPEC)
    sink = recording_sink(tmp_path / "e.mcap", spec)
    writes = {"n": 0}
    real_add = sink._writer.add_message

    def full_disk(*args, **kwargs):
        writes["n"] += 1
        if writes["n"] > 50:
            raise OSError(28, "No space left on device")
        return real_add(*args, **kwargs)

    monkeypatch.setattr(sink._writer, "add_message", full_disk)
    bus = EpisodeBus([sink])
    run_in_process(spec, bus=bus)  # the run itself goes on
    with pytest.raises(TaskLearningError, match=r"e\.mcap: No space left on device"):
        bus.close()
    assert list(tmp_path.glob("*.mcap*")) == [] and list(tmp_path.glob(".e.mcap*")) == []


def test_live_view_serves_the_stars_tree_as_it_grows() -> None:
    """A client of Foxglove's WebSocket protocol subscribes to /stars_tree and gets each object's
    candidate tree level by level while STARS runs."""
    import websockets

    from task_learning.episode.live import LiveView

    live = LiveView(port=0)
    bus = EpisodeBus([live])
    subscribed = threading.Event()
    trees: list[dict] = []

    async def client() -> str:
        # foxglove-sdk 0.30 names the protocol foxglove.sdk.v1 (foxglove.websocket.v1's successor); a
        # client offers both and the server picks the one it speaks.
        async with websockets.connect(live.url, subprotocols=["foxglove.websocket.v1", "foxglove.sdk.v1"]) as ws:
            channels: dict[str, dict] = {}
            while len(trees) < 6:
                frame = await asyncio.wait_for(ws.recv(), 60)
                if isinstance(frame, str):
                    op = json.loads(frame)
                    if op["op"] == "advertise":
                        channels.update({c["topic"]: c for c in op["channels"]})
                        if msgs.STARS_TREE in channels and not subscribed.is_set():
                            await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                                {"id": 1, "channelId": channels[msgs.STARS_TREE]["id"]}]}))
                            subscribed.set()
                    continue
                opcode, subscription, _log_time = struct.unpack_from("<BIQ", frame)
                assert (opcode, subscription) == (1, 1)
                trees.append(json.loads(frame[13:]))
            assert channels[msgs.STARS_TREE]["schemaName"] == "task_learning_interfaces/msg/CandidateTree"
            return str(ws.subprotocol)

    def run() -> None:
        assert subscribed.wait(60)
        run_in_process(RunSpec(db=":memory:", **SPEC), bus=bus)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    try:
        protocol = asyncio.run(client())
    finally:
        worker.join(120)
        bus.close()
    assert protocol.startswith("foxglove.")
    first_object = trees[0]["goal"].split(" | ")[1]
    levels = [t for t in trees if t["goal"].split(" | ")[1] == first_object and t["goal"].endswith("| level")]
    sizes = [len(t["nodes"]) for t in levels]
    assert len(sizes) >= 2 and sizes == sorted(sizes) and sizes[-1] > sizes[0]
    assert all(n["detail"].startswith("p=") for n in levels[-1]["nodes"])


def test_the_shipped_layout_is_the_one_the_code_builds() -> None:
    from task_learning.episode.layout import build_layout

    shipped = Path(__file__).resolve().parents[2] / "config" / "foxglove" / "task_learning.json"
    assert json.loads(shipped.read_text()) == json.loads(build_layout()), \
        "regenerate: python -m task_learning.episode.layout > config/foxglove/task_learning.json"
    topics = set(re.findall(r'"(/[a-z_/]+)', shipped.read_text()))
    assert {msgs.STARS_TREE, msgs.BCR_TREE, msgs.QUESTION, msgs.LEARNED_GOAL, msgs.DIAGNOSTICS} <= {
        t.split(".")[0] for t in topics}


def test_the_viewer_page_shows_message_text_as_text() -> None:
    page = (Path(__file__).resolve().parents[2] / "config" / "foxglove" / "viewer.html").read_text()
    assert "innerHTML" not in page and "insertAdjacentHTML" not in page and "eval(" not in page
    assert "textContent" in page
