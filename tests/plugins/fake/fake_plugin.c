/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One C99 source, written against <nnergy/plugin.h> alone, built into many plugin libraries that
 * each break (or stretch) one rule of the ABI. CMakeLists.txt selects the variant with a
 * FAKE_VARIANT_<NAME> definition; tests/abi/test_negotiation.cpp checks how the host treats each.
 *
 * The valid part is a tiny architecture model: it reads compute.float32.peak and
 * memory.dram.bandwidth from its hardware description and an optional `efficiency` from its
 * configuration, and maps every kernel to
 *   peak_flops_per_s      = peak
 *   effective_flops_per_s = peak * efficiency
 *   utilization           = efficiency
 *   dram level            = input + output + weight bytes of the kernel, at the full bandwidth
 * which is simple enough for a test to predict by hand.
 */
#include <nnergy/plugin.h>
#include <stdlib.h>
#include <string.h>

#ifndef FAKE_NAME
#error "FAKE_NAME (the library's plugin name) must be defined"
#endif
#ifndef FAKE_COMPONENT
#error "FAKE_COMPONENT (the architecture component's name) must be defined"
#endif
#ifndef FAKE_LICENSE
#define FAKE_LICENSE "Apache-2.0"
#endif

/* A string view of a string literal. */
#define SV_LIT(s) \
    { s, sizeof(s) - 1 }

static nnergy_string_view sv(const char* s) {
    nnergy_string_view v;
    v.data = s;
    v.size = strlen(s);
    return v;
}

static int sv_equals(nnergy_string_view a, const char* b) {
    size_t n = strlen(b);
    return a.size == n && (n == 0 || memcmp(a.data, b, n) == 0);
}

/* ---- the architecture component ----------------------------------------------------------- */

typedef struct fake_arch {
    const nnergy_host_api* api;
    double peak_flops_per_s;
    double dram_bytes_per_s;
    double efficiency;
} fake_arch;

/* Finds a FLOAT or INT value by name in a host array of named values. */
static int find_number(const nnergy_named_value* values, size_t count, const char* name,
                       double* out) {
    size_t i;
    for (i = 0; i < count; ++i) {
        const nnergy_named_value* v = NNERGY_ARRAY_AT(nnergy_named_value, values, i);
        if (sv_equals(v->name, name) &&
            (v->kind == NNERGY_VALUE_FLOAT || v->kind == NNERGY_VALUE_INT)) {
            *out = v->float_value;
            return 1;
        }
    }
    return 0;
}

static nnergy_status* arch_create(const nnergy_create_args* args, void** out_self) {
    const nnergy_host_api* api = args->api;
    fake_arch* self;
    const nnergy_named_value* hardware = NULL;
    size_t hardware_count = 0;

    if (NNERGY_HAS_MEMBER(args, nnergy_create_args, hardware_count)) {
        hardware = args->hardware;
        hardware_count = args->hardware_count;
    }
    self = (fake_arch*)calloc(1, sizeof *self);
    if (!self) return api->status_create(NNERGY_CODE_INTERNAL, sv("fake architecture: no memory"));
    self->api = api;
    self->efficiency = 1.0;
    if (!find_number(hardware, hardware_count, "compute.float32.peak", &self->peak_flops_per_s) ||
        !find_number(hardware, hardware_count, "memory.dram.bandwidth", &self->dram_bytes_per_s)) {
        free(self);
        return api->status_create(NNERGY_CODE_NOT_FOUND,
                                  sv("fake architecture: the hardware description needs "
                                     "compute.float32.peak and memory.dram.bandwidth"));
    }
    find_number(args->config, args->config_count, "efficiency", &self->efficiency);
    if (!(self->efficiency > 0.0 && self->efficiency <= 1.0)) {
        free(self);
        return api->status_create(NNERGY_CODE_INVALID_ARGUMENT,
                                  sv("fake architecture: efficiency must be in (0, 1]"));
    }
    *out_self = self;
    return NULL;
}

static void arch_destroy(void* self) { free(self); }

