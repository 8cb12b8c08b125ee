// SPDX-License-Identifier: Apache-2.0
// nnergy calibrate: a hardware entry's fitted constants refitted to measurements, by a pattern
// search on the log of each constant, estimating every measured configuration through the same
// plugins as `nnergy validate`.
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <nnergy/framework/calibrate.hpp>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/host.hpp>
#include <nnergy/framework/pipeline.hpp>
#include <optional>
#include <set>
#include <utility>

namespace nnergy {
namespace {

/// `*` matches any run of characters; everything else itself.
bool glob_match(std::string_view pattern, std::string_view text) {
    size_t p = 0, t = 0, star = std::string_view::npos, resume = 0;
    while (t < text.size()) {
        if (p < pattern.size() && pattern[p] == '*') {
            star = p++;
            resume = t;
        } else if (p < pattern.size() && pattern[p] == text[t]) {
            ++p;
            ++t;
        } else if (star != std::string_view::npos) {
            p = star + 1;
            t = ++resume;
        } else {
            return false;
        }
    }
    while (p < pattern.size() && pattern[p] == '*') ++p;
    return p == pattern.size();
}

bool matches_any(const std::vector<std::string>& patterns, std::string_view key) {
    return std::any_of(patterns.begin(), patterns.end(),
                       [&](const std::string& p) { return glob_match(p, key); });
}

/// A constant the search can move: a positive number with a source (the search moves by factors).
bool movable(const config_value& v) {
    return v.kind == NNERGY_VALUE_FLOAT && !v.source.empty() && v.float_value > 0;
}

/// A count the entry has at 0, which turns it off (a split depth, a half-saturation constant):
/// --fit may switch it on.
bool switched_off_count(const config_value& v) {
    return v.kind == NNERGY_VALUE_FLOAT && !v.source.empty() && v.float_value == 0 &&
           v.unit == "count";
}

/// Where a count at 0 starts when switched on: the median (the lower one of an even number) of
/// the positive counts its key names in the entry's other tables; 0 when none does.
double on_value_of(const config_values& hw, std::string_view key) {
    const std::string_view leaf = key.substr(key.rfind('.') + 1);
    std::vector<double> values;
    for (const config_value& v : hw)
        if (v.kind == NNERGY_VALUE_FLOAT && v.unit == "count" && v.float_value > 0 &&
            v.name.size() > leaf.size() && v.name.ends_with(leaf) &&
            v.name[v.name.size() - leaf.size() - 1] == '.')
            values.push_back(v.float_value);
    if (values.empty()) return 0;
    std::sort(values.begin(), values.end());
    return values[(values.size() - 1) / 2];
}

/// Counts are discrete (tile sizes, split depths) unless they are a half-saturation constant.
bool continuous(const config_value& v) { return v.unit != "count" || v.name.ends_with("_half"); }

bool marked_fitted(const config_values& values, const config_value& v) {
    // A borrowed value keeps its lender's source: one the lender fitted is this entry's
    // assumption, which measurements of this device should replace.
    if (v.source.starts_with("fitted")) return true;
    const config_value* p = find_value(values, v.name + "_provenance");
    return p && p->kind == NNERGY_VALUE_STRING && p->string_value == "fitted";
}

calibration_parameter parameter_of(const config_value& v, std::string key) {
    calibration_parameter p;
    p.key = std::move(key);
    p.unit = v.unit;
    p.unit_factor = v.written_value != 0 ? v.float_value / v.written_value : 1.0;
    p.initial = p.fitted = v.float_value;
    p.lower = p.initial / 20;
    p.upper = p.initial * 20;
    // A fraction of a peak stays a fraction.
    if ((v.unit == "%" || v.unit == "1") && p.initial <= 1) p.upper = std::min(p.upper, 1.0);
    // The overlay calibrate writes must read back: its values stay within the magnitudes a
    // hardware file may hold.
    if (const auto range = plausible_si_range(v.unit);
        range && p.initial >= range->first && p.initial <= range->second) {
        p.lower = std::max(p.lower, range->first);
        p.upper = std::min(p.upper, range->second);
    }
    p.origin = v.file;
    return p;
}

/// The constants of the hardware class's calibration template (configs/calibration/<class>.toml)
/// as hardware keys with their start values: each class's key, and the same key per precision
/// the entry offers beyond its first (starting where the class's key is).
config_values template_candidates(const validation_session& session) {
    config_values out;
    const std::string& hw_class = session.header().hw_class;
    if (hw_class.empty()) return out;
    const std::filesystem::path file =
        find_config(std::filesystem::path("calibration") / (hw_class + ".toml"));
    if (file.empty()) return out;
    const config_values tpl = read_calibration_template(file);
    const config_value* section = find_value(tpl, "section");
    if (!section || section->kind != NNERGY_VALUE_STRING)
        throw error(
            fmt::format("{}: missing 'section' (the hardware table of the class's "
                        "kernels, e.g. \"cpu\")",
                        file.string()));
    const config_values& hw = session.hardware();
    const std::vector<std::string> precisions = hardware_precisions(hw);
    for (size_t i = 0;; ++i) {
        const config_value* key = find_value(tpl, fmt::format("constant[{}].key", i));
        if (!key) break;
        const config_value* start = find_value(tpl, fmt::format("constant[{}].start", i));
        if (key->kind != NNERGY_VALUE_STRING || !start || start->kind != NNERGY_VALUE_FLOAT)
            throw error(
                fmt::format("{}:{}: constant {} needs key = \"...\" and start = {{ value, "
                            "unit, source }}",
                            file.string(), key->line, i));
        for (size_t j = 0;; ++j) {
            const config_value* cls =
                find_value(tpl, fmt::format("constant[{}].classes[{}]", i, j));
            if (!cls) break;
            const std::string table =
                fmt::format("{}.kernels.{}", section->string_value, cls->string_value);
            config_value base = *start;
            base.name = table + "." + key->string_value;
            if (const config_value* given = find_value(hw, base.name)) base = *given;
            out.push_back(base);
            for (size_t k = 1; k < precisions.size(); ++k) {
                config_value per = base;
                per.name = fmt::format("{}.{}.{}", table, precisions[k], key->string_value);
                out.push_back(std::move(per));
            }
        }
    }
    return out;
}

constexpr std::string_view k_runtime_costs[] = {"dispatch.per_kernel", "dispatch.per_module",
                                                "dispatch.per_call", "dispatch.per_view",
                                                "launch.kernel_gap"};

struct scored {
    double objective = std::numeric_limits<double>::infinity();
    std::vector<validated_config> predictions;
};

const char* objective_text(fit_objective objective) {
    switch (objective) {
        case fit_objective::log_rms:
            return "RMS of log(estimate / measurement)";
        case fit_objective::log_mean_abs:
            return "mean of |log(estimate / measurement)|";
        case fit_objective::relative_rms:
            break;
    }
    return "RMS of (estimate / measurement - 1)";
}

/// The objective and, unless it counts both, which quantities it counts.
std::string goal_text(const fit_goal& goal) {
    std::string s = objective_text(goal.objective);
    if (goal.quantities == fit_quantities::latency) s += " of the latencies";
    if (goal.quantities == fit_quantities::energy) s += " of the energies";
    return s;
}

/// One estimate's term of the objective.
double term_of(double estimate, double measured, fit_objective objective) {
    if (objective == fit_objective::relative_rms) {
        const double e = estimate / measured - 1;
        return e * e;
    }
    const double e = std::log(estimate / measured);
    return objective == fit_objective::log_rms ? e * e : std::fabs(e);
}

/// The objective from the sum of `count` terms.
double objective_of(double sum, size_t count, fit_objective objective) {
    if (!count) return 0.0;
    const double mean = std::max(0.0, sum) / static_cast<double>(count);
    return objective == fit_objective::log_mean_abs ? mean : std::sqrt(mean);
}

/// The objective's terms of each configuration (latency, and energy where both have one).
struct config_terms {
    double sum = 0;  ///< infinite when an estimate is missing or not positive
    size_t count = 0;
};

config_terms terms_of(const validated_config& c, const fit_goal& goal) {
    config_terms t;
    const double inf = std::numeric_limits<double>::infinity();
    if (!(c.predicted_latency_s > 0) || !std::isfinite(c.predicted_latency_s)) return {inf, 1};
    if (goal.quantities != fit_quantities::energy) {
        t.sum += term_of(c.predicted_latency_s, c.measured.latency_s, goal.objective);
        t.count = 1;
    }
    if (goal.quantities != fit_quantities::latency && c.measured.energy_j &&
        *c.measured.energy_j > 0 && c.predicted_energy_j) {
        if (!(*c.predicted_energy_j > 0)) return {inf, t.count + 1};
        t.sum += term_of(*c.predicted_energy_j, *c.measured.energy_j, goal.objective);
        ++t.count;
    }
    return t;
}

/// The objective over latencies and energies; infinite when an estimate is missing or not
/// positive.
scored score(const validation_session& session, const config_values& hw,
             const std::vector<size_t>* only, const fit_goal& goal) {
    scored s;
    s.predictions = session.predict(hw, only);
    double sum = 0;
    size_t n = 0;
    for (const validated_config& c : s.predictions) {
        const config_terms t = terms_of(c, goal);
        if (!std::isfinite(t.sum)) return s;
        sum += t.sum;
        n += t.count;
    }
    s.objective = objective_of(sum, n, goal.objective);
    return s;
}

calibration_errors errors_of(std::vector<validated_config> configs) {
    calibration_errors e;
    for (validated_config& c : configs)
        if (std::isfinite(c.predicted_latency_s) && c.predicted_latency_s > 0)
            e.configs.push_back(std::move(c));
    sort_configs(e.configs);
    e.modes = summarize(e.configs);
    return e;
}

std::vector<double> fitted_values(const std::vector<calibration_parameter>& parameters) {
    std::vector<double> v;
    for (const calibration_parameter& p : parameters) v.push_back(p.fitted);
    return v;
}

}  // namespace

bool fitted_by_default(const config_values& hardware, const config_value& v) {
    return movable(v) && continuous(v) && marked_fitted(hardware, v);
}

const char* fit_objective_name(fit_objective objective) {
    switch (objective) {
        case fit_objective::log_rms:
            return "log-rms";
        case fit_objective::log_mean_abs:
            return "log-mean-abs";
        case fit_objective::relative_rms:
            break;
    }
    return "relative-rms";
}

std::optional<fit_objective> fit_objective_from_name(std::string_view name) {
    for (fit_objective o :
         {fit_objective::log_rms, fit_objective::log_mean_abs, fit_objective::relative_rms})
        if (name == fit_objective_name(o)) return o;
    return std::nullopt;
}

const char* fit_quantities_name(fit_quantities quantities) {
    switch (quantities) {
        case fit_quantities::latency_and_energy:
            return "both";
        case fit_quantities::latency:
            return "latency";
        case fit_quantities::energy:
            break;
    }
    return "energy";
}

std::optional<fit_quantities> fit_quantities_from_name(std::string_view name) {
    for (fit_quantities q :
         {fit_quantities::latency_and_energy, fit_quantities::latency, fit_quantities::energy})
        if (name == fit_quantities_name(q)) return q;
    return std::nullopt;
}

std::vector<calibration_parameter> calibration_parameters(const validation_session& session,
                                                          const calibrate_options& o) {
    const config_values& hw = session.hardware();
    std::vector<calibration_parameter> out;
    std::set<std::string> seen;
    const auto wanted = [&](const config_value& v) {
        return o.fit.empty() ? fitted_by_default(hw, v)
                             : (movable(v) || switched_off_count(v)) && matches_any(o.fit, v.name);
    };
    for (const config_value& v : hw) {
        if (v.name.starts_with("calibration.") || !wanted(v)) continue;
        calibration_parameter p = parameter_of(v, v.name);
        if (switched_off_count(v)) {
            // Its search bounds and first step come from where the entry's other tables have
            // this key: a count at 0 has no scale of its own.
            p.may_be_off = true;
            p.on_value = on_value_of(hw, v.name);
            if (!(p.on_value > 0)) {
                const std::string why = fmt::format(
                    "'{}' of hardware '{}' is 0 (off), and no other table of the entry gives a "
                    "positive '{}' to start it from",
                    v.name, session.header().hardware, v.name.substr(v.name.rfind('.') + 1));
                // Named on its own, it is an error; caught by a wider pattern, it stays off.
                if (std::find(o.fit.begin(), o.fit.end(), v.name) != o.fit.end())
                    throw error("--fit: " + why, exit_code::usage);
                spdlog::warn("calibrate: {}: kept at 0", why);
                continue;
            }
            p.lower = p.on_value / 20;
            p.upper = p.on_value * 20;
        }
        if (v.name.starts_with("runtime."))
            for (const auto& [name, values] : session.runtimes())
                if (v.name.starts_with("runtime." + name + ".")) p.runtime = name;
        seen.insert(p.key);
        out.push_back(std::move(p));
    }
    // A runtime profile's host costs on this machine, where the entry does not give them.
    for (const auto& [name, values] : session.runtimes())
        for (std::string_view cost : k_runtime_costs) {
            const config_value* v = find_value(*values, cost);
            const std::string key = fmt::format("runtime.{}.{}", name, cost);
            if (!v || seen.count(key)) continue;
            config_value as_key = *v;
            as_key.name = key;
            if (!(v->kind == NNERGY_VALUE_FLOAT && v->float_value > 0)) continue;
            if (o.fit.empty() ? !v->source.starts_with("fitted") : !matches_any(o.fit, key))
                continue;
            calibration_parameter p = parameter_of(as_key, key);
            p.runtime = name;
            seen.insert(key);
            out.push_back(std::move(p));
        }
    // Op-class constants the entry does not give, from its class's calibration template, when
    // op runs measure classes directly.
    bool has_ops = false;
    for (size_t i = 0; i < session.size(); ++i)
        has_ops = has_ops || session.measured(i).kind == "op";
    if (has_ops)
        for (const config_value& v : template_candidates(session)) {
            if (seen.count(v.name) || find_value(hw, v.name)) continue;
            if (!o.fit.empty() && !matches_any(o.fit, v.name)) continue;
            calibration_parameter p = parameter_of(v, v.name);
            p.from_template = true;
            seen.insert(p.key);
            out.push_back(std::move(p));
        }
    for (const std::string& pattern : o.fit)
        if (std::none_of(out.begin(), out.end(), [&](const calibration_parameter& p) {
                return glob_match(pattern, p.key);
            }))
            throw error(fmt::format("--fit {}: no positive constant (or count at 0) of hardware "
                                    "'{}' or of its runtime profiles' host costs has such a key",
                                    pattern, session.header().hardware),
                        exit_code::usage);
    out.erase(
        std::remove_if(out.begin(), out.end(),
                       [&](const calibration_parameter& p) { return matches_any(o.fix, p.key); }),
        out.end());
    if (o.discrete_counts)
        for (calibration_parameter& p : out)
            p.discrete = p.unit == "count" && !p.key.ends_with("_half");
    for (const calibration_tie& pair : o.ties) {
        const std::string& follower = pair.follower;
        const std::string& leader = pair.leader;
        const std::string& tie = pair.origin;
        const config_value* v = find_value(hw, follower);
        if (!v || !(movable(*v) || switched_off_count(*v)))
            throw error(fmt::format("{}: hardware '{}' has no positive constant '{}'", tie,
                                    session.header().hardware, follower),
                        exit_code::usage);
        if (follower == leader)
            throw error(fmt::format("{}: a constant cannot follow itself", tie), exit_code::usage);
        // Ties are one level deep and each follower has one leader: a chain or a second
        // leader would leave a constant priced by a tie that no longer holds.
        for (const auto& other : o.ties) {
            if (&other == &pair) continue;
            if (other.follower == leader)
                throw error(fmt::format("{}: '{}' follows '{}' ({}); a leader must be fitted on "
                                        "its own",
                                        tie, leader, other.leader, other.origin),
                            exit_code::usage);
            if (other.follower == follower)
                throw error(fmt::format("{}: '{}' is tied twice (also to '{}')", tie, follower,
                                        other.leader),
                            exit_code::usage);
        }
        // The follower is priced from the leader, not fitted beside it.
        out.erase(std::remove_if(out.begin(), out.end(),
                                 [&](const calibration_parameter& p) { return p.key == follower; }),
                  out.end());
        const auto lead = std::find_if(out.begin(), out.end(), [&](const calibration_parameter& p) {
            return p.key == leader;
        });
        if (lead == out.end())
            throw error(fmt::format("{}: '{}' is not among the constants fitted (--fit, --fix)",
                                    tie, leader),
                        exit_code::usage);
        // A ratio to 0 is no ratio: a count at 0 follows, and leads, only another at 0.
        if ((lead->initial == 0) != (v->float_value == 0))
            throw error(fmt::format("{}: '{}' is {:g} and '{}' is {:g}; a constant at 0 can "
                                    "only follow, or lead, another at 0",
                                    tie, follower, v->float_value, leader, lead->initial),
                        exit_code::usage);
        const calibration_parameter as_parameter = parameter_of(*v, v->name);
        lead->followers.push_back(
            {v->name, as_parameter.unit, as_parameter.unit_factor, as_parameter.initial});
    }
    return out;
}

namespace {

/// The entry with one set of parameters written in, for many values: the entry is copied and
/// its constants (and their ties) found once, and each call then writes the values in place.
/// A constant the entry lacks is added at its end, in the parameters' order; a parameter's
/// place is the last key of its name, and its followers are every key of theirs found so far.
class parameter_writer {
public:
    parameter_writer(const config_values& hardware,
                     const std::vector<calibration_parameter>& parameters)
        : parameters_(parameters), values_(hardware) {
        for (const calibration_parameter& p : parameters) {
            std::optional<size_t> at;
            for (size_t c = 0; c < values_.size(); ++c)
                if (values_[c].name == p.key) at = c;
            if (!at) {
                config_value added;
                added.name = p.key;
                added.kind = NNERGY_VALUE_FLOAT;
                added.unit = p.unit;
                added.file = p.origin;
                added.source = "calibrating";
                values_.push_back(std::move(added));
                at = values_.size() - 1;
            }
            places_.push_back(*at);
            std::vector<std::pair<size_t, size_t>> followers;  // (follower, place), in order
            for (size_t f = 0; f < p.followers.size(); ++f)
                for (size_t c = 0; c < values_.size(); ++c)
                    if (values_[c].name == p.followers[f].key) followers.emplace_back(f, c);
            follower_places_.push_back(std::move(followers));
        }
    }

