/* SPDX-License-Identifier: Apache-2.0 */
/**
 * @file plugin.h
 * The nnergy plugin ABI: the only contract between the nnergy host and a plugin library.
 *
 * C99, standard headers <stdint.h>, <stddef.h> and <stdbool.h> only. docs/abi.md explains the
 * rules; the short form:
 *
 *  - One exported symbol per library: nnergy_plugin_negotiate().
 *  - Versions: a plugin is accepted when its ABI major equals the host's and its ABI minor is
 *    less than or equal to the host's. NNERGY_ABI_MAJOR changes only when something is removed,
 *    retyped or reordered; NNERGY_ABI_MINOR changes when something is appended.
 *  - Every struct that crosses the boundary starts with `size_t struct_size` and only ever grows
 *    at its end. A reader uses only the members that lie inside min(struct_size, sizeof(T)).
 *    Members are tagged with the ABI minor that introduced them (`since 1.N`). Arrays of such
 *    structs are laid out `struct_size` bytes apart and walked with NNERGY_ARRAY_AT().
 *  - Errors are `nnergy_status*`: NULL means success. Statuses are always allocated by the host
 *    (nnergy_host_api.status_create); a plugin returns them and the host frees them.
 *  - No C++ exceptions and no C++ standard library types cross the boundary. Strings are UTF-8
 *    pointer + length and are not required to be NUL-terminated.
 *  - Plugins never allocate memory that the host must free, and the host never hands a plugin
 *    memory that the plugin must free: results go out through host-owned sinks.
 *
 * Ownership tags used below:
 *   OWNERSHIP: host       - the host owns the object; the plugin must not free it.
 *   OWNERSHIP: plugin     - the plugin owns the object; the host must not free it.
 *   OWNERSHIP: call       - valid only until the function returns; copy what you keep.
 *   OWNERSHIP: library    - valid for as long as the plugin library stays loaded.
 */
#ifndef NNERGY_PLUGIN_H
#define NNERGY_PLUGIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NNERGY_ABI_MAJOR 1
#define NNERGY_ABI_MINOR 9

/** Size of a struct up to and including its member `last`: what an older reader knows of it. */
#define NNERGY_STRUCT_SIZE(type, last) (offsetof(type, last) + sizeof(((type*)0)->last))

/** True when a struct of declared size `struct_size` contains member `member` of `type`. */
#define NNERGY_HAS_MEMBER(ptr, type, member) \
    ((ptr)->struct_size >= NNERGY_STRUCT_SIZE(type, member))

/**
 * Element `index` of an array of versioned structs starting at `base` (not NULL).
 * Such arrays (a plugin's components, the named values of a configuration) are laid out
 * `struct_size` bytes apart: the writer sets every element's struct_size to sizeof(type) as it
 * was compiled, and the reader steps by the first element's struct_size rather than by its own
 * sizeof, so both agree on where element `index` lies whichever minor each was built against.
 * (since 1.0)
 */
#define NNERGY_ARRAY_AT(type, base, index)                     \
    ((const type*)(const void*)((const unsigned char*)(base) + \
                                (size_t)(index) * (base)->struct_size))

#if defined(_WIN32)
#define NNERGY_PLUGIN_EXPORT __declspec(dllexport)
#else
#define NNERGY_PLUGIN_EXPORT __attribute__((visibility("default")))
#endif

/* ------------------------------------------------------------------------------------------ */
/* Basic types                                                                                 */
/* ------------------------------------------------------------------------------------------ */

/** UTF-8 text, not necessarily NUL-terminated. `data` may be NULL only when `size` is 0. */
typedef struct nnergy_string_view {
    const char* data;
    size_t size;
} nnergy_string_view;

/** Status codes (absl-style). Values are frozen; new codes are appended. */
typedef enum nnergy_status_code {
    NNERGY_CODE_OK = 0,
    NNERGY_CODE_INVALID_ARGUMENT = 1, /**< bad input: a malformed file, a wrong value */
    NNERGY_CODE_NOT_FOUND = 2,        /**< a file, key, node or tensor does not exist */
    NNERGY_CODE_UNIMPLEMENTED = 3,    /**< the operation is not supported by this plugin */
    NNERGY_CODE_FAILED_PRECONDITION = 4,
    NNERGY_CODE_OUT_OF_RANGE = 5,
    NNERGY_CODE_IO_ERROR = 6,
    NNERGY_CODE_INTERNAL = 7, /**< a bug; also what an escaped C++ exception becomes */
    NNERGY_CODE_UNSUPPORTED_VERSION = 8
} nnergy_status_code;

/** Opaque error object. OWNERSHIP: host (created by status_create, freed by the host). */
typedef struct nnergy_status nnergy_status;

typedef enum nnergy_log_level {
    NNERGY_LOG_TRACE = 0,
    NNERGY_LOG_DEBUG = 1,
    NNERGY_LOG_INFO = 2,
    NNERGY_LOG_WARN = 3,
    NNERGY_LOG_ERROR = 4
} nnergy_log_level;

