// m2g CLI: the rack map behind `m2g status --plot FILE.png` (see plot.hpp).
#include "cli/plot.hpp"

#include <cairo.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/base/error.hpp"
#include "core/power/signals.hpp"

namespace m2g {
namespace {

// ---- colours ----------------------------------------------------------------------

struct Rgb {
    double r = 0, g = 0, b = 0;
};

constexpr Rgb hex(unsigned v)
{
    return {((v >> 16) & 0xff) / 255.0, ((v >> 8) & 0xff) / 255.0, (v & 0xff) / 255.0};
}

Rgb mix(const Rgb& a, const Rgb& b, double t)
{
    return {a.r + (b.r - a.r) * t, a.g + (b.g - a.g) * t, a.b + (b.b - a.b) * t};
}

constexpr Rgb kPaper = hex(0xffffff);
constexpr Rgb kInk = hex(0x212121);
constexpr Rgb kMuted = hex(0x616161);
constexpr Rgb kRule = hex(0xbdbdbd);
constexpr Rgb kFrame = hex(0x757575);
// Use: a sequential blue scale (ColorBrewer Blues), free → full.
constexpr Rgb kUseFree = hex(0xdeebf7);
constexpr Rgb kUseHalf = hex(0x6baed6);
constexpr Rgb kUseFull = hex(0x08306b);
// Health.
constexpr Rgb kUnknownNode = hex(0xffffff);
constexpr Rgb kDegradedBg = hex(0xe0e0e0);
constexpr Rgb kHatch = hex(0x424242);
constexpr Rgb kDrained = hex(0x9e9e9e);
constexpr Rgb kDown = hex(0x424242);
constexpr Rgb kFault = hex(0xd7191c);
constexpr Rgb kMaint = hex(0x7b3294);
// Power.
constexpr Rgb kPowerOk = hex(0x1a9641);
constexpr Rgb kPowerWarn = hex(0xf28e00);
constexpr Rgb kPowerHigh = hex(0xd7191c);
constexpr Rgb kPowerUnknown = hex(0xbdbdbd);
constexpr Rgb kTrack = hex(0xf0f0f0);
constexpr double kPowerWarnShare = 0.75;
constexpr double kPowerHighShare = 0.90;
// Thermal state of the hottest GPU (rack label text).
constexpr Rgb kWarm = hex(0xb26b00);
constexpr Rgb kHot = hex(0xe6550d);
constexpr Rgb kCritical = hex(0xc62828);

Rgb use_colour(double share)
{
    share = std::clamp(share, 0.0, 1.0);
    return share <= 0.5 ? mix(kUseFree, kUseHalf, share * 2) : mix(kUseHalf, kUseFull, (share - 0.5) * 2);
}

Rgb power_colour(double share)
{
    if (share >= kPowerHighShare)
        return kPowerHigh;
    return share >= kPowerWarnShare ? kPowerWarn : kPowerOk;
}

Rgb thermal_colour(ThermalState t)
{
    switch (t) {
    case ThermalState::Ok:
        return kInk;
    case ThermalState::Warm:
        return kWarm;
    case ThermalState::Hot:
        return kHot;
    case ThermalState::Critical:
        return kCritical;
    }
    return kInk;
}

// ---- text -------------------------------------------------------------------------

std::string grouped(long long v)
{
    std::string digits = std::to_string(v < 0 ? -v : v), out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0)
            out += ',';
        out += digits[i];
    }
    return v < 0 ? "-" + out : out;
}

std::string fmt_kw(double kw)
{
    if (kw >= 10 || kw == 0)
        return grouped(std::llround(kw));
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", kw);
    return buf;
}

std::string fmt_pct(double share)
{
    return std::to_string(static_cast<int>(std::lround(share * 100))) + " %";
}

// "2026-11-29T21:00:00Z" → "21:00Z" on the day of `now`, else "11-30 21:00Z".
std::string short_time(int64_t t, int64_t now)
{
    const std::string a = format_utc(t), b = format_utc(now);
    if (a.size() < 17)
        return a;
    if (a.compare(0, 10, b, 0, 10) == 0)
        return a.substr(11, 5) + "Z";
    return a.substr(5, 5) + " " + a.substr(11, 5) + "Z";
}

const char* scope_word(EventScope s) { return name_of(kEventScopeNames, s, ""); }

// ---- drawing ----------------------------------------------------------------------

constexpr double kMinFont = 11;

class Painter {
  public:
    explicit Painter(cairo_t* cr) : cr_(cr) {}

    void fill(double x, double y, double w, double h, const Rgb& c)
    {
        cairo_rectangle(cr_, x, y, w, h);
        set(c);
        cairo_fill(cr_);
    }

    void outline(double x, double y, double w, double h, const Rgb& c, double lw, bool dashed = false)
    {
        cairo_save(cr_);
        cairo_rectangle(cr_, x + lw / 2, y + lw / 2, w - lw, h - lw);
        set(c);
        cairo_set_line_width(cr_, lw);
        if (dashed) {
            const double dash[] = {3, 2};
            cairo_set_dash(cr_, dash, 2, 0);
        }
        cairo_stroke(cr_);
        cairo_restore(cr_);
    }

    // Diagonal lines over the rectangle.
    void hatch(double x, double y, double w, double h, const Rgb& c, double spacing = 6, double lw = 1.2)
    {
        if (w <= 0 || h <= 0)
            return;
        cairo_save(cr_);
        cairo_rectangle(cr_, x, y, w, h);
        cairo_clip(cr_);
        set(c);
        cairo_set_line_width(cr_, lw);
        for (double d = -h; d < w; d += spacing) {
            cairo_move_to(cr_, x + d, y + h);
            cairo_line_to(cr_, x + d + h, y);
        }
        cairo_stroke(cr_);
        cairo_restore(cr_);
    }

    void line(double x1, double y1, double x2, double y2, const Rgb& c, double lw = 1)
    {
        cairo_move_to(cr_, x1, y1);
        cairo_line_to(cr_, x2, y2);
        set(c);
        cairo_set_line_width(cr_, lw);
        cairo_stroke(cr_);
    }

    void triangle(double x1, double y1, double x2, double y2, double x3, double y3, const Rgb& c)
    {
        cairo_move_to(cr_, x1, y1);
        cairo_line_to(cr_, x2, y2);
        cairo_line_to(cr_, x3, y3);
        cairo_close_path(cr_);
        set(c);
        cairo_fill(cr_);
    }