    /// The entry with `values` (one per parameter, SI); valid until the next call.
    const config_values& with(const std::vector<double>& values) {
        for (size_t i = 0; i < parameters_.size(); ++i) {
            const calibration_parameter& p = parameters_[i];
            config_value& v = values_[places_[i]];
            v.float_value = values[i];
            v.written_value = values[i] / p.unit_factor;
            for (const auto& [f, c] : follower_places_[i]) {
                const tied_constant& follower = p.followers[f];
                values_[c].float_value = p.follower_value(follower, values[i]);
                values_[c].written_value = values_[c].float_value / follower.unit_factor;
            }
        }
        return values_;
    }

private:
    const std::vector<calibration_parameter>& parameters_;
    config_values values_;
    std::vector<size_t> places_;
    std::vector<std::vector<std::pair<size_t, size_t>>> follower_places_;
};

}  // namespace

config_values with_parameters(const config_values& hardware,
                              const std::vector<calibration_parameter>& parameters,
                              const std::vector<double>& values) {
    parameter_writer writer(hardware, parameters);
    return writer.with(values);
}

namespace {

/// The fit's state: the configurations, each one's terms, their total.
class objective_state {
public:
    objective_state(const validation_session& session, const config_values& hw,
                    const std::vector<calibration_parameter>& parameters,
                    const std::vector<size_t>* only, const fit_goal& goal, size_t& evaluations)
        : session_(session), writer_(hw, parameters), goal_(goal), evaluations_(evaluations) {
        if (only)
            configs_ = *only;
        else
            for (size_t i = 0; i < session.size(); ++i) configs_.push_back(i);
    }