static nnergy_status* arch_map_kernel(void* self_in, const nnergy_graph* graph,
                                      const nnergy_partition* partition, uint32_t kernel,
                                      const nnergy_map_options* options, nnergy_mapping* out) {
    const fake_arch* self = (const fake_arch*)self_in;
    const nnergy_host_api* api = self->api;
    nnergy_kernel_stats stats;
    (void)graph;

    if (options && NNERGY_HAS_MEMBER(options, nnergy_map_options, precision) &&
        options->precision != NNERGY_DTYPE_FLOAT32 &&
        options->precision != NNERGY_DTYPE_UNDEFINED) {
        return api->status_create(NNERGY_CODE_UNIMPLEMENTED,
                                  sv("fake architecture: only float32 is modelled"));
    }
    memset(&stats, 0, sizeof stats);
    stats.struct_size = sizeof stats;
    api->kernel_stats(partition, kernel, &stats);

    api->mapping_set_number(out, sv("peak_flops_per_s"), self->peak_flops_per_s);
    api->mapping_set_number(out, sv("effective_flops_per_s"),
                            self->peak_flops_per_s * self->efficiency);
    api->mapping_set_number(out, sv("utilization"), self->efficiency);
    api->mapping_set_text(out, sv("unit"), sv("fake_unit"));
    api->mapping_set_text(out, sv("confidence"), sv("theoretical"));
    api->mapping_add_level(out, sv("dram"),
                           stats.input_bytes + stats.output_bytes + stats.weight_bytes,
                           self->dram_bytes_per_s);
    return NULL;
}

static const nnergy_architecture_vtbl arch_vtbl = {sizeof(nnergy_architecture_vtbl),
                                                   arch_map_kernel};

#define FAKE_DESCRIPTION "test architecture built from fake_plugin.c"

/* ---- variant: a frontend whose table predates file_extensions ----------------------------- */

#if defined(FAKE_VARIANT_NULL_OPTIONAL)
static nnergy_status* frontend_create(const nnergy_create_args* args, void** out_self) {
    (void)args;
    *out_self = NULL; /* stateless: a NULL instance is allowed */
    return NULL;
}

static void frontend_destroy(void* self) { (void)self; }

static nnergy_status* frontend_load(void* self, nnergy_string_view path,
                                    nnergy_graph_builder* builder) {
    (void)self;
    (void)path;
    (void)builder;
    return NULL;
}

/* struct_size stops after `load`; the member past it holds an extension the host must not read
 * (reading it would make the frontend claim "*.must-not-be-read" files). */
static const nnergy_frontend_vtbl frontend_vtbl = {NNERGY_STRUCT_SIZE(nnergy_frontend_vtbl, load),
                                                   frontend_load, SV_LIT(".must-not-be-read")};
#endif

#if defined(FAKE_VARIANT_NULL_FUNCTION)
/* The table exists but its one required function is missing. */
static const nnergy_architecture_vtbl broken_vtbl = {sizeof(nnergy_architecture_vtbl), NULL};
#endif

#if defined(FAKE_VARIANT_ESTIMATOR_MINOR_8)
/* ---- variant: an estimator built for ABI 1.8, before the hardware identity --------------- */

/* It counts its own estimates in a total, so that a test can tell whether the host made the
 * instance anew (a 1.8 estimator's caches may be keyed on where the hardware's values lie, so a
 * calibration must not keep it from one candidate's values to the next). The count is not
 * guarded: the test estimates from one thread. */
typedef struct fake_estimator {
    const nnergy_host_api* api;
    double estimates;
} fake_estimator;

static nnergy_status* estimator_create(const nnergy_create_args* args, void** out_self) {
    fake_estimator* self = (fake_estimator*)calloc(1, sizeof *self);
    if (!self)
        return args->api->status_create(NNERGY_CODE_INTERNAL, sv("fake estimator: no memory"));
    self->api = args->api;
    *out_self = self;
    return NULL;
}

static void estimator_destroy(void* self) { free(self); }

