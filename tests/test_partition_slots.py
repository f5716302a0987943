"""How many partitions one prover runs at once (actors.PartitionSlots) and how it makes room on a
full device (ProverActor._making_room). The service's GPU provers start with gpu_concurrency
threads before a key's VRAM need is known; a key whose working sets fit the card only one at a
time is added with concurrency 1, and while one of its partitions runs nothing else runs beside
it on that prover (the VRAM is the card's, not the key's)."""

import threading
import time

import pytest

from cuzk_ray.circuits import PorepCircuit
from cuzk_ray.engines.actors import PartitionSlots, ProverActor
from cuzk_ray.groth16.setup import dev_setup


class Inside:
    """Callers inside hold() now, by key; the most at once in total, and the most in total while
    a partition of ``watched`` was inside."""

    def __init__(self, watched: str = ""):
        self.lock = threading.Lock()
        self.now: dict[str, int] = {}
        self.most: dict[str, int] = {}
        self.most_total = self.most_beside_watched = 0
        self.watched = watched
        self.order: list[str] = []

    def enter(self, key: str) -> None:
        with self.lock:
            self.now[key] = self.now.get(key, 0) + 1
            self.most[key] = max(self.most.get(key, 0), self.now[key])
            total = sum(self.now.values())
            self.most_total = max(self.most_total, total)
            if self.now.get(self.watched):
                self.most_beside_watched = max(self.most_beside_watched, total)
            self.order.append(key)

    def leave(self, key: str) -> None:
        with self.lock:
            self.now[key] -= 1


def run_all(slots: PartitionSlots, calls: list[tuple[str, int]], inside: Inside, hold_s: float = 0.05) -> None:
    """Each (key, limit) call in a thread of its own, each holding its slot ``hold_s``."""
    def call(key: str, limit: int) -> None:
        with slots.hold(limit):
            inside.enter(key)
            time.sleep(hold_s)
            inside.leave(key)

    threads = [threading.Thread(target=call, args=c) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=20)
    assert not any(t.is_alive() for t in threads), "a caller never got its slot"
    assert all(v == 0 for v in inside.now.values())


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_a_key_never_has_more_partitions_at_once_than_its_limit(limit):
    inside = Inside()
    run_all(PartitionSlots(), [("k", limit)] * 6, inside)
    assert inside.most["k"] == limit  # the limit reached (6 callers of 50 ms each) and never passed


def test_no_limit_lets_every_caller_in_together():
    inside = Inside()
    run_all(PartitionSlots(), [("k", 0)] * 4, inside)
    assert inside.most["k"] == 4


@pytest.mark.parametrize("limit", [1, 2])
def test_a_limited_partition_bounds_every_partition_beside_it(limit):
    """Key a (limit 1 or 2) and key b (no limit of its own) on one prover: b's partitions run all
    together when no partition of a is inside, and never more than a's limit in total beside one."""
    inside = Inside(watched="a")
    run_all(PartitionSlots(), [("b", 0)] * 3 + [("a", limit)] * 3 + [("b", 0)] * 3, inside)
    assert inside.most_beside_watched == limit
    assert inside.most["b"] >= 2  # b alone is not held to a's limit


def test_callers_are_admitted_in_the_order_they_came():
    """A limited partition waiting for room is not overtaken by later ones that would fit now:
    x (no limit) inside; then a (limit 1) waits for x to leave; b (no limit) comes after a and
    waits behind it, though it would fit beside x."""
    slots, inside, release = PartitionSlots(), Inside(), threading.Event()

    def first() -> None:
        with slots.hold(0):
            inside.enter("x")
            release.wait(10)
            inside.leave("x")

    def later(key: str, limit: int) -> None:
        with slots.hold(limit):
            inside.enter(key)
            inside.leave(key)

    threads = [threading.Thread(target=first), threading.Thread(target=later, args=("a", 1)),
               threading.Thread(target=later, args=("b", 0))]
    for t in threads:
        t.start()
        time.sleep(0.2)  # x inside, then a in line, then b behind it
    assert inside.order == ["x"]  # b did not pass a, though one more unlimited partition fits beside x
    release.set()
    for t in threads:
        t.join(timeout=10)
    assert inside.order == ["x", "a", "b"]


def test_a_slot_is_given_back_when_the_partition_fails():
    slots = PartitionSlots()
    with pytest.raises(RuntimeError), slots.hold(1):
        raise RuntimeError("partition failed")
    done = threading.Event()

    def again() -> None:
        with slots.hold(1):
            done.set()

    t = threading.Thread(target=again)
    t.start()
    t.join(timeout=5)
    assert done.is_set()


def test_a_full_device_evicts_the_least_recently_used_idle_key_and_tries_again():
    """The prover's rule when the device is full (a MemoryError from the backend, here raised by
    the step while the idle key is resident: the CPU has no device to fill): its least recently
    used key that no partition uses goes, never the key being served or a busy one, and the step
    runs again; with no idle key left the MemoryError names the key."""
    circuit = PorepCircuit(constraints=256, partitions=1)
    cs = circuit.build()
    actor = ProverActor("cpu")
    worker = actor._ensure_worker()
    for seed, kid in enumerate(("busy", "idle", "new")):
        worker.load(kid, dev_setup(cs, seed + 1), cs)
    actor.in_use["busy"] = 1

    def step():
        if "idle" in worker.keys:
            raise MemoryError("GPU memory: 0.5 GiB free")
        return "proved"

    assert actor._making_room("new", step) == "proved"
    assert list(worker.keys) == ["busy", "new"]

    def full():
        raise MemoryError("GPU memory: 0.5 GiB free")

    with pytest.raises(MemoryError, match=r"^key new: GPU memory: 0\.5 GiB free \(no idle key left to evict on "
                                          r"this prover\)$"):
        actor._making_room("new", full)
    assert list(worker.keys) == ["busy", "new"]
