/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The layout of every struct of <nnergy/plugin.h> on LP64 targets (x86-64, aarch64), as X-macro
 * lists shared by the C and the C++ side of the layout test:
 *
 *   NNERGY_ABI_STRUCTS(X)  X(struct, sizeof)
 *   NNERGY_ABI_MEMBERS(X)  X(struct, member, offsetof, member type)
 *
 * The numbers are worked out by hand from the LP64 rules: pointers, size_t, int64_t and double
 * take 8 bytes aligned to 8; enums and uint32_t take 4 aligned to 4; bool takes 1; a string view
 * is {pointer, size_t} = 16 bytes aligned to 8; a struct's size is rounded up to its largest
 * alignment. For example nnergy_named_value: struct_size 0..8, name 8..24, kind 24..28,
 * bool_value 28..29, int_value aligned up to 32..40, float_value 40..48, string_value 48..64,
 * file 64..80, line 80..84, rounded up to 88. nnergy_host_api is struct_size followed by 97
 * function pointers (78 in ABI 1.0, graph_set_constant appended in 1.1, six event and results
 * readers in 1.3, three output functions in 1.4, two identities in 1.5, graph_reserve in 1.6,
 * name_intern and five mapping functions taking interned names in 1.7), so member i (counting
 * struct_size as 0) sits at 8 * i and the size is 8 * 98 = 784.
 *
 * Changing the ABI deliberately (appending a member under a new minor) means updating this file
 * in the same change; anything else that makes the test fail is an accidental ABI break.
 */
#ifndef NNERGY_TESTS_ABI_LAYOUT_H
#define NNERGY_TESTS_ABI_LAYOUT_H

#include <nnergy/plugin.h>

/* clang-format off */
#define NNERGY_ABI_STRUCTS(X) \
    X(nnergy_string_view, 16) \
    X(nnergy_named_value, 88) \
    X(nnergy_op_counts, 64) \
    X(nnergy_kernel_stats, 112) \
    X(nnergy_map_options, 24) \
    X(nnergy_host_api, 784) \
    X(nnergy_create_args, 72) \
    X(nnergy_frontend_vtbl, 32) \
    X(nnergy_partitioner_vtbl, 16) \
    X(nnergy_architecture_vtbl, 16) \
    X(nnergy_estimate_input, 72) \
    X(nnergy_estimator_vtbl, 16) \
    X(nnergy_reporter_vtbl, 16) \
    X(nnergy_component, 72) \
    X(nnergy_host_info, 40) \
    X(nnergy_plugin_info, 112)