    const std::vector<size_t>& configs() const { return configs_; }

    /// Terms of configurations `subset` (positions in configs()) at `values`. A `candidate`
    /// the search tries may be a hardware file the plugins refuse (an idle power above the
    /// power limit): it is then no better than any other point, infinitely bad, rather than an
    /// error. At the values the search has accepted, a refusal is an error.
    std::vector<config_terms> terms(const std::vector<double>& values,
                                    const std::vector<size_t>& subset, bool candidate = false) {
        ++evaluations_;
        std::vector<size_t> indices;
        for (size_t k : subset) indices.push_back(configs_[k]);
        std::vector<config_terms> out;
        try {
            for (const validated_config& c : session_.predict(writer_.with(values), &indices))
                out.push_back(terms_of(c, goal_));
        } catch (const std::exception&) {
            if (!candidate) throw;
            out.assign(subset.size(), {std::numeric_limits<double>::infinity(), 1});
        }
        return out;
    }

    double objective(double sum, size_t count) const {
        return objective_of(sum, count, goal_.objective);
    }

private:
    const validation_session& session_;
    parameter_writer writer_;
    fit_goal goal_;
    size_t& evaluations_;
    std::vector<size_t> configs_;
};

}  // namespace

double fit_parameters(const validation_session& session,
                      std::vector<calibration_parameter>& parameters,
                      const std::vector<size_t>* only, size_t max_sweeps, const fit_goal& goal,
                      size_t& evaluations) {
    std::vector<double> x;
    for (calibration_parameter& p : parameters) {
        p.fitted = p.initial;
        x.push_back(p.initial);
    }
    objective_state state(session, session.hardware(), parameters, only, goal, evaluations);
    std::vector<size_t> all(state.configs().size());
    for (size_t k = 0; k < all.size(); ++k) all[k] = k;

    // A constant's value, or where a count at 0 starts when switched on: what its steps are
    // multiples of.
    const auto scale_of = [&](size_t i) { return x[i] > 0 ? x[i] : parameters[i].on_value; };
    std::vector<config_terms> terms = state.terms(x, all);
    double sum = 0;
    size_t count = 0;
    const auto total = [&] {
        sum = 0;
        count = 0;
        for (const config_terms& t : terms) {
            sum += t.sum;
            count += t.count;
        }
    };
    total();
    if (!std::isfinite(sum))
        throw error(
            fmt::format("calibrate: hardware '{}' as it is gives no positive estimate of "
                        "every configuration; nothing to fit from",
                        session.header().hardware));

    // Which configurations each constant moves (x4 and /4 of its value): a constant that moves
    // none is not identified and stays as it is; the search re-estimates only those it moves.
    std::vector<std::vector<size_t>> depends(parameters.size());
    for (size_t i = 0; i < parameters.size(); ++i) {
        for (double factor : {4.0, 0.25}) {
            std::vector<double> moved = x;
            moved[i] = std::clamp(scale_of(i) * factor, parameters[i].lower, parameters[i].upper);
            if (moved[i] == x[i]) continue;
            const std::vector<config_terms> t = state.terms(moved, all, true);
            for (size_t k = 0; k < all.size(); ++k) {
                const double a = t[k].sum, b = terms[k].sum;
                if (a != b && !(std::fabs(a - b) <= 1e-12 * std::max(std::fabs(a), std::fabs(b))))
                    depends[i].push_back(k);
            }
        }
        std::sort(depends[i].begin(), depends[i].end());
        depends[i].erase(std::unique(depends[i].begin(), depends[i].end()), depends[i].end());
        // A class constant the entry lacks is added for what op runs measure of it.
        parameters[i].identified =
            !parameters[i].from_template
                ? !depends[i].empty()
                : std::any_of(depends[i].begin(), depends[i].end(), [&](size_t k) {
                      return session.measured(state.configs()[k]).kind == "op";
                  });
    }

    // Pattern search in log space (Hooke and Jeeves) over the constants `which`: each sweep
    // tries 8 multiples of each constant on a grid of the current span (x4 at first); a sweep
    // that gains nothing halves the span's logarithm, one that gains is extended along the step
    // it took. Ends when the span is below 0.1 %, or after max_sweeps sweeps.
    const auto better = [](double candidate, double current) {
        return candidate < current - 1e-12 * std::max(1.0, std::fabs(current));
    };
    const auto pattern_search = [&](const std::vector<size_t>& which) {
        double span = 4.0;
        for (size_t sweep = 0; sweep < max_sweeps && span > 1.001; ++sweep) {
            const std::vector<double> start = x;
            bool improved = false;
            for (size_t i : which) {
                const std::vector<size_t>& d = depends[i];
                double old_sum = 0;
                for (size_t k : d) old_sum += terms[k].sum;
                // A count tries half, a quarter, twice and four times itself in every sweep,
                // within its bounds; a continuous constant the span's grid.
                // A count at 0 tries its switched-on value too (step 0), and a count that may
                // be off tries 0 last.
                const bool discrete = parameters[i].discrete;
                const int last = (discrete ? 2 : 4) + (parameters[i].may_be_off ? 1 : 0);
                for (int step = discrete ? -2 : -4; step <= last; ++step) {
                    if (step == 0 && x[i] > 0) continue;
                    std::vector<double> candidate = x;
                    if (step > (discrete ? 2 : 4)) {
                        candidate[i] = 0;
                    } else if (discrete) {
                        candidate[i] = scale_of(i) * std::ldexp(1.0, step);
                        if (candidate[i] < parameters[i].lower ||
                            candidate[i] > parameters[i].upper)
                            continue;
                    } else {
                        candidate[i] = std::clamp(scale_of(i) * std::pow(span, step / 4.0),
                                                  parameters[i].lower, parameters[i].upper);
                    }
                    if (candidate[i] == x[i]) continue;
                    std::vector<config_terms> t = state.terms(candidate, d, true);
                    double new_sum = 0;
                    for (const config_terms& c : t) new_sum += c.sum;
                    if (!std::isfinite(new_sum) || !better(sum - old_sum + new_sum, sum)) continue;
                    for (size_t k = 0; k < d.size(); ++k) terms[d[k]] = t[k];
                    sum = sum - old_sum + new_sum;
                    old_sum = new_sum;
                    x = std::move(candidate);
                    improved = true;
                }
            }
            // The running total drifts by rounding: the whole set again.
            terms = state.terms(x, all);
            total();
            if (!improved) {
                span = std::sqrt(span);
                continue;
            }
            // The pattern move: the sweep's whole step once more, while it keeps gaining.
            std::vector<double> ratio(x.size());
            for (size_t i = 0; i < x.size(); ++i)
                ratio[i] = start[i] > 0 && x[i] > 0 ? x[i] / start[i] : 1.0;
            for (int extend = 0; extend < 8; ++extend) {
                std::vector<double> candidate = x;
                bool moved = false;
                for (size_t i : which) {
                    // A count switched on or off this sweep has no factor to repeat.
                    if (ratio[i] == 1.0) continue;
                    candidate[i] =
                        std::clamp(x[i] * ratio[i], parameters[i].lower, parameters[i].upper);
                    // A count off its grid of factors of two stays where it is.
                    if (parameters[i].discrete && candidate[i] != x[i] * ratio[i])
                        candidate[i] = x[i];
                    moved = moved || candidate[i] != x[i];
                }
                if (!moved) break;
                std::vector<config_terms> t = state.terms(candidate, all, true);
                double new_sum = 0;
                for (const config_terms& c : t) new_sum += c.sum;
                if (!std::isfinite(new_sum) || !better(new_sum, sum)) break;
                terms = std::move(t);
                sum = new_sum;
                x = std::move(candidate);
            }
        }
    };
    std::vector<size_t> identified;
    for (size_t i = 0; i < parameters.size(); ++i)
        if (parameters[i].identified) identified.push_back(i);
    pattern_search(identified);

    // A count moved alone is judged at the continuous constants that suited its old value (a
    // larger tile wants a higher efficiency): each count's steps are tried again with the
    // constants that share its configurations refitted, until no step gains (each kept step
    // lowers the objective; max_sweeps rounds at most, so that a long descent still ends).
    std::vector<std::pair<size_t, std::vector<size_t>>> counts;  // (count, its related)
    for (size_t i : identified) {
        if (!parameters[i].discrete) continue;
        std::vector<size_t> related;
        for (size_t j : identified) {
            if (parameters[j].discrete) continue;
            std::vector<size_t> shared;
            std::set_intersection(depends[i].begin(), depends[i].end(), depends[j].begin(),
                                  depends[j].end(), std::back_inserter(shared));
            if (!shared.empty()) related.push_back(j);
        }
        counts.emplace_back(i, std::move(related));
    }
    bool improved = true;
    for (size_t round = 0; improved && round < max_sweeps; ++round) {
        improved = false;
        for (const auto& [i, related] : counts) {
            // 3: off, for a count that may be; 0: switched on, for one that is off.
            for (int step : {-2, -1, 0, 1, 2, 3}) {
                if (step == 0 && x[i] > 0) continue;
                if (step == 3 && !(parameters[i].may_be_off && x[i] > 0)) continue;
                const double value = step == 3 ? 0.0 : scale_of(i) * std::ldexp(1.0, step);
                if (step != 3 && (value < parameters[i].lower || value > parameters[i].upper))
                    continue;
                const std::vector<double> kept_x = x;
                const std::vector<config_terms> kept_terms = terms;
                const double kept_sum = sum;
                const size_t kept_count = count;
                x[i] = value;
                terms = state.terms(x, all, true);
                total();
                if (std::isfinite(sum) && !related.empty()) pattern_search(related);
                if (std::isfinite(sum) && better(sum, kept_sum)) {
                    improved = true;
                    break;
                }
                x = kept_x;
                terms = kept_terms;
                sum = kept_sum;
                count = kept_count;
            }
        }
    }
    for (size_t i = 0; i < parameters.size(); ++i) {
        calibration_parameter& p = parameters[i];
        p.fitted = x[i];
        p.at_bound =
            p.identified && x[i] > 0 && (x[i] <= p.lower * 1.001 || x[i] >= p.upper / 1.001);
    }
    return state.objective(sum, count);
}

calibration_result run_calibration(const calibrate_options& o) {
    const validation_session session(o.validate);
    calibration_result r;
    r.header = session.header();
    if (session.size() == 0)
        throw error(
            fmt::format("nothing to calibrate: none of the {} measured model "
                        "configuration{} could be estimated",
                        session.measured_count(), session.measured_count() == 1 ? "" : "s"));
    r.parameters = calibration_parameters(session, o);
    if (r.parameters.empty())
        throw error(fmt::format("nothing to calibrate: hardware '{}' marks no continuous constant "
                                "as fitted (name them with --fit KEY)",
                                r.header.hardware),
                    exit_code::usage);
    const fit_goal& goal = o.goal;
    const scored before = score(session, session.hardware(), nullptr, goal);
    r.goal = o.goal;
    r.objective_before = before.objective;
    r.before = errors_of(before.predictions);
    r.objective_after =
        fit_parameters(session, r.parameters, nullptr, o.max_sweeps, goal, r.evaluations);
    r.after = errors_of(session.predict(
        with_parameters(session.hardware(), r.parameters, fitted_values(r.parameters))));
    std::stable_partition(r.parameters.begin(), r.parameters.end(),
                          [](const calibration_parameter& p) { return p.identified; });
    return r;
}

// ---- the overlay file ----

namespace {

std::string toml_string(std::string_view s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (c == '\n') {
            out += "\\n";
            continue;
        }
        out += c;
    }
    return out + "\"";
}

bool bare_key(std::string_view k) {
    return !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
    });
}