/** Element types. Values are frozen; new types are appended. */
typedef enum nnergy_dtype {
    NNERGY_DTYPE_UNDEFINED = 0,
    NNERGY_DTYPE_FLOAT32 = 1,
    NNERGY_DTYPE_FLOAT16 = 2,
    NNERGY_DTYPE_BFLOAT16 = 3,
    NNERGY_DTYPE_FLOAT64 = 4,
    NNERGY_DTYPE_INT8 = 5,
    NNERGY_DTYPE_UINT8 = 6,
    NNERGY_DTYPE_INT16 = 7,
    NNERGY_DTYPE_UINT16 = 8,
    NNERGY_DTYPE_INT32 = 9,
    NNERGY_DTYPE_UINT32 = 10,
    NNERGY_DTYPE_INT64 = 11,
    NNERGY_DTYPE_UINT64 = 12,
    NNERGY_DTYPE_BOOL = 13,
    NNERGY_DTYPE_FLOAT8_E4M3 = 14,
    NNERGY_DTYPE_FLOAT8_E5M2 = 15,
    NNERGY_DTYPE_INT4 = 16,
    NNERGY_DTYPE_UINT4 = 17,
    NNERGY_DTYPE_TFLOAT32 = 18, /**< only as a compute precision; tensors are never tf32 */
    NNERGY_DTYPE_STRING = 19
} nnergy_dtype;

/** Component kinds: the five interfaces a plugin can implement. */
typedef enum nnergy_component_kind {
    NNERGY_KIND_FRONTEND = 1,
    NNERGY_KIND_PARTITIONER = 2,
    NNERGY_KIND_ARCHITECTURE = 3,
    NNERGY_KIND_ESTIMATOR = 4,
    NNERGY_KIND_REPORTER = 5
} nnergy_component_kind;

/** Type of a configuration value. */
typedef enum nnergy_value_kind {
    NNERGY_VALUE_NULL = 0,
    NNERGY_VALUE_BOOL = 1,
    NNERGY_VALUE_INT = 2,
    NNERGY_VALUE_FLOAT = 3,
    NNERGY_VALUE_STRING = 4,
    NNERGY_VALUE_ARRAY = 5, /**< only in report documents */
    NNERGY_VALUE_OBJECT = 6 /**< only in report documents */
} nnergy_value_kind;

/**
 * One configuration value, flattened from a TOML table: nested tables become dotted names
 * ("memory.dram.bandwidth"), array elements get an index ("rules[2].ops[0]").
 * In hardware descriptions every quantity `{ value, unit, source }` arrives as a FLOAT already
 * converted to SI base units (bytes, seconds, FLOP/s, B/s, W, J, Hz); its source stays with the
 * host for the report.
 * Arrays of named values are walked with NNERGY_ARRAY_AT (the host may be of a newer minor
 * whose nnergy_named_value is larger than the plugin's).
 * OWNERSHIP: host; the array and every string in it stay valid for the lifetime of the
 * component instance it was given to.
 */
typedef struct nnergy_named_value {
    size_t struct_size;
    nnergy_string_view name;
    nnergy_value_kind kind; /**< BOOL, INT, FLOAT or STRING */
    bool bool_value;
    int64_t int_value;
    double float_value; /**< also set (converted) for INT values */
    nnergy_string_view string_value;
    nnergy_string_view file; /**< the file the value came from, for error messages */
    uint32_t line;           /**< 1-based line in that file; 0 when unknown */
} nnergy_named_value;

/* ------------------------------------------------------------------------------------------ */
/* Opaque host objects                                                                         */
/* ------------------------------------------------------------------------------------------ */

/** Per-instance context the host gives to every component (logging, identity). OWNERSHIP: host. */
typedef struct nnergy_host_context nnergy_host_context;
/** A graph under construction by a frontend. OWNERSHIP: host. */
typedef struct nnergy_graph_builder nnergy_graph_builder;
/** A loaded graph with every shape bound and every node counted. Read-only. OWNERSHIP: host. */
typedef struct nnergy_graph nnergy_graph;
/** A partition under construction by a partitioner. OWNERSHIP: host. */
typedef struct nnergy_partition_builder nnergy_partition_builder;
/** A finished partition: kernels with their statistics. Read-only. OWNERSHIP: host. */
typedef struct nnergy_partition nnergy_partition;
/** One kernel mapped onto one architecture (written by the architecture). OWNERSHIP: host. */
typedef struct nnergy_mapping nnergy_mapping;
/** Where an estimator writes its metrics. OWNERSHIP: host. */
typedef struct nnergy_results nnergy_results;
/** A node of the report document tree (JSON-like). Read-only. OWNERSHIP: host. */
typedef struct nnergy_value nnergy_value;
/** Where a reporter writes its bytes (a file or standard output). OWNERSHIP: host. */
typedef struct nnergy_output nnergy_output;
/** A TOML file read by the host on a plugin's behalf. OWNERSHIP: host. */
typedef struct nnergy_config_file nnergy_config_file;
/** A name the host keeps one copy of for the rest of the process (since 1.7): see
 *  nnergy_host_api::name_intern. */
