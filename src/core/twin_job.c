/* The job half of the twin: FLOPs per token, T_max, boundness, activity and
 * the DCGM telemetry a job shows at a given SM clock (include/pflex/twin.h).
 *
 * All class numbers below are modelling assumptions, documented in
 * docs/twin.md; none is a measurement. The reference set overrides the
 * compute-bound share and the memory-phase activity per group by calibration
 * (twin_calibrate.c); the telemetry is never tuned per group, it always
 * follows from the job's physics through the formulas here. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "core/twin_internal.h"

static const char *const metric_names[PFLEX_TWIN_NMETRICS] = {
    "gr_engine_active", "sm_active",     "sm_occupancy",  "pipe_tensor_active", "pipe_fp16_active",
    "pipe_fp32_active", "dram_active",   "mem_copy_util", "nvlink_tx_bytes",    "nvlink_rx_bytes",
    "pcie_tx_bytes",    "pcie_rx_bytes", "fb_used",
};

const char *pflex_twin_metric_name(size_t i) {
  return i < PFLEX_TWIN_NMETRICS ? metric_names[i] : NULL;
}

double pflex_twin_job_flops_per_token(const struct pflex_twin_job *job) {
  double n = job->active_b * 1e9;
  /* Pretraining: forward 2N + backward 4N (activation and weight gradients).
   * LoRA: the frozen weights need no weight gradient, so backward is about 2N;
   * the rank-32 adapters add well under 1%. Checkpointing recomputes the forward. */
  double f = job->task == PFLEX_TASK_FT ? 4.0 * n : 6.0 * n;
  if (job->grad_ckpt) f += 2.0 * n;
  return f;
}

double pflex_twin_job_t_peak(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job) {
  return job->mfu * gpu->peak_tflops * 1e12 * job->gpus / pflex_twin_job_flops_per_token(job);
}

static double clamp(double x, double lo, double hi) {
  return fmin(fmax(x, lo), hi);
}

int pflex_twin_job_derive(const struct pflex_twin_gpu *gpu, struct pflex_twin_job *job) {
  if (!gpu || !job || job->gpus < 1 || !(job->params_b > 0) ||
      (job->arch != PFLEX_ARCH_DENSE && job->arch != PFLEX_ARCH_MOE) ||
      (job->task != PFLEX_TASK_PT && job->task != PFLEX_TASK_FT))
    return -EINVAL;
  if (!(job->active_b > 0) || job->arch == PFLEX_ARCH_DENSE) job->active_b = job->params_b;
  if (job->seq_len <= 0) job->seq_len = 4096;
  if (job->batch <= 0) job->batch = 8;
  if (job->ep <= 0) job->ep = 1;
  bool moe = job->arch == PFLEX_ARCH_MOE, ft = job->task == PFLEX_TASK_FT;

  /* MFU per class at f_max (hardware FLOPs, recompute included): dense
   * pretraining with FSDP reaches about 40% on H100-class GPUs, LoRA about 30%
   * (small adapter GEMMs, frozen-weight gathers), MoE far less (small expert
   * GEMMs, routing, all-to-all): 15% pretraining, 8% LoRA. torch.compile fuses
   * elementwise kernels: +8% relative. */
  static const double mfu_class[2][2] = {{0.40, 0.30}, {0.15, 0.08}};
  job->mfu = mfu_class[moe][ft] * (job->compile ? 1.08 : 1.0);

  /* Compute-bound share of step time at f_max: GEMM time over step time. The
   * rest waits on HBM (elementwise, norms, routing, optimizer) or the network. */
  static const double share_class[2][2] = {{0.86, 0.72}, {0.62, 0.40}};
  double s = share_class[moe][ft];
  if (job->compile) s += 0.04;                     /* fused elementwise kernels */
  s += 0.02 * log2((double)job->seq_len / 4096.0); /* attention grows with length */
  s += 0.015 * log2((double)job->batch / 8.0);     /* bigger GEMMs */
  double comm = 0.04;
  if (job->gpus > 8) comm += 0.05 * log2(job->gpus / 8.0);      /* inter-node RoCE */
  if (moe && job->ep > 1) comm += 0.03 * log2((double)job->ep); /* all-to-all */
  s -= comm * 0.5;
  /* The class shares are the H200's (989 TFLOPS, 4.8 TB/s): a GPU with less
   * bandwidth per FLOP (the H100: 30% less HBM bandwidth) spends longer in
   * memory-bound work. For a 989-TFLOPS GPU the second factor is exactly 1. */
  double mem_time = (1.0 - s) * (4800.0 / gpu->mem_bw_gbs) * (gpu->peak_tflops / 989.0);
  s = s / (s + mem_time);
  job->compute_share = clamp(s, 0.05, 0.98);
  job->comm_share = comm;

  /* SM switching activity: tensor-core GEMMs at 1 (dense) or a little less
   * (small expert GEMMs); memory- and network-bound phases keep SMs partly busy. */
  job->compute_activity = moe ? 0.9 : 1.0;
  job->mem_activity = 0.3;
  job->mem_clock_bound = 0.0;

  pflex_twin_job_refresh(job);
  return 0;
}

