"""fr_vector must tell limb arrays [n, 4] from plain 1-D uint64 value vectors."""

import numpy as np

from cuzk_ray.field import R_MOD, fr_to_limbs, fr_vector


def test_limb_array_is_read_as_limbs():
    vals = [0, 1, R_MOD - 1, 2**200 + 5]
    assert list(fr_vector(fr_to_limbs(vals))) == vals


def test_one_dimensional_uint64_is_read_as_values():
    # Used to be read as the limbs of one 192-bit integer.
    got = fr_vector(np.array([1, 2, 3], dtype=np.uint64))
    assert list(got) == [1, 2, 3]
    assert len(fr_vector(np.arange(4, dtype=np.uint64))) == 4  # 4 values, not one [1, 4] limb row