typedef struct nnergy_name nnergy_name;

/** Tensor index meaning "no tensor" (an omitted optional input). */
#define NNERGY_NO_TENSOR ((uint32_t)0xFFFFFFFFu)
/** Node index meaning "no node" (the producer of a graph input or initializer). */
#define NNERGY_NO_NODE ((uint32_t)0xFFFFFFFFu)
/** Dimension value meaning "unknown". Bound graphs handed to plugins contain none. */
#define NNERGY_DIM_UNKNOWN ((int64_t)-1)

/** Operation counts of one node, computed by the host under docs/counting.md. */
typedef struct nnergy_op_counts {
    size_t struct_size;
    double macs;         /**< multiply-accumulates of conv/gemm/matmul-like ops */
    double flops;        /**< floating point operations, 2 per MAC plus elementwise work */
    double input_bytes;  /**< activations read (initializers excluded) */
    double output_bytes; /**< activations written */
    double weight_bytes; /**< initializers read */
    double params;       /**< parameter elements held by initializers this node reads first */
    bool counted;        /**< false for an op the host cannot count (listed as unknown) */
} nnergy_op_counts;

/** Statistics of one kernel, computed by the host from its member nodes. */
typedef struct nnergy_kernel_stats {
    size_t struct_size;
    double macs;
    double flops;
    double input_bytes;  /**< activations entering the kernel from outside it */
    double output_bytes; /**< activations leaving it (consumed elsewhere, or graph outputs) */
    double weight_bytes;
    double arithmetic_intensity; /**< flops / (input + output + weight bytes) */
    /* Available parallelism of the kernel's output (the anchor op's output tensor). */
    double batch;
    double channels; /**< output channels or output features */
    double spatial;  /**< product of the remaining output dims */
    double total_threads;
    int64_t groups; /**< convolution groups; 1 otherwise */
    bool is_depthwise;
    uint32_t anchor_node; /**< member node that dominates the work (most FLOPs) */
    bool all_counted;     /**< false when a member op is unknown to the counter */
} nnergy_kernel_stats;

/** nnergy_map_options::flags (since 1.5). */
/** The caller keeps only the run's totals (a sweep, a calibration's candidates): architectures
 *  may leave out the `explanation` text, estimators the per-kernel keys no later estimator
 *  reads (docs/abi.md §9, "Totals only"). Every total must be the same as without it. */
#define NNERGY_MAP_TOTALS_ONLY 1u
/** The caller reads no advice (since 1.8; a sweep, a calibration's candidates): estimators may
 *  leave out their advice, the `advice` text and the `advice.*` totals, and the work only it
 *  needs (docs/abi.md §9, "No advice"). Every other total must be the same as without it. */
#define NNERGY_MAP_NO_ADVICE 2u

/** What an architecture is asked to map (and, through nnergy_estimate_input::options, what an
 *  estimator is asked to estimate). */
typedef struct nnergy_map_options {
    size_t struct_size;
    nnergy_dtype precision; /**< compute precision requested by the pipeline */
    /** Since 1.5, optional (0 when absent): NNERGY_MAP_* bits. Unknown bits are ignored. */
    uint64_t flags;
} nnergy_map_options;

/* ------------------------------------------------------------------------------------------ */
/* The host API: functions the host implements and plugins call                               */
/* ------------------------------------------------------------------------------------------ */

/**
 * Every function pointer here is non-NULL in a host of the minor the plugin negotiated (a plugin
 * built against a newer minor than the host is rejected, so it never sees a missing member).
 * THREADING: all functions are safe to call from any thread, except that one builder, mapping,
 * results or output object must not be used from two threads at once.
 * Functions returning nnergy_status* return NULL on success.
 */