std::string key_part(std::string_view k) { return bare_key(k) ? std::string(k) : toml_string(k); }

/// A dotted key written as a TOML table path, each part quoted where it must be.
std::string table_path(const std::vector<std::string>& parts) {
    std::string out;
    for (const std::string& p : parts) {
        if (!out.empty()) out += '.';
        out += key_part(p);
    }
    return out;
}

std::vector<std::string> split_key(const calibration_parameter& p) {
    std::vector<std::string> parts;
    std::string rest = p.key;
    if (!p.runtime.empty()) {
        parts = {"runtime", p.runtime};
        rest = p.key.substr(std::string("runtime.").size() + p.runtime.size() + 1);
    }
    size_t start = 0;
    for (size_t dot; (dot = rest.find('.', start)) != std::string::npos; start = dot + 1)
        parts.push_back(rest.substr(start, dot - start));
    parts.push_back(rest.substr(start));
    return parts;
}

std::string number(double v) { return fmt::format("{:.4g}", v); }

std::string file_names(const validation_result& h) {
    std::string out;
    for (const std::string& f : h.files)
        out += (out.empty() ? "" : ", ") + std::filesystem::path(f).filename().string();
    return out;
}

/// "8 model configurations and 2 op runs".
std::string configs_text(const calibration_errors& e) {
    size_t models = 0, ops = 0;
    for (const validated_config& c : e.configs) (c.measured.kind == "op" ? ops : models) += 1;
    std::string s;
    if (models) s = fmt::format("{} model configuration{}", models, models == 1 ? "" : "s");
    if (ops) s += fmt::format("{}{} op run{}", s.empty() ? "" : " and ", ops, ops == 1 ? "" : "s");
    return s;
}