#define NNERGY_ABI_MEMBERS(X) \
    X(nnergy_string_view, data, 0, const char*) \
    X(nnergy_string_view, size, 8, size_t) \
    X(nnergy_named_value, struct_size, 0, size_t) \
    X(nnergy_named_value, name, 8, nnergy_string_view) \
    X(nnergy_named_value, kind, 24, nnergy_value_kind) \
    X(nnergy_named_value, bool_value, 28, bool) \
    X(nnergy_named_value, int_value, 32, int64_t) \
    X(nnergy_named_value, float_value, 40, double) \
    X(nnergy_named_value, string_value, 48, nnergy_string_view) \
    X(nnergy_named_value, file, 64, nnergy_string_view) \
    X(nnergy_named_value, line, 80, uint32_t) \
    X(nnergy_op_counts, struct_size, 0, size_t) \
    X(nnergy_op_counts, macs, 8, double) \
    X(nnergy_op_counts, flops, 16, double) \
    X(nnergy_op_counts, input_bytes, 24, double) \
    X(nnergy_op_counts, output_bytes, 32, double) \
    X(nnergy_op_counts, weight_bytes, 40, double) \
    X(nnergy_op_counts, params, 48, double) \
    X(nnergy_op_counts, counted, 56, bool) \
    X(nnergy_kernel_stats, struct_size, 0, size_t) \
    X(nnergy_kernel_stats, macs, 8, double) \
    X(nnergy_kernel_stats, flops, 16, double) \
    X(nnergy_kernel_stats, input_bytes, 24, double) \
    X(nnergy_kernel_stats, output_bytes, 32, double) \
    X(nnergy_kernel_stats, weight_bytes, 40, double) \
    X(nnergy_kernel_stats, arithmetic_intensity, 48, double) \
    X(nnergy_kernel_stats, batch, 56, double) \
    X(nnergy_kernel_stats, channels, 64, double) \
    X(nnergy_kernel_stats, spatial, 72, double) \
    X(nnergy_kernel_stats, total_threads, 80, double) \
    X(nnergy_kernel_stats, groups, 88, int64_t) \
    X(nnergy_kernel_stats, is_depthwise, 96, bool) \
    X(nnergy_kernel_stats, anchor_node, 100, uint32_t) \
    X(nnergy_kernel_stats, all_counted, 104, bool) \
    X(nnergy_map_options, struct_size, 0, size_t) \
    X(nnergy_map_options, precision, 8, nnergy_dtype) \
    X(nnergy_map_options, flags, 16, uint64_t) \
    X(nnergy_host_api, struct_size, 0, size_t) \
    X(nnergy_host_api, status_create, 8, nnergy_status* (*)(nnergy_status_code, nnergy_string_view)) \
    X(nnergy_host_api, status_release, 16, void (*)(nnergy_status*)) \
    X(nnergy_host_api, status_code, 24, nnergy_status_code (*)(const nnergy_status*)) \
    X(nnergy_host_api, status_message, 32, nnergy_string_view (*)(const nnergy_status*)) \
    X(nnergy_host_api, log, 40, void (*)(nnergy_host_context*, nnergy_log_level, nnergy_string_view)) \
    X(nnergy_host_api, config_file_read, 48, nnergy_status* (*)(nnergy_host_context*, nnergy_string_view, nnergy_config_file**)) \
    X(nnergy_host_api, config_file_size, 56, size_t (*)(const nnergy_config_file*)) \
    X(nnergy_host_api, config_file_at, 64, const nnergy_named_value* (*)(const nnergy_config_file*, size_t)) \
    X(nnergy_host_api, config_file_release, 72, void (*)(nnergy_config_file*)) \
    X(nnergy_host_api, graph_add_tensor, 80, nnergy_status* (*)(nnergy_graph_builder*, nnergy_string_view, nnergy_dtype, bool, size_t, const int64_t*, const nnergy_string_view*, uint32_t*)) \
    X(nnergy_host_api, graph_set_initializer, 88, nnergy_status* (*)(nnergy_graph_builder*, uint32_t)) \
    X(nnergy_host_api, graph_set_initializer_values, 96, nnergy_status* (*)(nnergy_graph_builder*, uint32_t, const int64_t*, size_t)) \
    X(nnergy_host_api, graph_add_input, 104, nnergy_status* (*)(nnergy_graph_builder*, uint32_t)) \
    X(nnergy_host_api, graph_add_output, 112, nnergy_status* (*)(nnergy_graph_builder*, uint32_t)) \
    X(nnergy_host_api, graph_add_node, 120, nnergy_status* (*)(nnergy_graph_builder*, nnergy_string_view, nnergy_string_view, nnergy_string_view, const uint32_t*, size_t, const uint32_t*, size_t, uint32_t*)) \
    X(nnergy_host_api, node_set_attr_int, 128, nnergy_status* (*)(nnergy_graph_builder*, uint32_t, nnergy_string_view, int64_t)) \
    X(nnergy_host_api, node_set_attr_float, 136, nnergy_status* (*)(nnergy_graph_builder*, uint32_t, nnergy_string_view, double)) \
    X(nnergy_host_api, node_set_attr_string, 144, nnergy_status* (*)(nnergy_graph_builder*, uint32_t, nnergy_string_view, nnergy_string_view)) \
    X(nnergy_host_api, node_set_attr_ints, 152, nnergy_status* (*)(nnergy_graph_builder*, uint32_t, nnergy_string_view, const int64_t*, size_t)) \
    X(nnergy_host_api, node_set_attr_floats, 160, nnergy_status* (*)(nnergy_graph_builder*, uint32_t, nnergy_string_view, const double*, size_t)) \
    X(nnergy_host_api, graph_set_metadata, 168, nnergy_status* (*)(nnergy_graph_builder*, nnergy_string_view, nnergy_string_view)) \
    X(nnergy_host_api, node_set_source_line, 176, nnergy_status* (*)(nnergy_graph_builder*, uint32_t, uint32_t)) \
    X(nnergy_host_api, graph_node_count, 184, size_t (*)(const nnergy_graph*)) \
    X(nnergy_host_api, graph_tensor_count, 192, size_t (*)(const nnergy_graph*)) \
    X(nnergy_host_api, graph_name, 200, nnergy_string_view (*)(const nnergy_graph*)) \
    X(nnergy_host_api, node_name, 208, nnergy_string_view (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, node_op_type, 216, nnergy_string_view (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, node_domain, 224, nnergy_string_view (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, node_input_count, 232, size_t (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, node_input, 240, uint32_t (*)(const nnergy_graph*, uint32_t, size_t)) \
    X(nnergy_host_api, node_output_count, 248, size_t (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, node_output, 256, uint32_t (*)(const nnergy_graph*, uint32_t, size_t)) \
    X(nnergy_host_api, node_attr_int, 264, bool (*)(const nnergy_graph*, uint32_t, nnergy_string_view, int64_t*)) \
    X(nnergy_host_api, node_attr_float, 272, bool (*)(const nnergy_graph*, uint32_t, nnergy_string_view, double*)) \
    X(nnergy_host_api, node_attr_string, 280, bool (*)(const nnergy_graph*, uint32_t, nnergy_string_view, nnergy_string_view*)) \
    X(nnergy_host_api, node_attr_ints, 288, bool (*)(const nnergy_graph*, uint32_t, nnergy_string_view, const int64_t**, size_t*)) \
    X(nnergy_host_api, node_counts, 296, void (*)(const nnergy_graph*, uint32_t, nnergy_op_counts*)) \
    X(nnergy_host_api, tensor_name, 304, nnergy_string_view (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, tensor_dtype, 312, nnergy_dtype (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, tensor_rank, 320, size_t (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, tensor_dim, 328, int64_t (*)(const nnergy_graph*, uint32_t, size_t)) \
    X(nnergy_host_api, tensor_bytes, 336, double (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, tensor_is_initializer, 344, bool (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, tensor_int_values, 352, bool (*)(const nnergy_graph*, uint32_t, const int64_t**, size_t*)) \
    X(nnergy_host_api, tensor_producer, 360, uint32_t (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, tensor_consumer_count, 368, size_t (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, tensor_consumer, 376, uint32_t (*)(const nnergy_graph*, uint32_t, size_t)) \
    X(nnergy_host_api, tensor_is_graph_output, 384, bool (*)(const nnergy_graph*, uint32_t)) \
    X(nnergy_host_api, partition_add_kernel, 392, nnergy_status* (*)(nnergy_partition_builder*, nnergy_string_view, nnergy_string_view, const uint32_t*, size_t, uint32_t*)) \
    X(nnergy_host_api, partition_kernel_count, 400, size_t (*)(const nnergy_partition*)) \
    X(nnergy_host_api, kernel_name, 408, nnergy_string_view (*)(const nnergy_partition*, uint32_t)) \
    X(nnergy_host_api, kernel_pattern, 416, nnergy_string_view (*)(const nnergy_partition*, uint32_t)) \
    X(nnergy_host_api, kernel_node_count, 424, size_t (*)(const nnergy_partition*, uint32_t)) \
    X(nnergy_host_api, kernel_node, 432, uint32_t (*)(const nnergy_partition*, uint32_t, size_t)) \
    X(nnergy_host_api, kernel_stats, 440, void (*)(const nnergy_partition*, uint32_t, nnergy_kernel_stats*)) \
    X(nnergy_host_api, kernel_dependency_count, 448, size_t (*)(const nnergy_partition*, uint32_t)) \
    X(nnergy_host_api, kernel_dependency, 456, uint32_t (*)(const nnergy_partition*, uint32_t, size_t)) \
    X(nnergy_host_api, mapping_set_number, 464, void (*)(nnergy_mapping*, nnergy_string_view, double)) \
    X(nnergy_host_api, mapping_set_text, 472, void (*)(nnergy_mapping*, nnergy_string_view, nnergy_string_view)) \
    X(nnergy_host_api, mapping_add_level, 480, void (*)(nnergy_mapping*, nnergy_string_view, double, double)) \
    X(nnergy_host_api, mapping_get_number, 488, bool (*)(const nnergy_mapping*, nnergy_string_view, double*)) \
    X(nnergy_host_api, mapping_get_text, 496, bool (*)(const nnergy_mapping*, nnergy_string_view, nnergy_string_view*)) \
    X(nnergy_host_api, mapping_level_count, 504, size_t (*)(const nnergy_mapping*)) \
    X(nnergy_host_api, mapping_level, 512, void (*)(const nnergy_mapping*, size_t, nnergy_string_view*, double*, double*)) \
    X(nnergy_host_api, results_set_kernel_number, 520, void (*)(nnergy_results*, uint32_t, nnergy_string_view, double)) \
    X(nnergy_host_api, results_set_kernel_text, 528, void (*)(nnergy_results*, uint32_t, nnergy_string_view, nnergy_string_view)) \
    X(nnergy_host_api, results_set_total, 536, void (*)(nnergy_results*, nnergy_string_view, double)) \
    X(nnergy_host_api, results_set_total_text, 544, void (*)(nnergy_results*, nnergy_string_view, nnergy_string_view)) \
    X(nnergy_host_api, value_kind, 552, nnergy_value_kind (*)(const nnergy_value*)) \
    X(nnergy_host_api, value_bool, 560, bool (*)(const nnergy_value*)) \
    X(nnergy_host_api, value_int, 568, int64_t (*)(const nnergy_value*)) \
    X(nnergy_host_api, value_float, 576, double (*)(const nnergy_value*)) \
    X(nnergy_host_api, value_string, 584, nnergy_string_view (*)(const nnergy_value*)) \
    X(nnergy_host_api, value_size, 592, size_t (*)(const nnergy_value*)) \
    X(nnergy_host_api, value_at, 600, const nnergy_value* (*)(const nnergy_value*, size_t)) \
    X(nnergy_host_api, value_key, 608, nnergy_string_view (*)(const nnergy_value*, size_t)) \
    X(nnergy_host_api, value_get, 616, const nnergy_value* (*)(const nnergy_value*, nnergy_string_view)) \
    X(nnergy_host_api, output_write, 624, nnergy_status* (*)(nnergy_output*, nnergy_string_view)) \
    X(nnergy_host_api, graph_set_constant, 632, nnergy_status* (*)(nnergy_graph_builder*, uint32_t)) \
    X(nnergy_host_api, mapping_add_event, 640, void (*)(nnergy_mapping*, nnergy_string_view, nnergy_string_view, double)) \
    X(nnergy_host_api, mapping_event_count, 648, size_t (*)(const nnergy_mapping*)) \
    X(nnergy_host_api, mapping_event, 656, void (*)(const nnergy_mapping*, size_t, nnergy_string_view*, nnergy_string_view*, double*)) \
    X(nnergy_host_api, results_get_kernel_number, 664, bool (*)(const nnergy_results*, uint32_t, nnergy_string_view, double*)) \
    X(nnergy_host_api, results_get_total, 672, bool (*)(const nnergy_results*, nnergy_string_view, double*)) \
    X(nnergy_host_api, results_get_total_text, 680, bool (*)(const nnergy_results*, nnergy_string_view, nnergy_string_view*)) \
    X(nnergy_host_api, output_allows_color, 688, bool (*)(const nnergy_output*)) \
    X(nnergy_host_api, output_path, 696, nnergy_string_view (*)(const nnergy_output*)) \
    X(nnergy_host_api, output_companion, 704, nnergy_status* (*)(nnergy_output*, nnergy_string_view, nnergy_output**)) \
    X(nnergy_host_api, graph_identity, 712, uint64_t (*)(const nnergy_graph*)) \
    X(nnergy_host_api, partition_identity, 720, uint64_t (*)(const nnergy_partition*)) \
    X(nnergy_host_api, graph_reserve, 728, nnergy_status* (*)(nnergy_graph_builder*, size_t, size_t)) \
    X(nnergy_host_api, name_intern, 736, const nnergy_name* (*)(nnergy_string_view)) \
    X(nnergy_host_api, mapping_set_number_named, 744, void (*)(nnergy_mapping*, const nnergy_name*, double)) \
    X(nnergy_host_api, mapping_set_text_named, 752, void (*)(nnergy_mapping*, const nnergy_name*, nnergy_string_view)) \
    X(nnergy_host_api, mapping_get_number_named, 760, bool (*)(const nnergy_mapping*, const nnergy_name*, double*)) \
    X(nnergy_host_api, mapping_get_text_named, 768, bool (*)(const nnergy_mapping*, const nnergy_name*, nnergy_string_view*)) \
    X(nnergy_host_api, mapping_add_event_named, 776, void (*)(nnergy_mapping*, const nnergy_name*, const nnergy_name*, double)) \
    X(nnergy_create_args, struct_size, 0, size_t) \
    X(nnergy_create_args, ctx, 8, nnergy_host_context*) \
    X(nnergy_create_args, api, 16, const nnergy_host_api*) \
    X(nnergy_create_args, config, 24, const nnergy_named_value*) \
    X(nnergy_create_args, config_count, 32, size_t) \
    X(nnergy_create_args, hardware, 40, const nnergy_named_value*) \
    X(nnergy_create_args, hardware_count, 48, size_t) \
    X(nnergy_create_args, runtime, 56, const nnergy_named_value*) \
    X(nnergy_create_args, runtime_count, 64, size_t) \
    X(nnergy_frontend_vtbl, struct_size, 0, size_t) \
    X(nnergy_frontend_vtbl, load, 8, nnergy_status* (*)(void*, nnergy_string_view, nnergy_graph_builder*)) \
    X(nnergy_frontend_vtbl, file_extensions, 16, nnergy_string_view) \
    X(nnergy_partitioner_vtbl, struct_size, 0, size_t) \
    X(nnergy_partitioner_vtbl, partition, 8, nnergy_status* (*)(void*, const nnergy_graph*, nnergy_partition_builder*)) \
    X(nnergy_architecture_vtbl, struct_size, 0, size_t) \
    X(nnergy_architecture_vtbl, map_kernel, 8, nnergy_status* (*)(void*, const nnergy_graph*, const nnergy_partition*, uint32_t, const nnergy_map_options*, nnergy_mapping*)) \
    X(nnergy_estimate_input, struct_size, 0, size_t) \
    X(nnergy_estimate_input, graph, 8, const nnergy_graph*) \
    X(nnergy_estimate_input, partition, 16, const nnergy_partition*) \
    X(nnergy_estimate_input, mappings, 24, const nnergy_mapping* const*) \
    X(nnergy_estimate_input, mapping_count, 32, size_t) \
    X(nnergy_estimate_input, hardware, 40, const nnergy_named_value*) \
    X(nnergy_estimate_input, hardware_count, 48, size_t) \
    X(nnergy_estimate_input, options, 56, const nnergy_map_options*) \
    X(nnergy_estimate_input, hardware_identity, 64, uint64_t) \
    X(nnergy_estimator_vtbl, struct_size, 0, size_t) \
    X(nnergy_estimator_vtbl, estimate, 8, nnergy_status* (*)(void*, const nnergy_estimate_input*, nnergy_results*)) \
    X(nnergy_reporter_vtbl, struct_size, 0, size_t) \
    X(nnergy_reporter_vtbl, report, 8, nnergy_status* (*)(void*, const nnergy_value*, nnergy_output*)) \
    X(nnergy_component, struct_size, 0, size_t) \
    X(nnergy_component, kind, 8, nnergy_component_kind) \
    X(nnergy_component, name, 16, nnergy_string_view) \
    X(nnergy_component, create, 32, nnergy_status* (*)(const nnergy_create_args*, void**)) \
    X(nnergy_component, destroy, 40, void (*)(void*)) \
    X(nnergy_component, vtbl, 48, const void*) \
    X(nnergy_component, description, 56, nnergy_string_view) \
    X(nnergy_host_info, struct_size, 0, size_t) \
    X(nnergy_host_info, abi_major, 8, uint32_t) \
    X(nnergy_host_info, abi_minor, 12, uint32_t) \
    X(nnergy_host_info, api, 16, const nnergy_host_api*) \
    X(nnergy_host_info, host_version, 24, nnergy_string_view) \
    X(nnergy_plugin_info, struct_size, 0, size_t) \
    X(nnergy_plugin_info, abi_major, 8, uint32_t) \
    X(nnergy_plugin_info, abi_minor, 12, uint32_t) \
    X(nnergy_plugin_info, name, 16, nnergy_string_view) \
    X(nnergy_plugin_info, version, 32, nnergy_string_view) \
    X(nnergy_plugin_info, vendor, 48, nnergy_string_view) \
    X(nnergy_plugin_info, license, 64, nnergy_string_view) \
    X(nnergy_plugin_info, components, 80, const nnergy_component*) \
    X(nnergy_plugin_info, component_count, 88, size_t) \
    X(nnergy_plugin_info, description, 96, nnergy_string_view)
/* clang-format on */

/* One row of the layout as a C compiler sees it (filled by c_compile_test.c). */
typedef struct nnergy_abi_layout_row {
    const char* name; /* "struct" or "struct.member" */
    size_t offset;    /* offsetof, 0 for a struct row */
    size_t size;      /* sizeof of the struct or of the member's type */
} nnergy_abi_layout_row;

#ifdef __cplusplus
extern "C" {
#endif
/* The layout table compiled as C99, and how many rows it has. */
const nnergy_abi_layout_row* nnergy_abi_c_layout(size_t* count);
/* Checks of the header's macros made in C; returns the number of failed checks. */
int nnergy_abi_c_checks(void);
#ifdef __cplusplus
}
#endif

#endif /* NNERGY_TESTS_ABI_LAYOUT_H */
