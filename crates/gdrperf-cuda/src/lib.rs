//! CUDA half of gdrperf (placeholder until filled).
