//go:build amd64 && !purego

#include "textflag.h"

// func gemm4x16(k int, a *float32, lda int, b *float32, c *float32, ldc int)
//
// A 4×16 register tile: Y0..Y7 hold 4 rows × 16 columns of c; each step
// broadcasts one element of each of the 4 rows of a and multiplies it into
// one 16-wide row of the packed panel b with FMA, accumulating onto c.
TEXT ·gemm4x16(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), DX
	SHLQ $2, DX
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), R8
	MOVQ ldc+40(FP), R9
	SHLQ $2, R9
	LEAQ (SI)(DX*1), R10
	LEAQ (R10)(DX*1), R11
	LEAQ (R11)(DX*1), R12
	MOVQ    R8, R13
	VMOVUPS (R13), Y0
	VMOVUPS 32(R13), Y1
	ADDQ    R9, R13
	VMOVUPS (R13), Y2
	VMOVUPS 32(R13), Y3
	ADDQ    R9, R13
	VMOVUPS (R13), Y4
	VMOVUPS 32(R13), Y5
	ADDQ    R9, R13
	VMOVUPS (R13), Y6
	VMOVUPS 32(R13), Y7
	TESTQ CX, CX
	JLE   store

loop:
	VMOVUPS      (DI), Y8
	VMOVUPS      32(DI), Y9
	VBROADCASTSS (SI), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (R10), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (R11), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VBROADCASTSS (R12), Y13
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $4, SI
	ADDQ         $4, R10
	ADDQ         $4, R11
	ADDQ         $4, R12
	ADDQ         $64, DI
	DECQ         CX
	JNZ          loop

store:
	VMOVUPS Y0, (R8)
	VMOVUPS Y1, 32(R8)
	ADDQ    R9, R8
	VMOVUPS Y2, (R8)
	VMOVUPS Y3, 32(R8)
	ADDQ    R9, R8
	VMOVUPS Y4, (R8)
	VMOVUPS Y5, 32(R8)
	ADDQ    R9, R8
	VMOVUPS Y6, (R8)
	VMOVUPS Y7, 32(R8)
	VZEROUPPER
	RET

// func gemm4x16pf(k int, a *float32, lda int, b *float32, c *float32, ldc int)
//
// gemm4x16 with a software prefetch of the panel 1 KB (16 iterations)
// ahead, for dense layers applied to a few rows, which stream W from
// memory once (dense.apply). Same arithmetic as gemm4x16.
//
// A 4×16 register tile: Y0..Y7 hold 4 rows × 16 columns of c; each step
// broadcasts one element of each of the 4 rows of a and multiplies it into
// one 16-wide row of the packed panel b with FMA, accumulating onto c.
TEXT ·gemm4x16pf(SB), NOSPLIT, $0-48
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ lda+16(FP), DX
	SHLQ $2, DX
	MOVQ b+24(FP), DI
	MOVQ c+32(FP), R8
	MOVQ ldc+40(FP), R9
	SHLQ $2, R9
	LEAQ (SI)(DX*1), R10
	LEAQ (R10)(DX*1), R11
	LEAQ (R11)(DX*1), R12
	MOVQ    R8, R13
	VMOVUPS (R13), Y0
	VMOVUPS 32(R13), Y1
	ADDQ    R9, R13
	VMOVUPS (R13), Y2
	VMOVUPS 32(R13), Y3
	ADDQ    R9, R13
	VMOVUPS (R13), Y4
	VMOVUPS 32(R13), Y5
	ADDQ    R9, R13
	VMOVUPS (R13), Y6
	VMOVUPS 32(R13), Y7
	TESTQ CX, CX
	JLE   pfstore

pfloop:
	PREFETCHT0   1024(DI) // 16 lines ahead: a query streams W from memory
	VMOVUPS      (DI), Y8
	VMOVUPS      32(DI), Y9
	VBROADCASTSS (SI), Y10
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VBROADCASTSS (R10), Y11
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VBROADCASTSS (R11), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VBROADCASTSS (R12), Y13
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ         $4, SI
	ADDQ         $4, R10
	ADDQ         $4, R11
	ADDQ         $4, R12
	ADDQ         $64, DI
	DECQ         CX
	JNZ          pfloop