void pflex_twin_job_refresh(struct pflex_twin_job *job) {
  /* DRAM bandwidth in use at f_max: light in GEMMs (about 16%), heavy in
   * memory-bound phases (about 78%, scaled by the job's kernel mix), some
   * during NCCL transfers (10%). */
  double mix = job->dram_mix > 0 ? job->dram_mix : 1.0;
  double comm = pflex__twin_comm(job);
  double mem_share = fmax(1.0 - job->compute_share - comm, 0.0);
  /* Long memory-bound phases (phase_split) are latency-bound passes (routing,
   * token gather/scatter, small unfused kernels) that use a fraction of the
   * bandwidth of streaming phases. */
  double phi = clamp(job->phase_split, 0.0, 1.0);
  double mem_bw = 0.78 * (1.0 - phi) + PFLEX__TWIN_DRAM_LONG * phi;
  job->dram_util =
      clamp(0.16 * job->compute_share + mem_bw * mix * mem_share + 0.10 * comm, 0.02, 0.95);
}

double pflex__twin_comm(const struct pflex_twin_job *job) {
  /* Communication cannot take more than most of what is not compute-bound. */
  return clamp(job->comm_share, 0.0, 0.9 * (1.0 - job->compute_share));
}

/* Rough hidden size and depth from the active parameter count (N ~ 12 L h^2,
 * with L ~ h / 100 as in the Llama and Qwen families). */
static void shape(const struct pflex_twin_job *job, double *hidden, double *layers) {
  double n = job->active_b * 1e9;
  double h = cbrt(n * 100.0 / 12.0);
  *hidden = h;
  *layers = fmax(n / (12.0 * h * h), 1.0);
}

double pflex__twin_util(const struct pflex_twin_job *job, const struct pflex__twin_state *st) {
  (void)job;
  /* Exposed communication leaves the graphics engine idle part of the time. */
  return clamp(0.985 - 0.5 * st->t_comm / st->tau, 0.0, 1.0);
}

