/* SPDX-License-Identifier: Apache-2.0 */
/* The boundary between the TorchScript frontend plugin and its reader library. The plugin does
 * not link libtorch, so that scanning the plugin directory costs nothing to runs that read no
 * TorchScript; the reader (linked with libtorch) is opened the first time a .pt file is read.
 * Both are built from this tree together; the boundary is still plain C, like the plugin ABI. */
#ifndef NNERGY_TORCHSCRIPT_READER_API_H
#define NNERGY_TORCHSCRIPT_READER_API_H

#include <nnergy/plugin.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define NNERGY_TORCHSCRIPT_READER_SYMBOL "nnergy_torchscript_read"

/* Reads the TorchScript archive `path` into `builder` through `host` (the plugin's negotiated
 * host API). `input_shapes` holds `shape_count` strings "[NAME=]D0xD1x..." (docs/torchscript.md).
 * Returns NNERGY_CODE_OK, or an error code with a message (NUL-terminated, truncated to
 * `message_size`) naming the file and the node at fault. Never throws.
 * OWNERSHIP: every pointer is the caller's; `message` is written, nothing is kept. */
typedef int (*nnergy_torchscript_read_fn)(const nnergy_host_api* host, const char* path,
                                          const char* const* input_shapes, size_t shape_count,
                                          nnergy_graph_builder* builder, char* message,
                                          size_t message_size);

#ifdef __cplusplus
}
#endif

#endif
