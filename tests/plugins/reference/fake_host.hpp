// SPDX-License-Identifier: Apache-2.0
/// \file fake_host.hpp
/// \brief A minimal in-process host for the reference plugins' tests: just the host API
/// functions those plugins call, over plain C++ containers. Opaque ABI handles are pointers to
/// the fake_* structs below.
#pragma once

#include <nnergy/plugin.h>

#include <deque>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <nnergy/sdk.hpp>
#include <string>
#include <utility>
#include <vector>

namespace fake {

struct status {
    nnergy_status_code code;
    std::string message;
};

struct node {
    std::string name;
    std::string op_type;
    std::vector<uint32_t> outputs;
    std::map<std::string, std::vector<int64_t>> ints;
};

struct graph {
    std::vector<node> nodes;
    std::vector<nnergy_dtype> tensor_dtypes;
};

struct kernel {
    std::string name;
    std::string pattern;
    std::vector<uint32_t> nodes;
    nnergy_kernel_stats stats{};
    std::vector<uint32_t> dependencies{};
};

struct partition {
    std::vector<kernel> kernels;
};

struct level {
    std::string name;
    double bytes;
    double bandwidth;
};

struct event {
    std::string category;
    std::string name;
    double count;
};

struct mapping {
    std::map<std::string, double> numbers;
    std::map<std::string, std::string> texts;
    std::vector<level> levels;
    std::vector<event> events;
};

struct results {
    std::map<uint32_t, std::map<std::string, double>> numbers;
    std::map<uint32_t, std::map<std::string, std::string>> texts;
    std::map<std::string, double> totals;
    std::map<std::string, std::string> total_texts;
};

struct value {
    nnergy_value_kind kind = NNERGY_VALUE_NULL;
    bool b = false;
    int64_t i = 0;
    double f = 0;
    std::string s;
    std::vector<std::string> keys;  // objects: one key per child
    std::vector<value> children;    // array elements or object members (a vector may hold an
                                    // incomplete type, a pair may not)

    value& add(const std::string& key, value v) {
        keys.push_back(key);
        children.push_back(std::move(v));
        return children.back();
    }