void pflex__twin_metrics(const struct pflex_twin_gpu *gpu, const struct pflex_twin_job *job,
                         const struct pflex__twin_state *st, double m[PFLEX_TWIN_NMETRICS]) {
  double tau = st->tau;
  double c = st->t_comp / tau;        /* clock-bound time share */
  double k = st->t_comm / tau;        /* network-bound share */
  double mm = fmax(1.0 - c - k, 0.0); /* memory-bound share */
  double gr = pflex__twin_util(job, st);
  m[PFLEX_TWIN_M_GR_ENGINE] = gr;
  m[PFLEX_TWIN_M_SM_ACTIVE] = clamp(gr * (0.93 * c + 0.72 * mm + 0.35 * k), 0, 1);
  /* Memory-bound kernels keep more warps resident to hide latency. */
  m[PFLEX_TWIN_M_SM_OCCUPANCY] = clamp(0.24 * c + 0.46 * mm + 0.15 * k, 0, 1);
  /* Achieved FLOPs over the peak at the current clock. */
  m[PFLEX_TWIN_M_PIPE_TENSOR] = clamp(job->mfu * c / job->compute_share, 0, 0.95);
  m[PFLEX_TWIN_M_PIPE_FP16] = clamp(0.03 + 0.10 * mm, 0, 1);
  m[PFLEX_TWIN_M_PIPE_FP32] = clamp(0.02 + 0.02 * c + 0.07 * mm, 0, 1);
  double dram = clamp(job->dram_util / tau, 0, 1);
  m[PFLEX_TWIN_M_DRAM_ACTIVE] = dram;
  /* NVML memory utilization (percent of time the memory was read or written)
   * saturates faster than DRAM_ACTIVE (cycles the interface is busy). */
  m[PFLEX_TWIN_M_MEM_COPY_UTIL] = 100.0 * (1.0 - exp(-1.9 * dram));

  /* Traffic per GPU per step. FSDP full shard: all-gather forward and backward
   * and a reduce-scatter of gradients, 2 bytes per parameter each (pretraining);
   * LoRA only gathers the frozen weights. MoE all-to-all: each token's hidden
   * state goes out and back, forward and backward, top-k times. */
  double g = job->gpus, n_total = job->params_b * 1e9;
  double hidden, layers;
  shape(job, &hidden, &layers);
  double frac = (g - 1.0) / g;
  double fsdp = (job->task == PFLEX_TASK_FT ? 2.0 : 3.0) * 2.0 * n_total * frac;
  if (job->arch == PFLEX_ARCH_MOE && job->task == PFLEX_TASK_PT && job->ep > 1)
    fsdp *= 0.35; /* expert weights stay on their EP rank */
  double tokens_gpu = (double)job->seq_len * job->batch;
  double a2a = 0;
  if (job->arch == PFLEX_ARCH_MOE && job->ep > 1)
    a2a = 4.0 * tokens_gpu * hidden * 2.0 * 4.0 * layers * (job->ep - 1.0) / job->ep;
  double tput = pflex_twin_job_t_peak(gpu, job) / tau;
  double step_s = tokens_gpu * g / tput;
  double rate = (fsdp + a2a) / step_s;
  double link = gpu->nvlink_gbs * 1e9 * 0.8;
  /* Beyond one 8-GPU node, the ring's inter-node hops go through PCIe to the NICs. */
  double cross = g > 8 ? 8.0 / g + 0.1 : 0.0;
  double nv = fmin(rate * (1.0 - cross), link);
  double pcie = rate * cross + 4.0 * tokens_gpu / step_s + 5e7; /* + data loading, host I/O */
  m[PFLEX_TWIN_M_NVLINK_TX] = nv;
  m[PFLEX_TWIN_M_NVLINK_RX] = nv * 0.995;
  m[PFLEX_TWIN_M_PCIE_TX] = pcie * 0.9;
  m[PFLEX_TWIN_M_PCIE_RX] = pcie;
  /* Frame buffer: sharded weights, gradients and Adam state (16 bytes/param for
   * pretraining, 2 bytes/param frozen for LoRA) plus activations (about
   * 34 s b h bytes per layer, a fifth of it with checkpointing); the caching
   * allocator keeps at most 97% of the memory. */
  double state = (job->task == PFLEX_TASK_FT ? 2.0 : 16.0) * n_total / g;
  double act = 34.0 * tokens_gpu * hidden * layers * (job->grad_ckpt ? 0.2 : 1.0);
  double fb = (state + act) / (1024.0 * 1024.0) + 2048.0;
  m[PFLEX_TWIN_M_FB_USED] = fmin(fb, gpu->hbm_gib * 1024.0 * 0.97);
}
