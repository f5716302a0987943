"""The built-in circuit's "filecoin" shape (Filecoin's 32 GiB PoRep partition proportions): its
ratios at several sizes, satisfaction, determinism, a negative twin for each check, the preset,
the default shape unchanged, and a prove -> verify round trip."""

import hashlib
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from cuzk_ray.circuits.porep import (
    FilecoinLayout,
    build_circuit,
    build_filecoin,
    make_layout,
    public_inputs,
    shape_stats,
    synthesize,
    synthesize_filecoin,
)
from cuzk_ray.field import R_MOD
from cuzk_ray.r1cs import UnsatisfiedConstraint
from cuzk_ray.ref.qap import domain_size

ROOT = Path(__file__).resolve().parent.parent

# published (DESIGN.md section 5): per row over 130,278,869 rows
NNZ_A, NNZ_B, NNZ_C = 309.4e6 / 130_278_869, 130.3e6 / 130_278_869, 282.7e6 / 130_278_869
PRIVATE = 130_169_893 / 130_278_869


def close(x, target, rel=0.03):
    return abs(x - target) <= rel * target


@pytest.mark.parametrize("k,public", [(12, 4), (14, 327), (16, 327), (18, 327)])
def test_filecoin_proportions(k, public):
    cs = build_filecoin(1 << k, public, circuit_seed=1)
    st = shape_stats(cs, synthesize_filecoin(1 << k, public, 1, seed=5))
    lay = FilecoinLayout.make(1 << k, public)
    assert st["rows"] == lay.n_rows == round((1 << k) * 130_278_869 / 2**27)
    assert domain_size(cs.n_constraints, cs.n_public) == 1 << k  # the public-input rows still fit
    assert close(st["nnz_a"], NNZ_A) and close(st["nnz_b"], NNZ_B) and close(st["nnz_c"], NNZ_C), st
    # the public rows allocate no private wire: at small sizes they are a visible share of the rows
    assert close(st["private"] / st["rows"], PRIVATE, 0.002 + public / st["rows"])
    assert st["touch_a"] >= 0.995 and close(st["touch_b"], 0.254), st
    pub_share = public / st["wires"]  # public inputs are products (field elements): 2 % of 2^14 with 327
    assert st["bits"] >= 0.95 - pub_share and 0 < st["field"] <= 0.05 + pub_share, st
    assert lay.nnz() == (cs.A.nnz, cs.B.nnz, cs.C.nnz)
    assert lay.b_wires() / lay.n_private == pytest.approx(st["touch_b"])


def test_filecoin_layout_at_2_27_is_porep():
    lay = FilecoinLayout.make(1 << 27, 327)
    assert lay.n_rows == 130_278_869 and lay.n_private == 130_169_893 and lay.n_wires == 1 + 327 + 130_169_893
    a, b, c = lay.nnz()
    assert close(a, 309.4e6, 0.001) and close(b, 130.3e6, 0.001) and close(c, 282.7e6, 0.001)
    assert close(lay.b_wires() / lay.n_private, 0.254, 0.001)
    assert (lay.n_fields + lay.n_fmul) / lay.n_wires < 0.05  # full field elements: few
    assert domain_size(lay.n_rows, lay.public) == 1 << 27


@pytest.mark.parametrize("k,public", [(10, 1), (10, 4), (12, 9), (14, 327)])
def test_filecoin_witness_satisfies(rng, k, public):
    cs_seed = rng.randrange(100)
    cs = build_filecoin(1 << k, public, cs_seed)
    for part in range(2):
        w = synthesize_filecoin(1 << k, public, cs_seed, seed=rng.seed_value, proof=1, partition=part)
        assert w.shape == (cs.n_wires, 4) and w.dtype == np.uint64
        assert (w[:, 3] < (R_MOD >> 192) + 1).all()
        cs.check(w)


def test_filecoin_deterministic_and_seeded():
    def digest(cs):
        h = hashlib.sha256()
        for m in (cs.A, cs.B, cs.C):
            for a in (m.indptr, m.indices, m.data):
                h.update(a.tobytes())
        return h.hexdigest()

    assert digest(build_filecoin(4096, 4, 3)) == digest(build_filecoin(4096, 4, 3))
    assert digest(build_filecoin(4096, 4, 3)) != digest(build_filecoin(4096, 4, 4))
    w = synthesize_filecoin(4096, 4, 3, seed=1, proof=2, partition=3)
    assert np.array_equal(w, synthesize_filecoin(4096, 4, 3, seed=1, proof=2, partition=3))
    for other in ((2, 2, 3), (1, 3, 3), (1, 2, 4)):
        assert not np.array_equal(w, synthesize_filecoin(4096, 4, 3, *other))
    # the shape= entry points are the same functions
    assert np.array_equal(w, synthesize(4096, 4, 0.05, 3, 1, 2, 3, shape="filecoin"))
    assert digest(build_circuit(4096, 4, 0.05, 3, shape="filecoin")) == digest(build_filecoin(4096, 4, 3))
    with pytest.raises(UnsatisfiedConstraint):  # another wiring seed: another circuit
        build_filecoin(4096, 4, 4).check(w)


