"""Does the model write "... and the <container> is closed" before the sentence ends? A probe of
the STARS goal prompt's root request (level 0) for every task object of a scene, against a running
server (`task-learning llm serve` prints its URL).

For each object it sends the root request twice:
- as the paper sends it (stop sequences "(END RESULT)", ".", "Steps:", newline): the text the
  search tree gets, which holds the clause only when the clause comes before the first ".";
- without "." among the stops, to read the model's log probabilities at the token that ends the
  sentence: the probability of "." there and of " and" (the clause's first word). A stop sequence
  hides that position from the tree (the server returns neither the stop token nor its
  alternatives), so this is the only way to see how close the model came.

`--examples FILE` replaces the few-shot block of config/prompts/goal.yaml (`examples:`) with the
text of FILE, to compare prompt wordings on the same objects.

    python bench/goal_clause_probe.py --base-url http://127.0.0.1:PORT/v1 --scene store_groceries
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from dataclasses import replace
from pathlib import Path

from task_learning.llm.client import make_client
from task_learning.stars.prompts import GoalContext, load_templates
from task_learning.world.factory import make_backend
from task_learning.world.resolve import describe_object
from task_learning.world.scene import load_scene


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--scene", default="store_groceries")
    parser.add_argument("--examples", default=None, help="a file whose text replaces goal.yaml's examples")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    templates = load_templates()
    if args.examples:
        templates = replace(templates, goal_examples=Path(args.examples).read_text(encoding="utf-8").strip())
    scene = load_scene(args.scene)
    metadata = make_backend("symbolic", scene, None).metadata
    client = make_client("local", base_url=args.base_url, cache=False)
    rows = []
    try:
        for object_id in scene.task_objects:
            obj, relation, place = describe_object(metadata, object_id)
            ctx = GoalContext(task=scene.task, location=scene.location or "kitchen", object=obj,
                              relation=relation, place=place)
            paper = templates.goal_request(ctx, "initial")
            open_end = replace(paper, stop=tuple(s for s in paper.stop if s != "."), max_tokens=40)
            first, second = client.complete(paper), client.complete(open_end)
            rows.append({"object": f"{obj} {relation} {place}", "text": first.text.strip(),
                         "clause": " and " in first.text and "closed" in first.text, **_sentence_end(second)})
    finally:
        client.close()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    with_clause = sum(1 for r in rows if r["clause"])
    for r in rows:
        print(f"{r['object']:<38} p(.)={r['p_stop']:.3f} p(and)={r['p_and']:.3f}  {r['text']}")
    print(f"{with_clause}/{len(rows)} root answers carry 'and the ... is closed' before the period; "
          f"mean p(and) at the sentence end {sum(r['p_and'] for r in rows) / max(1, len(rows)):.3f}")
    return 0


def _sentence_end(response) -> dict:
    """At the first token that ends the sentence: its probability and that of ' and'."""
    for token in response.tokens:
        if token.token.strip().startswith(".") or "\n" in token.token:
            alternatives = dict(token.top)
            p_and = max((math.exp(lp) for alt, lp in alternatives.items() if alt.strip().lower() == "and"),
                        default=0.0)
            return {"p_stop": math.exp(token.logprob), "p_and": p_and}
    return {"p_stop": 0.0, "p_and": 0.0}


if __name__ == "__main__":
    sys.exit(main())