std::string modes_of(const calibration_errors& e) {
    std::string out;
    for (const mode_summary& m : e.modes) out += (out.empty() ? "" : ", ") + m.mode;
    return out;
}

}  // namespace

std::string calibration_overlay(const calibration_result& r, const std::string& base_ref,
                                const std::filesystem::path& output,
                                const std::string& command_line) {
    // An entry given as BASE+OVERLAY is the overlay stacked on BASE: the new overlay stacks on
    // that overlay (whose own `base` names BASE), since a `base` holds one reference.
    std::string base =
        hardware_overlay_part(base_ref, std::filesystem::current_path()).value_or(base_ref);
    // A path is written relative to the overlay, so the two can move together.
    if (base.find('/') != std::string::npos || base.ends_with(".toml")) {
        std::error_code ec;
        const std::filesystem::path abs = std::filesystem::absolute(base, ec);
        const std::filesystem::path dir = std::filesystem::absolute(output, ec).parent_path();
        const std::filesystem::path rel = abs.lexically_relative(dir);
        base = rel.empty() ? abs.string() : rel.string();
    }
    const std::string provenance =
        fmt::format("nnergy calibrate to {} ({}; {})", file_names(r.header), configs_text(r.after),
                    modes_of(r.after));
    std::string s;
    s += fmt::format(
        "# Calibrated overlay of hardware '{}' (docs/calibrate.md), written by nnergy "
        "{}.\n",
        r.header.hardware, NNERGY_VERSION);
    s += fmt::format("# Use: --hw {}+{} or --hw {}\n", base_ref, output.filename().string(),
                     output.filename().string());
    s += "# Command: " + command_line + "\n";
    s += fmt::format("# Fit: {} {:.4f} -> {:.4f} over {} estimates of the whole set.\n",
                     goal_text(r.goal), r.objective_before, r.objective_after, r.evaluations);
    std::string unidentified;
    for (const calibration_parameter& p : r.parameters)
        if (!p.identified) unidentified += (unidentified.empty() ? "" : ", ") + p.key;
    if (!unidentified.empty())
        s +=
            "# Not identified by these measurements (kept as the entry has them): " + unidentified +
            "\n";
    s += "#\n# Per configuration: measured, estimated with the entry's values, and as fitted.\n";
    for (size_t i = 0; i < r.after.configs.size(); ++i) {
        const validated_config& a = r.after.configs[i];
        const measured_config& m = a.measured;
        const validated_config* b = nullptr;
        for (const validated_config& c : r.before.configs)
            if (c.measured.model == m.model && c.measured.mode == m.mode &&
                c.measured.precision == m.precision && c.measured.batch == m.batch &&
                c.measured.device == m.device && c.measured.threads == m.threads)
                b = &c;
        const std::string threads =
            m.threads ? fmt::format(", {} thread{}", *m.threads, *m.threads == 1 ? "" : "s")
                      : std::string();
        s += fmt::format("#   {} {} {} batch {}{}: {:.4g} ms measured, {} -> {:+.1f}%\n", m.mode,
                         m.model, m.precision, m.batch, threads, 1e3 * m.latency_s,
                         b ? fmt::format("{:+.1f}%", 100 * b->latency_error()) : "-",
                         100 * a.latency_error());
    }
    s += "\nschema = \"nnergy.hardware/1\"\n";
    s += "base = " + toml_string(base) + "\n";

    // Each table's lines, in the order of the parameters (a tied constant after its leader).
    std::map<std::vector<std::string>, std::vector<std::string>> tables;
    for (const calibration_parameter& p : r.parameters) {
        if (!p.identified) continue;
        std::vector<std::string> parts = split_key(p);
        const std::string key = parts.back();
        parts.pop_back();
        std::string note;
        if (p.from_template)
            note = fmt::format(
                "fitted: {}; the entry has no such constant (the search began at {} {})",
                provenance, number(p.initial / p.unit_factor), p.unit);
        else if (p.may_be_off)
            note = fmt::format(
                "fitted: {}; the entry had 0 (off), which the search could switch on from {} {} "
                "(the median of the entry's other tables)",
                provenance, number(p.on_value / p.unit_factor), p.unit);
        else
            note = fmt::format("fitted: {}; the entry had {} {}", provenance,
                               number(p.initial / p.unit_factor), p.unit);
        if (p.at_bound) note += " (the fit stopped at its search bound, x20 either way)";
        tables[parts].push_back(fmt::format("{} = {{ value = {}, unit = {}, source = {} }}\n",
                                            key_part(key), number(p.fitted / p.unit_factor),
                                            toml_string(p.unit), toml_string(note)));
        for (const tied_constant& f : p.followers) {
            calibration_parameter as_key;
            as_key.key = f.key;
            std::vector<std::string> fparts = split_key(as_key);
            const std::string fkey = fparts.back();
            fparts.pop_back();
            const double value = p.follower_value(f, p.fitted);
            const std::string fnote =
                p.initial != 0
                    ? fmt::format(
                          "scaled: {} x {} (the entry's ratio), which is fitted: {}; the "
                          "entry had {} {}",
                          number(f.initial / p.initial), p.key, provenance,
                          number(f.initial / f.unit_factor), f.unit)
                    : fmt::format("the same as {}, which is fitted: {}; the entry had both at 0",
                                  p.key, provenance);
            tables[fparts].push_back(fmt::format("{} = {{ value = {}, unit = {}, source = {} }}\n",
                                                 key_part(fkey), number(value / f.unit_factor),
                                                 toml_string(f.unit), toml_string(fnote)));
        }
    }
    for (const auto& [path, lines] : tables) {
        s += "\n[";
        s += table_path(path);
        s += "]\n";
        for (const std::string& line : lines) s += line;
    }

    s += "\n[calibration]\n";
    s += fmt::format("tool = {}\n", toml_string(fmt::format("nnergy {}", NNERGY_VERSION)));
    s += fmt::format("objective = {}\n", toml_string(fit_objective_name(r.goal.objective)));
    if (r.goal.quantities != fit_quantities::latency_and_energy)
        s += fmt::format("fitted_to = {}\n", toml_string(fit_quantities_name(r.goal.quantities)));
    s += "files = [";
    for (size_t i = 0; i < r.header.files.size(); ++i)
        s += (i ? ", " : "") + toml_string(r.header.files[i]);
    s += "]\n";
    const auto mape_line = [&](const char* key, double value, const std::string& what) {
        s += fmt::format("{} = {{ value = {:.2f}, unit = \"%\", source = {} }}\n", key, value,
                         toml_string(what));
    };
    // A mode's or an op class's MAPEs with the entry's values (where it had the group) and
    // as fitted.
    const auto residual_lines = [&](const auto* before, const auto& after, const std::string& of) {
        if (before)
            mape_line("latency_mape_before", before->latency.mape,
                      "nnergy calibrate: latency MAPE of " + of + " with the entry's values");
        mape_line("latency_mape", after.latency.mape,
                  "nnergy calibrate: latency MAPE of " + of + " as fitted");
        if (before && before->energy)
            mape_line("energy_mape_before", before->energy->mape,
                      "nnergy calibrate: energy MAPE of " + of + " with the entry's values");
        if (after.energy)
            mape_line("energy_mape", after.energy->mape,
                      "nnergy calibrate: energy MAPE of " + of + " as fitted");
    };
    const std::vector<op_class_summary> classes_before = summarize_op_classes(r.before.configs);
    const std::vector<op_class_summary> classes_after = summarize_op_classes(r.after.configs);
    for (const mode_summary& after : r.after.modes) {
        const mode_summary* before = nullptr;
        for (const mode_summary& m : r.before.modes)
            if (m.mode == after.mode) before = &m;
        s += "\n[calibration.residuals." + key_part(after.mode) + "]\n";
        residual_lines(before, after,
                       fmt::format("{} configuration{} of mode {}", after.latency.count,
                                   after.latency.count == 1 ? "" : "s", after.mode));
        // Per op class, for op runs: which of the entry's tables the fit leaves off.
        for (const op_class_summary& c : classes_after) {
            if (c.mode != after.mode) continue;
            const op_class_summary* b = nullptr;
            for (const op_class_summary& x : classes_before)
                if (x.mode == c.mode && x.op_class == c.op_class) b = &x;
            s += "\n[calibration.residuals." + key_part(after.mode) + ".op_class." +
                 key_part(c.op_class) + "]\n";
            residual_lines(b, c,
                           fmt::format("{} {} run{} of mode {}", c.latency.count, c.op_class,
                                       c.latency.count == 1 ? "" : "s", after.mode));
        }
        // Per model: where a fit shared by every model leaves its error.
        std::map<std::string, std::vector<validated_config>> by_model;
        for (const validated_config& c : r.after.configs)
            if (c.measured.mode == after.mode) by_model[c.measured.model].push_back(c);
        for (const auto& [model, configs] : by_model) {
            const std::vector<mode_summary> m = summarize(configs);
            s += "\n[calibration.residuals." + key_part(after.mode) + "." + key_part(model) + "]\n";
            mape_line("latency_mape", m.front().latency.mape,
                      fmt::format("nnergy calibrate: latency MAPE of {} configuration{} of {} as "
                                  "fitted",
                                  configs.size(), configs.size() == 1 ? "" : "s", model));
            if (m.front().energy)
                mape_line("energy_mape", m.front().energy->mape,
                          fmt::format("nnergy calibrate: energy MAPE of {} as fitted", model));
        }
    }
    return s;
}