    double width(const std::string& s, double size, bool bold = false)
    {
        font(size, bold);
        cairo_text_extents_t e;
        cairo_text_extents(cr_, s.c_str(), &e);
        return e.x_advance;
    }

    // Text with its vertical middle at `ym`; `align` 0 left, 0.5 centre, 1
    // right of `x`.
    void text(double x, double ym, const std::string& s, double size, const Rgb& c, bool bold = false,
              double align = 0)
    {
        font(size, bold);
        cairo_font_extents_t fe;
        cairo_font_extents(cr_, &fe);
        cairo_text_extents_t e;
        cairo_text_extents(cr_, s.c_str(), &e);
        cairo_move_to(cr_, x - e.x_advance * align, ym + (fe.ascent - fe.descent) / 2);
        set(c);
        cairo_show_text(cr_, s.c_str());
    }

    // `s`, cut at a character boundary and ended with "…" to fit `maxw`.
    std::string fit(const std::string& s, double maxw, double size, bool bold = false)
    {
        if (width(s, size, bold) <= maxw)
            return s;
        std::string cut = s;
        while (!cut.empty()) {
            do
                cut.pop_back();
            while (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xc0) == 0x80);
            if (!cut.empty() && (static_cast<unsigned char>(cut.back()) & 0xc0) == 0xc0)
                cut.pop_back();  // a lead byte whose continuation went
            if (width(cut + "…", size, bold) <= maxw)
                return cut + "…";
        }
        return "";
    }

    // The first of `options` that fits `maxw`, else the last one cut to fit.
    std::string first_fit(const std::vector<std::string>& options, double maxw, double size, bool bold = false)
    {
        for (const auto& o : options)
            if (width(o, size, bold) <= maxw)
                return o;
        return options.empty() ? "" : fit(options.back(), maxw, size, bold);
    }

  private:
    void set(const Rgb& c) { cairo_set_source_rgb(cr_, c.r, c.g, c.b); }
    void font(double size, bool bold)
    {
        cairo_select_font_face(cr_, "sans-serif", CAIRO_FONT_SLANT_NORMAL,
                               bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
        cairo_set_font_size(cr_, std::max(size, kMinFont));
    }

    cairo_t* cr_;
};

// ---- what is drawn, per rack and node ------------------------------------------------

enum class Cell { Unknown, Use, Degraded, Drained, Down };

struct NodeLook {
    Cell cell = Cell::Use;
    double share = 0;  // GPUs used / total (Cell::Use)
    bool maintenance = false;
};

struct RackPower {
    double nominal = -1, effective = -1, draw = -1;  // kW, -1 unknown
};

struct Rack {
    int domain = kNone;
    DomainStatus st;
    RackPower power;
    double used_share = 0, degraded_share = 0;
};

// A run of racks under one switch, as laid out on one line.
struct Segment {
    int sw = kNone;
    bool continued = false;  // the switch's racks began on an earlier line
    std::vector<int> racks;  // indices into the rack list
};

using Line = std::vector<Segment>;

class Plot {
  public:
    Plot(const Model& m, const Status& s, const ClusterView* view, cairo_t* cr)
        : m_(m), s_(s), view_(view), p_(cr), snap_(s.signals.snap.get())
    {
        collect();
    }

    void draw();

  private:
    void collect();
    NodeLook node_look(int node, const Rack& r) const;
    std::vector<Line> flow(double width, double col_w, double gap) const;
    std::string switch_name(int sw) const;

    void draw_header(double y0);
    void draw_detailed(double x0, double y0, double w, double h);
    void draw_rack_column(const Rack& r, double x, double cw, double y, double cell_h, int max_nodes,
                          bool two_label_lines, bool badge_row);
    void draw_power_bar(const RackPower& pw, double x, double y, double w, double h);
    void draw_compact(double x0, double y0, double w, double h);
    void draw_legend(double x0, double y0, double w, double h);
    void maint_badge(double x, double y);
    void thermal_key(double x, double y);

    const Model& m_;
    const Status& s_;
    const ClusterView* view_;
    Painter p_;
    const Signals* snap_;
    std::vector<Rack> racks_;          // tree order
    std::vector<int> rack_switch_;     // parent switch per rack
    std::vector<uint8_t> maint_node_;  // per model node: in a window now
    int loose_nodes_ = 0;              // nodes outside NVLink domains
    int max_nodes_ = 0;                // declared size of the largest rack
    bool compact_ = false;
    bool top_labels_ = false;  // compact: switch names over their racks (else one per line, at the left)
    bool any_badge_ = false, any_empty_slot_ = false;
};

std::string Plot::switch_name(int sw) const
{
    return sw >= 0 && sw < static_cast<int>(m_.switches.size()) ? m_.switches[sw].name : "no switch";
}

void Plot::collect()
{
    const int nd = static_cast<int>(m_.domains.size());
    std::vector<const DomainStatus*> by_domain(nd, nullptr);
    for (size_t i = 0; i < s_.domains.size(); ++i) {
        const DomainStatus& d = s_.domains[i];
        const int idx = d.domain >= 0 && d.domain < nd ? d.domain : static_cast<int>(i);
        if (idx < nd)
            by_domain[idx] = &d;
    }

    maint_node_.assign(m_.nodes.size(), 0);
    if (snap_)
        for (const auto& w : snap_->maintenance)
            if (w.start <= s_.at && s_.at < w.end)
                for (int n : w.nodes)
                    if (n >= 0 && n < static_cast<int>(maint_node_.size()))
                        maint_node_[n] = 1;

    // Tree order: by the rank of a rack's first node.
    std::vector<int> order(nd);
    for (int d = 0; d < nd; ++d)
        order[d] = d;
    auto first_rank = [&](int d) {
        const auto& nodes = m_.domains[d].nodes;
        return nodes.empty() ? static_cast<int>(m_.nodes.size()) + d : m_.nodes[nodes.front()].rank;
    };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return first_rank(a) < first_rank(b); });

    for (int d : order) {
        const Domain& dom = m_.domains[d];
        Rack r;
        r.domain = d;
        if (by_domain[d]) {
            r.st = *by_domain[d];
        } else {
            r.st.domain = d;
            r.st.gpus_total = dom.gpus;
        }
        r.st.domain = d;
        if (r.st.gpus_total > 0) {
            r.used_share = static_cast<double>(r.st.gpus_used) / r.st.gpus_total;
            r.degraded_share = static_cast<double>(r.st.gpus_degraded) / r.st.gpus_total;
        }
        for (const auto& ps : s_.power)
            if (ps.scope == "rack" && ps.name == dom.name) {
                r.power.nominal = ps.budget_kw;
                r.power.effective = ps.effective_kw;
                r.power.draw = ps.draw_kw;
            }
        if (r.power.draw < 0)
            r.power.draw = r.st.draw_kw;
        if (r.power.effective < 0)
            r.power.effective = r.st.budget_kw;
        if (r.power.effective < 0 && dom.power_budget_kw > 0)
            r.power.effective = dom.power_budget_kw;
        if (r.power.nominal < 0 && dom.power_budget_kw > 0)
            r.power.nominal = dom.power_budget_kw;
        if (r.power.nominal < r.power.effective)
            r.power.nominal = r.power.effective;
        if (!r.st.maintenance_now)
            for (int n : dom.nodes)
                r.st.maintenance_now = r.st.maintenance_now || maint_node_[n];
        any_badge_ = any_badge_ || r.st.maintenance_now || r.st.nvlink_fault;
        any_empty_slot_ = any_empty_slot_ || dom.size > static_cast<int>(dom.nodes.size());
        max_nodes_ = std::max({max_nodes_, dom.size, static_cast<int>(dom.nodes.size())});
        racks_.push_back(r);
        rack_switch_.push_back(dom.parent);
    }
    for (const auto& n : m_.nodes)
        loose_nodes_ += n.domain == kNone;
    compact_ = static_cast<int>(racks_.size()) > kPlotDetailMaxRacks;
}

