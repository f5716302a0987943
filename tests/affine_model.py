"""Pure-Python model of the batch-affine bucket accumulation (ec/msm_impl.cuh: msm_digits,
msm_aff_runs, msm_aff_sources(_gather), msm_aff_level(_gather), msm_aff_buckets), for the CPU
test test_msm_affine_model.py.

The kernels are emulated thread by thread with the kernel's own index arithmetic (a slot's
source word from the run arrays, the slots b K B + k B + tid of a thread, the transposed scratch
index k nthr + t, the block's product tree, the reverse pass), in Python ints mod p (standard form: Montgomery form
changes no index). They are driven by the host code itself, cuda/msm.py
affine_bucket_sums_with with numpy as the array module, so the offsets, groups, K choice and
ping-pong buffers that run on the device are the ones checked here.
"""

from __future__ import annotations

import numpy as np

from cuzk_ray.cuda import msm as cuda_msm
from cuzk_ray.field import Q_MOD as P
from cuzk_ray.ref import g1 as g1_ref

NO_KEY = 0xFFFFFFFF
INF = (0, 0)  # the kernels' infinity
ADD, DBL, COPY1, COPY2, PINF = range(5)
AFF_PASS = 0xFFFFFFFF  # a source word's second half for a pass-through slot


def digits(scalars, idx, c: int, W: int, table_n: int = 0) -> np.ndarray:
    """msm_digits_impl: uint64 [W][m] entries (key << 32 | point | sign << 31)."""
    m = len(idx)
    out = np.zeros(W * m, dtype=np.uint64)
    half, mask = 1 << (c - 1), (1 << c) - 1
    for i, (s, point) in enumerate(zip(scalars, idx)):
        carry = 0
        for w in range(W):
            d = ((s >> (w * c)) & mask if w * c < 256 else 0) + carry
            neg = 0
            if d > half:
                d, neg, carry = (1 << c) - d, 1, 1
            else:
                carry = 0
            key = NO_KEY if d == 0 else (d - 1 if table_n else (w << (c - 1)) | (d - 1))
            value = w * table_n + point if table_n else point
            out[w * m + i] = (key << 32) | value | (neg << 31)
    return out


def to_kernel_point(p) -> tuple:
    return INF if p is None else p


def from_kernel_point(p):
    return None if p == INF else p


def kind_of(p1, p2):
    """aff_kind: (kind, denominator)."""
    if p1 == INF:
        return COPY2, None
    if p2 == INF:
        return COPY1, None
    if p1[0] != p2[0]:
        return ADD, (p2[0] - p1[0]) % P
    if p1[1] == p2[1]:
        return DBL, 2 * p1[1] % P
    return PINF, None