static nnergy_status* estimator_estimate(void* self_in, const nnergy_estimate_input* input,
                                         nnergy_results* out) {
    fake_estimator* self = (fake_estimator*)self_in;
    (void)input;
    self->estimates += 1.0;
    self->api->results_set_total(out, sv("fake_estimates_by_this_instance"), self->estimates);
    return NULL;
}

static const nnergy_estimator_vtbl estimator_vtbl = {sizeof(nnergy_estimator_vtbl),
                                                     estimator_estimate};
#endif

/* ---- the component list ------------------------------------------------------------------- */

#if defined(FAKE_VARIANT_OLDER_STRUCT)
/* The descriptor as a plugin built against an older header lays it out: it ends at `vtbl`, so
 * the array's elements are closer together than sizeof(nnergy_component). */
typedef struct fake_older_component {
    size_t struct_size;
    nnergy_component_kind kind;
    nnergy_string_view name;
    nnergy_status* (*create)(const nnergy_create_args* args, void** out_self);
    void (*destroy)(void* self);
    const void* vtbl;
} fake_older_component;

/* C99 has no static_assert: a negative array size fails the build instead. */
typedef char fake_older_component_is_a_prefix
    [sizeof(fake_older_component) == NNERGY_STRUCT_SIZE(nnergy_component, vtbl) ? 1 : -1];

/* Two elements, so that a host stepping by its own sizeof misreads the second. */
static const fake_older_component components[] = {
    {sizeof(fake_older_component), NNERGY_KIND_ARCHITECTURE, SV_LIT("fake.architecture.older_a"),
     arch_create, arch_destroy, &arch_vtbl},
    {sizeof(fake_older_component), NNERGY_KIND_ARCHITECTURE, SV_LIT("fake.architecture.older_b"),
     arch_create, arch_destroy, &arch_vtbl}};
#define FAKE_COMPONENTS ((const nnergy_component*)(const void*)components)

#elif defined(FAKE_VARIANT_NULL_OPTIONAL)
/* No descriptions at all, and a frontend without file extensions: all optional. */
static const nnergy_component components[] = {{sizeof(nnergy_component),
                                               NNERGY_KIND_ARCHITECTURE,
                                               SV_LIT(FAKE_COMPONENT),
                                               arch_create,
                                               arch_destroy,
                                               &arch_vtbl,
                                               {NULL, 0}},
                                              {sizeof(nnergy_component),
                                               NNERGY_KIND_FRONTEND,
                                               SV_LIT("fake.frontend.null_optional"),
                                               frontend_create,
                                               frontend_destroy,
                                               &frontend_vtbl,
                                               {NULL, 0}}};
#define FAKE_COMPONENTS components

#elif defined(FAKE_VARIANT_NULL_CREATE) || defined(FAKE_VARIANT_NULL_FUNCTION)
/* A valid component first, then a broken one: the library is accepted or refused as a whole,
 * so the valid sibling must not be registered either. */
static const nnergy_component components[] = {
    {sizeof(nnergy_component), NNERGY_KIND_ARCHITECTURE, SV_LIT(FAKE_COMPONENT "_sibling"),
     arch_create, arch_destroy, &arch_vtbl, SV_LIT(FAKE_DESCRIPTION)},
#if defined(FAKE_VARIANT_NULL_CREATE)
    {sizeof(nnergy_component), NNERGY_KIND_ARCHITECTURE, SV_LIT(FAKE_COMPONENT), NULL, arch_destroy,
     &arch_vtbl, SV_LIT(FAKE_DESCRIPTION)}
#else
    {sizeof(nnergy_component), NNERGY_KIND_ARCHITECTURE, SV_LIT(FAKE_COMPONENT), arch_create,
     arch_destroy, &broken_vtbl, SV_LIT(FAKE_DESCRIPTION)}
#endif
};
#define FAKE_COMPONENTS components