NodeLook Plot::node_look(int node, const Rack& r) const
{
    NodeLook look;
    look.maintenance = maint_node_[node] != 0;
    const bool feed_down = snap_ && static_cast<size_t>(node) < snap_->node_down.size() && snap_->node_down[node];
    const bool degraded = snap_ && static_cast<size_t>(node) < snap_->health.node_degraded.size() &&
                          snap_->health.node_degraded[node];
    if (view_) {
        const NodeView& nv = view_->nodes[node];
        if (feed_down || (nv.known && nv.down))
            look.cell = Cell::Down;
        else if (nv.known && nv.drained)
            look.cell = Cell::Drained;
        else if (degraded)
            look.cell = Cell::Degraded;
        else if (!nv.known)
            look.cell = Cell::Unknown;
        else {
            const int total = nv.gpus_total > 0 ? nv.gpus_total : m_.nodes[node].gpus;
            look.share = total > 0 ? std::min(1.0, static_cast<double>(nv.gpus_alloc) / total) : 0;
            // Discrete: free / partly used / full.
            look.share = look.share <= 0 ? 0 : look.share >= 1 ? 1 : 0.5;
        }
        return look;
    }
    if (feed_down)
        look.cell = Cell::Down;
    else if (degraded)
        look.cell = Cell::Degraded;
    else
        look.share = r.used_share;
    return look;
}

// Lay racks out on lines of at most `width` px: columns of `col_w`, `gap`
// between switches. A switch's racks stay on one line when they fit one.
std::vector<Line> Plot::flow(double width, double col_w, double gap) const
{
    std::vector<Line> lines(1);
    double x = 0;
    const int cols = std::max(1, static_cast<int>(width / col_w));
    for (size_t i = 0; i < racks_.size();) {
        size_t j = i;
        while (j < racks_.size() && rack_switch_[j] == rack_switch_[i])
            ++j;
        // racks [i, j) share a switch
        const double need = (j - i) * col_w;
        const bool empty = lines.back().empty();
        if (!empty && x + gap + need > width && static_cast<int>(j - i) <= cols) {
            lines.emplace_back();
            x = 0;
        }
        bool continued = false;
        for (size_t k = i; k < j;) {
            if (!lines.back().empty())
                x += gap;
            int room = static_cast<int>((width - x + 1e-6) / col_w);
            if (room <= 0) {
                lines.emplace_back();
                x = 0;
                room = cols;
            }
            Segment seg;
            seg.sw = rack_switch_[i];
            seg.continued = continued;
            for (; k < j && room > 0; ++k, --room) {
                seg.racks.push_back(static_cast<int>(k));
                x += col_w;
            }
            lines.back().push_back(seg);
            continued = true;
            if (k < j) {
                lines.emplace_back();
                x = 0;
            }
        }
        i = j;
    }
    return lines;
}

// ---- header -------------------------------------------------------------------------

constexpr double kMargin = 20;
constexpr double kHeaderH = 138;
constexpr double kLegendH = 122;

