// The practice model's parameters per GPU kind. Each value says where it
// comes from; core/docs/practice-model.md has the table and the sources.
#include "cost/practice_fit.hpp"

namespace pase {

DeviceProfile practice_profile(std::string_view id) {
  DeviceProfile d;  // the defaults: the A100 and H100 values below, rounded
  if (id == "v100") {
    // Volta tensor cores: large FP16 products reach about 80% of 125 TFLOP/s
    // (NVIDIA's cuBLAS figures); no fused-attention kernel of today's kind
    // (FlashAttention 2 needs Ampere), so attention runs as unfused products.
    d.matmul_efficiency = 0.78;
    d.matmul_half = 64;
    d.attention_efficiency = 0.35;
    d.memory_efficiency = 0.75;
    d.latency_intra_us = 10;
    d.latency_inter_us = 20;
  } else if (id == "a100-40gb" || id == "a100-80gb") {
    // cuBLAS BF16 products of a few thousand per side: about 250-270 of 312
    // TFLOP/s; FlashAttention 2 forward and backward: up to 225 TFLOP/s
    // (Dao, 2023, figure on A100 80GB), about 60% in practice lengths.
    d.matmul_efficiency = 0.8;
    d.matmul_half = 96;
    d.attention_efficiency = 0.6;
    d.memory_efficiency = 0.8;
    d.latency_intra_us = 8;
    d.latency_inter_us = 15;
  } else if (id == "h100" || id == "h200") {
    // BF16 products reach about 700-750 of 989 TFLOP/s; FlashAttention 3
    // (Shah et al., 2024) 500-600 TFLOP/s forward, less backward; the H200
    // is the same chip with more and faster memory.
    d.matmul_efficiency = 0.72;
    d.matmul_half = 128;
    d.attention_efficiency = 0.5;
    d.memory_efficiency = 0.8;
    d.latency_intra_us = 6;
    d.latency_inter_us = 12;
  } else if (id == "b200") {
    // No published training runs here yet: the H100's rates, the newer
    // generation's larger tiles.
    d.matmul_efficiency = 0.7;
    d.matmul_half = 192;
    d.attention_efficiency = 0.5;
    d.memory_efficiency = 0.8;
    d.latency_intra_us = 5;
    d.latency_inter_us = 12;
  } else if (id == "mi300x") {
    // hipBLASLt BF16 products reach about 60% of the dense peak on large
    // shapes (AMD's and independent published figures).
    d.matmul_efficiency = 0.6;
    d.matmul_half = 128;
    d.attention_efficiency = 0.4;
    d.memory_efficiency = 0.75;
    d.latency_intra_us = 10;
    d.latency_inter_us = 15;
  } else if (id == "l4" || id == "rtx4090") {
    // PCIe cards without NVLink: the products as on Ampere, collectives
    // through the host.
    d.matmul_efficiency = 0.75;
    d.matmul_half = 64;
    d.attention_efficiency = 0.5;
    d.memory_efficiency = 0.8;
    d.latency_intra_us = 15;
    d.latency_inter_us = 25;
  }
  return d;
}

}  // namespace pase
