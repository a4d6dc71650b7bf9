"""Cross-object elicitation: the model stages of every task object at once, the operator one
question at a time.

Sequential STARS (the paper's protocol) elicits one object after another, so a task of 35 objects
costs 35 times the round trips of one object. Nothing but the operator's questions needs that
order: the Search Tree, Analysis, Repair and Selection of different objects are independent. Here
each object's model stages run as a generator of request levels (`stars.elicit.elicitation_steps`)
and one background driver merges the current level of every object into one `complete_many` call
(list-prompt round trips), so a whole task needs about as many round trips as its slowest object.

The task-learning loop still handles objects one by one in the task's order: calling the elicitor
for an object waits until that object's candidates and selection are ready (often long before the
others'), then runs Oversight (the operator's questions, with reselection after a "no") in the
loop's thread, exactly as sequential elicitation does, before anything is executed. With the same
model answers the same goals are learned; only the order of model calls differs.

An object is prefetched with the context it had when the task started; if the loop finds it in
another context (something moved it), or it was not prefetched, it is elicited on its own then.
Only the first object of each context is prefetched: the loop reuses the goal learned for it for
the others, as in sequential elicitation.
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import CancelledError, Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from task_learning.lifecycle.cancellation import RunStopped
from task_learning.llm.base import LLMRequest, LLMResponse
from task_learning.llm.usage import copy_usage, usage_diff
from task_learning.stars.conditions import Condition, flags, parse_condition
from task_learning.stars.elicit import (
    ElicitationResult,
    ElicitationSetup,
    PreparedElicitation,
    StageCallback,
    TreeCallback,
    elicit_goal,
    elicitation_steps,
    finish_elicitation,
    prepare_elicitation,
)
from task_learning.stars.prompts import PromptTemplates, load_templates
from task_learning.stars.tree import CompletionClient, Sender, Steps, TreeSettings, batched_sender
from task_learning.types import LLMUsage
from task_learning.world.scene import Scene

if TYPE_CHECKING:
    from task_learning.kb.store import KnowledgeBase
    from task_learning.oversight.operator import Operator

log = logging.getLogger(__name__)


def objects_to_elicit(task: str, object_ids: Sequence[str], metadata: Mapping[str, Any], kb: KnowledgeBase | None,
                      condition: str | Condition) -> list[str]:
    """The objects worth eliciting ahead, in the given (task) order: the first object of each
    context, unless the knowledge base holds a goal the loop will reuse for that context (learned,
    and confirmed when the condition has oversight: the loop elicits anew for an unconfirmed one).
    The loop reuses the goal learned for the first object of a context for the others."""
    from task_learning.world.resolve import describe_object

    oversight = flags(parse_condition(condition)).oversight
    seen: set[tuple[str, ...]] = set()
    chosen = []
    for object_id in object_ids:
        context = tuple(describe_object(metadata, object_id))
        if context in seen:
            continue
        seen.add(context)
        goal = kb.goal_for(task, " ".join(context)) if kb is not None else None
        if goal is not None and (not oversight or goal.confirmed):
            continue
        chosen.append(object_id)
    return chosen


@dataclass
class _Prefetch:
    prep: PreparedElicitation
    context: tuple[str, ...]
    usage_before: LLMUsage
    future: Future[PreparedElicitation]
    used: bool = False


class CrossObjectElicitor:
    """An `Elicitor` for the task-learning loop that elicits many objects together.

    Call `prefetch(task, object_ids, metadata)` once before the loop (objects in the order the loop
    will handle them); then the loop calls the elicitor per object as usual. `close()` stops the
    driver (pending objects are then elicited on their own if the loop still asks for them).
    """

    def __init__(self, client: CompletionClient, scene: Scene | None, condition: str | Condition, *,
                 operator: Operator | None = None, kb: KnowledgeBase | None = None, templates: PromptTemplates | None = None,
                 settings: TreeSettings | None = None, sender: Sender | None = None,
                 location: str | None = None, system_context: Sequence[str] | None = None,
                 on_tree: TreeCallback | None = None, decoding: str = "free") -> None:
        self.client = client
        self.decoding = decoding  # free | grounded (stars/grounded.py)
        self.scene = scene
        self.condition = condition
        # The prompts' place and STARS+CTX's user context (None: the scene's), as elicit_goal takes them.
        self.location = location
        self.system_context = system_context
        self.operator = operator
        self.kb = kb
        self.templates = templates or load_templates()
        self.settings = settings
        self.send = sender or batched_sender(client)
        self.on_tree = on_tree  # sees each object's tree as it grows (episodes, the live view)
        self._prefetched: dict[str, _Prefetch] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.levels = 0  # merged request levels sent by the driver

    # ------------------------------------------------------------------------------ prefetch
    def _setup(self, on_stage: StageCallback | None = None, *, answering: bool) -> ElicitationSetup:
        """This elicitor's setup for one object; `answering`: elicited on its own to the end, with
        the operator and the knowledge base, in batched round trips (else: prefetched levels)."""
        return ElicitationSetup(location=self.location, system_context=self.system_context, templates=self.templates,
                                settings=self.settings, on_tree=self.on_tree, on_stage=on_stage,
                                operator=self.operator if answering else None, kb=self.kb if answering else None,
                                batched=answering, decoding=self.decoding)

    def prefetch(self, task: str, object_ids: Sequence[str], metadata: Mapping[str, Any]) -> int:
        """Start the model stages of every object whose context has no learned goal yet (the first
        object of each context, `objects_to_elicit`); returns how many objects are being elicited."""
        if self._thread is not None:
            raise RuntimeError("prefetch was already called")
        from task_learning.world.resolve import describe_object

        steps: list[tuple[str, Steps[PreparedElicitation]]] = []
        for object_id in objects_to_elicit(task, object_ids, metadata, self.kb, self.condition):
            context = tuple(describe_object(metadata, object_id))
            prep = prepare_elicitation(task, object_id, metadata, self.scene, self.condition,
                                       self._setup(answering=False), needs_operator=False)
            self._prefetched[object_id] = _Prefetch(prep, context, self._scope_usage(object_id), Future())
            steps.append((object_id, elicitation_steps(prep)))
        self._thread = threading.Thread(target=self._drive, args=(steps,), name="stars-together", daemon=True)
        self._thread.start()
        return len(steps)

    def prefetched(self) -> dict[str, Future[PreparedElicitation]]:
        """The prefetched objects in the task's order, each with the future of its model stages
        (done when they ended: a result, an exception, or cancelled by `close`)."""
        return {object_id: entry.future for object_id, entry in self._prefetched.items()}

    def wait_ready(self, object_id: str, should_stop: Callable[[], bool], poll_s: float = 0.1) -> None:
        """Wait until the object's prefetched model stages have ended (at once for an object not
        prefetched), so a caller can tell its operator when the questions start. RunStopped when
        `should_stop()` says so meanwhile, or the elicitor was closed before they ended (the
        object must then not be elicited again on its own: its caller stopped)."""
        entry = self._prefetched.get(object_id)
        if entry is None or entry.used:
            return
        while True:
            try:
                entry.future.result(timeout=poll_s)
                return
            except FutureTimeout:
                pass
            except CancelledError:
                if self._stop.is_set():
                    raise RunStopped("cross-object elicitation was closed") from None
                return
            except Exception:  # noqa: BLE001 - failed: the call elicits it on its own
                return
            if should_stop():
                raise RunStopped("canceled while the model stages ran")

    def _drive(self, steps: list[tuple[str, Steps[PreparedElicitation]]]) -> None:
        """Lockstep: every live object's current level goes out in one merged call. Whatever
        happens, every future ends (result, exception or cancelled): the loop never waits forever."""
        futures = {object_id: self._prefetched[object_id].future for object_id, _ in steps}
        try:
            self._lockstep(steps, futures)
        except Exception as exc:  # noqa: BLE001 - a bug here must not leave the loop waiting
            log.error("cross-object elicitation stopped: %s", exc)
        finally:
            for future in futures.values():
                future.cancel()  # no effect on a future that has ended

    def _lockstep(self, steps: list[tuple[str, Steps[PreparedElicitation]]], futures: dict[str, Future[PreparedElicitation]]) -> None:
        waiting: dict[str, list[LLMRequest]] = {}
        generators = dict(steps)
        for object_id, gen in steps:
            self._advance(futures[object_id], gen, None, waiting, object_id)
        while waiting and not self._stop.is_set():
            order = list(waiting)
            merged = [request for object_id in order for request in waiting[object_id]]
            responses = self.send(merged)
            self.levels += 1
            if len(responses) != len(merged):
                responses = [LLMResponse(text="", error="sender lost answers") for _ in merged]
            at = 0
            for object_id in order:
                count = len(waiting[object_id])
                part, at = responses[at:at + count], at + count
                self._advance(futures[object_id], generators[object_id], part, waiting, object_id)
        for object_id in list(waiting):  # stopped: nobody will use these
            generators[object_id].close()

    @staticmethod
    def _advance(future: Future[PreparedElicitation], gen: Steps[PreparedElicitation], answers: list[LLMResponse] | None,
                 waiting: dict[str, list[LLMRequest]], object_id: str) -> None:
        try:
            requests = next(gen) if answers is None else gen.send(answers)
            waiting[object_id] = requests
        except StopIteration as done:
            waiting.pop(object_id, None)
            future.set_result(done.value)
        except Exception as exc:  # noqa: BLE001 - one object's failure must not stop the others
            log.error("elicitation of %s failed: %s", object_id, exc)
            waiting.pop(object_id, None)
            future.set_exception(exc)

    # ------------------------------------------------------------------------------- per object
    def __call__(self, *, task: str, object_id: str, metadata: Mapping[str, Any],
                 on_stage: StageCallback | None = None) -> ElicitationResult:
        """The object's result: its prefetched model stages (waited for) and Oversight now; an object
        not prefetched, or found in another context, is elicited on its own. `on_stage` sees the
        stages run now (Oversight; all of them for an object elicited on its own)."""
        from task_learning.world.resolve import describe_object

        entry = self._prefetched.get(object_id)
        if entry is not None and entry.used:
            entry = None  # asked again (the first goal was not learned): elicited on its own
        if entry is not None:
            entry.used = True
        if entry is not None and tuple(describe_object(metadata, object_id)) != entry.context:
            log.info("%s moved since the task started: eliciting it again", object_id)
            entry = None
        prep = None
        if entry is not None:
            try:
                prep = entry.future.result()
            except Exception as exc:  # noqa: BLE001 - cancelled (closed) or failed: elicit it on its own
                log.info("prefetched elicitation of %s unusable (%s): eliciting it again", object_id,
                         type(exc).__name__)
        if prep is None or entry is None:
            return elicit_goal(task, object_id, metadata, self.scene, self.condition, self.client,
                               self._setup(on_stage, answering=True))
        prep.on_stage = on_stage
        before = entry.usage_before
        return finish_elicitation(prep, self.client,
                                  lambda: usage_diff(self._scope_usage(object_id), before),
                                  operator=self.operator, kb=self.kb)

    def _scope_usage(self, object_id: str) -> LLMUsage:
        get: Callable[[str], LLMUsage] | None = getattr(self.client, "scope_usage", None)
        return copy_usage(get(object_id)) if callable(get) else LLMUsage()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def __enter__(self) -> "CrossObjectElicitor":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
