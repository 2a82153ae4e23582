"""Batched GEMM on CUDA device arrays: ``out[z] = op(a[z]) @ op(b[z])``.

There is no CPU twin: CPU GEMMs are numpy's BLAS.  ``a`` is (B, M, K) (or (B, K, M) read
transposed), ``b`` is (B, K, N) (or (B, N, K) read transposed), ``out`` (B, M, N); all
C-contiguous, one float dtype; a batch of 1 in ``a`` or ``b`` broadcasts over ``out``'s B.  The
transposed reads let backward's ``a^T @ g`` and ``g @ b^T`` run without copies.

Kernel: the classic shared-memory tiling (NUMBA-NOTES 6.3), a TILE x TILE block computes one
TILE x TILE output tile, walking K one tile at a time.  Choices:
- Every tile load is coalesced: for a transposed operand the tile is stored transposed in shared
  memory (consecutive threads read consecutive addresses of the stored layout) and read back
  with swapped indices.  Tiles are TILE x (TILE + 1) so column reads hit distinct banks.
- Grid-stride loops over batch, row tiles and column tiles (bounds depend on the block index
  only, so every ``syncthreads`` is reached by the whole block): any grid is correct, and the
  grid stays within CUDA's 65535 limit on y/z.
- Out-of-range tile slots are zero, and they only ever meet other zero slots (a padded k is
  padded in both operands), so NaN/Inf propagate exactly as in BLAS: a NaN in row m of ``a``
  makes row m of ``out`` NaN, ``Inf * 0`` is NaN.  K = 0 writes zeros.
- One kernel per (trans_a, trans_b, accumulator type), built on first use; the flags are closure
  constants, so the untaken branches fold away.  float16 accumulates in float32 (as cuBLAS
  does); other dtypes accumulate in their own type (float32 sums in float32, like sgemm).
"""

import numpy as np
from numba import cuda

from .config import SIM, TILE

__all__ = ["matmul_cuda", "matmul_t_cuda"]

# blocks per grid dimension (the simulator runs blocks one Python thread per CUDA thread; a
# small cap also exercises the grid-stride loops there)
_CAP = 2 if SIM else 65535
_KERNELS = {}


def _build(ta, tb, acc_t):
    T = TILE
    T1 = TILE + 1  # a compile-time constant (shared shapes must be)

    @cuda.jit
    def mm(a, b, out):
        sa = cuda.shared.array((T, T1), acc_t)
        sb = cuda.shared.array((T, T1), acc_t)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        nb, M, N = out.shape
        K = a.shape[1] if ta else a.shape[2]
        a1 = a.shape[0] == 1
        b1 = b.shape[0] == 1
        ntk = (K + T - 1) // T
        for z in range(cuda.blockIdx.z, nb, cuda.gridDim.z):
            az = 0 if a1 else z
            bz = 0 if b1 else z
            for r0 in range(cuda.blockIdx.y * T, M, cuda.gridDim.y * T):
                row = r0 + ty
                for c0 in range(cuda.blockIdx.x * T, N, cuda.gridDim.x * T):
                    col = c0 + tx
                    acc = acc_t(0)
                    for t in range(ntk):
                        k0 = t * T
                        if ta:  # sa[c, r] = A[r0 + r, k0 + c] = a[k0 + c, r0 + r]
                            kk = k0 + ty
                            rr = r0 + tx
                            sa[ty, tx] = acc_t(a[az, kk, rr]) if kk < K and rr < M else acc_t(0)
                        else:  # sa[r, c] = A[r0 + r, k0 + c]
                            kk = k0 + tx
                            sa[ty, tx] = acc_t(a[az, row, kk]) if row < M and kk < K else acc_t(0)
                        if tb:  # sb[c, r] = B[k0 + r, c0 + c] = b[c0 + c, k0 + r]
                            cc = c0 + ty
                            kk = k0 + tx
                            sb[ty, tx] = acc_t(b[bz, cc, kk]) if cc < N and kk < K else acc_t(0)
                        else:  # sb[r, c] = B[k0 + r, c0 + c]
                            kk = k0 + ty
                            sb[ty, tx] = acc_t(b[bz, kk, col]) if kk < K and col < N else acc_t(0)
                        cuda.syncthreads()
                        for j in range(T):
                            av = sa[j, ty] if ta else sa[ty, j]
                            bv = sb[tx, j] if tb else sb[j, tx]
                            acc += av * bv
                        cuda.syncthreads()
                    if row < M and col < N:
                        out[z, row, col] = acc

    return mm


def _kernel(ta, tb, dtype):
    from numba import float32, from_dtype

    acc_t = float32 if dtype == np.float16 else from_dtype(dtype)
    key = (ta, tb, acc_t)
    k = _KERNELS.get(key)
    if k is None:
        k = _KERNELS[key] = _build(ta, tb, acc_t)
    return k


def _check(a, b, out, ta, tb):
    if a.ndim != 3 or b.ndim != 3 or out.ndim != 3:
        raise ValueError(
            "matmul_cuda: a, b and out must be 3-D, got %d, %d and %d dims"
            % (a.ndim, b.ndim, out.ndim)
        )
    if not (np.dtype(a.dtype) == np.dtype(b.dtype) == np.dtype(out.dtype)):
        raise TypeError("matmul_cuda: dtypes differ (%s, %s, %s)" % (a.dtype, b.dtype, out.dtype))
    if np.dtype(a.dtype).kind != "f":
        raise TypeError("matmul_cuda: expected a float dtype, got %s" % a.dtype)
    B, M, N = out.shape
    am, ak = (a.shape[2], a.shape[1]) if ta else (a.shape[1], a.shape[2])
    bk, bn = (b.shape[2], b.shape[1]) if tb else (b.shape[1], b.shape[2])
    if am != M or bn != N or ak != bk or a.shape[0] not in (1, B) or b.shape[0] not in (1, B):
        raise ValueError(
            "matmul_cuda: shapes a %s%s, b %s%s do not give out %s"
            % (tuple(a.shape), "^T" if ta else "", tuple(b.shape), "^T" if tb else "", out.shape)
        )


def matmul_t_cuda(a, b, out, trans_a, trans_b):
    """out[z] = A[z] @ B[z] with A = a[z]^T if ``trans_a`` (a stored (B, K, M)) else a[z],
    B = b[z]^T if ``trans_b`` (b stored (B, N, K)) else b[z]; written in place."""
    ta, tb = bool(trans_a), bool(trans_b)
    _check(a, b, out, ta, tb)
    B, M, N = out.shape
    if B == 0 or M == 0 or N == 0:
        return
    gx = min((N + TILE - 1) // TILE, _CAP)
    gy = min((M + TILE - 1) // TILE, _CAP)
    gz = min(B, _CAP)
    _kernel(ta, tb, np.dtype(a.dtype))[(gx, gy, gz), (TILE, TILE)](a, b, out)


def matmul_cuda(a, b, out):
    """out[z] = a[z] @ b[z]: a (B, M, K), b (B, K, N), out (B, M, N); a batch of 1 broadcasts."""
    matmul_t_cuda(a, b, out, False, False)