#elif defined(FAKE_VARIANT_ESTIMATOR_MINOR_8)
/* The estimator, and the architecture every variant has. */
static const nnergy_component components[] = {
    {sizeof(nnergy_component), NNERGY_KIND_ESTIMATOR, SV_LIT(FAKE_COMPONENT), estimator_create,
     estimator_destroy, &estimator_vtbl, SV_LIT("counts its own estimates")},
    {sizeof(nnergy_component), NNERGY_KIND_ARCHITECTURE, SV_LIT("fake.architecture.minor_8"),
     arch_create, arch_destroy, &arch_vtbl, SV_LIT(FAKE_DESCRIPTION)}};
#define FAKE_COMPONENTS components

#else
static const nnergy_component components[] = {{sizeof(nnergy_component), NNERGY_KIND_ARCHITECTURE,
                                               SV_LIT(FAKE_COMPONENT), arch_create, arch_destroy,
                                               &arch_vtbl, SV_LIT(FAKE_DESCRIPTION)}};
#define FAKE_COMPONENTS components
#endif

#define FAKE_COMPONENT_COUNT (sizeof(components) / sizeof(components[0]))

/* ---- negotiation -------------------------------------------------------------------------- */

#if defined(FAKE_VARIANT_MAJOR_2)
#define FAKE_ABI_MAJOR 2u
#else
#define FAKE_ABI_MAJOR NNERGY_ABI_MAJOR
#endif
#if defined(FAKE_VARIANT_MINOR_NEWER)
#define FAKE_ABI_MINOR (NNERGY_ABI_MINOR + 1u)
#elif defined(FAKE_VARIANT_ESTIMATOR_MINOR_8)
#define FAKE_ABI_MINOR 8u
#else
#define FAKE_ABI_MINOR NNERGY_ABI_MINOR
#endif

#if defined(FAKE_VARIANT_NO_ENTRY)
/* A shared library with code in it, but no nnergy_plugin_negotiate. */
NNERGY_PLUGIN_EXPORT const void* fake_not_an_entry_point(void);
NNERGY_PLUGIN_EXPORT const void* fake_not_an_entry_point(void) { return components; }
#else
NNERGY_PLUGIN_EXPORT nnergy_status* nnergy_plugin_negotiate(const nnergy_host_info* host,
                                                            nnergy_plugin_info* out);

NNERGY_PLUGIN_EXPORT nnergy_status* nnergy_plugin_negotiate(const nnergy_host_info* host,
                                                            nnergy_plugin_info* out) {
    const size_t room = out->struct_size; /* what the host allocated */

    /* The first three members are frozen for every major: always written. */
    out->abi_major = FAKE_ABI_MAJOR;
    out->abi_minor = FAKE_ABI_MINOR;
    if (room < NNERGY_STRUCT_SIZE(nnergy_plugin_info, component_count)) {
        return host->api->status_create(NNERGY_CODE_UNSUPPORTED_VERSION,
                                        sv(FAKE_NAME ": the host's plugin info is too small"));
    }
    out->name = sv(FAKE_NAME);
    out->license = sv(FAKE_LICENSE);
    out->components = FAKE_COMPONENTS;
    out->component_count = FAKE_COMPONENT_COUNT;
#if defined(FAKE_VARIANT_NULL_OPTIONAL)
    out->version.data = NULL;
    out->version.size = 0;
    out->vendor.data = NULL;
    out->vendor.size = 0;
#else
    out->version = sv("0.1.0");
    out->vendor = sv("nnergy tests");
    if (room >= NNERGY_STRUCT_SIZE(nnergy_plugin_info, description))
        out->description = sv("a plugin built to test the nnergy ABI");
#endif

#if defined(FAKE_VARIANT_OLDER_STRUCT)
    /* An older plugin declares the smaller struct it knows. The description member still lies
     * inside the host's allocation and was filled above; the host must ignore it, because only
     * what lies inside the declared struct_size may be read. */
    out->struct_size = NNERGY_STRUCT_SIZE(nnergy_plugin_info, component_count);
#endif
#if defined(FAKE_VARIANT_NEGOTIATE_ERROR)
    /* Everything above was filled in; the status still wins. */
    return host->api->status_create(NNERGY_CODE_FAILED_PRECONDITION,
                                    sv(FAKE_NAME " refuses to load on purpose"));
#else
    return NULL;
#endif
}
#endif