    static value from(const nlohmann::ordered_json& j) {
        value v;
        if (j.is_boolean()) {
            v.kind = NNERGY_VALUE_BOOL;
            v.b = j.get<bool>();
        } else if (j.is_number_integer()) {
            v.kind = NNERGY_VALUE_INT;
            v.i = j.get<int64_t>();
            v.f = static_cast<double>(v.i);
        } else if (j.is_number_float()) {
            v.kind = NNERGY_VALUE_FLOAT;
            v.f = j.get<double>();
        } else if (j.is_string()) {
            v.kind = NNERGY_VALUE_STRING;
            v.s = j.get<std::string>();
        } else if (j.is_array()) {
            v.kind = NNERGY_VALUE_ARRAY;
            for (const auto& e : j) v.children.push_back(from(e));
        } else if (j.is_object()) {
            v.kind = NNERGY_VALUE_OBJECT;
            for (const auto& [k, e] : j.items()) v.add(k, from(e));
        }
        return v;
    }
    const nnergy_value* handle() const { return reinterpret_cast<const nnergy_value*>(this); }
};

struct output {
    std::string data;
    size_t writes = 0;  ///< output_write calls
    bool color = false;
    std::string path;
    /// Companions by suffix (std::map keeps each one in place as others are added).
    std::map<std::string, output> companions;
};

inline std::vector<std::string>& log_lines() {
    static std::vector<std::string> lines;
    return lines;
}

template <class T, class H>
T* as(H* h) {
    return reinterpret_cast<T*>(h);
}
template <class T, class H>
const T* as(const H* h) {
    return reinterpret_cast<const T*>(h);
}
inline std::string str(nnergy_string_view s) { return std::string(nnergy::sdk::from_sv(s)); }
inline nnergy_string_view sv(const std::string& s) { return {s.data(), s.size()}; }

inline const nnergy_host_api& api() {
    static const nnergy_host_api table = [] {
        nnergy_host_api a{};
        a.struct_size = sizeof a;
        a.status_create = [](nnergy_status_code code, nnergy_string_view message) {
            return reinterpret_cast<nnergy_status*>(new status{code, str(message)});
        };
        a.status_release = [](nnergy_status* s) { delete as<status>(s); };
        a.status_code = [](const nnergy_status* s) { return as<status>(s)->code; };
        a.status_message = [](const nnergy_status* s) { return sv(as<status>(s)->message); };
        a.log = [](nnergy_host_context*, nnergy_log_level, nnergy_string_view m) {
            log_lines().push_back(str(m));
        };
        a.graph_node_count = [](const nnergy_graph* g) { return as<graph>(g)->nodes.size(); };
        a.node_name = [](const nnergy_graph* g, uint32_t n) {
            return sv(as<graph>(g)->nodes.at(n).name);
        };
        a.node_op_type = [](const nnergy_graph* g, uint32_t n) {
            return sv(as<graph>(g)->nodes.at(n).op_type);
        };
        a.node_output_count = [](const nnergy_graph* g, uint32_t n) {
            return as<graph>(g)->nodes.at(n).outputs.size();
        };
        a.node_output = [](const nnergy_graph* g, uint32_t n, size_t i) {
            return as<graph>(g)->nodes.at(n).outputs.at(i);
        };
        a.node_attr_ints = [](const nnergy_graph* g, uint32_t n, nnergy_string_view name,
                              const int64_t** out, size_t* count) {
            const auto& ints = as<graph>(g)->nodes.at(n).ints;
            auto it = ints.find(str(name));
            if (it == ints.end()) return false;
            *out = it->second.data();
            *count = it->second.size();
            return true;
        };
        a.tensor_dtype = [](const nnergy_graph* g, uint32_t t) {
            return as<graph>(g)->tensor_dtypes.at(t);
        };
        a.partition_kernel_count = [](const nnergy_partition* p) {
            return as<partition>(p)->kernels.size();
        };
        a.kernel_name = [](const nnergy_partition* p, uint32_t k) {
            return sv(as<partition>(p)->kernels.at(k).name);
        };
        a.kernel_pattern = [](const nnergy_partition* p, uint32_t k) {
            return sv(as<partition>(p)->kernels.at(k).pattern);
        };
        a.kernel_node_count = [](const nnergy_partition* p, uint32_t k) {
            return as<partition>(p)->kernels.at(k).nodes.size();
        };
        a.kernel_node = [](const nnergy_partition* p, uint32_t k, size_t i) {
            return as<partition>(p)->kernels.at(k).nodes.at(i);
        };
        a.kernel_dependency_count = [](const nnergy_partition* p, uint32_t k) {
            return as<partition>(p)->kernels.at(k).dependencies.size();
        };
        a.kernel_dependency = [](const nnergy_partition* p, uint32_t k, size_t i) {
            return as<partition>(p)->kernels.at(k).dependencies.at(i);
        };
        a.kernel_stats = [](const nnergy_partition* p, uint32_t k, nnergy_kernel_stats* out) {
            const size_t size = out->struct_size;
            *out = as<partition>(p)->kernels.at(k).stats;
            out->struct_size = size;
        };
        a.mapping_set_number = [](nnergy_mapping* m, nnergy_string_view k, double v) {
            as<mapping>(m)->numbers[str(k)] = v;
        };
        a.mapping_set_text = [](nnergy_mapping* m, nnergy_string_view k, nnergy_string_view v) {
            as<mapping>(m)->texts[str(k)] = str(v);
        };
        a.mapping_add_level = [](nnergy_mapping* m, nnergy_string_view l, double bytes, double bw) {
            as<mapping>(m)->levels.push_back({str(l), bytes, bw});
        };
        a.mapping_get_number = [](const nnergy_mapping* m, nnergy_string_view k, double* out) {
            const auto& n = as<mapping>(m)->numbers;
            auto it = n.find(str(k));
            if (it == n.end()) return false;
            *out = it->second;
            return true;
        };
        a.mapping_get_text = [](const nnergy_mapping* m, nnergy_string_view k,
                                nnergy_string_view* out) {
            const auto& t = as<mapping>(m)->texts;
            auto it = t.find(str(k));
            if (it == t.end()) return false;
            *out = sv(it->second);
            return true;
        };
        a.mapping_level_count = [](const nnergy_mapping* m) {
            return as<mapping>(m)->levels.size();
        };
        a.mapping_level = [](const nnergy_mapping* m, size_t i, nnergy_string_view* name,
                             double* bytes, double* bw) {
            const level& l = as<mapping>(m)->levels.at(i);
            *name = sv(l.name);
            *bytes = l.bytes;
            *bw = l.bandwidth;
        };
        a.results_set_kernel_number = [](nnergy_results* r, uint32_t k, nnergy_string_view key,
                                         double v) { as<results>(r)->numbers[k][str(key)] = v; };
        a.results_set_kernel_text = [](nnergy_results* r, uint32_t k, nnergy_string_view key,
                                       nnergy_string_view v) {
            as<results>(r)->texts[k][str(key)] = str(v);
        };
        a.results_set_total = [](nnergy_results* r, nnergy_string_view key, double v) {
            as<results>(r)->totals[str(key)] = v;
        };
        a.results_set_total_text = [](nnergy_results* r, nnergy_string_view key,
                                      nnergy_string_view v) {
            as<results>(r)->total_texts[str(key)] = str(v);
        };
        a.mapping_add_event = [](nnergy_mapping* m, nnergy_string_view c, nnergy_string_view e,
                                 double count) {
            for (event& x : as<mapping>(m)->events)
                if (x.category == str(c) && x.name == str(e)) {
                    x.count += count;
                    return;
                }
            as<mapping>(m)->events.push_back({str(c), str(e), count});
        };
        a.mapping_event_count = [](const nnergy_mapping* m) {
            return as<mapping>(m)->events.size();
        };
        a.mapping_event = [](const nnergy_mapping* m, size_t i, nnergy_string_view* c,
                             nnergy_string_view* e, double* count) {
            const event& x = as<mapping>(m)->events.at(i);
            *c = sv(x.category);
            *e = sv(x.name);
            *count = x.count;
        };
        a.results_get_kernel_number = [](const nnergy_results* r, uint32_t k,
                                         nnergy_string_view key, double* out) {
            const auto& n = as<results>(r)->numbers;
            auto it = n.find(k);
            if (it == n.end()) return false;
            auto v = it->second.find(str(key));
            if (v == it->second.end()) return false;
            *out = v->second;
            return true;
        };
        a.results_get_total = [](const nnergy_results* r, nnergy_string_view key, double* out) {
            const auto& t = as<results>(r)->totals;
            auto it = t.find(str(key));
            if (it == t.end()) return false;
            *out = it->second;
            return true;
        };
        a.results_get_total_text = [](const nnergy_results* r, nnergy_string_view key,
                                      nnergy_string_view* out) {
            const auto& t = as<results>(r)->total_texts;
            auto it = t.find(str(key));
            if (it == t.end()) return false;
            *out = sv(it->second);
            return true;
        };
        a.value_kind = [](const nnergy_value* v) { return as<value>(v)->kind; };
        a.value_bool = [](const nnergy_value* v) { return as<value>(v)->b; };
        a.value_int = [](const nnergy_value* v) { return as<value>(v)->i; };
        a.value_float = [](const nnergy_value* v) { return as<value>(v)->f; };
        a.value_string = [](const nnergy_value* v) { return sv(as<value>(v)->s); };
        a.value_size = [](const nnergy_value* v) {
            const value* x = as<value>(v);
            return x->kind == NNERGY_VALUE_OBJECT || x->kind == NNERGY_VALUE_ARRAY
                       ? x->children.size()
                       : size_t{0};
        };
        a.value_at = [](const nnergy_value* v, size_t i) -> const nnergy_value* {
            const value* x = as<value>(v);
            if ((x->kind == NNERGY_VALUE_OBJECT || x->kind == NNERGY_VALUE_ARRAY) &&
                i < x->children.size())
                return x->children[i].handle();
            return nullptr;
        };
        a.value_key = [](const nnergy_value* v, size_t i) {
            const value* x = as<value>(v);
            if (x->kind == NNERGY_VALUE_OBJECT && i < x->keys.size()) return sv(x->keys[i]);
            return nnergy_string_view{nullptr, 0};
        };
        a.value_get = [](const nnergy_value* v, nnergy_string_view key) -> const nnergy_value* {
            const value* x = as<value>(v);
            if (x->kind != NNERGY_VALUE_OBJECT) return nullptr;
            for (size_t i = 0; i < x->keys.size(); ++i)
                if (x->keys[i] == nnergy::sdk::from_sv(key)) return x->children[i].handle();
            return nullptr;
        };
        a.output_write = [](nnergy_output* o, nnergy_string_view bytes) -> nnergy_status* {
            as<output>(o)->data += str(bytes);
            ++as<output>(o)->writes;
            return nullptr;
        };
        a.output_allows_color = [](const nnergy_output* o) { return as<output>(o)->color; };
        a.output_path = [](const nnergy_output* o) { return sv(as<output>(o)->path); };
        a.output_companion = [](nnergy_output* o, nnergy_string_view suffix,
                                nnergy_output** out) -> nnergy_status* {
            output& c = as<output>(o)->companions[str(suffix)];
            *out = reinterpret_cast<nnergy_output*>(&c);
            return nullptr;
        };
        return a;
    }();
    return table;
}

/// Makes the plugins' sdk::host() this fake.
inline void install() { nnergy::sdk::detail::api_slot() = &api(); }

/// Flattened configuration values with stable storage for their strings.
class config {
public:
    config() : file_(sv(strings_.emplace_back("toy.toml"))) {}
    // Values point into strings_; a deque keeps its elements in place when moved, a copy would not.
    config(const config&) = delete;
    config& operator=(const config&) = delete;
    config(config&&) = default;
    config& operator=(config&&) = default;

