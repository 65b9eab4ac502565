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