void Plot::draw_header(double y0)
{
    const double right = kPlotWidth - kMargin, w = kPlotWidth - 2 * kMargin;
    const std::string name = m_.cluster_name.empty() ? "cluster" : m_.cluster_name;
    const std::string when = format_utc(s_.at);
    std::string when_text = when.size() >= 16 ? when.substr(0, 10) + " " + when.substr(11, 5) + " UTC" : when;
    const double when_w = p_.width(when_text, 16);
    p_.text(kMargin, y0 + 14, p_.fit(name + " — m2g status", w - when_w - 30, 22, true), 22, kInk, true);
    p_.text(right, y0 + 14, when_text, 16, kMuted, false, 1);

    // GPUs.
    const int total = s_.gpus_total > 0 ? s_.gpus_total : m_.total_gpus();
    std::string gpus = "GPUs " + grouped(total) + ":  used " + grouped(s_.gpus_used);
    if (total > 0)
        gpus += " (" + fmt_pct(static_cast<double>(s_.gpus_used) / total) + ")";
    gpus += "  ·  free " + grouped(s_.gpus_free) + "  ·  degraded " + grouped(s_.gpus_degraded) +
            "  ·  fragmentation " + fmt_pct(s_.fragmentation) + "  ·  whole free racks " +
            grouped(s_.whole_free_domains) + " of " + grouped(static_cast<long long>(racks_.size()));
    if (loose_nodes_ > 0)
        gpus += "  ·  " + grouped(loose_nodes_) + " nodes outside NVLink domains (not drawn)";
    std::string feed = std::string("signals: ") + to_string(s_.signals.state);
    if (s_.signals.snap && s_.signals.age_s >= 0)
        feed += " (" + grouped(s_.signals.age_s) + " s old)";
    if (s_.signals.failsafe)
        feed += ", fail-safe";
    const Rgb feed_colour =
        s_.signals.failsafe || s_.signals.state == FeedState::Corrupt ? kPowerHigh : kMuted;
    const double feed_w = p_.width(feed, 14);
    p_.text(right, y0 + 44, feed, 14, feed_colour, false, 1);
    p_.text(kMargin, y0 + 44, p_.fit(gpus, w - feed_w - 30, 15), 15, kInk);

    // Power: site and rows.
    std::string power = "Power (draw / effective budget):";
    bool any_power = false;
    for (const auto& ps : s_.power) {
        if (ps.scope == "rack")
            continue;
        any_power = true;
        power += "  " + ps.name + " " + (ps.draw_kw >= 0 ? fmt_kw(ps.draw_kw) : "?") +
                 (ps.effective_kw >= 0 ? " / " + fmt_kw(ps.effective_kw) + " kW" : " kW (no limit)");
        if (ps.budget_kw >= 0 && ps.effective_kw >= 0 && ps.effective_kw < ps.budget_kw)
            power += " (of " + fmt_kw(ps.budget_kw) + ")";
        power += "  ·";
    }
    if (any_power)
        power.erase(power.size() - 3);
    else
        power += m_.site_power_budget_kw > 0 ? "  site budget " + fmt_kw(m_.site_power_budget_kw) + " kW, no draw reported"
                                             : "  no budgets, no readings";
    p_.text(kMargin, y0 + 68, p_.fit(power, w, 15), 15, kInk);

    // Demand-response events.
    std::string dr = "DR events:";
    if (s_.active_events.empty()) {
        dr += " none active";
    } else {
        for (const CurtailmentEvent* e : s_.active_events) {
            if (!e)
                continue;
            char cut[48];
            if (e->limit_kw >= 0)
                std::snprintf(cut, sizeof cut, "≤ %s kW", fmt_kw(e->limit_kw).c_str());
            else if (e->curtail_pct > 0)
                std::snprintf(cut, sizeof cut, "−%.0f %%", e->curtail_pct);
            else
                std::snprintf(cut, sizeof cut, "−%s kW", fmt_kw(e->curtail_kw).c_str());
            dr += "  " + e->id + " " + (e->scope == EventScope::Site ? std::string("site") :
                                        std::string(scope_word(e->scope)) + " " + e->scope_name) +
                  " " + cut + " until " + short_time(e->end, s_.at) + "  ·";
        }
        dr.erase(dr.size() - 3);
    }
    p_.text(kMargin, y0 + 92, p_.fit(dr, w, 15, !s_.active_events.empty()), 15,
            s_.active_events.empty() ? kMuted : kPowerHigh, !s_.active_events.empty());

    // Attention: faults, maintenance, hottest racks.
    std::vector<std::string> faults, maint;
    std::vector<const Rack*> hot;
    for (const auto& r : racks_) {
        if (r.st.nvlink_fault)
            faults.push_back(m_.domains[r.domain].name);
        if (r.st.maintenance_now)
            maint.push_back(m_.domains[r.domain].name);
        if (r.st.temp_c > 0)
            hot.push_back(&r);
    }
    std::stable_sort(hot.begin(), hot.end(), [](const Rack* a, const Rack* b) { return a->st.temp_c > b->st.temp_c; });
    auto list = [](const std::vector<std::string>& v, size_t most) {
        std::string out;
        for (size_t i = 0; i < v.size() && i < most; ++i)
            out += (i ? ", " : "") + v[i];
        if (v.size() > most)
            out += ", +" + grouped(static_cast<long long>(v.size() - most)) + " more";
        return out;
    };
    std::string att = "NVLink faults: " + (faults.empty() ? std::string("none") : list(faults, 4)) +
                      "  ·  maintenance now: " + (maint.empty() ? std::string("none") : list(maint, 4)) +
                      "  ·  hottest GPU: ";
    if (hot.empty()) {
        att += "no readings";
    } else {
        for (size_t i = 0; i < hot.size() && i < 3; ++i) {
            char t[64];
            std::snprintf(t, sizeof t, "%s%s %.0f °C (%s)", i ? ", " : "", m_.domains[hot[i]->domain].name.c_str(),
                          hot[i]->st.temp_c, to_string(hot[i]->st.thermal));
            att += t;
        }
    }
    p_.text(kMargin, y0 + 116, p_.fit(att, w, 15), 15, kInk);
    p_.line(kMargin, y0 + kHeaderH - 8, right, y0 + kHeaderH - 8, kRule, 1);
}

// ---- detailed mode ----------------------------------------------------------------------

constexpr double kSwitchRowH = 24;
constexpr double kLabelLineH = 16;
constexpr double kBadgeRowH = 19;
constexpr double kBarH = 12;
constexpr double kBarTextH = 17;
constexpr double kBandGap = 14;

void Plot::draw_power_bar(const RackPower& pw, double x, double y, double w, double h)
{
    p_.fill(x, y, w, h, kTrack);
    if (pw.effective < 0 || pw.draw < 0) {
        p_.fill(x, y, w, h, kPowerUnknown);
    } else {
        const double nominal = std::max(pw.nominal, pw.effective);
        const double scale = nominal > 0 ? w / nominal : 0;
        const double eff_x = nominal > 0 ? x + pw.effective * scale : x;
        if (pw.effective < nominal)  // curtailed by a DR event
            p_.hatch(eff_x, y, x + w - eff_x, h, kPowerHigh, 4, 1);
        const double share = pw.effective > 0 ? pw.draw / pw.effective : (pw.draw > 0 ? 2.0 : 0.0);
        const double fill_w = nominal > 0 ? std::min(w, pw.draw * scale) : (pw.draw > 0 ? w : 0);
        p_.fill(x, y, fill_w, h, power_colour(share));
        if (pw.effective < nominal)
            p_.line(eff_x, y - 2, eff_x, y + h + 2, kInk, 1.5);
    }
    p_.outline(x, y, w, h, kFrame, 1);
}

