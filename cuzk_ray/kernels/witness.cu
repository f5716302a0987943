// A compact witness (cuzk_ray/witness.py) expanded into standard-form Fr limbs on the device
// (driven by cuda/witness.py). Inputs, as uploaded:
//   full    u32[nw]     packed bitmap, wire i at bit (i & 31) of word i >> 5 (np.packbits with
//                       bitorder "little", read as little-endian 32-bit words, zero-padded): set
//                       when wire i holds a full field element
//   bits    u32[nw]     packed bitmap of the 0/1 values of the other wires
//   values  u64[k][4]   the full wires' limbs in wire order
// Two passes: word_popc (one thread per bitmap word), an inclusive scan of its output (cupy
// cumsum), then expand_witness (one thread per wire): the rank of a full wire among the full
// wires is incl[w] - popc(word) + popc(word & below-its-bit).
// Cost at 2^27 (130M wires, 4.3M full): expand_witness writes 4 GiB and reads 32 MiB of bitmaps
// and 0.13 GiB of values, coalesced (thread i writes bytes 32i..32i+31); word_popc and the scan
// touch 4M words. Measured on an H200 (jobs/bench_kernels.py --witness): 2.45 ms in all at 2^27
// (1.7 TB/s written), 0.43 ms at 2^24.
typedef unsigned int u32;
typedef unsigned long long u64;

// popc[w] = set bits of full[w], for w < nw.
extern "C" __global__ void word_popc(u32* popc, const u32* full, u64 nw) {
    const u64 w = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (w >= nw) return;
    popc[w] = __popc(full[w]);
}

// out[i] for i < n: values[rank(i)] where wire i is full, else (bit i, 0, 0, 0). incl = the
// inclusive prefix sums of popc (u64: more than 2^32 full wires would overflow u32).
extern "C" __global__ void expand_witness(u64* out, const u32* full, const u32* bits, const u64* values,
                                          const u64* incl, u64 n) {
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u64 w = i >> 5;
    const u32 b = (u32)(i & 31);
    const u32 fw = full[w];
    ulonglong2* o = (ulonglong2*)(out + 4 * i);  // 16-byte stores; out is 32-byte aligned per row
    if ((fw >> b) & 1u) {
        const u64 rank = incl[w] - __popc(fw) + __popc(fw & ((1u << b) - 1u));
        const ulonglong2* v = (const ulonglong2*)(values + 4 * rank);
        o[0] = v[0];
        o[1] = v[1];
    } else {
        o[0] = make_ulonglong2((bits[w] >> b) & 1u, 0ull);
        o[1] = make_ulonglong2(0ull, 0ull);
    }
}
