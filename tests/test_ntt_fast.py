"""cuzk_ray.fast.ntt against the reference (cuzk_ray.ref.ntt, ref.qap.compute_h): bit for bit, fresh random inputs."""

import numpy as np
import pytest

from cuzk_ray.fast import fr_kernels
from cuzk_ray.fast import ntt as ntt_fast
from cuzk_ray.field import R_MOD, fr_to_limbs, fr_vector, root_of_unity
from cuzk_ray.ref import ntt, qap

CONVS = ["snarkjs", "native"]
SIZES = [1 << k for k in range(13)]  # 2^0 .. 2^12
BEYOND_BLOCK = [1 << 14]  # larger than fr_kernels.BLOCK: the cache-blocked stage order runs


def rand_vec(rng, n):
    return [rng.randrange(R_MOD) for _ in range(n)]


def ints(limbs):
    assert isinstance(limbs, np.ndarray) and limbs.dtype == np.uint64 and limbs.shape[1] == 4
    return [int(v) for v in fr_vector(limbs)]


def ref_h(a, b, c, conv):
    return [int(v) for v in qap.compute_h(fr_vector(a), fr_vector(b), fr_vector(c), conv)]


@pytest.mark.parametrize("conv", CONVS)
@pytest.mark.parametrize("n", SIZES + BEYOND_BLOCK)
def test_compute_h_matches_reference(rng, n, conv):
    a, b, c = (rand_vec(rng, n) for _ in range(3))
    want = ref_h(a, b, c, conv)
    assert ints(ntt_fast.compute_h_fast(a, b, c, conv)) == want
    # Limbs in, one thread and two threads (the split path starts at PARALLEL_MIN_SIZE).
    la, lb, lc = (fr_to_limbs(x) for x in (a, b, c))
    for threads in (1, 2):
        assert ints(ntt_fast.compute_h_fast(la, lb, lc, conv, threads=threads)) == want
    # Negative: one changed input element changes h.
    a2 = list(a)
    a2[rng.randrange(n)] ^= 1
    assert ints(ntt_fast.compute_h_fast(a2, b, c, conv)) != want


@pytest.mark.parametrize("conv", CONVS)
@pytest.mark.parametrize("n", SIZES + BEYOND_BLOCK)
def test_transforms_match_reference(rng, n, conv):
    x = rand_vec(rng, n)
    shift = rng.randrange(1, R_MOD)
    ref_x = fr_vector(x)
    assert ints(ntt_fast.ntt(x, conv)) == list(ntt.ntt(ref_x, conv))
    assert ints(ntt_fast.intt(x, conv)) == list(ntt.intt(ref_x, conv))
    assert ints(ntt_fast.coset_ntt(x, shift, conv)) == list(ntt.coset_ntt(ref_x, shift, conv))
    assert ints(ntt_fast.coset_intt(x, shift, conv)) == list(ntt.coset_intt(ref_x, shift, conv))


def test_sizes_cover_the_kernel_paths():
    assert max(SIZES) < fr_kernels.BLOCK < min(BEYOND_BLOCK)
    assert ntt_fast.PARALLEL_MIN_SIZE <= max(SIZES)


@pytest.mark.parametrize("n", [1, 2, 16, 1024, 4096, 1 << 15])
def test_round_trips(rng, n):
    x = rand_vec(rng, n)
    shift = rng.randrange(2, R_MOD)
    assert ints(ntt_fast.intt(ntt_fast.ntt(x))) == x
    assert ints(ntt_fast.coset_intt(ntt_fast.coset_ntt(x, shift), shift)) == x
    if n > 1:
        # Negative: undoing with the other coset does not give x back.
        assert ints(ntt_fast.coset_intt(ntt_fast.coset_ntt(x, shift), shift + 1)) != x


@pytest.mark.parametrize("conv", CONVS)
@pytest.mark.parametrize("n", [1, 4, 64, 2048])
def test_edge_values(rng, n, conv):
    edges = [0, 1, R_MOD - 1]
    a, b, c = ([rng.choice(edges) for _ in range(n)] for _ in range(3))
    assert ints(ntt_fast.compute_h_fast(a, b, c, conv)) == ref_h(a, b, c, conv)
    assert ints(ntt_fast.compute_h_fast([R_MOD - 1] * n, [R_MOD - 1] * n, [0] * n, conv)) == ref_h(
        [R_MOD - 1] * n, [R_MOD - 1] * n, [0] * n, conv)
    assert ints(ntt_fast.compute_h_fast([0] * n, [0] * n, [0] * n, conv)) == [0] * n
    assert ints(ntt_fast.ntt([R_MOD - 1] * n, conv)) == list(ntt.ntt(fr_vector([R_MOD - 1] * n), conv))