void Plot::draw_rack_column(const Rack& r, double x, double cw, double y, double cell_h, int max_nodes,
                            bool two_label_lines, bool badge_row)
{
    const Domain& dom = m_.domains[r.domain];
    const double pad = std::clamp(cw * 0.1, 4.0, 12.0);
    const double fx = x + pad, fw = cw - 2 * pad, mid = x + cw / 2;

    // Badges.
    if (badge_row) {
        std::vector<std::pair<std::string, Rgb>> badges;
        if (r.st.maintenance_now)
            badges.emplace_back("MAINT", kMaint);
        if (r.st.nvlink_fault)
            badges.emplace_back(fw >= 84 ? "NVLINK" : "NVL", kFault);
        double total = 0;
        for (const auto& b : badges)
            total += p_.width(b.first, 11, true) + 8;
        total += badges.empty() ? 0 : (badges.size() - 1) * 3.0;
        if (total > cw - 2 && badges.size() > 1)  // no room for both: the red outline shows the fault
            badges.pop_back(), total = p_.width(badges.front().first, 11, true) + 8;
        double bx = mid - total / 2;
        for (const auto& b : badges) {
            const double bw = p_.width(b.first, 11, true) + 8;
            p_.fill(bx, y + 1, bw, kBadgeRowH - 4, b.second);
            p_.text(bx + bw / 2, y + 1 + (kBadgeRowH - 4) / 2, b.first, 11, kPaper, true, 0.5);
            bx += bw + 3;
        }
        y += kBadgeRowH;
    }

    // Name and hottest GPU.
    char temp[32] = "";
    if (r.st.temp_c > 0)
        std::snprintf(temp, sizeof temp, "%.0f °C", r.st.temp_c);
    const Rgb tcol = thermal_colour(r.st.thermal);
    const bool hot = r.st.thermal != ThermalState::Ok;
    if (two_label_lines) {
        p_.text(mid, y + kLabelLineH / 2, p_.fit(dom.name, cw - 2, 13, true), 13, kInk, true, 0.5);
        p_.text(mid, y + kLabelLineH * 1.5, temp[0] ? temp : "– °C", 12, temp[0] ? tcol : kMuted, hot, 0.5);
        y += 2 * kLabelLineH;
    } else {
        const double nw = p_.width(dom.name, 13, true), tw = temp[0] ? p_.width(temp, 12, hot) : 0;
        const double gap = temp[0] ? 6 : 0, x0 = mid - (nw + gap + tw) / 2;
        p_.text(x0, y + kLabelLineH / 2, dom.name, 13, kInk, true);
        if (temp[0])
            p_.text(x0 + nw + gap, y + kLabelLineH / 2, temp, 12, tcol, hot);
        y += kLabelLineH;
    }
    y += 4;

    // Node cells, top to bottom in declaration order, then empty slots.
    const int slots = std::max(dom.size, static_cast<int>(dom.nodes.size()));
    const double inner = cell_h >= 8 ? 1.5 : 1;
    const double frame_h = slots * cell_h + 2;  // this rack's own height; power bars line up below the tallest
    p_.fill(fx, y, fw, frame_h, hex(0xfafafa));
    for (int i = 0; i < slots; ++i) {
        const double cy = y + 1 + i * cell_h + inner / 2, cx = fx + 1 + inner, cwid = fw - 2 - 2 * inner;
        const double ch = cell_h - inner;
        if (i >= static_cast<int>(dom.nodes.size())) {
            p_.outline(cx, cy, cwid, ch, kFrame, 1, true);
            continue;
        }
        const NodeLook look = node_look(dom.nodes[i], r);
        switch (look.cell) {
        case Cell::Unknown:
            p_.fill(cx, cy, cwid, ch, kUnknownNode);
            p_.outline(cx, cy, cwid, ch, kRule, 1);
            if (ch >= 11)
                p_.text(cx + cwid / 2, cy + ch / 2, "?", 11, kMuted, true, 0.5);
            break;
        case Cell::Use:
            p_.fill(cx, cy, cwid, ch, use_colour(look.share));
            break;
        case Cell::Degraded:
            p_.fill(cx, cy, cwid, ch, kDegradedBg);
            p_.hatch(cx, cy, cwid, ch, kHatch, 5, 1.2);
            break;
        case Cell::Drained:
            p_.fill(cx, cy, cwid, ch, kDrained);
            break;
        case Cell::Down:
            p_.fill(cx, cy, cwid, ch, kDown);
            break;
        }
        if (look.maintenance)
            p_.fill(cx, cy, std::min(6.0, cwid / 4), ch, kMaint);
    }
    if (r.st.nvlink_fault)
        p_.outline(fx - 3, y - 3, fw + 6, frame_h + 6, kFault, 3);
    else
        p_.outline(fx, y, fw, frame_h, kFrame, 1);
    y += max_nodes * cell_h + 2 + 6;

    // Power bar and numbers.
    draw_power_bar(r.power, fx, y, fw, kBarH);
    y += kBarH;
    std::vector<std::string> opts;
    const RackPower& pw = r.power;
    if (pw.draw >= 0 && pw.effective >= 0) {
        const std::string d = fmt_kw(pw.draw), e = fmt_kw(pw.effective);
        opts = {d + " / " + e + " kW", d + "/" + e + " kW", d + "/" + e, d + " kW"};
    } else if (pw.draw >= 0) {
        opts = {fmt_kw(pw.draw) + " kW", fmt_kw(pw.draw)};
    } else if (pw.effective >= 0) {
        opts = {"? / " + fmt_kw(pw.effective) + " kW", "?/" + fmt_kw(pw.effective), "?"};
    } else {
        opts = {"no reading", "n/a"};
    }
    const bool known = pw.draw >= 0;
    p_.text(mid, y + kBarTextH / 2 + 1, p_.first_fit(opts, cw - 2, 12), 12, known ? kInk : kMuted, false, 0.5);
}