    config& number(const std::string& name, double v, uint32_t line = 0) {
        nnergy_named_value& n = add(name, line);
        n.kind = NNERGY_VALUE_FLOAT;
        n.float_value = v;
        return *this;
    }
    config& integer(const std::string& name, int64_t v, uint32_t line = 0) {
        nnergy_named_value& n = add(name, line);
        n.kind = NNERGY_VALUE_INT;
        n.int_value = v;
        n.float_value = static_cast<double>(v);
        return *this;
    }
    config& text(const std::string& name, const std::string& v, uint32_t line = 0) {
        nnergy_named_value& n = add(name, line);
        n.kind = NNERGY_VALUE_STRING;
        n.string_value = sv(strings_.emplace_back(v));
        return *this;
    }
    config& boolean(const std::string& name, bool v, uint32_t line = 0) {
        nnergy_named_value& n = add(name, line);
        n.kind = NNERGY_VALUE_BOOL;
        n.bool_value = v;
        return *this;
    }
    /// Drops a key (to test what happens when a file lacks it).
    config& without(const std::string& name) {
        for (size_t i = 0; i < values_.size(); ++i)
            if (str(values_[i].name) == name) values_.erase(values_.begin() + static_cast<long>(i));
        return *this;
    }
    nnergy::sdk::config_view view() const { return {values_.data(), values_.size()}; }
    const nnergy_named_value* data() const { return values_.data(); }
    size_t size() const { return values_.size(); }
    /// The file later values claim to come from.
    config& file(const std::string& f) {
        file_ = sv(strings_.emplace_back(f));
        return *this;
    }

private:
    nnergy_named_value& add(const std::string& name, uint32_t line) {
        nnergy_named_value n{};
        n.struct_size = sizeof n;
        n.name = sv(strings_.emplace_back(name));
        n.file = file_;
        n.line = line;
        values_.push_back(n);
        return values_.back();
    }
    std::deque<std::string> strings_;  // deque: growing never moves the strings
    nnergy_string_view file_;
    std::vector<nnergy_named_value> values_;
};

/// Create arguments for a component built in-process.
inline nnergy_create_args create_args(const config& cfg, const config* hardware = nullptr) {
    nnergy_create_args a{};
    a.struct_size = sizeof a;
    a.ctx = nullptr;
    a.api = &api();
    a.config = cfg.data();
    a.config_count = cfg.size();
    if (hardware) {
        a.hardware = hardware->data();
        a.hardware_count = hardware->size();
    }
    return a;
}

}  // namespace fake
