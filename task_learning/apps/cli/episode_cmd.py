"""`task-learning replay` and `task-learning episode`: MCAP episodes of `run --record` (or of a
PerformTask on the graph), read back (docs/episodes.md).

  replay EPISODE.mcap [--json]        run it again: LLM answers and operator answers from the file,
                                      no model, no operator; same goals and actions? (exit 1 if not)
  episode info EPISODE.mcap [--json]  how it was made, its topics and counts, what was learned
  episode export EPISODE.mcap --out DIR
                                      a new folder: metadata.json, one JSONL file per topic, the LLM
                                      calls as a cassette (llm_cassette.jsonl, for --llm replay:FILE)
                                      and the knowledge base it started from (kb_start.sqlite)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from task_learning.episode import messages as msgs


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("replay", help="replay an episode with no model and no operator, and compare",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("episode", metavar="EPISODE.mcap")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=replay)
    e = subparsers.add_parser("episode", help="summarise or extract an episode (MCAP)",
                              description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = e.add_subparsers(dest="verb", metavar="VERB", required=True)
    info = verbs.add_parser("info", help="how it was made, topics and counts, what was learned")
    info.add_argument("episode", metavar="EPISODE.mcap")
    info.add_argument("--json", action="store_true")
    info.set_defaults(func=episode_info)
    export = verbs.add_parser("export", help="extract it into a new folder (JSONL per topic, cassette, kb)")
    export.add_argument("episode", metavar="EPISODE.mcap")
    export.add_argument("--out", required=True, help="folder to create")
    export.set_defaults(func=episode_export)


def replay(args: argparse.Namespace) -> int:
    from task_learning.planning.replay import replay_episode

    report = replay_episode(args.episode)
    if args.json:
        print(json.dumps(report.to_dict(), indent=2))
        return 0 if report.same else 1
    verdict = "the same goals and actions" if report.same else "DIFFERENT from the recording"
    print(f"{args.episode}: replayed with no model and no operator: {verdict}")
    print(f"  learned goals     {len(report.goals)} ({'same' if report.same_goals else 'different'})")
    print(f"  actions           {report.actions} ({'same' if report.same_actions else 'different'})")
    print(f"  LLM answers       {report.llm_answers_served} served from the file's {report.llm_answers_in_file}; "
          f"{report.model_calls} model calls; {report.llm_failures} requests not in the file")
    print(f"  operator answers  {report.answers_from_file} from the file; {report.operator_questions} questions "
          f"to a person; {len(report.unmatched_questions)} questions not in the file")
    for line in report.differences:
        print(f"  {line}")
    return 0 if report.same else 1


def summary(path: str) -> dict[str, Any]:
    from task_learning.episode.reader import open_episode
    from task_learning.planning.replay import learned, read_topic

    episode = open_episode(path)
    goals = [goal for _t, goal, _m in read_topic(episode, [msgs.LEARNED_GOAL], learned)]
    changes: dict[str, int] = {}
    for change in episode.kb_changes():
        changes[change.get("kind", "?")] = changes.get(change.get("kind", "?"), 0) + 1
    return {"episode": str(episode.path), "metadata": episode.metadata, "duration_s": round(episode.duration_s, 3),
            "topics": episode.topics, "kb_start": episode.kb_start is not None, "kb_changes": changes,
            "learned_goals": goals}


def episode_info(args: argparse.Namespace) -> int:
    data = summary(args.episode)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    meta = data["metadata"]
    print(f"{data['episode']}: {meta.get('scene', '?')} {meta.get('condition', '?')} (llm {meta.get('llm', '?')}, "
          f"engine {meta.get('engine', '?')}, backend {meta.get('backend', '?')}), {data['duration_s']:.1f} s, "
          f"recorded by {meta.get('recorded_by', '?')} at {meta.get('started', '?')}")
    print("Topics:")
    for topic, row in data["topics"].items():
        print(f"  {topic:<22}{row['count']:>7}  {row['type']}")
    print(f"Knowledge base: {'a snapshot of the start' if data['kb_start'] else 'empty at the start'}; changes "
          + (", ".join(f"{n} {kind}" for kind, n in sorted(data["kb_changes"].items())) or "none"))
    print("Learned goals" + (" (llm offline: the offline stand-in is not a language model; these goals show "
                             "the pipeline, not what a model knows):" if meta.get("llm") == "offline" else ":"))
    for goal in data["learned_goals"]:
        print(f"  {goal['object_id']}: {goal['goal'] or '(no goal)'}; {goal['outcome']}; "
              f"confirmed by {goal['confirmed_by'] or 'nobody'}")
    return 0


def episode_export(args: argparse.Namespace) -> int:
    from task_learning.episode.file_names import SUFFIX, escaped, topic_file_names
    from task_learning.episode.reader import open_episode
    from task_learning.inputs.files import atomic_output
    from task_learning.llm.replay import write_cassette

    episode = open_episode(args.episode)
    counts: dict[str, int] = {}
    files = topic_file_names(episode.topics)  # one file per topic, never shared (file_names)
    with atomic_output(args.out, directory=True) as folder:
        folder.mkdir()
        (folder / "metadata.json").write_text(json.dumps({**summary(args.episode), "files": files}, indent=2)
                                              + "\n", encoding="utf-8")
        handles: dict[str, Any] = {}
        try:
            for topic, log_time, message in episode.messages():
                handle = handles.get(topic)
                if handle is None:  # a topic the summary did not list gets the encoded name
                    name = files.setdefault(topic, escaped(topic) + SUFFIX)
                    handle = handles[topic] = open(folder / name, "w", encoding="utf-8")
                handle.write(json.dumps({"log_time_ns": log_time, "message": msgs.base64_bytes(message)},
                                        ensure_ascii=False) + "\n")
                counts[topic] = counts.get(topic, 0) + 1
        finally:
            for handle in handles.values():
                handle.close()
        write_cassette(folder / "llm_cassette.jsonl", episode.llm_entries())
        if episode.kb_start is not None:
            (folder / "kb_start.sqlite").write_bytes(episode.kb_start)
    print(json.dumps({"out": str(Path(args.out)), "messages": counts,
                      "files": {topic: files[topic] for topic in counts}}, indent=2))
    return 0