void Plot::draw_detailed(double x0, double y0, double w, double h)
{
    if (racks_.empty()) {
        p_.text(x0 + w / 2, y0 + h / 2, "No NVLink domains in the model: nothing to draw.", 16, kMuted, false, 0.5);
        return;
    }
    const int max_nodes = std::max(1, max_nodes_);

    // Pick the widest columns that still leave cells tall enough.
    double best_score = -1, best_col = 120, best_cell = 0;
    bool best_two = false;
    std::vector<Line> best;
    // Columns as wide as the longest rack name asks (within reason).
    double want = 100;
    for (const auto& r : racks_)
        want = std::max(want, p_.width(m_.domains[r.domain].name, 13, true) + 10);
    want = std::min(want, 240.0);
    for (double col = std::max(130.0, want); col >= 56; col -= 2) {
        const double gap = std::max(14.0, col * 0.3);
        std::vector<Line> lines = flow(w, col, gap);
        bool two = false;
        for (const auto& r : racks_) {
            char temp[32] = "";
            if (r.st.temp_c > 0)
                std::snprintf(temp, sizeof temp, "%.0f °C", r.st.temp_c);
            const double need = p_.width(m_.domains[r.domain].name, 13, true) + 6 + p_.width(temp, 12, true);
            two = two || need > col - 4;
        }
        const double over = kSwitchRowH + (any_badge_ ? kBadgeRowH : 0) + (two ? 2 : 1) * kLabelLineH + 4 + 2 +
                            6 + kBarH + kBarTextH + kBandGap;
        const double band = h / lines.size();
        const double cell = std::min(30.0, (band - over) / max_nodes);
        if (cell < 3)
            continue;
        const double score = std::min(col, want) / want * std::min(cell, 24.0) / 24;
        if (score > best_score + 1e-9) {
            best_score = score;
            best_col = col;
            best_cell = cell;
            best_two = two;
            best = std::move(lines);
        }
    }
    if (best.empty()) {  // racks too tall for the page: fall back to the compact map
        compact_ = true;
        draw_compact(x0, y0, w, h);
        return;
    }
    const double col = best_col, gap = std::max(14.0, col * 0.3);
    const double band = h / best.size();
    const double content = kSwitchRowH + (any_badge_ ? kBadgeRowH : 0) + (best_two ? 2 : 1) * kLabelLineH + 4 +
                           max_nodes * best_cell + 2 + 6 + kBarH + kBarTextH;
    double y = y0 + std::max(0.0, (band - content - kBandGap) / 2) * (best.size() == 1 ? 0.5 : 0);
    for (const Line& line : best) {
        double line_w = 0;
        for (size_t i = 0; i < line.size(); ++i)
            line_w += (i ? gap : 0) + line[i].racks.size() * col;
        double x = x0 + (w - line_w) / 2;
        for (const Segment& seg : line) {
            const double seg_w = seg.racks.size() * col;
            // Switch label with a bracket over its racks.
            const std::string label = switch_name(seg.sw) + (seg.continued ? " (cont.)" : "");
            const double by = y + kSwitchRowH - 5;
            p_.line(x + 4, by, x + seg_w - 4, by, kFrame, 1.5);
            p_.line(x + 4, by, x + 4, by + 4, kFrame, 1.5);
            p_.line(x + seg_w - 4, by, x + seg_w - 4, by + 4, kFrame, 1.5);
            const std::string shown = p_.fit(label, seg_w - 8, 13, true);
            const double lw = p_.width(shown, 13, true);
            p_.fill(x + seg_w / 2 - lw / 2 - 5, by - 9, lw + 10, 14, kPaper);
            p_.text(x + seg_w / 2, by - 3, shown, 13, kMuted, true, 0.5);
            for (size_t k = 0; k < seg.racks.size(); ++k)
                draw_rack_column(racks_[seg.racks[k]], x + k * col, col, y + kSwitchRowH, best_cell, max_nodes,
                                 best_two, any_badge_);
            x += seg_w + gap;
        }
        y += band;
    }
}

// ---- compact mode -----------------------------------------------------------------------

void Plot::draw_compact(double x0, double y0, double w, double h)
{
    // Two layouts, the first that fits with cells at least kTopLabelMinCell
    // wide: every switch labelled over its racks; else one label per line,
    // at its left, and cells down to a few pixels.
    constexpr double kTopLabelMinCell = 18, kTopLabelRow = 16;
    double left_w = 0;
    for (int sw : rack_switch_)
        left_w = std::max(left_w, p_.width(switch_name(sw) + " (cont.)", 11));
    left_w = std::min(left_w + 10, w / 4);

    bool top = true;
    double cell = 3, label_w = 0;
    std::vector<Line> lines;
    auto gap_of = [](double c) { return std::max(4.0, c * 0.4); };
    auto row_of = [](double c) { return std::max(3.0, c * 0.8); };
    auto line_gap_of = [](double c) { return std::max(2.0, c * 0.12); };
    for (bool t : {true, false}) {
        const double lw = t ? 0 : left_w;
        for (double c = 90; c >= (t ? kTopLabelMinCell : 3); c -= 1) {
            std::vector<Line> l = flow(w - lw, c, gap_of(c));
            const double pitch = row_of(c) + line_gap_of(c) + (t ? kTopLabelRow : 0);
            if (l.size() * pitch <= h || (!t && c <= 3)) {
                top = t, cell = c, label_w = lw, lines = std::move(l);
                break;
            }
        }
        if (!lines.empty())
            break;
    }
    top_labels_ = top;
    const double gap = gap_of(cell), row_h = row_of(cell);
    const double pitch = row_h + line_gap_of(cell) + (top ? kTopLabelRow : 0);
    const double inner = cell >= 8 ? 1 : 0.5;
    const double strip = std::max(2.0, row_h * 0.2);
    // Rack names in the cells when every one fits.
    bool names = row_h - strip >= 15;
    for (size_t i = 0; names && i < racks_.size(); ++i)
        names = p_.width(m_.domains[racks_[i].domain].name, 11) <= cell - 2 * inner - 4;
    const int label_every = std::max(1, static_cast<int>(std::ceil(13.0 / pitch)));

    double used_w = 0;
    for (const Line& line : lines) {
        double lw = 0;
        for (size_t i = 0; i < line.size(); ++i)
            lw += (i ? gap : 0) + line[i].racks.size() * cell;
        used_w = std::max(used_w, lw);
    }
    const double xs = x0 + label_w + (top ? (w - used_w) / 2 : 0);
    double y = y0 + std::max(0.0, (h - lines.size() * pitch) / 2) * 0.3;
    for (size_t li = 0; li < lines.size(); ++li) {
        const Line& line = lines[li];
        if (!top && li % label_every == 0 && !line.empty())
            p_.text(x0 + label_w - 8, y + row_h / 2,
                    p_.fit(switch_name(line.front().sw) + (line.front().continued ? " (cont.)" : ""), label_w - 10, 11),
                    11, kMuted, false, 1);
        if (top)
            y += kTopLabelRow;
        double x = xs;
        for (size_t si = 0; si < line.size(); ++si) {
            if (si)
                x += gap;
            const Segment& seg = line[si];
            if (top) {
                const double seg_w = seg.racks.size() * cell;
                const std::string label = switch_name(seg.sw) + (seg.continued ? " (cont.)" : "");
                p_.text(x + seg_w / 2, y - kTopLabelRow / 2, p_.fit(label, seg_w, 11), 11, kMuted, false, 0.5);
            }
            for (int ri : seg.racks) {
                const Rack& r = racks_[ri];
                const double cx = x + inner, cy = y, cw = cell - 2 * inner, ch = row_h;
                p_.fill(cx, cy, cw, ch - strip, use_colour(r.used_share));
                if (r.degraded_share > 0) {
                    const double dw = std::max(2.0, cw * std::min(1.0, r.degraded_share));
                    p_.fill(cx + cw - dw, cy, dw, ch - strip, kDegradedBg);
                    p_.hatch(cx + cw - dw, cy, dw, ch - strip, kHatch, 4, 1);
                }
                const RackPower& pw = r.power;
                Rgb pc = kPowerUnknown;
                if (pw.draw >= 0 && pw.effective >= 0)
                    pc = power_colour(pw.effective > 0 ? pw.draw / pw.effective : (pw.draw > 0 ? 2.0 : 0.0));
                p_.fill(cx, cy + ch - strip, cw, strip, pc);
                if (names)
                    p_.text(cx + cw / 2, cy + (ch - strip) / 2, m_.domains[r.domain].name, 11,
                            r.used_share > 0.55 ? kPaper : kInk, false, 0.5);
                if (r.st.maintenance_now) {
                    const double t = std::max(5.0, std::min(cw, ch) * 0.55);
                    p_.triangle(cx, cy, cx + t, cy, cx, cy + t, kMaint);
                }
                if (r.st.nvlink_fault)
                    p_.outline(cx - 1, cy - 1, cw + 2, ch + 2, kFault, cell >= 10 ? 2.5 : 1.5);
                x += cell;
            }
        }
        y += pitch - (top ? kTopLabelRow : 0);
    }
}

