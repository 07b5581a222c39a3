/* tilejit's C ABI: the runtime, the tuning database and the typed ops behind plain C calls, so
 * that any language (the Python package, through ctypes) can use them without a compiler.
 * libtilejit_c.so exports these functions and nothing else; it carries its own C++ runtime.
 *
 * Errors: a call that fails returns -1 (or NULL) and leaves a message for tj_last_error() on
 * the calling thread; tj_last_error_kind() says what kind of failure it was.
 *
 * Arguments travel packed in one int64 array, one record per argument:
 *   tensor: 0, data pointer, dtype code, device (0 host, 1 CUDA), device index, rank,
 *           rank sizes, rank strides (in elements)
 *   dense tensor: 4, the same without the strides (row-major: suffix products of the sizes)
 *   f32:    1, the value as the bits of an IEEE double
 *   i32:    2, the value
 *   i64:    3, the value
 * dtype codes: bool 0, i8 1, u8 2, i16 3, i32 4, u32 5, i64 6, f16 7, bf16 8, f32 9, f64 10.
 * Configurations are "NAME=VALUE;NAME=VALUE" (NULL or "" for none). Strings returned are the
 * thread's own and stay valid until its next call. */
#ifndef TILEJIT_C_H
#define TILEJIT_C_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { TJ_OK = 0, TJ_ERROR = 1, TJ_NO_GPU = 2, TJ_INTERNAL = 3 };

const char* tj_version(void);
const char* tj_last_error(void);
int tj_last_error_kind(void);

/* arch: NULL or "" for the GPU's own; cache_dir: NULL for the default, "" for memory only;
 * tune_on_first_use, debug: -1 unset (the environment decides), 0 or 1; compile_timeout_s:
 * < 0 unset; verbose: log to stderr; device: the CUDA device's ordinal (0 and up). */
void* tj_runtime_new(const char* arch, const char* cache_dir, int tune_on_first_use, int debug,
                     double compile_timeout_s, int verbose, int device);
void tj_runtime_free(void* runtime);
int tj_has_gpu(void* runtime);
/* The runtime's compile target ("sm_90a"); NULL on error. */
const char* tj_arch(void* runtime);
/* The device's properties as JSON; NULL without a GPU. */
const char* tj_device_json(void* runtime);

const char* tj_default_database_path(void);
int tj_use_tuning_database(void* runtime, const char* path, int trials, double seconds,
                           const char* strategy, int repeats);

/* A kernel handle (>= 0), or -1. */
int tj_load(void* runtime, const char* source, const char* name);
/* The kernel's declaration as JSON (KernelInfo). */
const char* tj_kernel_info_json(void* runtime, int kernel);

int tj_launch(void* runtime, int kernel, const int64_t* packed, int64_t packed_len,
              const char* config, void* stream, int synchronize);
/* The configuration a launch would use, and where it came from, as JSON; the arguments are
 * checked against the kernel as a launch checks them. */
const char* tj_resolve_json(void* runtime, int kernel, const int64_t* packed, int64_t packed_len,
                            const char* config);
/* Compiles the variant these arguments and config select; its CompileReport as JSON. */
const char* tj_compile_json(void* runtime, int kernel, const int64_t* packed, int64_t packed_len,
                            const char* config);
/* Tunes the launch's shape unless the database has a winner; TuneOutcome as JSON. */
const char* tj_tune_json(void* runtime, int kernel, const int64_t* packed, int64_t packed_len,
                         const char* config, void* stream, const char* path, int trials,
                         double seconds, const char* strategy, int repeats);

/* ops::paged_sparse_decode on nine tensors (q, k_cache, v_cache, block_table, seq_lens,
 * kept_idx, kept_len, o, lse), outputs given; scale NaN for 1/sqrt(D). check_only: the
 * argument checks alone (no GPU needed). */
int tj_paged_sparse_decode(void* runtime, const int64_t* packed, int64_t packed_len, double scale,
                           const char* config, void* stream, int check_only);

/* ops::repack_int4 on eight tensors: qweight, scales, qzeros, g_idx (an i32 record of 0 when
 * there is none: no act-order), then the outputs qweight_t, scales_out, qzeros_out, perm (all
 * given). group_size: 32, 64, 128 or -1. */
int tj_repack_int4(void* runtime, const int64_t* packed, int64_t packed_len, int64_t group_size,
                   void* stream, int check_only);
/* ops::dequant_linear on six tensors: x, qweight_t, scales, qzeros, perm (repack_int4's), y;
 * group and act_order as repack_int4 made them. */
int tj_dequant_linear(void* runtime, const int64_t* packed, int64_t packed_len, int64_t group,
                      int act_order, const char* config, void* stream, int check_only);
/* ops::int8_linear on four tensors: x, w, scales, y. */
int tj_int8_linear(void* runtime, const int64_t* packed, int64_t packed_len, const char* config,
                   void* stream, int check_only);

/* ops::attention_forward on five tensors: q, k, v, o, lse (all given); scale NaN for
 * 1/sqrt(D), else >= 0; causal and exact 0 or 1. */
int tj_attention_forward(void* runtime, const int64_t* packed, int64_t packed_len, int causal,
                         int exact, double scale, const char* config, void* stream, int check_only);
/* ops::attention_backward on nine tensors: q, k, v, o, lse, dout, then dq, dk, dv (given). */
int tj_attention_backward(void* runtime, const int64_t* packed, int64_t packed_len, int causal,
                          int exact, double scale, const char* config, void* stream,
                          int check_only);