def test_unreduced_inputs_are_taken_mod_r(rng):
    """Limbs >= r (up to 2^256 - 1) and negative or large ints mean the same as their residue."""
    n = 256
    a, b, c = (rand_vec(rng, n) for _ in range(3))
    want = ref_h(a, b, c, "snarkjs")
    # x + r and x + 2r where they fit in 256 bits; ints: x - r and x + 5r.
    big = [v + R_MOD if v + R_MOD < 2**256 else v for v in a]
    big = [v + R_MOD if v + R_MOD < 2**256 else v for v in big]
    assert any(v >= 2 * R_MOD for v in big)
    big_limbs = np.frombuffer(b"".join(v.to_bytes(32, "little") for v in big), dtype="<u8").reshape(-1, 4)
    assert ints(ntt_fast.compute_h_fast(big_limbs, [v - R_MOD for v in b], [v + 5 * R_MOD for v in c])) == want
    top = np.full((n, 4), np.uint64(2**64 - 1))
    assert ints(ntt_fast.ntt(top)) == list(ntt.ntt(fr_vector([(2**256 - 1) % R_MOD] * n)))


def test_rejects_bad_sizes():
    for bad in (0, 3, 6, 12):
        with pytest.raises(ValueError, match="power of two"):
            ntt_fast.compute_h_fast([1] * bad, [1] * bad, [1] * bad)
        with pytest.raises(ValueError):
            ntt_fast.ntt([1] * bad)
    with pytest.raises(ValueError, match="one length"):
        ntt_fast.compute_h_fast([1] * 8, [1] * 8, [1] * 4)
    with pytest.raises(ValueError, match="uint64\\[n, 4\\]"):
        ntt_fast.ntt(np.zeros((8, 3), dtype=np.uint64))
    with pytest.raises(ValueError, match="unknown root convention"):
        ntt_fast.compute_h_fast([1] * 8, [1] * 8, [1] * 8, "bellman")


def test_conventions_differ(rng):
    a, b, c = (rand_vec(rng, 64) for _ in range(3))
    assert ints(ntt_fast.compute_h_fast(a, b, c, "snarkjs")) != ints(ntt_fast.compute_h_fast(a, b, c, "native"))


def test_h_is_ab_minus_c_on_odd_roots(rng):
    """Independent of the reference: interpolate, evaluate at w2 * w^j by Horner, compare."""
    n = 16
    a, b, c = (rand_vec(rng, n) for _ in range(3))
    h = ints(ntt_fast.compute_h_fast(a, b, c))
    coeffs = [[int(v) for v in ntt.intt(fr_vector(x))] for x in (a, b, c)]
    w, w2 = root_of_unity(n), root_of_unity(2 * n)
    for j in range(n):
        pt = w2 * pow(w, j, R_MOD) % R_MOD
        ev = [sum(cf * pow(pt, i, R_MOD) for i, cf in enumerate(poly)) % R_MOD for poly in coeffs]
        assert h[j] == (ev[0] * ev[1] - ev[2]) % R_MOD


@pytest.mark.slow
@pytest.mark.parametrize("conv", CONVS)
def test_compute_h_2_16_spot_check(rng, conv):
    n = 1 << 16
    a, b, c = (rand_vec(rng, n) for _ in range(3))
    assert ints(ntt_fast.compute_h_fast(a, b, c, conv)) == ref_h(a, b, c, conv)


def test_cpu_backend_picks_by_size_with_one_result(rng):
    from cuzk_ray.backends.cpu import CpuBackend

    n = 512
    a, b, c = (rand_vec(rng, n) for _ in range(3))
    want = ref_h(a, b, c, "snarkjs")
    for min_size in (1, n, 2 * n):  # fast, fast (at the threshold), reference
        h = CpuBackend(threads=1, fast_h_min_size=min_size).compute_h(a, b, c)
        assert h.dtype == np.uint64 and h.shape == (n, 4)
        assert ints(h) == want
    assert CpuBackend().fast_h_min_size == CpuBackend.FAST_H_MIN_SIZE == 1 << 14


def test_warm_up_returns_its_time():
    assert 0 < ntt_fast.warm_up() < 120