// ---- legend -----------------------------------------------------------------------------

void Plot::draw_legend(double x0, double y0, double w, double h)
{
    p_.line(x0, y0, x0 + w, y0, kRule, 1);
    const double top = y0 + 16, row = 17, sw = 22, sh = 13;
    struct Item {
        std::function<void(double, double)> swatch;  // draws at (x, y top)
        std::string text;
        double swatch_w = 22;  // text starts this far right of the swatch
    };
    struct Column {
        std::string title;
        std::vector<Item> items;
    };
    auto solid = [this, sw, sh](Rgb c, bool ruled = false) {
        return [this, c, ruled, sw, sh](double x, double y) {
            p_.fill(x, y, sw, sh, c);
            p_.outline(x, y, sw, sh, ruled ? kFrame : c, 1);
        };
    };
    std::vector<Column> cols;

    const bool gradient = compact_ || !view_;
    if (gradient) {
        Column c{compact_ ? "Racks: GPUs used" : "Nodes: GPUs used", {}};
        c.items.push_back({[this, sh](double x, double y) {
                               const double gw = 180;
                               for (int i = 0; i < 60; ++i)
                                   p_.fill(x + gw * i / 60, y, gw / 60 + 0.5, sh, use_colour(i / 59.0));
                               p_.outline(x, y, gw, sh, kFrame, 1);
                               const double ym = y + sh + 10;
                               p_.text(x, ym, "0 %", 12, kInk);
                               p_.text(x + gw / 2, ym, "50 %", 12, kInk, false, 0.5);
                               p_.text(x + gw, ym, "100 %", 12, kInk, false, 1);
                           },
                           "", 0});
        c.items.push_back({nullptr, ""});
        c.items.push_back({nullptr, compact_ ? "of each rack's GPUs" : "of the rack's GPUs: no per-node data"});
        cols.push_back(std::move(c));
    } else {
        cols.push_back({"Nodes: GPUs allocated",
                        {{solid(kUseFree, true), "free"},
                         {solid(kUseHalf), "partly used"},
                         {solid(kUseFull), "full"},
                         {[this, sw, sh](double x, double y) {
                              p_.fill(x, y, sw, sh, kUnknownNode);
                              p_.outline(x, y, sw, sh, kRule, 1);
                              p_.text(x + sw / 2, y + sh / 2, "?", 11, kMuted, true, 0.5);
                          },
                          "not reported by Slurm"}}});
    }

    if (compact_) {
        cols.push_back({"Rack health",
                        {{[this, sw, sh](double x, double y) {
                              p_.fill(x, y, sw, sh, use_colour(0.3));
                              p_.fill(x + sw / 2, y, sw / 2, sh, kDegradedBg);
                              p_.hatch(x + sw / 2, y, sw / 2, sh, kHatch, 4, 1);
                          },
                          "hatched part: share of GPUs degraded"},
                         {[this, sw, sh](double x, double y) {
                              p_.fill(x, y, sw, sh, use_colour(0.3));
                              p_.outline(x, y, sw, sh, kFault, 2.5);
                          },
                          "red outline: NVLink fault"},
                         {[this, sw, sh](double x, double y) {
                              p_.fill(x, y, sw, sh, use_colour(0.3));
                              p_.triangle(x, y, x + sh * 0.8, y, x, y + sh * 0.8, kMaint);
                          },
                          "purple corner: maintenance now"}}});
        cols.push_back({"Bottom strip: power draw / effective budget",
                        {{solid(kPowerOk), "below 75 %"},
                         {solid(kPowerWarn), "75–90 %"},
                         {solid(kPowerHigh), "90 % or more"},
                         {solid(kPowerUnknown), "unknown (no reading or no budget)"}}});
        cols.push_back({"Layout",
                        {{nullptr, "one cell per rack (NVLink domain),"},
                         {nullptr, "the racks of a switch side by side,"},
                         {nullptr, top_labels_ ? "the switch named over them" : "each line named by its first switch"}}});
    } else {
        cols.push_back({"Nodes: health",
                        {{[this, sw, sh](double x, double y) {
                              p_.fill(x, y, sw, sh, kDegradedBg);
                              p_.hatch(x, y, sw, sh, kHatch, 5, 1.2);
                          },
                          "degraded (health feed)"},
                         {solid(kDrained), "drained"},
                         {solid(kDown), "down"},
                         {[this, sw, sh](double x, double y) {
                              p_.fill(x, y, sw, sh, use_colour(0.5));
                              p_.fill(x, y, 6, sh, kMaint);
                          },
                          "in a maintenance window now"}}});
        if (any_empty_slot_)
            cols.back().items.push_back({[this, sw, sh](double x, double y) { p_.outline(x, y, sw, sh, kFrame, 1, true); },
                                         "empty slot"});
        cols.push_back({"Racks",
                        {{[this, sw, sh](double x, double y) {
                              p_.fill(x, y, sw, sh, use_colour(0.5));
                              p_.outline(x, y, sw, sh, kFault, 3);
                          },
                          "red outline: NVLink fault"},
                         {[this](double x, double y) { maint_badge(x, y - 1); }, "maintenance now", 50},
                         {[this](double x, double y) { thermal_key(x, y); }, "", 0}}});
        cols.push_back({"Power bar: draw / effective budget (kW)",
                        {{solid(kPowerOk), "below 75 %"},
                         {solid(kPowerWarn), "75–90 %"},
                         {solid(kPowerHigh), "90 % or more"},
                         {solid(kPowerUnknown), "unknown (no reading or no budget)"},
                         {[this, sw, sh](double x, double y) {
                              p_.fill(x, y, sw, sh, kTrack);
                              p_.hatch(x, y, sw, sh, kPowerHigh, 4, 1);
                              p_.outline(x, y, sw, sh, kFrame, 1);
                          },
                          "cut from the budget by a DR event"}}});
    }

    const double col_w = w / cols.size();
    for (size_t ci = 0; ci < cols.size(); ++ci) {
        const double cx = x0 + ci * col_w;
        p_.text(cx, top, p_.fit(cols[ci].title, col_w - 12, 13, true), 13, kInk, true);
        double y = top + 14;
        for (const Item& it : cols[ci].items) {
            double tx = cx;
            if (it.swatch) {
                it.swatch(cx, y);
                tx = cx + it.swatch_w + 8;
            }
            if (!it.text.empty())
                p_.text(tx, y + sh / 2, p_.fit(it.text, cx + col_w - 12 - tx, 12), 12, kInk);
            y += row;
        }
    }
    (void)h;
}