typedef struct nnergy_host_api {
    size_t struct_size;

    /* ---- statuses and logging (since 1.0) ---- */

    /** Creates an error. OWNERSHIP: the returned status belongs to the host; a plugin hands it
     *  back by returning it, or releases it with status_release. Never returns NULL. */
    nnergy_status* (*status_create)(nnergy_status_code code, nnergy_string_view message);
    /** Frees a status the plugin decided not to return. NULL is accepted. */
    void (*status_release)(nnergy_status* status);
    /** Reads a status (one returned by a host function, say). OWNERSHIP: host, valid until the
     *  status is released. */
    nnergy_status_code (*status_code)(const nnergy_status* status);
    nnergy_string_view (*status_message)(const nnergy_status* status);
    /** Logs a message under the component's name. `ctx` may be NULL (negotiate time). */
    void (*log)(nnergy_host_context* ctx, nnergy_log_level level, nnergy_string_view message);

    /* ---- reading TOML files (since 1.0) ---- */

    /** Reads and flattens a TOML file (the rules the plugin refers to in its configuration).
     *  Relative paths are resolved against the directory of the pipeline file.
     *  OWNERSHIP: *out belongs to the host until config_file_release. */
    nnergy_status* (*config_file_read)(nnergy_host_context* ctx, nnergy_string_view path,
                                       nnergy_config_file** out);
    size_t (*config_file_size)(const nnergy_config_file* file);
    /** OWNERSHIP: host, valid until config_file_release. */
    const nnergy_named_value* (*config_file_at)(const nnergy_config_file* file, size_t index);
    void (*config_file_release)(nnergy_config_file* file);

    /* ---- building a graph: frontends (since 1.0) ---- */

    /** Adds a tensor. `dims` holds `rank` entries; an entry with a non-empty `symbols[i]` is a
     *  symbolic dimension (dims[i] ignored); NNERGY_DIM_UNKNOWN marks an unknown dimension.
     *  `symbols` may be NULL when every dimension is concrete. `has_shape` false means the shape
     *  is to be inferred. Tensor names are unique: the host checks them all once the frontend's
     *  load returns (a duplicate then fails the load, naming the tensor), not at this call. */
    nnergy_status* (*graph_add_tensor)(nnergy_graph_builder* b, nnergy_string_view name,
                                       nnergy_dtype dtype, bool has_shape, size_t rank,
                                       const int64_t* dims, const nnergy_string_view* symbols,
                                       uint32_t* out_tensor);
    /** Marks a tensor as an initializer (a weight or constant); its bytes are never needed. */
    nnergy_status* (*graph_set_initializer)(nnergy_graph_builder* b, uint32_t tensor);
    /** Gives an integer initializer its values: shape constants (Reshape targets, Slice
     *  bounds, ...) whose values shape inference needs. Element count must match the shape. */
    nnergy_status* (*graph_set_initializer_values)(nnergy_graph_builder* b, uint32_t tensor,
                                                   const int64_t* values, size_t count);
    /** Adds a graph input or output (in call order). */
    nnergy_status* (*graph_add_input)(nnergy_graph_builder* b, uint32_t tensor);
    nnergy_status* (*graph_add_output)(nnergy_graph_builder* b, uint32_t tensor);
    /** Adds a node. `inputs` may contain NNERGY_NO_TENSOR for an omitted optional input.
     *  `domain` is empty for the default ONNX domain. */
    nnergy_status* (*graph_add_node)(nnergy_graph_builder* b, nnergy_string_view name,
                                     nnergy_string_view op_type, nnergy_string_view domain,
                                     const uint32_t* inputs, size_t input_count,
                                     const uint32_t* outputs, size_t output_count,
                                     uint32_t* out_node);
    nnergy_status* (*node_set_attr_int)(nnergy_graph_builder* b, uint32_t node,
                                        nnergy_string_view name, int64_t value);
    nnergy_status* (*node_set_attr_float)(nnergy_graph_builder* b, uint32_t node,
                                          nnergy_string_view name, double value);
    nnergy_status* (*node_set_attr_string)(nnergy_graph_builder* b, uint32_t node,
                                           nnergy_string_view name, nnergy_string_view value);
    nnergy_status* (*node_set_attr_ints)(nnergy_graph_builder* b, uint32_t node,
                                         nnergy_string_view name, const int64_t* values,
                                         size_t count);
    nnergy_status* (*node_set_attr_floats)(nnergy_graph_builder* b, uint32_t node,
                                           nnergy_string_view name, const double* values,
                                           size_t count);
    /** Graph-level metadata ("name", "producer", "opset", ...). */
    nnergy_status* (*graph_set_metadata)(nnergy_graph_builder* b, nnergy_string_view key,
                                         nnergy_string_view value);
    /** Records the line a tensor/node came from, so host errors can name it. */
    nnergy_status* (*node_set_source_line)(nnergy_graph_builder* b, uint32_t node, uint32_t line);

    /* ---- reading a bound graph (since 1.0) ----
     * Nodes are numbered 0..node_count-1 in topological order; tensors 0..tensor_count-1.
     * Out-of-range indices return empty values (0, empty string, NNERGY_NO_TENSOR). */

    size_t (*graph_node_count)(const nnergy_graph* g);
    size_t (*graph_tensor_count)(const nnergy_graph* g);
    nnergy_string_view (*graph_name)(const nnergy_graph* g);
    nnergy_string_view (*node_name)(const nnergy_graph* g, uint32_t node);
    nnergy_string_view (*node_op_type)(const nnergy_graph* g, uint32_t node);
    nnergy_string_view (*node_domain)(const nnergy_graph* g, uint32_t node);
    size_t (*node_input_count)(const nnergy_graph* g, uint32_t node);
    uint32_t (*node_input)(const nnergy_graph* g, uint32_t node, size_t index);
    size_t (*node_output_count)(const nnergy_graph* g, uint32_t node);
    uint32_t (*node_output)(const nnergy_graph* g, uint32_t node, size_t index);
    /** Attribute lookups return false when the node has no such attribute of that type.
     *  OWNERSHIP: strings and arrays are host-owned and live as long as the graph. */
    bool (*node_attr_int)(const nnergy_graph* g, uint32_t node, nnergy_string_view name,
                          int64_t* out);
    bool (*node_attr_float)(const nnergy_graph* g, uint32_t node, nnergy_string_view name,
                            double* out);
    bool (*node_attr_string)(const nnergy_graph* g, uint32_t node, nnergy_string_view name,
                             nnergy_string_view* out);
    bool (*node_attr_ints)(const nnergy_graph* g, uint32_t node, nnergy_string_view name,
                           const int64_t** out_values, size_t* out_count);
    /** Fills `out` up to min(out->struct_size, host size). */
    void (*node_counts)(const nnergy_graph* g, uint32_t node, nnergy_op_counts* out);
    nnergy_string_view (*tensor_name)(const nnergy_graph* g, uint32_t tensor);
    nnergy_dtype (*tensor_dtype)(const nnergy_graph* g, uint32_t tensor);
    size_t (*tensor_rank)(const nnergy_graph* g, uint32_t tensor);
    int64_t (*tensor_dim)(const nnergy_graph* g, uint32_t tensor, size_t axis);
    double (*tensor_bytes)(const nnergy_graph* g, uint32_t tensor);
    bool (*tensor_is_initializer)(const nnergy_graph* g, uint32_t tensor);
    /** Integer values of a constant tensor (shape constants, and values constant folding
     *  computed); false when the values are not known. OWNERSHIP: host, live as the graph. */
    bool (*tensor_int_values)(const nnergy_graph* g, uint32_t tensor, const int64_t** out_values,
                              size_t* out_count);
    /** Producing node, or NNERGY_NO_NODE for graph inputs and initializers. */
    uint32_t (*tensor_producer)(const nnergy_graph* g, uint32_t tensor);
    size_t (*tensor_consumer_count)(const nnergy_graph* g, uint32_t tensor);
    uint32_t (*tensor_consumer)(const nnergy_graph* g, uint32_t tensor, size_t index);
    bool (*tensor_is_graph_output)(const nnergy_graph* g, uint32_t tensor);

    /* ---- building a partition: partitioners (since 1.0) ---- */

    /** Adds a kernel made of `nodes` (indices into the graph). Every node must end up in exactly
     *  one kernel; the host checks that kernels form an acyclic graph. `pattern` names the fusion
     *  rule that produced the kernel ("conv_bn_relu"); it may be empty. */
    nnergy_status* (*partition_add_kernel)(nnergy_partition_builder* b, nnergy_string_view name,
                                           nnergy_string_view pattern, const uint32_t* nodes,
                                           size_t node_count, uint32_t* out_kernel);

    /* ---- reading a partition (since 1.0) ---- */

    size_t (*partition_kernel_count)(const nnergy_partition* p);
    nnergy_string_view (*kernel_name)(const nnergy_partition* p, uint32_t kernel);
    nnergy_string_view (*kernel_pattern)(const nnergy_partition* p, uint32_t kernel);
    size_t (*kernel_node_count)(const nnergy_partition* p, uint32_t kernel);
    uint32_t (*kernel_node)(const nnergy_partition* p, uint32_t kernel, size_t index);
    /** Fills `out` up to min(out->struct_size, host size). */
    void (*kernel_stats)(const nnergy_partition* p, uint32_t kernel, nnergy_kernel_stats* out);
    /** Kernels this kernel reads from (its producers), in increasing order. Kernels are
     *  numbered in a topological order, so every dependency has a smaller number. */
    size_t (*kernel_dependency_count)(const nnergy_partition* p, uint32_t kernel);
    uint32_t (*kernel_dependency)(const nnergy_partition* p, uint32_t kernel, size_t index);

    /* ---- mappings: architectures write, estimators read (since 1.0) ----
     * Well-known keys are documented in docs/abi.md ("Mapping keys"). Units are SI and part of
     * the key's name where it has one ("effective_flops_per_s", "launch_overhead_s"). */

    void (*mapping_set_number)(nnergy_mapping* m, nnergy_string_view key, double value);
    void (*mapping_set_text)(nnergy_mapping* m, nnergy_string_view key, nnergy_string_view value);
    /** Adds traffic at one memory level ("dram", "l2", ...): bytes moved and the bandwidth the
     *  architecture expects to achieve for this kernel at that level, in bytes per second. */
    void (*mapping_add_level)(nnergy_mapping* m, nnergy_string_view level, double bytes,
                              double bandwidth_bytes_per_s);
    bool (*mapping_get_number)(const nnergy_mapping* m, nnergy_string_view key, double* out);
    bool (*mapping_get_text)(const nnergy_mapping* m, nnergy_string_view key,
                             nnergy_string_view* out);
    size_t (*mapping_level_count)(const nnergy_mapping* m);
    void (*mapping_level)(const nnergy_mapping* m, size_t index, nnergy_string_view* out_level,
                          double* out_bytes, double* out_bandwidth_bytes_per_s);

    /* ---- results: estimators write (since 1.0) ----
     * Keys carry their unit ("latency_s", "energy_j", "peak_memory_bytes"). Setting a key twice
     * overwrites it. */

    void (*results_set_kernel_number)(nnergy_results* r, uint32_t kernel, nnergy_string_view key,
                                      double value);
    void (*results_set_kernel_text)(nnergy_results* r, uint32_t kernel, nnergy_string_view key,
                                    nnergy_string_view value);
    void (*results_set_total)(nnergy_results* r, nnergy_string_view key, double value);
    void (*results_set_total_text)(nnergy_results* r, nnergy_string_view key,
                                   nnergy_string_view value);

    /* ---- report documents: reporters read (since 1.0) ----
     * A JSON-like tree, described by docs/report.md. Getters of the wrong kind return 0/empty;
     * value_get returns NULL for a missing key. */

    nnergy_value_kind (*value_kind)(const nnergy_value* v);
    bool (*value_bool)(const nnergy_value* v);
    int64_t (*value_int)(const nnergy_value* v);
    double (*value_float)(const nnergy_value* v); /**< also converts INT values */
    nnergy_string_view (*value_string)(const nnergy_value* v);
    /** Number of elements of an ARRAY or members of an OBJECT. */
    size_t (*value_size)(const nnergy_value* v);
    const nnergy_value* (*value_at)(const nnergy_value* v, size_t index);
    /** Key of the index-th member of an OBJECT (members keep their insertion order). */
    nnergy_string_view (*value_key)(const nnergy_value* v, size_t index);
    const nnergy_value* (*value_get)(const nnergy_value* v, nnergy_string_view key);

    /** Appends bytes to a reporter's output. */
    nnergy_status* (*output_write)(nnergy_output* out, nnergy_string_view bytes);

    /* ---- since 1.1 ---- */

    /** Marks an initializer as a constant of the model's code (an ONNX Constant node's value,
     *  such as GELU's 1/sqrt(2)) rather than a trained parameter: its bytes still count as
     *  weight bytes, its elements are not parameters. Frontends: call after
     *  graph_set_initializer. */
    nnergy_status* (*graph_set_constant)(nnergy_graph_builder* b, uint32_t tensor);

    /* ---- since 1.3: architectural events and results of earlier estimators ---- */

    /** Counts `count` occurrences of an architectural event of the kernel: `category` is what
     *  spends the energy ("compute", "memory", "control", or a vendor's own), `event` what
     *  happens ("tensor_core.float16" FLOPs, "l2" bytes, "launch" kernels). Both are free text,
     *  so a vendor adds categories and events without an ABI change. Adding a pair again adds
     *  to its count. The energy estimator prices each event with the hardware file's
     *  energy.<category>.<event> (docs/hardware.md, "Energy"). A negative or non-finite count
     *  is ignored. */
    void (*mapping_add_event)(nnergy_mapping* m, nnergy_string_view category,
                              nnergy_string_view event, double count);
    size_t (*mapping_event_count)(const nnergy_mapping* m);
    /** OWNERSHIP: the strings are host-owned and live as long as the mapping. */
    void (*mapping_event)(const nnergy_mapping* m, size_t index, nnergy_string_view* out_category,
                          nnergy_string_view* out_event, double* out_count);
    /** Reads what estimators that ran earlier in the pipeline wrote (estimators run in the
     *  order the pipeline lists them, on one results object per architecture): the energy
     *  estimator reads the roofline's latency. False when the key is not set. */
    bool (*results_get_kernel_number)(const nnergy_results* r, uint32_t kernel,
                                      nnergy_string_view key, double* out);
    bool (*results_get_total)(const nnergy_results* r, nnergy_string_view key, double* out);
    bool (*results_get_total_text)(const nnergy_results* r, nnergy_string_view key,
                                   nnergy_string_view* out);

    /* ---- since 1.4: reporter outputs ---- */

    /** True when the output may carry terminal colour: it is standard output, standard output
     *  is a terminal, NO_COLOR is unset or empty (https://no-color.org) and TERM is not "dumb".
     *  False for files and for NULL. */
    bool (*output_allows_color)(const nnergy_output* out);
    /** The file the output goes to; empty for standard output.
     *  OWNERSHIP: host; valid until the report call returns. */
    nnergy_string_view (*output_path)(const nnergy_output* out);
    /** A second output beside `out`, for a reporter that writes several files (a CSV report's
     *  totals): the file `<out's path without its extension><suffix>` ("report.csv" with
     *  suffix "-totals.csv" is "report-totals.csv"); when `out` is standard output, the
     *  companion's bytes follow out's on standard output. `suffix` must be non-empty and hold no
     *  path separator. The same suffix twice gives the same output.
     *  OWNERSHIP: host; *out_companion is valid until the report call returns. */
    nnergy_status* (*output_companion)(nnergy_output* out, nnergy_string_view suffix,
                                       nnergy_output** out_companion);

    /* ---- since 1.5: identities for what plugins derive from a graph or partition ---- */

    /** A number naming the bound graph for the rest of the process: the host never changes a
     *  bound graph a plugin has seen and never gives two of them the same number, so a plugin
     *  may key what it derives from the graph alone (an estimator's reading of its tensors,
     *  reused across the devices and precisions of a sweep) on it. 0: the graph has none;
     *  derive afresh. */
    uint64_t (*graph_identity)(const nnergy_graph* g);
    /** The same for a partition: unchanged once a plugin has seen it, never shared by two
     *  partitions. 0: none. */
    uint64_t (*partition_identity)(const nnergy_partition* p);

    /* ---- since 1.6: building large graphs ---- */

    /** Says how many tensors and nodes the graph being built will hold in all, so that the host
     *  sizes its storage once instead of growing it step by step (which, on a graph of a
     *  million nodes, holds the old and the new storage at once). A hint: optional, callable
     *  any time before the last add, and never a limit; the host may ignore it (it does for
     *  counts beyond 2^28). */
    nnergy_status* (*graph_reserve)(nnergy_graph_builder* b, size_t tensors, size_t nodes);

    /* ---- since 1.7: interned names for the calls made once per kernel ---- */

    /** The host's copy of `name`: the same pointer for the same text wherever and whenever it
     *  is asked for, for the rest of the process. A plugin interns each name it uses once (the
     *  SDK's sdk::key does) and passes the pointer where a call made for every kernel of every
     *  evaluation would pass the text, so that the host compares pointers instead of texts.
     *  NULL for an empty name, or when the host cannot store it. Thread-safe.
     *  OWNERSHIP: host; valid until the process ends. */
    const nnergy_name* (*name_intern)(nnergy_string_view name);
    /** mapping_set_number, mapping_set_text, mapping_get_number, mapping_get_text and
     *  mapping_add_event with interned names: the same effect as the text forms (a key set one
     *  way reads back either way, and mapping_event and the report give its text). A NULL name
     *  does nothing (set, add) or is not found (get). */
    void (*mapping_set_number_named)(nnergy_mapping* m, const nnergy_name* key, double value);
    void (*mapping_set_text_named)(nnergy_mapping* m, const nnergy_name* key,
                                   nnergy_string_view value);
    bool (*mapping_get_number_named)(const nnergy_mapping* m, const nnergy_name* key, double* out);
    bool (*mapping_get_text_named)(const nnergy_mapping* m, const nnergy_name* key,
                                   nnergy_string_view* out);
    void (*mapping_add_event_named)(nnergy_mapping* m, const nnergy_name* category,
                                    const nnergy_name* event, double count);
} nnergy_host_api;

