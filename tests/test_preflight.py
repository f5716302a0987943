"""Preflight arithmetic with made-up machines: each refusal names its resource, need and have;
a run that fits passes; a smaller pw is offered when one fits."""

import pytest

from cuzk_ray.preflight import GIB, Have, KeyShape, PreflightError, RunPlan, check, fit_concurrency, needs

# Filecoin's 32 GiB PoRep partition (DESIGN.md section 5), key stored by density
POREP = KeyShape(n_wires=130_169_893 + 328, n_public=327, domain=1 << 27, nnz_a=309_400_000,
                 nnz_b=130_300_000, nnz_c=282_700_000, a_points=130_169_893, b_points=33_063_000)
BIG = Have(disk_free=10_000 * GIB, host_available=10_000 * GIB, object_store=10_000 * GIB, vram_free=10_000 * GIB)


def plan(**kw):
    base = dict(pw=12, partition_host_bytes=GIB // 2, backend="cuda", engine="ray", key_on_disk=True)
    return RunPlan(**{**base, **kw})


def test_density_key_is_filecoin_sized_and_dense_is_not():
    assert 44 * GIB <= POREP.key_bytes <= 48 * GIB  # Filecoin's parameter file: 44.1 GiB
    dense = KeyShape(POREP.n_wires, 327, 1 << 27, 1, 1, 1)
    assert dense.key_bytes > 70 * GIB


def test_the_2_27_key_and_matrices_fit_the_h200_disk():
    """Density key + matrices in the device layout: ~53 GiB, under the GPU machine's 64 GB
    (59.6 GiB) disk; with CSR matrices (40 B per non-zero) they would need ~71 GiB."""
    disk = next(n for n in needs(POREP, plan(), BIG) if n.resource == "disk (key cache)")
    assert 50 * GIB <= disk.need <= 55 * GIB
    assert disk.need + POREP.nnz * 32 > 64e9  # the old CSR layout would not fit


def test_a_run_that_fits_passes_and_lists_every_resource():
    got = check(POREP, plan(), BIG)
    assert [n.resource for n in got] == ["disk (key cache)", "host memory", "object store", "VRAM"]
    assert all(n.fits for n in got)
    cpu_local = check(POREP, plan(backend="cpu", engine="local", key_on_disk=False), BIG)
    assert [n.resource for n in cpu_local] == ["host memory"]


@pytest.mark.parametrize("resource, have", [
    ("disk (key cache)", Have(40 * GIB, 10_000 * GIB, 10_000 * GIB, 10_000 * GIB)),
    ("host memory", Have(10_000 * GIB, 23 * GIB, 10_000 * GIB, 10_000 * GIB)),
    ("object store", Have(10_000 * GIB, 10_000 * GIB, 38 * GIB, 10_000 * GIB)),
    ("VRAM", Have(10_000 * GIB, 10_000 * GIB, 10_000 * GIB, 40 * GIB)),
])
def test_each_resource_that_does_not_fit_is_one_line(resource, have):
    with pytest.raises(PreflightError) as e:
        check(POREP, plan(), have)
    msg = str(e.value)
    assert msg.startswith(f"{resource}: need ") and ", have " in msg and "\n" not in msg
    need = next(n for n in needs(POREP, plan(), have) if n.resource == resource)
    assert need.need > need.have  # the line reports a real shortfall


def test_a_smaller_pw_is_offered_when_it_fits():
    shape = KeyShape(1 << 20, 4, 1 << 20, 3 << 20, 1 << 20, 2 << 20)
    one = needs(shape, plan(pw=1), BIG)[1].need  # host memory at pw=1
    have = Have(10_000 * GIB, one + 3 * (GIB // 2), 10_000 * GIB, 10_000 * GIB)
    with pytest.raises(PreflightError, match=r"^host memory: .*; pw=4 would fit$"):
        check(shape, plan(pw=12), have)
    assert check(shape, plan(pw=4), have)  # and it does


def test_layout_counts_match_the_built_matrices():
    """key_shape() comes from the layout without building: it must equal what build() makes."""
    from cuzk_ray.circuits import PorepCircuit

    for circuit in (PorepCircuit(constraints=1024), PorepCircuit(constraints=1 << 14, public=327, shape="filecoin")):
        cs, shape = circuit.build(), circuit.key_shape()
        assert (shape.nnz_a, shape.nnz_b, shape.nnz_c) == (cs.A.nnz, cs.B.nnz, cs.C.nnz)
        assert shape.n_wires == cs.n_wires and shape.domain == circuit.constraints


def test_prove_job_refuses_porep32g_here_in_one_line(tmp_path):
    """The 2^27 preset on a machine that cannot hold its key: one line naming the resource, exit
    2, no key made (the subprocess timeout bounds it; the speed is measured, not asserted: 0.6 s on
    a 2-core box). Its twin (a small run that fits) is every other prove-job test."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    res = subprocess.run([sys.executable, str(root / "jobs" / "prove.py"), "circuit=porep32g",
                          f"output_dir={tmp_path / 'out'}", f"cache_dir={tmp_path / 'cache'}"],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    last = res.stderr.strip().splitlines()[-1]
    assert last.startswith(("error: disk (key cache): need ", "error: host memory: need ",
                            "error: object store: need ", "error: VRAM: need ")), res.stderr
    assert ", have " in last and "Traceback" not in res.stderr
    assert not (tmp_path / "cache").exists()  # nothing written where the key would go


def test_object_store_is_sized_for_the_key():
    """An embedded Ray's object store holds one copy of the key and pw batches (never Ray's 30 %
    default when that is too small); a configured size wins; small keys keep Ray's default."""
    from cuzk_ray.engines.admission import OBJECT_STORE_MARGIN, object_store_bytes, ray_default_object_store

    ram = 10_000 * GIB  # larger than any default
    assert object_store_bytes(ram, GIB, 8) == ram + 8 * GIB + OBJECT_STORE_MARGIN
    assert object_store_bytes(ram, GIB, 8, configured="64GiB") == 64 * GIB
    assert object_store_bytes(1 << 20, 1 << 10, 2) is None  # fits in Ray's default: Ray picks the size
    assert ray_default_object_store() > (1 << 20) + OBJECT_STORE_MARGIN
    with pytest.raises(ValueError, match="ray.object_store_memory="):
        object_store_bytes(1, 1, 1, configured="lots")


def test_object_store_counts_compact_partition_batches():
    """The object store holds pw compact batches (RunPlan.partition_batch_bytes, from the circuit);
    without it, pw full witnesses (the upper bound)."""
    from cuzk_ray.circuits import PorepCircuit

    c = PorepCircuit(constraints=1 << 27, public=327, shape="filecoin")
    compact = next(n for n in needs(POREP, plan(partition_batch_bytes=c.partition_batch_bytes()), BIG)
                   if n.resource == "object store")
    full = next(n for n in needs(POREP, plan(), BIG) if n.resource == "object store")
    assert dict(compact.parts)["12 partition batches x 0.2 GiB"] == 12 * c.partition_batch_bytes()
    assert dict(full.parts)["12 partition batches x 3.9 GiB"] == 12 * POREP.witness_bytes
    assert full.need - compact.need == 12 * (POREP.witness_bytes - c.partition_batch_bytes())


def test_vram_on_an_80_gb_card_fits_one_partition_at_a_time_with_msms_in_pieces():
    """The 32 GiB PoRep key (44.8 GiB) and A, B (5.3 GiB) leave an 80 GB card room for one
    partition's working set and a | b | c, not for a whole 2^27 MSM's ~30 GiB of scratch: the
    MSMs go in pieces (as the cuda backend cuts them), two partitions at once are refused with
    the gpu_concurrency that fits; on an H200 nothing is cut."""
    h100 = Have(10_000 * GIB, 10_000 * GIB, 10_000 * GIB, 79 * GIB)
    with pytest.raises(PreflightError, match=r"^VRAM: need .* have 79\.0 GiB; gpu_concurrency=1 would fit$"):
        check(POREP, plan(gpu_concurrency=2), h100)
    vram = next(n for n in check(POREP, plan(gpu_concurrency=1), h100) if n.resource == "VRAM")
    labels = dict(vram.parts)
    assert "a|b|c (MSMs in pieces of 33554432 scalars)" in labels, vram.line()
    assert vram.need <= 79 * GIB
    h200 = Have(10_000 * GIB, 10_000 * GIB, 10_000 * GIB, 139 * GIB)
    vram = next(n for n in check(POREP, plan(gpu_concurrency=2), h200) if n.resource == "VRAM")
    assert "MSM scratch" in dict(vram.parts) and "pieces" not in vram.line()


def test_gpu_concurrency_is_lowered_to_what_the_vram_holds():
    """As pw is bounded by the host budget, gpu_concurrency is bounded by the free VRAM: the
    32 GiB PoRep on an 80 GB card runs one partition at a time, on an H200 two; when not even one
    fits the plan's own is kept, so that check refuses it naming the shortfall; unknown VRAM (no
    GPU on the driver) or the CPU backend change nothing."""
    def have(vram):
        return Have(10_000 * GIB, 10_000 * GIB, 10_000 * GIB, vram)

    assert fit_concurrency(POREP, plan(gpu_concurrency=2), have(79 * GIB)) == 1
    assert all(n.fits for n in check(POREP, plan(gpu_concurrency=1), have(79 * GIB)))
    assert fit_concurrency(POREP, plan(gpu_concurrency=2), have(139 * GIB)) == 2
    assert fit_concurrency(POREP, plan(gpu_concurrency=3), have(95 * GIB)) == 2  # the largest that fits
    assert fit_concurrency(POREP, plan(gpu_concurrency=2), have(40 * GIB)) == 2
    with pytest.raises(PreflightError, match=r"^VRAM: need .* have 40\.0 GiB$"):
        check(POREP, plan(gpu_concurrency=2), have(40 * GIB))
    assert fit_concurrency(POREP, plan(gpu_concurrency=2), have(None)) == 2
    assert fit_concurrency(POREP, plan(gpu_concurrency=2, backend="cpu"), have(79 * GIB)) == 2


def test_the_room_for_a_key_is_what_the_gpu_provers_could_give_back_on_the_tightest_card():
    """engines.admission.vram_room: per device, the free memory plus what the provers on it hold
    (their keys and cached blocks, theirs to give back); two provers on one card read the same
    free memory (the smaller reading is taken) and both pools count; the smallest over the cards.
    No reading (CPU provers): None, so the preflight reads this process's GPU as before."""
    from cuzk_ray.engines.admission import vram_room
    from cuzk_ray.engines.types import DeviceRoom

    one = [DeviceRoom("n1/0000:01:00.0", free=30 * GIB, pool=48 * GIB)]
    assert vram_room(one) == 78 * GIB
    shared = [DeviceRoom("n1/0000:01:00.0", 31 * GIB, 20 * GIB), DeviceRoom("n1/0000:01:00.0", 30 * GIB, 28 * GIB)]
    assert vram_room(shared) == 78 * GIB
    two_cards = one + [DeviceRoom("n2/0000:01:00.0", 100 * GIB, 39 * GIB)]
    assert vram_room(two_cards) == 78 * GIB  # the 78 GiB card, not the 139 GiB one
    assert vram_room([]) is None