void Plot::maint_badge(double x, double y)
{
    const double bw = p_.width("MAINT", 11, true) + 8;
    p_.fill(x, y, bw, kBadgeRowH - 4, kMaint);
    p_.text(x + bw / 2, y + (kBadgeRowH - 4) / 2, "MAINT", 11, kPaper, true, 0.5);
}

// "hottest GPU °C: ok warm hot critical", each in its label colour.
void Plot::thermal_key(double x, double y)
{
    const double ym = y + 13 / 2.0;
    p_.text(x, ym, "°C over a rack: hottest GPU,", 12, kInk);
    x += p_.width("°C over a rack: hottest GPU,", 12) + 6;
    for (ThermalState t : {ThermalState::Ok, ThermalState::Warm, ThermalState::Hot, ThermalState::Critical}) {
        const bool bold = t != ThermalState::Ok;
        p_.text(x, ym, to_string(t), 12, thermal_colour(t), bold);
        x += p_.width(to_string(t), 12, bold) + 7;
    }
}

void Plot::draw()
{
    draw_header(kMargin - 6);
    const double map_y = kMargin - 6 + kHeaderH, map_h = kPlotHeight - map_y - kLegendH - 4;
    if (compact_)
        draw_compact(kMargin, map_y, kPlotWidth - 2 * kMargin, map_h);
    else
        draw_detailed(kMargin, map_y, kPlotWidth - 2 * kMargin, map_h);
    draw_legend(kMargin, kPlotHeight - kLegendH, kPlotWidth - 2 * kMargin, kLegendH - 8);
}

// ---- output -------------------------------------------------------------------------------

struct SurfaceFree {
    void operator()(cairo_surface_t* s) const { cairo_surface_destroy(s); }
};
struct ContextFree {
    void operator()(cairo_t* c) const { cairo_destroy(c); }
};

struct PngSink {
    std::FILE* f = nullptr;
    int err = 0;
};

cairo_status_t write_png_bytes(void* closure, const unsigned char* data, unsigned int length)
{
    auto* sink = static_cast<PngSink*>(closure);
    if (std::fwrite(data, 1, length, sink->f) != length) {
        sink->err = errno ? errno : EIO;
        return CAIRO_STATUS_WRITE_ERROR;
    }
    return CAIRO_STATUS_SUCCESS;
}

}  // namespace

void plot_status_png(const Model& m, const Status& s, const ClusterView* nodes, const std::string& path)
{
    const std::string where = "m2g status --plot " + path + ": ";
    if (nodes && nodes->nodes.size() != m.nodes.size())
        throw Error(where + "the cluster view has " + std::to_string(nodes->nodes.size()) + " nodes, the model " +
                    std::to_string(m.nodes.size()) + " (they must describe the same cluster)");

    std::unique_ptr<cairo_surface_t, SurfaceFree> surface(
        cairo_image_surface_create(CAIRO_FORMAT_RGB24, kPlotWidth, kPlotHeight));
    if (cairo_surface_status(surface.get()) != CAIRO_STATUS_SUCCESS)
        throw Error(where + "cannot create the image: " + cairo_status_to_string(cairo_surface_status(surface.get())));
    std::unique_ptr<cairo_t, ContextFree> cr(cairo_create(surface.get()));
    cairo_set_source_rgb(cr.get(), kPaper.r, kPaper.g, kPaper.b);
    cairo_paint(cr.get());
    Plot(m, s, nodes, cr.get()).draw();
    cairo_surface_flush(surface.get());
    if (cairo_status(cr.get()) != CAIRO_STATUS_SUCCESS)
        throw Error(where + "drawing failed: " + cairo_status_to_string(cairo_status(cr.get())));

    PngSink sink;
    sink.f = std::fopen(path.c_str(), "wb");
    if (!sink.f)
        throw Error(where + "cannot open for writing: " + std::strerror(errno));
    errno = 0;
    const cairo_status_t st = cairo_surface_write_to_png_stream(surface.get(), write_png_bytes, &sink);
    const bool closed = std::fclose(sink.f) == 0;
    if (st != CAIRO_STATUS_SUCCESS || !closed) {
        const int err = sink.err ? sink.err : errno;
        std::remove(path.c_str());
        throw Error(where + "cannot write the PNG: " +
                    (err ? std::string(std::strerror(err)) : std::string(cairo_status_to_string(st))));
    }
}

void plot_status_png(const Model& m, const Status& s, const std::string& path)
{
    plot_status_png(m, s, nullptr, path);
}

}  // namespace m2g
