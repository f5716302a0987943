"""The evaluation domain of the QAP: its size and roots of unity, validated once (``Domain``).

``Domain(n, convention, curve)`` is the multiplicative subgroup of the n-th roots of unity of the
curve's Fr (cuzk_ray.curves; BLS12-381 unless named) in one of the two root conventions
(cuzk_ray.field.ROOT_GENERATORS: "snarkjs" for what snarkjs zkeys assume, "native" for
arkworks / bellman; each curve's generators are in its Curve.root_generators). It owns what
every NTT and H computation needs:

  log_n                  n = 2^log_n
  omega, omega_inv       a primitive n-th root of unity and its inverse
  omega_2n, omega_2n_inv a primitive 2n-th root (omega_2n^2 = omega): the coset shift of the
                         snarkjs H (its odd 2n-th roots)
  n_inv                  1 / n mod r
  r                      the modulus of Fr

The CPU reference (cuzk_ray.ref), the fast CPU path (cuzk_ray.fast) and the device layer
(cuzk_ray.cuda, whose twiddle tables are cached per device and domain) take a Domain instead of
a convention string. Domains are frozen and compare (and hash) by (n, convention, curve).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from .curves import curve_named
from .field import FR_TWO_ADICITY, ROOT_GENERATORS

MAX_LOG_N = FR_TWO_ADICITY - 1  # BLS12-381: omega_2n must exist, 2n <= 2^32 (BN254: 2n <= 2^28)


def domain_size(n_constraints: int, n_public: int) -> int:
    """Smallest power of two strictly greater than n_constraints + n_public (the QAP's domain:
    m constraint rows and p + 1 public-input rows)."""
    return 1 << (n_constraints + n_public).bit_length()


@dataclass(frozen=True)
class Domain:
    """The n-th roots of unity of Fr in a root convention (see the module docstring)."""

    n: int
    convention: str = "snarkjs"
    curve: str = "bls12381"  # a cuzk_ray.curves name
    r: int = field(init=False, compare=False, repr=False)
    log_n: int = field(init=False, compare=False, repr=False)
    omega: int = field(init=False, compare=False, repr=False)
    omega_inv: int = field(init=False, compare=False, repr=False)
    omega_2n: int = field(init=False, compare=False, repr=False)
    omega_2n_inv: int = field(init=False, compare=False, repr=False)
    n_inv: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        n = self.n
        c = curve_named(self.curve)
        max_log = c.two_adicity - 1
        log_n = n.bit_length() - 1 if isinstance(n, int) else -1
        if log_n < 0 or n != 1 << log_n or log_n > max_log:
            raise ValueError(f"Domain: size {n!r} is not a power of two between 1 and 2^{max_log} ({c.name})")
        if self.convention not in ROOT_GENERATORS:
            raise ValueError(f"unknown root convention {self.convention!r}; use one of {sorted(ROOT_GENERATORS)}")
        r, top = c.r, c.two_adic_root(self.convention)
        w2 = pow(top, 1 << (c.two_adicity - log_n - 1), r)  # squared down from the 2^s-th root
        w = w2 * w2 % r
        for name, value in (("r", r), ("log_n", log_n), ("omega", w), ("omega_inv", pow(w, -1, r)),
                            ("omega_2n", w2), ("omega_2n_inv", pow(w2, -1, r)),
                            ("n_inv", pow(n, -1, r))):
            object.__setattr__(self, name, value)

    @classmethod
    def of(cls, n: int, convention: str = "snarkjs", curve: str = "bls12381") -> Domain:
        """The (memoized) Domain of size n: what the functions that take ``domain=None`` use."""
        return _domain(n, convention, curve)

    def double(self) -> Domain:
        """The domain of size 2n in the same convention (its omega is this omega_2n)."""
        return _domain(2 * self.n, self.convention, self.curve)

    def check_size(self, n: int, what: str) -> None:
        """Raise ValueError unless a vector of length n lives on this domain."""
        if n != self.n:
            raise ValueError(f"{what}: length {n} on a domain of size {self.n}")


@functools.lru_cache(maxsize=64)
def _domain(n: int, convention: str, curve: str = "bls12381") -> Domain:
    return Domain(n, convention, curve)


def resolve(domain: Domain | str | None, n: int, what: str) -> Domain:
    """The Domain a public function works on: ``domain`` checked against the length n; a convention
    name ("snarkjs", "native") or None (snarkjs) for the memoized domain of size n."""
    if domain is None or isinstance(domain, str):
        return Domain.of(n, domain or "snarkjs")
    if not isinstance(domain, Domain):
        raise TypeError(f"{what}: expected a Domain or a root convention name, got {type(domain).__name__}")
    domain.check_size(n, what)
    return domain