/* ------------------------------------------------------------------------------------------ */
/* Interfaces: tables the plugin implements and the host calls                                 */
/* ------------------------------------------------------------------------------------------ */

/**
 * What a component instance is created with.
 * OWNERSHIP: host. `ctx` and every value stay valid until the instance is destroyed.
 */
typedef struct nnergy_create_args {
    size_t struct_size;
    nnergy_host_context* ctx;
    const nnergy_host_api* api;
    /** The component's table from the pipeline, flattened (the `plugin` key removed).
     *  Walk with NNERGY_ARRAY_AT. */
    const nnergy_named_value* config;
    size_t config_count;
    /** Architectures only: the hardware description, flattened, quantities in SI units.
     *  Walk with NNERGY_ARRAY_AT. */
    const nnergy_named_value* hardware;
    size_t hardware_count;
    /** Architectures and estimators (since 1.2): the pipeline's execution-runtime profile
     *  (docs/pipelines.md, [runtime]), flattened, quantities in SI units; runtime_count is 0
     *  when the pipeline names none. Walk with NNERGY_ARRAY_AT. */
    const nnergy_named_value* runtime;
    size_t runtime_count;
} nnergy_create_args;

/** Reads a model file into a graph. THREADING: one call at a time per instance. */
typedef struct nnergy_frontend_vtbl {
    size_t struct_size;
    /** Loads `path` into the builder. Errors name the file and the line or node at fault. */
    nnergy_status* (*load)(void* self, nnergy_string_view path, nnergy_graph_builder* builder);
    /** File name suffixes this frontend reads, ';'-separated (".json;.graph.json"), used to pick
     *  a frontend by extension. Optional. OWNERSHIP: library. */
    nnergy_string_view file_extensions;
} nnergy_frontend_vtbl;