std::string calibration_text(const calibration_result& r) {
    std::string s =
        fmt::format("calibrate {} ({}) to {}: {}\n", r.header.hardware,
                    r.header.hardware_file.string(), file_names(r.header), configs_text(r.after));
    s += fmt::format("\n{:<56} {:>12} {:>12}  {}\n", "constant", "entry", "fitted", "unit");
    for (const calibration_parameter& p : r.parameters) {
        std::string note;
        if (!p.identified)
            note = "  (not identified: no measured configuration depends on it)";
        else if (p.at_bound)
            note = "  (at the search bound)";
        s += fmt::format("{:<56} {:>12} {:>12}  {}{}\n", p.key,
                         p.from_template ? "(" + number(p.initial / p.unit_factor) + ")"
                                         : number(p.initial / p.unit_factor),
                         p.identified ? number(p.fitted / p.unit_factor) : "-", p.unit, note);
        for (const tied_constant& f : p.followers)
            s += fmt::format(
                "{:<56} {:>12} {:>12}  {}  (tied to {})\n", f.key,
                number(f.initial / f.unit_factor),
                p.identified ? number(p.follower_value(f, p.fitted) / f.unit_factor) : "-", f.unit,
                p.key);
    }
    // "before -> after" of a mode's or an op class's latency and energy MAPE; "-" where there
    // is no figure after.
    const auto pair = [](std::optional<double> x, std::optional<double> y) {
        if (!y) return std::string("-");
        return fmt::format("{} -> {:.1f}%", x ? fmt::format("{:.1f}%", *x) : "-", *y);
    };
    const auto energy = [](const auto* s) {
        return s && s->energy ? std::optional<double>(s->energy->mape) : std::nullopt;
    };
    const auto figures = [&](const auto* b, const auto& a) {
        return std::pair<std::string, std::string>{
            pair(b ? std::optional<double>(b->latency.mape) : std::nullopt, a.latency.mape),
            pair(energy(b), energy(&a))};
    };
    s += fmt::format("\n{:<12} {:>8} {:>16} {:>16}\n", "mode", "configs", "latency MAPE",
                     "energy MAPE");
    for (const mode_summary& a : r.after.modes) {
        const mode_summary* b = nullptr;
        for (const mode_summary& m : r.before.modes)
            if (m.mode == a.mode) b = &m;
        const auto [latency, energy_mape] = figures(b, a);
        s += fmt::format("{:<12} {:>8} {:>16} {:>16}\n", a.mode, a.latency.count, latency,
                         energy_mape);
    }
    // Per op class where the op runs span more than one.
    const std::vector<op_class_summary> classes_after = summarize_op_classes(r.after.configs);
    if (classes_after.size() > 1) {
        const std::vector<op_class_summary> classes_before = summarize_op_classes(r.before.configs);
        s += fmt::format("\n{:<12} {:<20} {:>8} {:>16} {:>16}\n", "op runs", "class", "configs",
                         "latency MAPE", "energy MAPE");
        for (const op_class_summary& a : classes_after) {
            const op_class_summary* b = nullptr;
            for (const op_class_summary& c : classes_before)
                if (c.mode == a.mode && c.op_class == a.op_class) b = &c;
            const auto [latency, energy_mape] = figures(b, a);
            s += fmt::format("{:<12} {:<20} {:>8} {:>16} {:>16}\n", a.mode, a.op_class,
                             a.latency.count, latency, energy_mape);
        }
    }
    s += fmt::format("\n{}: {:.4f} -> {:.4f} ({} evaluations)\n", goal_text(r.goal),
                     r.objective_before, r.objective_after, r.evaluations);
    return s;
}

