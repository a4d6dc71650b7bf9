"""ObjectStates hands its snapshots over in the order the changes were made, whichever threads
make them: a follower of PerformTask's feedback never sees an object's state go backwards."""
from __future__ import annotations

import threading

from task_learning.planning.progress import ObjectState, ObjectStates, Snapshot


def test_a_change_made_while_another_is_handed_over_waits_its_turn():
    handed: list[Snapshot] = []
    inside, release = threading.Event(), threading.Event()

    def on_change(snapshot: Snapshot) -> None:
        if not handed and not inside.is_set():  # the first change's hand-over is slow
            inside.set()
            assert release.wait(30)
        handed.append(snapshot)

    states = ObjectStates(["Apple|1", "Mug|1"], on_change=on_change)
    first = threading.Thread(target=states.set, args=("Apple|1", ObjectState.CONFIRMED))
    first.start()
    assert inside.wait(30)
    second = threading.Thread(target=states.set, args=("Apple|1", ObjectState.REACHED))
    second.start()
    second.join(timeout=0.5)  # without the ordering it has handed its snapshot over by now
    release.set()
    first.join(30)
    second.join(30)
    assert [dict((o, s) for o, s, _ in snapshot)["Apple|1"] for snapshot in handed] == ["confirmed", "reached"]


def test_feedback_taken_outside_set_is_ordered_with_the_changes():
    handed: list[str] = []
    states = ObjectStates(["Apple|1"], on_change=lambda snapshot: handed.append(snapshot[0][1]))
    with states.ordered():
        snapshot = states.snapshot()
        changer = threading.Thread(target=states.set, args=("Apple|1", ObjectState.REACHED))
        changer.start()
        changer.join(timeout=0.5)
        assert changer.is_alive()  # the change waits until this snapshot is handed over
        handed.append(snapshot[0][1])
    changer.join(30)
    assert handed == ["queued", "reached"]