class ModelOps:
    """The `ops` of cuda_msm.affine_bucket_sums_with, kernels emulated in Python. Small block /
    K limits (defaults) make several blocks, several K values and partial blocks show up on
    small inputs. bug: a deliberate defect ("prefix": pass 2 takes the wrong prefix element;
    "sign": level 0 ignores the sign bit; "pass": the source words mark the wrong slots as
    pass-through) for the negative tests."""

    point_bytes, elem_bytes = 96, 48

    def __init__(self, bases, total: int, block: int = 4, k_min: int = 1, k_max: int = 4,
                 min_threads: int = 4, bug: str = ""):
        self.bases = [to_kernel_point(p) for p in bases]
        self.block, self.k_min, self.k_max, self.min_threads, self.bug = block, k_min, k_max, min_threads, bug
        self.bucket = [None] * total  # affine, None = infinity
        self.additions = 0  # pairs reduced (ADD, DBL, P + (-P), infinity operands)
        self.levels: list[int] = []  # slots per level launched
        self.groups = 0

    def alloc_points(self, n: int) -> list:
        return [None] * n

    def alloc_scratch(self, n: int) -> list:
        return [None] * n

    def runs(self, entries, M: int, start_by_key) -> None:
        for e in range(M):
            key = int(entries[e]) >> 32
            if e == 0 or int(entries[e - 1]) >> 32 != key:
                start_by_key[key] = e

    def sources(self, gather: bool, sorted_entries, in_start, in_len, out_start, run, slots: int) -> list[int]:
        """msm_aff_sources(_gather): per slot (second operand << 32) | first operand, AFF_PASS
        for a run's odd last point. bug "pass": the pass-through test off by one."""
        out = []
        for j in range(slots):
            r = run[j]
            q = j - out_start[r]
            a = in_start[r] + 2 * q
            last = 2 * q + 1 >= in_len[r] if self.bug != "pass" else 2 * q + 2 >= in_len[r]
            v1 = int(sorted_entries[a]) & 0xFFFFFFFF if gather else a
            v2 = AFF_PASS if last else (int(sorted_entries[a + 1]) & 0xFFFFFFFF if gather else a + 1)
            assert v1 != AFF_PASS, f"slot {j}: operand {v1:#x} is the pass-through marker"
            out.append(v2 << 32 | v1)
        return out

    def _src(self, gather: bool, src, v: int):
        """aff_src_point: operand v of a source word."""
        if gather:
            p = self.bases[v & 0x7FFFFFFF]
            if (v >> 31) and p != INF and self.bug != "sign":
                p = (p[0], (-p[1]) % P)
            return p
        p = src[v]
        assert p is not None, f"read of compact slot {v}, never written"
        return p

    def level(self, gather: bool, src, sorted_entries, in_start, in_len, out_start, run, slots: int, K: int,
              nblocks: int, scratch, out) -> None:
        """The ops interface: the level's source words, then the level over them."""
        in_start, in_len, out_start, run = ([int(v) for v in a] for a in (in_start, in_len, out_start, run))
        R = len(out_start)
        assert out_start[0] == 0 and len(run) >= slots
        for j in range(slots):  # the host's slot -> run map
            assert out_start[run[j]] <= j and (run[j] + 1 == R or j < out_start[run[j] + 1])
        words = self.sources(gather, sorted_entries, in_start, in_len, out_start, run, slots)
        self.level_words(gather, src, words, slots, K, nblocks, scratch, out)

    def level_words(self, gather: bool, src, words, slots: int, K: int, nblocks: int, scratch, out) -> None:
        """msm_aff_level(_gather) over the slots' source words (src: the previous level's compact
        array; unused when gather, which reads the bases)."""
        B = self.block
        nthr = nblocks * B
        assert len(scratch) >= K * nthr and len(out) >= slots and len(words) >= slots
        assert (nblocks - 1) * B * K < slots <= nthr * K, "a block with no slot, or slots without a thread"
        words = [int(w) for w in words[:slots]]
        written: dict = {}  # scratch index -> value, this launch only
        self.levels.append(slots)
        outs_done = set()

        def slot(b, k, tid):  # msm_aff_level_impl: the lanes of a warp take consecutive slots
            return b * K * B + k * B + tid

        for b in range(nblocks):
            accs = []
            for tid in range(B):  # pass 1
                t = b * B + tid
                acc = 1
                for k in range(K):
                    j = slot(b, k, tid)
                    if j >= slots:
                        break
                    v1, v2 = words[j] & 0xFFFFFFFF, words[j] >> 32
                    if v2 == AFF_PASS:
                        continue
                    kind, d = kind_of(self._src(gather, src, v1), self._src(gather, src, v2))
                    if kind not in (ADD, DBL):
                        continue
                    idx = k * nthr + t
                    assert idx not in written
                    written[idx] = acc
                    acc = acc * d % P
                accs.append(acc)
            tree = [None] * (2 * B)  # the block's product tree
            for tid in range(B):
                tree[B + tid] = accs[tid]
            L = B // 2
            while L >= 1:
                for tid in range(L):
                    tree[L + tid] = tree[2 * (L + tid)] * tree[2 * (L + tid) + 1] % P
                L >>= 1
            tree[1] = pow(tree[1], P - 2, P)
            L = 1
            while L < B:
                for tid in range(L):
                    k = L + tid
                    iv, lo, hi = tree[k], tree[2 * k], tree[2 * k + 1]
                    tree[2 * k], tree[2 * k + 1] = iv * hi % P, iv * lo % P
                L <<= 1
            for tid in range(B):  # pass 2
                t = b * B + tid
                inv = tree[B + tid]
                assert inv * accs[tid] % P == 1
                for k in range(K - 1, -1, -1):
                    j = slot(b, k, tid)
                    if j >= slots:
                        continue
                    v1, v2 = words[j] & 0xFFFFFFFF, words[j] >> 32
                    p1 = self._src(gather, src, v1)
                    if v2 == AFF_PASS:
                        res = p1
                    else:
                        p2 = self._src(gather, src, v2)
                        kind, d = kind_of(p1, p2)
                        self.additions += 1
                        if kind in (ADD, DBL):
                            if self.bug == "prefix":  # the element of the slot before (or 1)
                                prefix = written.get((k - 1) * nthr + t, 1)
                            else:
                                prefix = written[k * nthr + t]
                            dinv = inv * prefix % P
                            inv = inv * d % P
                            num = (p2[1] - p1[1]) if kind == ADD else 3 * p1[0] * p1[0]
                            lam = num * dinv % P
                            x3 = (lam * lam - p1[0] - p2[0]) % P
                            res = (x3, (lam * (p1[0] - x3) - p1[1]) % P)
                        else:
                            res = {COPY1: p1, COPY2: p2, PINF: INF}[kind]
                    assert j not in outs_done
                    outs_done.add(j)
                    out[j] = res
        assert outs_done == set(range(slots))

    def buckets(self, compact, keys, R: int) -> None:
        seen = set()
        for r in range(R):
            key = int(keys[r])
            assert key not in seen
            seen.add(key)
            self.bucket[key] = g1_ref.affine_add(self.bucket[key], from_kernel_point(compact[r]))

    def group_done(self) -> None:
        self.groups += 1


def model_buckets(bases, entries, total: int, budget: int, **kw) -> ModelOps:
    """Bucket sums of the sorted entries (NO_KEY entries last) through the host driver."""
    M = int(np.searchsorted(entries, np.uint64(NO_KEY << 32)))
    ops = ModelOps(bases, total, **kw)
    if M:
        cuda_msm.affine_bucket_sums_with(np, ops, entries, M, total, budget)
    return ops


def direct_buckets(bases, entries, total: int) -> list:
    """The plain definition: bucket[key] = sum of its entries' (signed) points."""
    out = [None] * total
    for e in entries:
        e = int(e)
        key, v = e >> 32, e & 0xFFFFFFFF
        if key == NO_KEY:
            continue
        p = bases[v & 0x7FFFFFFF]
        if p is not None and v >> 31:
            p = (p[0], (-p[1]) % P)
        out[key] = g1_ref.affine_add(out[key], p)
    return out


def msm_from_buckets(bucket, c: int, W: int):
    """sum_w 2^(c w) sum_b (b + 1) B_{w, b} (what msm_chunks, xyzz_sum_rows and Horner give)."""
    nb = 1 << (c - 1)
    acc = None
    for w in reversed(range(W)):
        acc = g1_ref.affine_mul(1 << c, acc) if acc is not None else None
        run, tot = None, None
        for b in reversed(range(nb)):
            run = g1_ref.affine_add(run, bucket[w * nb + b])
            tot = g1_ref.affine_add(tot, run)
        acc = g1_ref.affine_add(acc, tot)
    return acc