def test_filecoin_negative_twins():
    lay = FilecoinLayout.make(4096, 4)
    off = lay.offsets()
    cs = build_filecoin(4096, 4, 0)
    w = synthesize_filecoin(4096, 4, 0, seed=7)
    cs.check(w)
    # a gate output bit of the first layer flipped: its own xor row (the first that reads it) fails
    bad = w.copy()
    bad[off["gates"] + 5, 0] ^= 1
    with pytest.raises(UnsatisfiedConstraint, match=rf"constraint {lay.n_bits + 5} of {lay.n_rows} is not satisfied"):
        cs.check(bad)
    # an input bit set to 2: its booleanity row fails
    bad = w.copy()
    bad[off["bits"] + 9, 0] = 2
    with pytest.raises(UnsatisfiedConstraint, match=r"constraint 9 of"):
        cs.check(bad)
    # a public input changed: only its public row (the last rows) fails
    bad = w.copy()
    bad[1 + 2, 0] ^= 1
    with pytest.raises(UnsatisfiedConstraint, match=rf"constraint {lay.n_rows - 4 + 2} of .*\(1 failing\)"):
        cs.check(bad)
    # a product changed
    bad = w.copy()
    bad[off["z"] + 1, 0] ^= 1
    with pytest.raises(UnsatisfiedConstraint, match="not satisfied"):
        cs.check(bad)


def test_filecoin_errors():
    with pytest.raises(ValueError, match="power of two >= 1024"):
        FilecoinLayout.make(3000, 4)
    with pytest.raises(ValueError, match="power of two >= 1024"):
        FilecoinLayout.make(512, 4)
    with pytest.raises(ValueError, match="do not fit the domain"):
        FilecoinLayout.make(8192, 327)  # 7952 rows + 327 public > 8192
    with pytest.raises(ValueError, match="circuit.public=0"):
        FilecoinLayout.make(4096, 0)
    with pytest.raises(ValueError, match="circuit.shape='sha'"):
        make_layout(4096, 4, 0.05, "sha")
    assert make_layout(4096, 4, 0.05, "filecoin").n_wires == build_filecoin(4096, 4).n_wires


def test_preset_porep32g():
    c = OmegaConf.to_container(OmegaConf.load(ROOT / "conf" / "circuit" / "porep32g.yaml"))
    assert c == {"kind": "porep", "shape": "filecoin", "partitions": 10, "constraints": 1 << 27, "public": 327,
                 "circuit_seed": 0}
    assert make_layout(c["constraints"], c["public"], 0.05, c["shape"]).n_rows == 130_278_869
    for k in range(20, 27):  # circuit.constraints=2^20..2^26 scale it down
        lay = make_layout(1 << k, c["public"], 0.05, c["shape"])
        assert close(lay.nnz()[0] / lay.n_rows, NNZ_A, 0.001) and close(lay.nnz()[2] / lay.n_rows, NNZ_C, 0.001)


# The default shape byte for byte as before the filecoin shape existed (cached keys depend on it).
DEFAULT_DIGESTS = {
    (1024, 4, 0.05, 0): "9d3bba4565cc156fd0eca021d25ed38c8cd5e87725882012c8c3d26c655a433d",
    (4096, 9, 0.3, 7): "fa70f64592f48f741e054bd232b38f137bc8cbf064801329166aac9a66b9abae",
}


@pytest.mark.parametrize("args", list(DEFAULT_DIGESTS))
def test_default_shape_unchanged(args):
    cs, w = build_circuit(*args), synthesize(*args, seed=3, proof=1, partition=2)
    h = hashlib.sha256()
    for m in (cs.A, cs.B, cs.C):
        for a in (m.indptr, m.indices, m.data):
            h.update(a.tobytes())
    h.update(w.tobytes())
    assert h.hexdigest() == DEFAULT_DIGESTS[args]
    assert np.array_equal(w, synthesize(*args, seed=3, proof=1, partition=2, shape="default"))


def test_filecoin_prove_verify_cpu():
    from cuzk_ray.backends import make_backend
    from cuzk_ray.groth16.prover import prove
    from cuzk_ray.groth16.setup import dev_setup
    from cuzk_ray.groth16.verifier import verify

    cs = build_filecoin(1024, 4, 0)
    pk = dev_setup(cs, seed=11)
    backend = make_backend("cpu")
    w = synthesize_filecoin(1024, 4, 0, seed=2, proof=0, partition=1)
    pub = public_inputs(w, 4)
    proof = prove(pk, cs, w, 12345, 67890, backend)
    assert verify(pk.vk, pub, proof)
    assert not verify(pk.vk, [pub[0], (pub[1] + 1) % R_MOD, *pub[2:]], proof)  # a tampered public input
    other = public_inputs(synthesize_filecoin(1024, 4, 0, seed=2, proof=0, partition=2), 4)
    assert other != pub and not verify(pk.vk, other, proof)  # another partition's inputs


def test_filecoin_parts_expand_to_the_witness():
    from cuzk_ray.circuits.porep import expand_filecoin, synthesize_filecoin_parts

    lay = FilecoinLayout.make(4096, 9)
    parts = synthesize_filecoin_parts(4096, 9, 2, seed=1, proof=0, partition=4)
    w = synthesize_filecoin(4096, 9, 2, seed=1, proof=0, partition=4)
    assert np.array_equal(expand_filecoin(lay, parts), w)
    assert set(np.unique(parts.bits).tolist()) <= {0, 1} and len(parts.bits) == lay.n_pool
    assert len(parts.tail) == lay.n_wires - lay.offsets()["words"]
    assert public_inputs(w, 9) == [int(x) for x in public_inputs(np.vstack([w[:1], parts.public]), 9)]