/** Groups nodes into kernels. THREADING: one call at a time per instance. */
typedef struct nnergy_partitioner_vtbl {
    size_t struct_size;
    nnergy_status* (*partition)(void* self, const nnergy_graph* graph,
                                nnergy_partition_builder* out);
} nnergy_partitioner_vtbl;

/** Maps kernels onto one hardware description. THREADING: map_kernel may be called from
 *  several threads at once on the same instance; it must not mutate shared state. */
typedef struct nnergy_architecture_vtbl {
    size_t struct_size;
    /** Describes how `kernel` runs: see the mapping keys in docs/abi.md. A precision the hardware
     *  lacks is an NNERGY_CODE_UNIMPLEMENTED error. */
    nnergy_status* (*map_kernel)(void* self, const nnergy_graph* graph,
                                 const nnergy_partition* partition, uint32_t kernel,
                                 const nnergy_map_options* options, nnergy_mapping* out);
} nnergy_architecture_vtbl;

/** Input of one estimation: a partitioned graph mapped onto one architecture. */
typedef struct nnergy_estimate_input {
    size_t struct_size;
    const nnergy_graph* graph;
    const nnergy_partition* partition;
    /** One mapping per kernel, indexed by kernel number. */
    const nnergy_mapping* const* mappings;
    size_t mapping_count;
    /** The architecture's hardware description (same as its create args). NNERGY_ARRAY_AT. */
    const nnergy_named_value* hardware;
    size_t hardware_count;
    const nnergy_map_options* options;
    /** Since 1.9: a number naming the hardware description (`hardware`, `hardware_count`) for
     *  the rest of the process. The host never changes the values it names and never gives
     *  another description the same number, even one whose values lie at the same addresses (a
     *  calibration writes each candidate over the last), so an estimator may key what it
     *  derives from the hardware alone (its energy table, a runtime's costs on that machine) on
     *  it. 0: none; derive afresh (docs/abi.md §9). */
    uint64_t hardware_identity;
} nnergy_estimate_input;

