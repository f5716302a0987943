"""CPU references, small and obviously right: the oracle for the fast CPU path and the kernels.

ntt (transforms), qap (R1CS -> h in the snarkjs convention, Lagrange values), msm (py-arkworks MSM,
naive sums, fixed-base), g1 and g2 (Python-int curve arithmetic, the GPU MSM's host tail).
"""
