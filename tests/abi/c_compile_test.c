/* SPDX-License-Identifier: Apache-2.0 */
/*
 * <nnergy/plugin.h> seen by a C99 compiler (-std=c99 -Wall -Wextra -Wpedantic -Werror): it must
 * compile on its own, its macros must work in C, and the layout a C compiler gives its structs
 * must be the one the C++ host uses (test_struct_layout.cpp compares the two tables).
 */
#include <nnergy/plugin.h>
#include <string.h>

#include "abi_layout.h"

/* The member's type must have the member's size: a retyped member fails here in C too. */
#define NNERGY_C_STRUCT_ROW(type, lp64_size) {#type, 0, sizeof(type)},
#define NNERGY_C_MEMBER_ROW(type, member, lp64_offset, member_type) \
    {#type "." #member, offsetof(type, member), sizeof(((type*)0)->member)},

static const nnergy_abi_layout_row rows[] = {NNERGY_ABI_STRUCTS(NNERGY_C_STRUCT_ROW)
                                                 NNERGY_ABI_MEMBERS(NNERGY_C_MEMBER_ROW)};

const nnergy_abi_layout_row* nnergy_abi_c_layout(size_t* count) {
    *count = sizeof rows / sizeof rows[0];
    return rows;
}

/* A plugin entry point written in C has the type the host calls through. */
static nnergy_status* c_negotiate(const nnergy_host_info* host, nnergy_plugin_info* out) {
    (void)host;
    out->abi_major = NNERGY_ABI_MAJOR;
    out->abi_minor = NNERGY_ABI_MINOR;
    return NULL;
}

int nnergy_abi_c_checks(void) {
    int failed = 0;
    nnergy_plugin_negotiate_fn entry = c_negotiate;
    nnergy_plugin_info info;
    /* Elements of an array written by a side whose struct is smaller than ours. */
    struct {
        size_t struct_size;
        int payload;
    } narrow[3];

    memset(&info, 0, sizeof info);
    info.struct_size = NNERGY_STRUCT_SIZE(nnergy_plugin_info, component_count);
    failed += entry(NULL, &info) != NULL;
    failed += info.abi_major != NNERGY_ABI_MAJOR || info.abi_minor != NNERGY_ABI_MINOR;
    /* A struct declared up to component_count has that member but not the later description. */
    failed += !NNERGY_HAS_MEMBER(&info, nnergy_plugin_info, component_count);
    failed += NNERGY_HAS_MEMBER(&info, nnergy_plugin_info, description);

    /* NNERGY_ARRAY_AT steps by the first element's struct_size (16 here), not by the reader's
     * sizeof(nnergy_component). */
    memset(narrow, 0, sizeof narrow);
    narrow[0].struct_size = sizeof narrow[0];
    failed += (const void*)NNERGY_ARRAY_AT(nnergy_component, narrow, 2) != (const void*)&narrow[2];

    failed += strcmp(NNERGY_PLUGIN_ENTRY_SYMBOL, "nnergy_plugin_negotiate") != 0;
    failed += NNERGY_NO_TENSOR != 0xFFFFFFFFu || NNERGY_NO_NODE != 0xFFFFFFFFu;
    failed += NNERGY_DIM_UNKNOWN != -1;
    return failed;
}