/** Turns mappings into metrics. THREADING: estimate may be called from several threads at once
 *  on the same instance. */
typedef struct nnergy_estimator_vtbl {
    size_t struct_size;
    nnergy_status* (*estimate)(void* self, const nnergy_estimate_input* input, nnergy_results* out);
} nnergy_estimator_vtbl;

/** Formats the report document. THREADING: one call at a time per instance. */
typedef struct nnergy_reporter_vtbl {
    size_t struct_size;
    nnergy_status* (*report)(void* self, const nnergy_value* report, nnergy_output* out);
} nnergy_reporter_vtbl;

/** One component a library provides. OWNERSHIP: library (static data).
 *  Members after `vtbl` are optional: a struct that ends earlier is valid.
 *  Descriptors are read from nnergy_plugin_info.components with NNERGY_ARRAY_AT: set
 *  struct_size to sizeof(nnergy_component) of the header the plugin is built with. */
typedef struct nnergy_component {
    size_t struct_size;
    nnergy_component_kind kind;
    /** Unique dotted name with a vendor prefix: "nnergy.frontend.json_graph", "acme.arch.npu3". */
    nnergy_string_view name;
    /** Creates an instance. OWNERSHIP: *out_self belongs to the plugin until destroy. */
    nnergy_status* (*create)(const nnergy_create_args* args, void** out_self);
    /** Destroys an instance. NULL self is accepted. */
    void (*destroy)(void* self);
    /** Points to the kind's table: nnergy_frontend_vtbl for NNERGY_KIND_FRONTEND, ... */
    const void* vtbl;
    /** One line for `nnergy plugins`. Optional. */
    nnergy_string_view description;
} nnergy_component;

