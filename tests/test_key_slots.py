"""A key's own limit of partitions at once on one prover (actors.KeySlots): the service's GPU
provers start with gpu_concurrency threads before a key's VRAM need is known; a key whose working
sets fit only one at a time is added with concurrency 1 and its partitions take turns."""

import threading
import time

import pytest

from cuzk_ray.engines.actors import KeySlots


def most_at_once(slots: KeySlots, calls: list[tuple[str, int]]) -> dict[str, int]:
    """Run each (key, limit) call in a thread of its own, each holding its slot 50 ms; the most
    callers of each key inside hold() together."""
    inside: dict[str, int] = {}
    most: dict[str, int] = {}
    lock = threading.Lock()

    def call(key: str, limit: int) -> None:
        with slots.hold(key, limit):
            with lock:
                inside[key] = inside.get(key, 0) + 1
                most[key] = max(most.get(key, 0), inside[key])
            time.sleep(0.05)
            with lock:
                inside[key] -= 1

    threads = [threading.Thread(target=call, args=c) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert not any(t.is_alive() for t in threads), "a caller never got its slot"
    assert all(v == 0 for v in inside.values())
    return most


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_a_key_never_has_more_partitions_at_once_than_its_limit(limit):
    most = most_at_once(KeySlots(), [("k", limit)] * 6)
    assert most["k"] == limit  # the limit reached (6 callers of 50 ms each) and never passed


def test_no_limit_lets_every_caller_in_together():
    assert most_at_once(KeySlots(), [("k", 0)] * 4)["k"] == 4


def test_keys_are_limited_each_on_its_own():
    most = most_at_once(KeySlots(), [("a", 1)] * 3 + [("b", 2)] * 3)
    assert most == {"a": 1, "b": 2}


def test_a_slot_is_given_back_when_the_partition_fails():
    slots = KeySlots()
    with pytest.raises(RuntimeError), slots.hold("k", 1):
        raise RuntimeError("partition failed")
    done = threading.Event()

    def again() -> None:
        with slots.hold("k", 1):
            done.set()

    t = threading.Thread(target=again)
    t.start()
    t.join(timeout=5)
    assert done.is_set()
