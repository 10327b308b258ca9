/* The numbers of the GPU table (include/pflex/gpu_models.h), one macro per
 * GPU type: lowest settable limit, highest settable limit, default limit and
 * typical idle power, in W per GPU. gpu_models.c builds the table from them
 * and the twin's GPU table (twin_gpu.c) takes its limits from them, so each
 * number is written once. Sources and estimates: docs/gpus.md. */
#ifndef PFLEX_CORE_GPU_MODELS_DATA_H
#define PFLEX_CORE_GPU_MODELS_DATA_H

/*                                   min   max  default idle */
#define PFLEX__GPU_P100_PCIE         125,  250,  250,   30
#define PFLEX__GPU_P100              150,  300,  300,   35
#define PFLEX__GPU_V100_PCIE         100,  250,  250,   30
#define PFLEX__GPU_V100              150,  300,  300,   45
#define PFLEX__GPU_T4                 60,   70,   70,   10
#define PFLEX__GPU_A10               100,  150,  150,   20
#define PFLEX__GPU_A40               100,  300,  300,   30
#define PFLEX__GPU_A100_PCIE_40GB    150,  250,  250,   35
#define PFLEX__GPU_A100_PCIE         150,  300,  300,   40
#define PFLEX__GPU_A100              100,  400,  400,   55
#define PFLEX__GPU_L40S              100,  350,  350,   35
#define PFLEX__GPU_H100_PCIE         200,  350,  350,   50
#define PFLEX__GPU_H100_NVL          200,  400,  400,   55
#define PFLEX__GPU_H100              200,  700,  700,   79
#define PFLEX__GPU_H200_NVL          200,  600,  600,   70
#define PFLEX__GPU_H200              200,  700,  700,   75
#define PFLEX__GPU_B200              300, 1000, 1000,  140
#define PFLEX__GPU_GB200             350, 1200, 1200,  150

/* One number of a row: PFLEX__GPU_MIN(PFLEX__GPU_H200) is 200. */
#define PFLEX__GPU_MIN(row) PFLEX__GPU_ARG0(row)
#define PFLEX__GPU_DEFAULT(row) PFLEX__GPU_ARG2(row)
#define PFLEX__GPU_IDLE(row) PFLEX__GPU_ARG3(row)
#define PFLEX__GPU_ARG0(a, b, c, d) a
#define PFLEX__GPU_ARG2(a, b, c, d) c
#define PFLEX__GPU_ARG3(a, b, c, d) d

#endif
