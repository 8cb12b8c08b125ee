// SPDX-License-Identifier: Apache-2.0
// Pins the binary layout of <nnergy/plugin.h>. Every offset, size, member type and enum value is
// checked at compile time, so an accidental reorder, retype or removal fails the build; the
// runtime cases check the version macros and that a C compiler lays the structs out the same way.
#include <nnergy/plugin.h>

#include <catch2/catch.hpp>
#include <cstddef>
#include <cstring>
#include <string>
#include <type_traits>

#include "abi_layout.h"

// ---- compile time: LP64 layout -----------------------------------------------------------------

#if defined(__LP64__) && (defined(__x86_64__) || defined(__aarch64__))
#define NNERGY_LP64_LAYOUT 1

#define NNERGY_PIN_STRUCT(type, lp64_size) \
    static_assert(sizeof(type) == (lp64_size), "sizeof(" #type ") changed");
#define NNERGY_PIN_MEMBER(type, member, lp64_offset, member_type)                       \
    static_assert(offsetof(type, member) == (lp64_offset), #type "." #member " moved"); \
    static_assert(std::is_same_v<decltype(type::member), member_type>,                  \
                  #type "." #member " retyped");
NNERGY_ABI_STRUCTS(NNERGY_PIN_STRUCT)
NNERGY_ABI_MEMBERS(NNERGY_PIN_MEMBER)
#else
#define NNERGY_LP64_LAYOUT 0
#endif

// Every struct starts with its size, so a reader can always find it.
#define NNERGY_PIN_SIZE_FIRST(type)                                                              \
    static_assert(                                                                               \
        offsetof(type, struct_size) == 0 && std::is_same_v<decltype(type::struct_size), size_t>, \
        #type " must start with size_t struct_size");
// nnergy_string_view is the one struct without a size: it is frozen for the whole major.
NNERGY_PIN_SIZE_FIRST(nnergy_named_value)
NNERGY_PIN_SIZE_FIRST(nnergy_op_counts)
NNERGY_PIN_SIZE_FIRST(nnergy_kernel_stats)
NNERGY_PIN_SIZE_FIRST(nnergy_map_options)
NNERGY_PIN_SIZE_FIRST(nnergy_host_api)
NNERGY_PIN_SIZE_FIRST(nnergy_create_args)
NNERGY_PIN_SIZE_FIRST(nnergy_frontend_vtbl)
NNERGY_PIN_SIZE_FIRST(nnergy_partitioner_vtbl)
NNERGY_PIN_SIZE_FIRST(nnergy_architecture_vtbl)
NNERGY_PIN_SIZE_FIRST(nnergy_estimate_input)
NNERGY_PIN_SIZE_FIRST(nnergy_estimator_vtbl)
NNERGY_PIN_SIZE_FIRST(nnergy_reporter_vtbl)
NNERGY_PIN_SIZE_FIRST(nnergy_component)
NNERGY_PIN_SIZE_FIRST(nnergy_host_info)
NNERGY_PIN_SIZE_FIRST(nnergy_plugin_info)

// The members frozen for every major: a host can always tell a plugin of another major.
static_assert(offsetof(nnergy_host_info, abi_major) == sizeof(size_t));
static_assert(offsetof(nnergy_host_info, abi_minor) == sizeof(size_t) + sizeof(uint32_t));
static_assert(offsetof(nnergy_plugin_info, abi_major) == sizeof(size_t));
static_assert(offsetof(nnergy_plugin_info, abi_minor) == sizeof(size_t) + sizeof(uint32_t));
static_assert(std::is_same_v<decltype(nnergy_host_info::abi_major), uint32_t>);
static_assert(std::is_same_v<decltype(nnergy_plugin_info::abi_minor), uint32_t>);

// Arrays of nnergy_component and nnergy_named_value are walked by struct_size; a writer sets it
// to sizeof(T). NNERGY_ARRAY_AT only agrees with indexing when no tail padding hides the last
// member, which holds for the component (its last member is 8-byte aligned).
static_assert(sizeof(nnergy_component) == NNERGY_STRUCT_SIZE(nnergy_component, description));

// The entry point's type.
static_assert(std::is_same_v<nnergy_plugin_negotiate_fn,
                             nnergy_status* (*)(const nnergy_host_info*, nnergy_plugin_info*)>);

// ---- compile time: enum values (frozen; new values are appended) -------------------------------

static_assert(NNERGY_ABI_MAJOR == 1 && NNERGY_ABI_MINOR == 9);
// nnergy_map_options::flags bits (1.5, 1.8).
static_assert(NNERGY_MAP_TOTALS_ONLY == 1u && NNERGY_MAP_NO_ADVICE == 2u);
static_assert(sizeof(nnergy_status_code) == 4 && sizeof(nnergy_dtype) == 4 &&
              sizeof(nnergy_component_kind) == 4 && sizeof(nnergy_value_kind) == 4 &&
              sizeof(nnergy_log_level) == 4);

static_assert(NNERGY_CODE_OK == 0 && NNERGY_CODE_INVALID_ARGUMENT == 1 &&
              NNERGY_CODE_NOT_FOUND == 2 && NNERGY_CODE_UNIMPLEMENTED == 3 &&
              NNERGY_CODE_FAILED_PRECONDITION == 4 && NNERGY_CODE_OUT_OF_RANGE == 5 &&
              NNERGY_CODE_IO_ERROR == 6 && NNERGY_CODE_INTERNAL == 7 &&
              NNERGY_CODE_UNSUPPORTED_VERSION == 8);
static_assert(NNERGY_LOG_TRACE == 0 && NNERGY_LOG_DEBUG == 1 && NNERGY_LOG_INFO == 2 &&
              NNERGY_LOG_WARN == 3 && NNERGY_LOG_ERROR == 4);
static_assert(NNERGY_DTYPE_UNDEFINED == 0 && NNERGY_DTYPE_FLOAT32 == 1 &&
              NNERGY_DTYPE_FLOAT16 == 2 && NNERGY_DTYPE_BFLOAT16 == 3 &&
              NNERGY_DTYPE_FLOAT64 == 4 && NNERGY_DTYPE_INT8 == 5 && NNERGY_DTYPE_UINT8 == 6 &&
              NNERGY_DTYPE_INT16 == 7 && NNERGY_DTYPE_UINT16 == 8 && NNERGY_DTYPE_INT32 == 9 &&
              NNERGY_DTYPE_UINT32 == 10 && NNERGY_DTYPE_INT64 == 11 && NNERGY_DTYPE_UINT64 == 12 &&
              NNERGY_DTYPE_BOOL == 13 && NNERGY_DTYPE_FLOAT8_E4M3 == 14 &&
              NNERGY_DTYPE_FLOAT8_E5M2 == 15 && NNERGY_DTYPE_INT4 == 16 &&
              NNERGY_DTYPE_UINT4 == 17 && NNERGY_DTYPE_TFLOAT32 == 18 && NNERGY_DTYPE_STRING == 19);
static_assert(NNERGY_KIND_FRONTEND == 1 && NNERGY_KIND_PARTITIONER == 2 &&
              NNERGY_KIND_ARCHITECTURE == 3 && NNERGY_KIND_ESTIMATOR == 4 &&
              NNERGY_KIND_REPORTER == 5);
static_assert(NNERGY_VALUE_NULL == 0 && NNERGY_VALUE_BOOL == 1 && NNERGY_VALUE_INT == 2 &&
              NNERGY_VALUE_FLOAT == 3 && NNERGY_VALUE_STRING == 4 && NNERGY_VALUE_ARRAY == 5 &&
              NNERGY_VALUE_OBJECT == 6);
static_assert(NNERGY_NO_TENSOR == 0xFFFFFFFFu && NNERGY_NO_NODE == 0xFFFFFFFFu &&
              NNERGY_DIM_UNKNOWN == -1);

// ---- run time ----------------------------------------------------------------------------------

TEST_CASE("the layout is pinned for this target", "[abi]") {
    // The static_asserts above only run on LP64 x86-64/aarch64; elsewhere say so instead of
    // passing silently.
    if (!NNERGY_LP64_LAYOUT) WARN("not an LP64 x86-64/aarch64 target: layout pins not checked");
    CHECK(NNERGY_LP64_LAYOUT == 1);
}

TEST_CASE("NNERGY_STRUCT_SIZE measures up to the end of a member, without tail padding", "[abi]") {
    // nnergy_map_options: struct_size (8 bytes) then precision (a 4-byte enum at offset 8),
    // padded to 16 where 1.5's 8-byte flags begin: a 1.4 reader's options end at 12, and a
    // 1.4 host's struct_size of 16 does not reach the flags.
    CHECK(NNERGY_STRUCT_SIZE(nnergy_map_options, precision) == 12);
    CHECK(NNERGY_STRUCT_SIZE(nnergy_map_options, flags) == 24);
    CHECK(sizeof(nnergy_map_options) == 24);
    nnergy_map_options from_1_4{};
    from_1_4.struct_size = 16;
    CHECK_FALSE(NNERGY_HAS_MEMBER(&from_1_4, nnergy_map_options, flags));
    // nnergy_plugin_info: component_count is the 8-byte member at offset 88.
    CHECK(NNERGY_STRUCT_SIZE(nnergy_plugin_info, component_count) == 96);
    CHECK(NNERGY_STRUCT_SIZE(nnergy_plugin_info, description) == sizeof(nnergy_plugin_info));
    // nnergy_component ends at vtbl (offset 48) in its shortest valid form.
    CHECK(NNERGY_STRUCT_SIZE(nnergy_component, vtbl) == 56);
}

TEST_CASE("NNERGY_HAS_MEMBER follows the declared struct_size", "[abi]") {
    nnergy_plugin_info info{};
    info.struct_size = NNERGY_STRUCT_SIZE(nnergy_plugin_info, component_count);
    CHECK(NNERGY_HAS_MEMBER(&info, nnergy_plugin_info, components));
    CHECK(NNERGY_HAS_MEMBER(&info, nnergy_plugin_info, component_count));
    CHECK_FALSE(NNERGY_HAS_MEMBER(&info, nnergy_plugin_info, description));
    info.struct_size = sizeof info;
    CHECK(NNERGY_HAS_MEMBER(&info, nnergy_plugin_info, description));

    // One byte short of a member means the member is absent.
    nnergy_frontend_vtbl vt{};
    vt.struct_size = NNERGY_STRUCT_SIZE(nnergy_frontend_vtbl, file_extensions) - 1;
    CHECK(NNERGY_HAS_MEMBER(&vt, nnergy_frontend_vtbl, load));
    CHECK_FALSE(NNERGY_HAS_MEMBER(&vt, nnergy_frontend_vtbl, file_extensions));
}

TEST_CASE("NNERGY_ARRAY_AT steps by the writer's struct_size", "[abi]") {
    // An array written by a plugin whose descriptor ends at vtbl (56 bytes per element).
    struct older_component {
        size_t struct_size;
        nnergy_component_kind kind;
        nnergy_string_view name;
        void* create;
        void* destroy;
        const void* vtbl;
    };
    static_assert(sizeof(older_component) == 56);
    older_component older[3]{};
    for (auto& c : older) c.struct_size = sizeof(older_component);
    older[2].name = {"third", 5};
    const nnergy_component* third = NNERGY_ARRAY_AT(nnergy_component, older, 2);
    CHECK(static_cast<const void*>(third) == static_cast<const void*>(&older[2]));
    CHECK(std::string(third->name.data, third->name.size) == "third");
    // Indexing with the reader's own sizeof (72) would land elsewhere.
    CHECK(static_cast<const void*>(third) !=
          static_cast<const void*>(reinterpret_cast<const nnergy_component*>(older) + 2));

    // A host of the same minor: the step is plain sizeof.
    nnergy_named_value values[4]{};
    for (auto& v : values) v.struct_size = sizeof v;
    CHECK(NNERGY_ARRAY_AT(nnergy_named_value, values, 3) == &values[3]);
}

TEST_CASE("a C99 compiler lays the structs out like the C++ host", "[abi]") {
    CHECK(nnergy_abi_c_checks() == 0);

    size_t count = 0;
    const nnergy_abi_layout_row* c_rows = nnergy_abi_c_layout(&count);
    size_t i = 0;
    // Walk the same lists as c_compile_test.c, in the same order.
#define NNERGY_CMP_STRUCT(type, lp64_size)           \
    {                                                \
        REQUIRE(i < count);                          \
        INFO(c_rows[i].name);                        \
        CHECK(std::string(c_rows[i].name) == #type); \
        CHECK(c_rows[i].size == sizeof(type));       \
        ++i;                                         \
    }
#define NNERGY_CMP_MEMBER(type, member, lp64_offset, member_type) \
    {                                                             \
        REQUIRE(i < count);                                       \
        INFO(c_rows[i].name);                                     \
        CHECK(std::string(c_rows[i].name) == #type "." #member);  \
        CHECK(c_rows[i].offset == offsetof(type, member));        \
        CHECK(c_rows[i].size == sizeof(member_type));             \
        ++i;                                                      \
    }
    NNERGY_ABI_STRUCTS(NNERGY_CMP_STRUCT)
    NNERGY_ABI_MEMBERS(NNERGY_CMP_MEMBER)
    CHECK(i == count);
    CHECK(count == 16 + 186);  // 16 structs and their 186 members
}
