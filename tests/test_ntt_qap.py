import pytest

from cuzk_ray.field import R_MOD, int_vector, root_of_unity
from cuzk_ray.ref import ntt, qap


def _rand(rng, n):
    return int_vector([rng.randrange(R_MOD) for _ in range(n)])


def _eval_poly(coeffs, x):
    acc = 0
    for c in reversed(list(coeffs)):
        acc = (acc * x + int(c)) % R_MOD
    return acc


@pytest.mark.parametrize("conv", ["snarkjs", "native"])
@pytest.mark.parametrize("n", [1, 2, 4, 8, 32, 64])
def test_ntt_matches_naive_dft(rng, n, conv):
    v = _rand(rng, n)
    assert list(ntt.ntt(v, conv)) == list(ntt.naive_dft(v, root_of_unity(n, conv)))


@pytest.mark.parametrize("n", [1, 2, 16, 1024])
def test_ntt_round_trips(rng, n):
    v = _rand(rng, n)
    v[0] = 0
    if n > 1:
        v[1] = R_MOD - 1
    assert list(ntt.intt(ntt.ntt(v))) == list(v)
    assert list(ntt.ntt(ntt.intt(v))) == list(v)
    shift = rng.randrange(1, R_MOD)
    assert list(ntt.coset_intt(ntt.coset_ntt(v, shift), shift)) == list(v)


def test_coset_ntt_evaluates_on_the_coset(rng):
    n, shift = 16, rng.randrange(1, R_MOD)
    coeffs = _rand(rng, n)
    w = root_of_unity(n)
    got = ntt.coset_ntt(coeffs, shift)
    assert list(got) == [_eval_poly(coeffs, shift * pow(w, j, R_MOD) % R_MOD) for j in range(n)]


def test_conventions_differ_and_bad_size(rng):
    v = _rand(rng, 8)
    assert list(ntt.ntt(v, "snarkjs")) != list(ntt.ntt(v, "native"))
    with pytest.raises(ValueError, match="power of two"):
        ntt.ntt(_rand(rng, 6))
    with pytest.raises(ValueError, match="unknown root convention"):
        ntt.ntt(v, "bellman")


def test_domain_size():
    assert qap.domain_size(59, 4) == 64  # 59 + 4 = 63 < 64
    assert qap.domain_size(60, 4) == 128  # 60 + 4 = 64: the domain doubles
    assert qap.domain_size(1, 0) == 2


@pytest.mark.parametrize("n", [4, 16, 64])
def test_compute_h_is_ab_minus_c_on_odd_roots(rng, n):
    """h_j = (A B - C)(w2^(2j+1)) where A, B, C interpolate a, b, c on the n-th roots."""
    a, b, c = _rand(rng, n), _rand(rng, n), _rand(rng, n)
    h = qap.compute_h(a, b, c)
    w2 = root_of_unity(2 * n)
    polys = [ntt.intt(x) for x in (a, b, c)]
    for j in range(n):
        x = pow(w2, 2 * j + 1, R_MOD)
        pa, pb, pc = (_eval_poly(p, x) for p in polys)
        assert h[j] == (pa * pb - pc) % R_MOD
    # The native root gives different numbers: snarkjs keys need the snarkjs root.
    assert list(qap.compute_h(a, b, c, "native")) != list(h)


def test_lagrange_at_interpolates(rng):
    n, tau = 16, rng.randrange(R_MOD)
    coeffs = _rand(rng, n)
    values = ntt.ntt(coeffs)
    lag = qap.lagrange_at(tau, n)
    assert sum(int(lj) * int(v) for lj, v in zip(lag, values)) % R_MOD == _eval_poly(coeffs, tau)


def test_h_query_scalars_are_odd_lagrange_of_2n(rng):
    n, tau = 8, rng.randrange(R_MOD)
    full = qap.lagrange_at(tau, 2 * n)
    assert list(qap.h_query_scalars(tau, n)) == list(full[1::2])


def test_extend_to_domain_adds_public_rows():
    a, b, c = (int_vector([5, 6, 7]) for _ in range(3))
    w = int_vector([1, 11, 12, 99])
    ea, eb, ec = qap.extend_to_domain(a, b, c, w, n_public=2)
    assert len(ea) == 8  # 3 + 2 = 5 -> 8
    assert list(ea) == [5, 6, 7, 1, 11, 12, 0, 0]
    assert list(eb) == [5, 6, 7, 0, 0, 0, 0, 0] and list(ec) == list(eb)