/* Block-sparse (ops::AttentionBlocks): tj_attention_forward's five tensors then block_counts and
 * block_indices (per query block), blocks of `block` positions (16, 32, 64 or 128). */
int tj_attention_forward_sparse(void* runtime, const int64_t* packed, int64_t packed_len,
                                int64_t block, int causal, int exact, double scale,
                                const char* config, void* stream, int check_only);
/* tj_attention_backward's nine tensors then block_counts and block_indices (per key block),
 * optionally followed by the forward's block_counts and block_indices (per query block; 13
 * tensors): given, dq may come from attn_dq_sparse instead of atomics. */
int tj_attention_backward_sparse(void* runtime, const int64_t* packed, int64_t packed_len,
                                 int64_t block, int causal, int exact, double scale,
                                 const char* config, void* stream, int check_only);

/* Ring attention (<tilejit/ring_attention.h>). tj_ring_new_id writes a new communicator id
 * (128 bytes) into `id`; every rank passes the same one to tj_ring_group_new with its rank, and
 * the call returns when all have joined (NULL on error). The calls take a ring's packed
 * tensors as tj_attention_forward and tj_attention_backward do (five and nine); `ring` may be
 * NULL when check_only is 1. */
int tj_ring_new_id(char* id);
void* tj_ring_group_new(void* runtime, const char* id, int world, int rank);
void tj_ring_group_free(void* ring);
int tj_ring_attention_forward(void* runtime, void* ring, const int64_t* packed, int64_t packed_len,
                              int causal, double scale, void* stream, int check_only);
int tj_ring_attention_backward(void* runtime, void* ring, const int64_t* packed, int64_t packed_len,
                               int causal, double scale, void* stream, int check_only);

/* ops::linear_attn_forward on four tensors: q, k, v, o (given); scale NaN for 1/sqrt(Dk). */
int tj_linear_attn_forward(void* runtime, const int64_t* packed, int64_t packed_len, double scale,
                           const char* config, void* stream, int check_only);
/* ops::linear_attn_backward on seven tensors: q, k, v, dout, then dq, dk, dv (given). */
int tj_linear_attn_backward(void* runtime, const int64_t* packed, int64_t packed_len, double scale,
                            const char* config, void* stream, int check_only);
/* ops::hbv_backward_form: the backward's form (0: checkpoints, else the segment length) for B
 * basins, T days and segment (-1: the op's choice); -1 with tj_last_error set for bad values. */
int64_t tj_hbv_backward_form(int64_t b, int64_t t, int64_t segment);
/* ops::hbv_op_form: the form the ops take on `runtime` for B basins of nm components and T days
 * (segment -1: the plan tuned for the shape in the runtime's database where the ops run it,
 * else the untuned choice); -1 with tj_last_error set for bad values. */
int64_t tj_hbv_op_form(void* runtime, int64_t b, int64_t t, int64_t nm, int64_t segment);
/* Days between the states a training forward stores for backward form `form` (its segment
 * length, or the checkpointed reverse's interval for 0): starts is [cdiv(B, 32), cdiv(T, days),
 * 5, 32]. -1 with tj_last_error set for a form that is not one. */
int64_t tj_hbv_starts_interval(int64_t form);
/* ops::hbv_buffer_shape: the shape of work buffer `which` ("starts", "tape" or "maps") for B
 * basins of nm components, T days and backward form `form`, written to shape[0 .. rank) (at most
 * `capacity` entries). Returns the rank, or -1 with tj_last_error set for bad values. */
int tj_hbv_buffer_shape(const char* which, int64_t b, int64_t t, int64_t form, int64_t nm,
                        int64_t* shape, int capacity);
/* ops::hbv_forward on P, TEMP, PET, params, Q (given), then starts when has_starts (a training
 * forward whose backward form is a segment length: [cdiv(B, 32), cdiv(T, SEG), 5, 32] f32). */
int tj_hbv_forward(void* runtime, const int64_t* packed, int64_t packed_len, int training,
                   int64_t segment, int has_starts, const char* config, void* stream,
                   int check_only);
/* ops::hbv_backward on P, TEMP, PET, params, dQ, then d_P, d_TEMP, d_PET, d_params (given),
 * then starts when has_starts (the training forward's, with its segment), then the segment
 * form's work buffers tape and maps when has_work. */
int tj_hbv_backward(void* runtime, const int64_t* packed, int64_t packed_len, int64_t segment,
                    int has_starts, int has_work, const char* config, void* stream, int check_only);
/* ops::gated_delta_rule_forward on q, k, v, g, beta, o, ht (given), then h0 when has_h0;
 * cu_seqlens: cu_seqlens_len offsets of packed sequences (0 and NULL: none); normalize 0 or 1;
 * chunk 16, 32 or 64; scale NaN for 1/sqrt(Dk). */
int tj_gated_delta_rule_forward(void* runtime, const int64_t* packed, int64_t packed_len,
                                int has_h0, const int64_t* cu_seqlens, int64_t cu_seqlens_len,
                                int normalize, int64_t chunk, double scale, const char* config,
                                void* stream, int check_only);

/* ops::gated_delta_rule_backward on q, k, v, g, beta, dout, dq, dk, dv, dg, dbeta, dh0 (given),
 * then h0 when has_h0 and dht when has_dht; the forward's options as above. */
int tj_gated_delta_rule_backward(void* runtime, const int64_t* packed, int64_t packed_len,
                                 int has_h0, int has_dht, const int64_t* cu_seqlens,
                                 int64_t cu_seqlens_len, int normalize, int64_t chunk, double scale,
                                 const char* config, void* stream, int check_only);

#ifdef __cplusplus
}
#endif

#endif
