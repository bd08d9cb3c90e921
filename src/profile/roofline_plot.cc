#include "profile/roofline_plot.h"

#include <cairo.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numbers>
#include <vector>

#include "profile/roofline.h"
#include "util/error.h"

namespace lumen::profile {

namespace {

constexpr int kWidth = 1400, kHeight = 900;
constexpr double kLeft = 90, kRight = 40, kTop = 60, kBottom = 70;

struct Rgb {
  double r, g, b;
};
constexpr Rgb kPalette[] = {{0.12, 0.47, 0.71}, {0.84, 0.15, 0.16}, {0.17, 0.63, 0.17},
                            {0.58, 0.40, 0.74}, {1.00, 0.50, 0.05}, {0.55, 0.34, 0.29}};

// Log-log axes mapping intensity and GFLOP/s to pixels.
struct Axes {
  double x_lo, x_hi, y_lo, y_hi;
  double x(double intensity) const {
    return kLeft + (std::log10(intensity) - x_lo) / (x_hi - x_lo) * (kWidth - kLeft - kRight);
  }
  double y(double gflops) const {
    return kHeight - kBottom - (std::log10(gflops) - y_lo) / (y_hi - y_lo) * (kHeight - kTop - kBottom);
  }
};

void text(cairo_t* cr, double x, double y, const std::string& s, double size, bool centered = false) {
  cairo_set_font_size(cr, size);
  cairo_text_extents_t extents;
  cairo_text_extents(cr, s.c_str(), &extents);
  cairo_move_to(cr, centered ? x - extents.width / 2 : x, y);
  cairo_show_text(cr, s.c_str());
}

// The roof of one peak: the bandwidth diagonal up to the ridge point, then flat.
void roof(cairo_t* cr, const Axes& a, double bandwidth, double peak, const std::string& label) {
  const double ridge = peak / bandwidth;
  const double x0 = std::pow(10.0, a.x_lo);
  cairo_move_to(cr, a.x(x0), a.y(std::max(x0 * bandwidth, std::pow(10.0, a.y_lo))));
  cairo_line_to(cr, a.x(ridge), a.y(peak));
  cairo_line_to(cr, a.x(std::pow(10.0, a.x_hi)), a.y(peak));
  cairo_stroke(cr);
  text(cr, a.x(ridge) + 8, a.y(peak) - 6, label, 13);
}

}  // namespace

void write_roofline_png(const std::string& path, const MachineCeilings& ceilings, const std::vector<PlottedStep>& steps,
                        const std::string& title) {
  std::unique_ptr<cairo_surface_t, decltype(&cairo_surface_destroy)> surface(
      cairo_image_surface_create(CAIRO_FORMAT_ARGB32, kWidth, kHeight), cairo_surface_destroy);
  std::unique_ptr<cairo_t, decltype(&cairo_destroy)> context(cairo_create(surface.get()), cairo_destroy);
  cairo_t* cr = context.get();
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);

  const double top = std::max(ceilings.int8_gops, ceilings.fp32_gflops);
  const Axes axes{-2.0, 3.0, std::floor(std::log10(std::max(ceilings.read_gbps * 0.01, 1e-3))) - 1.0,
                  std::ceil(std::log10(std::max(top, 1.0))) + 0.3};

