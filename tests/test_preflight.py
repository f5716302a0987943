"""Preflight arithmetic with made-up machines: each refusal names its resource, need and have;
a run that fits passes; a smaller pw is offered when one fits."""

import pytest

from cuzk_ray.preflight import GIB, Have, KeyShape, PreflightError, RunPlan, check, needs

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


def test_a_run_that_fits_passes_and_lists_every_resource():
    got = check(POREP, plan(), BIG)
    assert [n.resource for n in got] == ["disk (key cache)", "host memory", "object store", "VRAM"]
    assert all(n.fits for n in got)
    cpu_local = check(POREP, plan(backend="cpu", engine="local", key_on_disk=False), BIG)
    assert [n.resource for n in cpu_local] == ["host memory"]


@pytest.mark.parametrize("resource, have", [
    ("disk (key cache)", Have(64 * GIB, 10_000 * GIB, 10_000 * GIB, 10_000 * GIB)),
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