pfstore:
	VMOVUPS Y0, (R8)
	VMOVUPS Y1, 32(R8)
	ADDQ    R9, R8
	VMOVUPS Y2, (R8)
	VMOVUPS Y3, 32(R8)
	ADDQ    R9, R8
	VMOVUPS Y4, (R8)
	VMOVUPS Y5, 32(R8)
	ADDQ    R9, R8
	VMOVUPS Y6, (R8)
	VMOVUPS Y7, 32(R8)
	VZEROUPPER
	RET

// func dotsInt8x16(k int, q *float32, b *int8, out *float32)
//
// Four steps of k per iteration, each in its own pair of accumulators
// (Y0..Y7: step s, columns 0–7 and 8–15), so that the FMA chains are
// independent: each step widens 16 int8 codes to float32 (VPMOVSXBD,
// VCVTDQ2PS) and multiplies them by the broadcast q[i].
TEXT ·dotsInt8x16(SB), NOSPLIT, $0-32
	MOVQ   k+0(FP), CX
	MOVQ   q+8(FP), SI
	MOVQ   b+16(FP), DI
	MOVQ   out+24(FP), R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	SHRQ   $2, CX
	JZ     qdone

qloop:
	PREFETCHT0   1024(DI)
	VPMOVSXBD    (DI), Y8
	VPMOVSXBD    8(DI), Y9
	VCVTDQ2PS    Y8, Y8
	VCVTDQ2PS    Y9, Y9
	VBROADCASTSS (SI), Y12
	VFMADD231PS  Y8, Y12, Y0
	VFMADD231PS  Y9, Y12, Y1
	VPMOVSXBD    16(DI), Y10
	VPMOVSXBD    24(DI), Y11
	VCVTDQ2PS    Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VBROADCASTSS 4(SI), Y13
	VFMADD231PS  Y10, Y13, Y2
	VFMADD231PS  Y11, Y13, Y3
	VPMOVSXBD    32(DI), Y8
	VPMOVSXBD    40(DI), Y9
	VCVTDQ2PS    Y8, Y8
	VCVTDQ2PS    Y9, Y9
	VBROADCASTSS 8(SI), Y12
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VPMOVSXBD    48(DI), Y10
	VPMOVSXBD    56(DI), Y11
	VCVTDQ2PS    Y10, Y10
	VCVTDQ2PS    Y11, Y11
	VBROADCASTSS 12(SI), Y13
	VFMADD231PS  Y10, Y13, Y6
	VFMADD231PS  Y11, Y13, Y7
	ADDQ         $16, SI
	ADDQ         $64, DI
	DECQ         CX
	JNZ          qloop

qdone:
	VADDPS  Y2, Y0, Y0
	VADDPS  Y6, Y4, Y4
	VADDPS  Y4, Y0, Y0
	VADDPS  Y3, Y1, Y1
	VADDPS  Y7, Y5, Y5
	VADDPS  Y5, Y1, Y1
	VMOVUPS Y0, (R8)
	VMOVUPS Y1, 32(R8)
	VZEROUPPER
	RET

// func dots8Rows(k int, q *float32, rows *float32, idx *int32, out *float32)
//
// out[j] = Σ_{i<k} q[i]·rows[idx[j]+i] for j in 0..7: eight rows gathered
// (VGATHERDPS) one element at a time, each summed with FMA in index
// order from zero — the arithmetic of one column of gemm4x16 in
// Panels.Dots, so the results are bit-identical to it.
TEXT ·dots8Rows(SB), NOSPLIT, $0-40
	MOVQ    k+0(FP), CX
	MOVQ    q+8(FP), DX
	MOVQ    rows+16(FP), SI
	MOVQ    idx+24(FP), DI
	MOVQ    out+32(FP), R8
	VMOVDQU (DI), Y3
	VXORPS  Y0, Y0, Y0
	TESTQ   CX, CX
	JLE     gdone

gloop:
	VPCMPEQD     Y4, Y4, Y4
	VGATHERDPS   Y4, (SI)(Y3*4), Y2
	VBROADCASTSS (DX), Y5
	VFMADD231PS  Y2, Y5, Y0
	ADDQ         $4, SI
	ADDQ         $4, DX
	DECQ         CX
	JNZ          gloop

gdone:
	VMOVUPS Y0, (R8)
	VZEROUPPER
	RET