  // Grid and axis labels, one line per decade.
  cairo_set_line_width(cr, 1);
  for (double d = std::ceil(axes.x_lo); d <= axes.x_hi; d += 1) {
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, axes.x(std::pow(10, d)), kTop);
    cairo_line_to(cr, axes.x(std::pow(10, d)), kHeight - kBottom);
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(cr, axes.x(std::pow(10, d)), kHeight - kBottom + 20, fmt::format("{:g}", std::pow(10, d)), 13, true);
  }
  for (double d = std::ceil(axes.y_lo); d <= axes.y_hi; d += 1) {
    cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
    cairo_move_to(cr, kLeft, axes.y(std::pow(10, d)));
    cairo_line_to(cr, kWidth - kRight, axes.y(std::pow(10, d)));
    cairo_stroke(cr);
    cairo_set_source_rgb(cr, 0, 0, 0);
    text(cr, 10, axes.y(std::pow(10, d)) + 4, fmt::format("{:g}", std::pow(10, d)), 13);
  }
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, (kWidth + kLeft) / 2, kHeight - 20, "arithmetic intensity (FLOPs per byte moved)", 15, true);
  text(cr, kLeft, 28, title, 17);
  text(cr, kLeft, 48,
       fmt::format("GFLOP/s (log) | measured: read {:.1f} GB/s, f32 {:.0f} GFLOP/s, int8 {:.0f} GOP/s, {} threads, {}",
                   ceilings.read_gbps, ceilings.fp32_gflops, ceilings.int8_gops, ceilings.threads, ceilings.isa),
       13);

  // The roofs.
  cairo_set_line_width(cr, 2.5);
  cairo_set_source_rgb(cr, 0.2, 0.2, 0.2);
  roof(cr, axes, ceilings.read_gbps, ceilings.int8_gops, fmt::format("int8 peak {:.0f}", ceilings.int8_gops));
  cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
  const double dashes[] = {8, 5};
  cairo_set_dash(cr, dashes, 2, 0);
  roof(cr, axes, ceilings.read_gbps, ceilings.fp32_gflops, fmt::format("f32 peak {:.0f}", ceilings.fp32_gflops));
  cairo_set_dash(cr, nullptr, 0, 0);

  // The ops, one colour per step shape; dot area grows with the op's share of its step. The
  // ops above 3% of their step get a label, biggest first, each moved down past the labels
  // already placed so none overlap.
  struct Label {
    double x, y, w, h;
  };
  std::vector<Label> placed;
  auto overlaps = [&](const Label& l) {
    return std::any_of(placed.begin(), placed.end(), [&](const Label& o) {
      return l.x < o.x + o.w && o.x < l.x + l.w && l.y < o.y + o.h && o.y < l.y + l.h;
    });
  };
  cairo_set_font_size(cr, 11);
  for (size_t i = 0; i < steps.size(); ++i) {
    const Rgb c = kPalette[i % std::size(kPalette)];
    cairo_set_source_rgb(cr, c.r, c.g, c.b);
    text(cr, kWidth - kRight - 420, kTop + 22 + 20 * static_cast<double>(i), "\u25CF " + steps[i].label, 14);
    const StepBreakdown& b = *steps[i].breakdown;
    for (const Totals& op : b.by_op) {  // most time first
      const RooflinePoint p = roofline_point(op.cost, op.ns / 1e9, ceilings);
      if (p.achieved <= 0 || p.intensity <= 0) continue;
      const double px = axes.x(std::clamp(p.intensity, std::pow(10, axes.x_lo), std::pow(10, axes.x_hi)));
      const double py = axes.y(std::max(p.achieved, std::pow(10, axes.y_lo)));
      const double share = b.step_ns > 0 ? op.ns / b.step_ns : 0;
      cairo_arc(cr, px, py, 3 + 14 * std::sqrt(share), 0, 2 * std::numbers::pi);
      cairo_fill(cr);
      if (share < 0.03) continue;
      const std::string caption = fmt::format("{} {:.0f}%", op.name, share * 100);
      cairo_set_font_size(cr, 11);
      cairo_text_extents_t extents;
      cairo_text_extents(cr, caption.c_str(), &extents);
      Label l{px + 12, py - 12, extents.x_advance, 13};
      if (l.x + l.w > kWidth - 4) l.x = px - 12 - l.w;  // left of the dot at the right edge
      for (int tries = 0; tries < 12 && overlaps(l); ++tries) l.y += 13;
      if (overlaps(l)) continue;
      placed.push_back(l);
      text(cr, l.x, l.y + 10, caption, 11);
    }
  }
  cairo_surface_flush(surface.get());
  if (cairo_surface_write_to_png(surface.get(), path.c_str()) != CAIRO_STATUS_SUCCESS) {
    fail("cannot write the roofline plot to {}", path);
  }
}

}  // namespace lumen::profile