// ---- leave one out ----

std::string model_family(const std::string& model) {
    std::string f;
    for (char c : model) {
        if (!std::isalpha(static_cast<unsigned char>(c))) break;
        f += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return f.empty() ? model : f;
}

const char* leave_out_unit_name(leave_out_unit unit) {
    switch (unit) {
        case leave_out_unit::family:
            return "family";
        case leave_out_unit::source:
            return "source";
        case leave_out_unit::model:
            break;
    }
    return "model";
}

std::optional<leave_out_unit> leave_out_unit_from_name(std::string_view name) {
    for (leave_out_unit u : {leave_out_unit::model, leave_out_unit::family, leave_out_unit::source})
        if (name == leave_out_unit_name(u)) return u;
    return std::nullopt;
}

std::string leave_out_group(const measured_config& config, leave_out_unit unit) {
    if (unit == leave_out_unit::model) return config.model;
    if (unit == leave_out_unit::family) return model_family(config.model);
    if (config.kind != "op") return config.model;
    const nlohmann::json params = nlohmann::json::parse(config.params_json, nullptr, false);
    if (!params.is_object() || !params.contains("source") || !params["source"].is_string())
        return {};
    std::string source = params["source"].get<std::string>();
    source = source.substr(0, source.find(' '));
    // "resnet50_b64": the profile of resnet50 at batch 64.
    const size_t b = source.rfind("_b");
    if (b != std::string::npos && b + 2 < source.size() &&
        std::all_of(source.begin() + static_cast<std::ptrdiff_t>(b + 2), source.end(),
                    [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        source.resize(b);
    return source;
}

leave_out_result run_leave_out(const validation_session& session, const calibrate_options& o,
                               leave_out_unit unit) {
    leave_out_result r;
    r.unit = unit;
    std::vector<std::string> group_of(session.size());
    std::vector<size_t> grouped;  // the configurations held out in turn
    for (size_t i = 0; i < session.size(); ++i) {
        group_of[i] = leave_out_group(session.measured(i), unit);
        if (group_of[i].empty()) continue;
        grouped.push_back(i);
        if (std::find(r.groups.begin(), r.groups.end(), group_of[i]) == r.groups.end())
            r.groups.push_back(group_of[i]);
    }
    const char* name = leave_out_unit_name(unit);
    if (r.groups.size() < 2)
        throw error(
            fmt::format("--leave-out {}: the measurements hold {} {}{}{}; leaving one "
                        "out needs two or more",
                        name, r.groups.size(), name, r.groups.size() == 1 ? "" : "s",
                        r.groups.empty() ? "" : " (" + r.groups.front() + ")"));
    r.parameters = calibration_parameters(session, o);
    if (r.parameters.empty())
        throw error(fmt::format("--leave-out: hardware '{}' marks no continuous constant as "
                                "fitted: there is nothing to refit",
                                session.header().hardware),
                    exit_code::usage);
    const fit_goal& goal = o.goal;
    fit_parameters(session, r.parameters, nullptr, o.max_sweeps, goal, r.evaluations);
    // In sample over the configurations that are held out in turn, so that both figures are
    // of the same configurations.
    r.in_sample = errors_of(session.predict(
        with_parameters(session.hardware(), r.parameters, fitted_values(r.parameters)), &grouped));
    std::vector<validated_config> held;
    for (const std::string& g : r.groups) {
        std::vector<size_t> train, test;
        for (size_t i = 0; i < session.size(); ++i) (group_of[i] == g ? test : train).push_back(i);
        std::vector<calibration_parameter> p = r.parameters;
        fit_parameters(session, p, &train, o.max_sweeps, goal, r.evaluations);
        std::vector<validated_config> predicted =
            session.predict(with_parameters(session.hardware(), p, fitted_values(p)), &test);
        r.held_out_per_group.push_back(errors_of(predicted).modes);
        for (validated_config& c : predicted) held.push_back(std::move(c));
    }
    r.held_out = errors_of(std::move(held));
    return r;
}

void add_leave_out(validation_result& v, const validation_session& session,
                   const validate_options& options, const calibrate_options& fit,
                   leave_out_unit unit, double max_ratio) {
    const leave_out_result lo = run_leave_out(session, fit, unit);
    leave_out_summary l;
    l.unit = leave_out_unit_name(unit);
    l.groups = lo.groups;
    for (const calibration_parameter& p : lo.parameters)
        if (p.identified) l.parameters.push_back(p.key);
    l.in_sample = lo.in_sample.configs;
    l.in_sample_modes = lo.in_sample.modes;
    l.held_out = lo.held_out.configs;
    l.held_out_modes = lo.held_out.modes;
    l.held_out_per_group = lo.held_out_per_group;
    l.fitted_to = fit_quantities_name(fit.goal.quantities);
    std::vector<validated_config> grouped;
    for (const validated_config& c : v.configs)
        if (!leave_out_group(c.measured, unit).empty()) grouped.push_back(c);
    l.entry_modes = summarize(grouped);
    const auto find = [](const std::vector<mode_summary>& modes, const std::string& mode) {
        const mode_summary* f = nullptr;
        for (const mode_summary& m : modes)
            if (m.mode == mode) f = &m;
        return f;
    };
    const auto energy = [](const mode_summary* m) {
        return m && m->energy ? std::optional<double>(m->energy->mape) : std::nullopt;
    };
    // The held-out errors answer to the same limits, and to the ratio.
    for (const auto& [mode, max] : options.max_mape) {
        const mode_summary* h = find(l.held_out_modes, mode);
        v.thresholds.push_back({mode, "held-out latency", max,
                                h ? std::optional<double>(h->latency.mape) : std::nullopt});
    }
    for (const auto& [mode, max] : options.max_energy_mape)
        v.thresholds.push_back(
            {mode, "held-out energy", max, energy(find(l.held_out_modes, mode))});
    if (max_ratio > 0)
        for (const mode_summary& h : l.held_out_modes) {
            const mode_summary* in = find(l.in_sample_modes, h.mode);
            if (!in) continue;
            v.thresholds.push_back({h.mode,
                                    fmt::format("held-out latency ({:g}x the in-sample {:.1f}%)",
                                                max_ratio, in->latency.mape),
                                    max_ratio * in->latency.mape, h.latency.mape});
            if (h.energy && in->energy)
                v.thresholds.push_back({h.mode,
                                        fmt::format("held-out energy ({:g}x the in-sample {:.1f}%)",
                                                    max_ratio, in->energy->mape),
                                        max_ratio * in->energy->mape, h.energy->mape});
        }
    v.leave_out = std::move(l);
}

}  // namespace nnergy