/** What the host tells the plugin at negotiation. OWNERSHIP: host, valid while loaded. */
typedef struct nnergy_host_info {
    size_t struct_size; /* frozen for every ABI major */
    uint32_t abi_major; /* frozen for every ABI major */
    uint32_t abi_minor; /* frozen for every ABI major */
    /* frozen for every ABI major, with nnergy_host_api.status_create: a plugin of another major
     * can still return a status saying why it refuses to load */
    const nnergy_host_api* api;
    nnergy_string_view host_version;
} nnergy_host_info;

/** What the plugin tells the host. The host allocates it and sets struct_size; the plugin fills
 *  the members inside min(struct_size, its sizeof) and may lower struct_size to its own sizeof.
 *  Members after `component_count` are optional. OWNERSHIP of pointed-to data: library. */
typedef struct nnergy_plugin_info {
    size_t struct_size; /* frozen for every ABI major */
    uint32_t abi_major; /* frozen for every ABI major: the plugin's NNERGY_ABI_MAJOR */
    uint32_t abi_minor; /* frozen for every ABI major: the plugin's NNERGY_ABI_MINOR */
    nnergy_string_view name;
    nnergy_string_view version;
    nnergy_string_view vendor;
    nnergy_string_view license; /**< SPDX identifier; required */
    /** `component_count` descriptors, `components[0].struct_size` bytes apart (NNERGY_ARRAY_AT). */
    const nnergy_component* components;
    size_t component_count;
    nnergy_string_view description; /**< optional */
} nnergy_plugin_info;

/**
 * The single exported entry point of every plugin library.
 * Fills `out` and returns NULL, or returns an error status created through host->api.
 * Must be cheap and free of side effects: the host calls it when listing plugins.
 * THREADING: called once per load, from one thread.
 */
typedef nnergy_status* (*nnergy_plugin_negotiate_fn)(const nnergy_host_info* host,
                                                     nnergy_plugin_info* out);
#define NNERGY_PLUGIN_ENTRY_SYMBOL "nnergy_plugin_negotiate"

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* NNERGY_PLUGIN_H */
